import Archive
import ObjectStorage

/// Why a session's upload stopped. Its local files are kept whatever the reason.
public enum UploadError: Error, Sendable, CustomStringConvertible {
    case storage(S3Error, file: String?)
    case catalog(CatalogError)
    /// The session has not ended: still recording, or killed and not repaired yet.
    case sessionNotEnded(String)
    case verification(file: String, String)
    /// Another process is uploading the same session on this host.
    case busy(String)
    /// An observer stopped the upload (tests).
    case interrupted(String)

    public var description: String {
        switch self {
        case .storage(let error, let file): file.map { "\($0): \(error)" } ?? "\(error)"
        case .catalog(let error): "\(error)"
        case .sessionNotEnded(let id): "session \(id) has not ended (still recording, or killed: run `recbot repair` first)"
        case .verification(let file, let detail): "\(file): the stored object does not match the local file (\(detail))"
        case .busy(let id): "session \(id) is being uploaded by another process"
        case .interrupted(let reason): "interrupted: \(reason)"
        }
    }
}
