import ObjectStorage

public struct UploadOptions: Sendable {
    public var destination: S3Destination
    /// Multipart part size (at least 5 MiB); an upload being resumed keeps the size it began with.
    public var partSize: Int64
    /// Remove the local files once every one of a session's uploads verified.
    public var deleteAfterUpload: Bool

    public init(destination: S3Destination, partSize: Int64 = PartPlan.defaultPartSize, deleteAfterUpload: Bool = false) {
        (self.destination, self.partSize, self.deleteAfterUpload) = (destination, partSize, deleteAfterUpload)
    }
}

/// What happened to one file.
public enum FileUploadOutcome: String, Sendable {
    /// Sent now and verified.
    case uploaded
    /// Sent now, continuing a multipart upload an earlier run left unfinished.
    case resumed
    /// Already in storage with the same size and checksum.
    case alreadyUploaded = "already uploaded"
}

/// Called after each part reaches the server (tests interrupt uploads with it; a progress
/// display could use it). Throwing stops the upload as a crash would, the catalog keeping
/// the multipart upload to resume.
public typealias PartObserver = @Sendable (_ fileName: String, _ partNumber: Int, _ partCount: Int) throws -> Void
