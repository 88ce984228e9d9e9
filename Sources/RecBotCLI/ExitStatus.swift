import ArgumentParser

/// recbot's exit codes (sysexits.h values, so cron and systemd logs read naturally).
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    /// Unexpected internal failure.
    case failure = 1
    /// Bad command line: unknown flag, bad time, bad id (swift-argument-parser's own code).
    case usage = 64
    /// `recbot verify` found a recording that does not read or decode cleanly.
    case dataError = 65
    /// Configuration unusable (bad config file, missing channel).
    case configuration = 78
    /// The server rejected us (authentication / authorization).
    case rejected = 77
    /// Network, ICE or DTLS failure; server unreachable.
    case network = 69
    /// Catalog or recording storage failure (unreadable, corrupt, newer schema, disk full).
    case storage = 74
    /// Sora said something recbot cannot work with (an offer it cannot answer, malformed signaling).
    case protocolError = 76

    public var exitCode: ExitCode { ExitCode(rawValue) }
}
