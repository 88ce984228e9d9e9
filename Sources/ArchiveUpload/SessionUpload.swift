import Archive
import DiskLayout
import Foundation
import Glibc
import Logging
import ObjectStorage
import WireCoding

/// What one session's upload did.
public struct SessionUploadResult: Sendable {
    public var sessionID: String
    public var files: [(record: UploadRecord, outcome: FileUploadOutcome)] = []
    /// The local files were removed (--delete-after-upload, every upload verified).
    public var deletedLocalFiles = false
    /// Why --delete-after-upload kept the local files (nil when it was not asked, or removed them).
    public var keptLocalFiles: String?
}

/// Uploads finished sessions' archive directories to one S3 destination, records every object
/// in the catalog, and (when asked) removes the local copies once all of a session verified.
public struct ArchiveUploader: Sendable {
    private let client: S3Client
    private let catalog: CatalogAccess
    private let options: UploadOptions
    private let partObserver: PartObserver?
    private let clock: any TimeSource
    private let logger: Logger

    public init(client: S3Client, catalog: any CatalogStore, options: UploadOptions, logger: Logger, partObserver: PartObserver? = nil,
                clock: any TimeSource) {
        self.client = client
        self.clock = clock
        self.catalog = CatalogAccess(store: catalog)
        self.options = options
        self.logger = logger
        self.partObserver = partObserver
    }

    private var objectURLPrefix: String { options.destination.objectURLPrefix }

    /// Ended sessions whose report has not reached `destination` yet (the report goes last,
    /// so a session with it uploaded is complete there), oldest first.
    /// Only sessions of `channel` when one is given. Uploads to the same bucket and prefix on
    /// another server (`endpoint`) do not count.
    public static func pendingSessions(catalog: any CatalogStore, destination: S3Destination, endpoint: String,
                                       channel: String? = nil) throws(UploadError) -> [SessionRecord] {
        let access = CatalogAccess(store: catalog)
        let done = Set(try access.uploads(UploadFilter(objectURLPrefix: destination.objectURLPrefix, status: .uploaded))
            .filter { ArchiveFile(name: $0.fileName) == .report(recordingID: $0.sessionID) && $0.endpoint == endpoint }.map(\.sessionID))
        let sessions: [SessionRecord]
        do { sessions = try catalog.sessions(SessionFilter(channelID: channel)) } catch { throw .catalog(error) }
        return sessions.filter { $0.endedAt != nil && !done.contains($0.id) }.reversed()
    }

    /// Uploads every file of the session's directory, in `UploadOrder`, stopping at the first
    /// failure (so a report never goes up before its media). The session must have ended.
    public func upload(session: SessionRecord, layout: ArchiveLayout, lockPath: String) async throws(UploadError) -> SessionUploadResult {
        let directory = layout.directory
        guard session.endedAt != nil else { throw .sessionNotEnded(session.id) }
        let lock = try takeLock(lockPath, session: session.id)
        defer { lock.release() }
        let listing: [String]
        do { listing = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw .storage(S3Error(.localFile, "cannot list \(directory): \(error.localizedDescription)"), file: nil)
        }
        let names = UploadOrder.files(listing)
        let earlier = try catalog.uploads(UploadFilter(sessionID: session.id, objectURLPrefix: objectURLPrefix))
        var result = SessionUploadResult(sessionID: session.id)
        for name in names {
            let key = options.destination.key(recordingID: session.id, fileName: name)
            let url = options.destination.url(key: key)
            let record = earlier.first { $0.fileName == name && $0.objectURL == url }
                ?? UploadRecord(sessionID: session.id, fileName: name, objectURL: url, endpoint: client.endpoint.description, bytes: 0,
                                startedAt: clock.wallClockMilliseconds())
            let upload = FileUpload(client: client, catalog: catalog, bucket: options.destination.bucket, key: key,
                                    path: layout.path(of: name), fileName: name, partObserver: partObserver, clock: clock, logger: logger)
            let (stored, outcome) = try await upload.run(record: record, preferredPartSize: options.partSize)
            logger.info("file uploaded", metadata: ["session": "\(session.id)", "file": "\(name)", "object": "\(url)", "outcome": "\(outcome.rawValue)"])
            result.files.append((stored, outcome))
        }
        if options.deleteAfterUpload, !result.files.isEmpty {
            if let why = try reasonToKeepLocalCopies(session: session, uploaded: result.files.map(\.record)) {
                result.keptLocalFiles = why
                logger.notice("local files kept", metadata: ["session": "\(session.id)", "why": "\(why)"])
            } else {
                result.files = try removeLocalCopies(result.files, layout: layout)
                result.deletedLocalFiles = true
            }
        }
        return result
    }

