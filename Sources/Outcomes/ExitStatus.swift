/// recbot's exit codes (sysexits.h values, so cron and systemd logs read naturally): the one
/// definition, stored in the catalog as a session's `exit_status` and listed in the help.
/// Nothing picks one directly: components report an `EndCause`, and `ExitStatus(_:)` decides.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    /// Unexpected internal failure.
    case failure = 1
    /// Bad command line: unknown flag, bad time, bad id (swift-argument-parser's own code).
    case usage = 64
    /// `recbot verify` found a recording that does not read or decode cleanly.
    case dataError = 65
    /// What was asked for is not there: a session or recording id the catalog does not hold, or
    /// a recording's file missing from its host (sysexits' EX_NOINPUT). One code for every command.
    case notFound = 66
    /// Network, ICE or DTLS failure; server unreachable.
    case network = 69
    /// Catalog or recording storage failure (unreadable, corrupt, newer schema, disk full).
    case storage = 74
    /// Sora said something recbot cannot work with (an offer it cannot answer, malformed signaling).
    case protocolError = 76
    /// The server rejected us (authentication / authorization).
    case rejected = 77
    /// Configuration unusable (bad config file, missing channel).
    case configuration = 78
    /// `join --wait-for-senders`: no sender came in time, so nothing was recorded.
    case noSenders = 79
    /// The TURN relay the session needed could not be reached, refused the allocation, or lost it.
    case relayUnavailable = 80
    /// The TURN server refused the credentials (from the offer, or `--ice-servers`).
    case relayCredentials = 81
    /// The PostgreSQL catalog could not be reached (refused, timed out, too many connections).
    case catalogUnavailable = 82
    /// The PostgreSQL catalog refused the user or password.
    case catalogCredentials = 83
    /// An upload to object storage failed (unreachable, retries spent, or it did not verify); the local files are kept.
    case uploadFailed = 84
    /// The object storage refused the access key or its signature, or denied access to the bucket.
    case uploadCredentials = 85
    /// A second SIGINT while stopping: exited at once (128 + SIGINT); `recbot repair` finishes the files.
    case interruptedAtOnce = 130
    /// Standard output was closed (128 + SIGPIPE, as a shell shows a process SIGPIPE killed).
    case outputClosed = 141
    /// A second SIGTERM while stopping: exited at once (128 + SIGTERM); `recbot repair` finishes the files.
    case terminatedAtOnce = 143

    /// A few words for the help text.
    public var summary: String {
        switch self {
        case .success: "done"
        case .failure: "internal failure"
        case .usage: "bad command line"
        case .dataError: "a recording failed verification"
        case .notFound: "not found (a session or recording the catalog does not hold, or a recording's file missing from its host)"
        case .network: "network/ICE/DTLS failure"
        case .storage: "storage failure (catalog, disk full, a file that could not be written)"
        case .protocolError: "protocol error"
        case .rejected: "rejected by the server"
        case .configuration: "configuration error"
        case .noSenders: "no sender came within --wait-for-senders (nothing recorded)"
        case .relayUnavailable: "TURN relay unreachable or lost"
        case .relayCredentials: "TURN credentials refused"
        case .catalogUnavailable: "PostgreSQL catalog unreachable"
        case .catalogCredentials: "PostgreSQL catalog credentials refused"
        case .uploadFailed: "upload to object storage failed (local files kept)"
        case .uploadCredentials: "object storage credentials refused"
        case .interruptedAtOnce: "a second SIGINT: exited at once (repair finishes the files)"
        case .outputClosed: "standard output closed by its reader"
        case .terminatedAtOnce: "a second SIGTERM: exited at once (repair finishes the files)"
        }
    }

    /// "Exit codes: 0 done, 69 …" for a command's help, from this one table.
    public static func helpLine(_ statuses: [ExitStatus]) -> String {
        "Exit codes: " + statuses.map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", ") + "."
    }
}
