/// What ended a command or a recording session, as the component that saw it reports it: a fact,
/// not an exit code. The exit code is decided from it in one place, `ExitStatus(_:)`, so "not
/// found" or "the network" mean the same code in every command.
public enum EndCause: Equatable, Sendable {
    /// Ran to its end: the duration, a stop request, or Sora closing the session.
    case completed
    /// Ran to its end through lost connections that rejoins recovered. `strict` is
    /// `--fail-on-interruption` (or `--no-rejoin`): an operator who wants any outage to fail.
    case recoveredAfterInterruptions(strict: Bool)
    /// The network let the session down: signaling unreachable or lost, ICE or DTLS failed,
    /// consent lost, or the session ended while still rejoining.
    case connectionLost
    /// Sora refused the connection (a 4xxx close before the offer, such as failed authentication).
    case rejected
    /// Sora said something recbot cannot work with (an offer it cannot answer, malformed signaling).
    case protocolViolation
    /// The settings cannot work: a missing channel, bad metadata, a catalog or bucket URL that does not parse.
    case invalidConfiguration
    /// The TURN relay the session depended on could not be reached, refused the allocation, or lost it.
    case relayUnavailable
    /// The TURN server refused the credentials.
    case relayCredentialsRefused
    /// A file or the catalog could not be written or read (disk full, corrupt, a newer schema).
    case storageFailed
    /// The PostgreSQL catalog could not be reached.
    case catalogUnreachable
    /// The PostgreSQL catalog refused the user or password.
    case catalogCredentialsRefused
    /// An upload to object storage failed; the local files are kept.
    case uploadFailed
    /// Object storage refused the access key or its signature, or denied access.
    case uploadCredentialsRefused
    /// A recording does not read or decode cleanly.
    case verificationFailed
    /// `--wait-for-senders` ran out before any sender came: nothing was recorded.
    case noSenders
    /// A session, recording or file that was asked for is not there.
    case notFound
    /// The command line cannot be run as written.
    case badCommandLine
    /// A failure recbot did not expect.
    case internalFailure
    /// A second SIGINT or SIGTERM while stopping: recbot exits at once and `recbot repair`
    /// finishes the files. The code is the shell's for that signal (128 + its number).
    case stoppedAtOnce(signal: StopSignal)
    /// Standard output was closed by its reader (`recbot … | head`): the command ends quietly,
    /// with the code a shell shows for SIGPIPE.
    case outputClosed

    /// The signals that stop recbot gracefully the first time and at once the second.
    public enum StopSignal: Sendable, Equatable {
        case interrupt, terminate
    }

    /// Whether the run did what was asked.
    public var isSuccess: Bool { ExitStatus(self) == .success }
}

extension ExitStatus {
    /// The one decision from what happened to the process's exit code.
    public init(_ cause: EndCause) {
        switch cause {
        case .completed: self = .success
        case .recoveredAfterInterruptions(let strict): self = strict ? .network : .success
        case .connectionLost: self = .network
        case .rejected: self = .rejected
        case .protocolViolation: self = .protocolError
        case .invalidConfiguration: self = .configuration
        case .relayUnavailable: self = .relayUnavailable
        case .relayCredentialsRefused: self = .relayCredentials
        case .storageFailed: self = .storage
        case .catalogUnreachable: self = .catalogUnavailable
        case .catalogCredentialsRefused: self = .catalogCredentials
        case .uploadFailed: self = .uploadFailed
        case .uploadCredentialsRefused: self = .uploadCredentials
        case .verificationFailed: self = .dataError
        case .noSenders: self = .noSenders
        case .notFound: self = .notFound
        case .badCommandLine: self = .usage
        case .internalFailure: self = .failure
        case .stoppedAtOnce(.interrupt): self = .interruptedAtOnce
        case .stoppedAtOnce(.terminate): self = .terminatedAtOnce
        case .outputClosed: self = .outputClosed
        }
    }
}