    /// The files go only when each was finished for good: every recording of the session was
    /// finalized (complete, interrupted at an outage) or repaired, none failed verification, and
    /// every media file uploaded is such a recording's. A file whose finishing timed out is still
    /// `recording`: its local copy is the one `recbot repair` can mend.
    private func reasonToKeepLocalCopies(session: SessionRecord, uploaded: [UploadRecord]) throws(UploadError) -> String? {
        let rows = try catalog.recordings(RecordingFilter(sessionID: session.id))
        let unfinished = rows.filter { $0.status == .recording }
        if !unfinished.isEmpty {
            return "\(unfinished.count) recording(s) never finalized (\(Self.names(unfinished))): run `recbot repair`, then upload again"
        }
        let failed = rows.filter { $0.verification == .failed }
        if !failed.isEmpty { return "\(failed.count) recording(s) failed verification (\(Self.names(failed)))" }
        let cataloged = Set(rows.map { ($0.path as NSString).lastPathComponent })
        let strays = uploaded.map(\.fileName).filter { UploadOrder.isMedia($0) && !cataloged.contains($0) }
        if !strays.isEmpty { return "media file(s) in no catalog row: \(strays.joined(separator: ", ")); `recbot repair` catalogs them" }
        return nil
    }

    private static func names(_ rows: [RecordingRecord]) -> String {
        rows.prefix(3).map { ($0.path as NSString).lastPathComponent }.joined(separator: ", ") + (rows.count > 3 ? ", …" : "")
    }

    /// Media first, report last, as they went up; the directory goes when it is empty.
    private func removeLocalCopies(_ files: [(record: UploadRecord, outcome: FileUploadOutcome)], layout: ArchiveLayout) throws(UploadError)
        -> [(record: UploadRecord, outcome: FileUploadOutcome)] {
        var updated = files
        for index in updated.indices {
            var record = updated[index].record
            guard record.status == .uploaded, let uploadedAt = record.uploadedAt else { continue }
            // A composition stays: its catalog row names the local file, and the web archive plays it.
            if ArchiveFile(name: record.fileName)?.isComposition == true { continue }
            let path = layout.path(of: record.fileName)
            // Only the bytes that were verified: same size, not modified since.
            let state = try LocalFileState(path: path, fileName: record.fileName)
            guard state.size == record.bytes, state.unchanged(since: uploadedAt) else {
                throw .verification(file: record.fileName, "the local file changed after its upload; kept")
            }
            guard unlink(path) == 0 || errno == ENOENT else {
                throw .storage(S3Error(.localFile, "cannot remove \(path): \(String(cString: strerror(errno)))"), file: record.fileName)
            }
            record.localDeletedAt = clock.wallClockMilliseconds()
            updated[index].record = try catalog.save(record)
        }
        _ = rmdir(layout.directory)  // fails (and stays) when something else is left in it
        return updated
    }

    private func takeLock(_ path: String, session: String) throws(UploadError) -> FileLock {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let lock: FileLock?
        do { lock = try FileLock(path: path, for: "upload of \(session)", blocking: false) } catch { throw .catalog(error) }
        guard let lock else { throw .busy(session) }
        return lock
    }
}
