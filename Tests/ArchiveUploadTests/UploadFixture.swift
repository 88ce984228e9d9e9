import Archive
import ArchivePostgres
import ArchiveUpload
import DiskLayout
import Foundation
import Logging
import NIOCore
import ObjectStorage
import PostgresTestSupport
import SeaweedTestSupport
import SystemClock
import Testing
import WireCoding

/// A finished session on disk and in a catalog, and an uploader to a fresh bucket of the
/// shared SeaweedFS server.
final class UploadFixture: @unchecked Sendable {
    let server: SeaweedServer
    let bucket: String
    /// This test's objects: `<prefix>/<session id>/<file>`.
    let prefix = "t-\(UUID().uuidString.prefix(8).lowercased())"
    let root: String
    let catalog: any CatalogStore
    let session: SessionRecord
    var directory: String { root + "/recordings/" + session.id }
    /// Where a file of the session is stored.
    func key(_ file: String) -> String { "\(prefix)/\(session.id)/\(file)" }
    var objects: [SeaweedServer.StoredObject] { get throws { try server.list(bucket: bucket, prefix: prefix + "/") } }
    func object(_ file: String) throws -> Data { try server.get(bucket: bucket, key: key(file)) }
    var unfinishedUploads: Int { get throws { try server.unfinishedUploads(bucket: bucket, prefix: prefix + "/") } }
    var lockPath: String { root + "/locks/upload-" + session.id + ".lock" }

    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    init(store: Store = .sqlite, ended: Bool = true, server: SeaweedServer? = nil) throws {
        self.server = try server ?? SeaweedServer.shared.get()
        bucket = try self.server.sharedBucket()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-upload-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        switch store {
        case .sqlite: catalog = try Catalog(path: root + "/catalog.sqlite")
        case .postgres:
            let url = try PostgresServer.shared.get().makeDatabase()
            guard case .postgres(let location) = try CatalogLocation.parse(url) else { throw CatalogError(path: url, reason: .badLocation("not PostgreSQL")) }
            catalog = try PostgresCatalog(url: location, logger: Logger(label: "test"))
        }
        var session = SessionRecord(id: ULID.generate(now: UInt64(Date().timeIntervalSince1970 * 1000)).string, channelID: "sora", startedAt: 1_700_000_000_000)
        if ended { session.endedAt = 1_700_000_060_000; session.endReason = "duration" }
        try catalog.insertSession(session)
        self.session = session
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes a file of the session with deterministic bytes (`seed` varies them).
    @discardableResult
    func write(_ name: String, bytes count: Int, seed: UInt8 = 1) throws -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var state = UInt32(seed) &* 2_654_435_761 | 1
            for index in buffer.indices {
                state ^= state << 13; state ^= state >> 17; state ^= state << 5
                buffer[index] = UInt8(truncatingIfNeeded: state)
            }
        }
        try data.write(to: URL(fileURLWithPath: directory + "/" + name))
        return data
    }

    /// A typical session: one large sender (multipart at 5 MiB parts), one small, sidecars, the report.
    func writeSession() throws -> [String: Data] {
        var files: [String: Data] = [:]
        files["archive-AAAA.webm"] = try write("archive-AAAA.webm", bytes: 12 << 20 | 12_345, seed: 3)
        files["archive-BBBB.webm"] = try write("archive-BBBB.webm", bytes: 70_000, seed: 4)
        files["archive-AAAA.json"] = try write("archive-AAAA.json", bytes: 300, seed: 5)
        files["archive-BBBB.json"] = try write("archive-BBBB.json", bytes: 301, seed: 6)
        files["report-\(session.id).json"] = try write("report-\(session.id).json", bytes: 900, seed: 7)
        try Data("partial".utf8).write(to: URL(fileURLWithPath: directory + "/archive-CCCC.webm.tmp"))
        for sender in ["AAAA", "BBBB"] where try catalog.recordings(RecordingFilter(sessionID: session.id, connectionID: sender)).isEmpty {
            try catalog.insertRecording(RecordingRecord(sessionID: session.id, connectionID: sender, path: "recordings/\(session.id)/archive-\(sender).webm",
                                                        videoCodec: "VP9", audioCodec: "OPUS", startedAt: session.startedAt, status: .complete))
        }
        return files
    }

    /// Sets a recording's status (a finalize that timed out leaves `recording`).
    func setStatus(_ sender: String, _ status: RecordingStatus) throws {
        var row = try #require(try catalog.recordings(RecordingFilter(sessionID: session.id, connectionID: sender)).first)
        row.status = status
        try catalog.updateRecording(row)
    }

    func uploader(credentials: S3Credentials? = nil, retry: RetryPolicy = RetryPolicy(retries: 1, baseDelaySeconds: 0.05),
                  endpoint: String? = nil, deleteAfterUpload: Bool = false, observer: PartObserver? = nil) throws -> (ArchiveUploader, S3Client) {
        let client = S3Client(endpoint: try S3Endpoint(url: endpoint ?? server.endpoint, region: nil),
                              credentials: credentials ?? S3Credentials(accessKeyID: SeaweedServer.accessKey, secretAccessKey: SeaweedServer.secretKey),
                              retry: retry, connectTimeout: .seconds(1), logger: Logger(label: "test"))
        let options = UploadOptions(destination: try S3Destination(bucket: bucket, prefix: prefix), partSize: PartPlan.minimumPartSize,
                                    deleteAfterUpload: deleteAfterUpload)
        return (ArchiveUploader(client: client, catalog: catalog, options: options, logger: Logger(label: "test"), partObserver: observer, clock: SystemTimeSource()), client)
    }

    /// Uploads the session and shuts the client down.
    func upload(_ uploader: (ArchiveUploader, S3Client)) async throws -> SessionUploadResult {
        do {
            let result = try await uploader.0.upload(session: session, layout: ArchiveLayout(recordingsRoot: root + "/recordings", recordingID: session.id), lockPath: lockPath)
            await uploader.1.shutdown()
            return result
        } catch {
            await uploader.1.shutdown()
            throw error
        }
    }
}

/// Counts parts as they reach the server and can stop the upload after a given one.
final class PartCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var parts: [(String, Int)] = []
    let stopAfter: (file: String, part: Int)?
    let onPart: (file: String, part: Int)?
    let action: (@Sendable () -> Void)?

    init(stopAfter: (file: String, part: Int)? = nil) { (self.stopAfter, onPart, action) = (stopAfter, nil, nil) }

    /// Runs `action` once the given part reached the server (and the upload goes on).
    init(onPart: (file: String, part: Int), action: @escaping @Sendable () -> Void) {
        (stopAfter, self.onPart, self.action) = (nil, onPart, action)
    }

    var sent: [(String, Int)] { lock.withLock { parts } }

    var observer: PartObserver {
        { [self] file, number, _ in
            lock.withLock { parts.append((file, number)) }
            if let onPart, onPart.file == file, onPart.part == number { action?() }
            if let stopAfter, stopAfter.file == file, stopAfter.part == number { throw CancellationError() }
        }
    }
}
