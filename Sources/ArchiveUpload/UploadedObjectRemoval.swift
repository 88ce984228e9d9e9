import Archive
import DiskLayout
import ObjectStorage

/// `recbot prune --uploaded-objects`: a pruned session's objects at the configured destination
/// are deleted too (only when asked: by default a prune never touches storage), and each
/// upload's row is marked, so the catalog tells where every file was and that it is gone there.
public struct UploadedObjectRemoval: Sendable {
    let client: S3Client
    let catalog: CatalogAccess
    let destination: S3Destination

    public init(client: S3Client, catalog: any CatalogStore, destination: S3Destination) {
        (self.client, self.catalog, self.destination) = (client, CatalogAccess(store: catalog), destination)
    }

    /// The session's objects still stored at this destination and endpoint, as the catalog knows them.
    public func objects(sessionID: String) throws(UploadError) -> [UploadRecord] {
        try catalog.uploads(UploadFilter(sessionID: sessionID, objectURLPrefix: destination.objectURLPrefix, status: .uploaded))
            .filter { $0.endpoint == client.endpoint.description && $0.remoteDeletedAt == nil }
    }

    /// Deletes them, the report first (the uploader's sign that the session is complete goes
    /// before its files); returns how many and their bytes.
    public func remove(sessionID: String, now: Int64) async throws(UploadError) -> (objects: Int, bytes: Int64) {
        var removed = (objects: 0, bytes: Int64(0))
        let rows = try objects(sessionID: sessionID)
        let isReport = { (row: UploadRecord) in ArchiveFile(name: row.fileName) == .report(recordingID: sessionID) }
        for var row in rows.filter(isReport) + rows.filter({ !isReport($0) }) {
            let key = String(row.objectURL.dropFirst("s3://\(destination.bucket)/".count))
            guard row.objectURL.hasPrefix("s3://\(destination.bucket)/"), !key.isEmpty else { continue }
            do { try await client.deleteObject(bucket: destination.bucket, key: key) } catch { throw .storage(error, file: row.fileName) }
            row.remoteDeletedAt = now
            _ = try catalog.save(row)
            removed.objects += 1
            removed.bytes += row.bytes
        }
        return removed
    }
}
