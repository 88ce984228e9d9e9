import Outcomes

extension UploadError {
    /// What this failure means for the run: refused credentials and unreachable storage are told
    /// apart, a bad destination is configuration, a local read is storage.
    public var endCause: EndCause {
        switch self {
        case .storage(let error, _):
            switch error.kind {
            case .credentials: .uploadCredentialsRefused
            case .configuration: .invalidConfiguration
            case .localFile: .storageFailed
            case .unavailable, .protocolViolation, .certificateRejected: .uploadFailed
            }
        case .catalog(let error): error.endCause
        case .sessionNotEnded: .badCommandLine
        case .verification, .busy, .interrupted: .uploadFailed
        }
    }
}
