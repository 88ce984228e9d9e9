import Archive
import Crypto
import DiskLayout

/// sora-archive-uploader's events for what `recbot upload` put in object storage:
/// `archive.uploaded` / `split-archive.uploaded` (a media file with its sidecar),
/// `split-archive-end.uploaded` and `recording-report.uploaded`. Each event's id comes from the
/// object it names, so running the upload again queues nothing twice.
public enum UploaderEvents {
    public struct UploadedObject: Sendable {
        public var fileName: String
        public var objectURL: String
        public init(fileName: String, objectURL: String) { (self.fileName, self.objectURL) = (fileName, objectURL) }
    }

    public static func events(session: SessionRecord, clientIDs: [String: String], objects: [UploadedObject], now: Int64) -> [WebhookEvent] {
        let urls = Dictionary(objects.map { ($0.fileName, $0.objectURL) }, uniquingKeysWith: { first, _ in first })
        let layout = ArchiveLayout(recordingsRoot: "", recordingID: session.id)
        var events: [WebhookEvent] = []
        for object in objects.sorted(by: { (rank($0.fileName), $0.fileName) < (rank($1.fileName), $1.fileName) }) {
            var fields: [String: Any] = ["recording_id": session.id, "channel_id": session.channelID, "filename": object.fileName,
                                         "file_url": object.objectURL]
            let type: String
            switch ArchiveFile(name: object.fileName) {
            case .media(let connectionID, let part):
                // As the uploader: the event goes once the sidecar is up too.
                let sidecar = layout.sidecarFilename(connectionID: connectionID, part: part)
                guard let sidecarURL = urls[sidecar] else { continue }
                type = part == 0 ? "archive.uploaded" : "split-archive.uploaded"
                fields.merge(sender(connectionID, session: session, clientIDs: clientIDs)) { $1 }
                (fields["metadata_filename"], fields["metadata_file_url"]) = (sidecar, sidecarURL)
            case .splitEnd(let connectionID):
                type = "split-archive-end.uploaded"
                fields.merge(sender(connectionID, session: session, clientIDs: clientIDs)) { $1 }
            case .report:
                type = "recording-report.uploaded"
            default:
                continue
            }
            events.append(WebhookEvent(uploaded: type, sessionID: session.id, fields: fields, timestampMilliseconds: now,
                                       id: stableID(object.objectURL + "\u{0}" + type)))
        }
        return events
    }

    private static func sender(_ connectionID: String, session: SessionRecord, clientIDs: [String: String]) -> [String: Any] {
        ["connection_id": connectionID, "session_id": session.soraSessionID ?? "", "client_id": clientIDs[connectionID] ?? ""]
    }

    /// The report's event last, as the uploader sends it once everything else is up.
    private static func rank(_ name: String) -> Int { ArchiveFile(name: name)?.uploadRank ?? 0 }

    /// A ULID-shaped id (Sora's id shape) made from SHA-256 of `text` instead of time and randomness.
    static func stableID(_ text: String) -> String {
        let digest = Array(SHA256.hash(data: Array(text.utf8)))
        let milliseconds = digest[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return ULID(milliseconds: milliseconds, randomBytes: Array(digest[6..<16])).string
    }
}
