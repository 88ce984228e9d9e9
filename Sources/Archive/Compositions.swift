import GRDB

/// A file `recbot compose` wrote: a session's senders on its timeline in one WebM.
public struct CompositionRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "compositions"

    public var sessionID: String
    /// Relative to the data directory when the file is inside it, else absolute.
    public var path: String
    public var captionsPath: String?
    /// `grid` (the automatic grid).
    public var layout: String
    /// Where it starts on the session's timeline, and how long it is (milliseconds).
    public var fromMs: Int64
    public var durationMs: Int64
    public var width: Int
    public var height: Int
    public var fps: Int
    public var videoCodec: String
    public var audioCodec: String
    public var senders: Int
    public var bytes: Int64?
    public var host: String?
    /// Unix milliseconds.
    public var composedAt: Int64

    public init(sessionID: String, path: String, captionsPath: String?, layout: String, fromMs: Int64, durationMs: Int64, width: Int, height: Int,
                fps: Int, videoCodec: String, audioCodec: String, senders: Int, bytes: Int64?, host: String?, composedAt: Int64) {
        (self.sessionID, self.path, self.captionsPath, self.layout) = (sessionID, path, captionsPath, layout)
        (self.fromMs, self.durationMs, self.width, self.height, self.fps) = (fromMs, durationMs, width, height, fps)
        (self.videoCodec, self.audioCodec, self.senders, self.bytes, self.host, self.composedAt) = (videoCodec, audioCodec, senders, bytes, host, composedAt)
    }

    enum CodingKeys: String, CodingKey {
        case path, layout, width, height, fps, senders, bytes, host
        case sessionID = "session_id", captionsPath = "captions_path", fromMs = "from_ms", durationMs = "duration_ms"
        case videoCodec = "video_codec", audioCodec = "audio_codec", composedAt = "composed_at"
    }
}

public struct CompositionFilter: Sendable {
    public var sessionID: String?
    public var channelID: String?
    public var limit: Int?

    public init(sessionID: String? = nil, channelID: String? = nil, limit: Int? = nil) {
        (self.sessionID, self.channelID, self.limit) = (sessionID, channelID, limit)
    }
}

/// The catalog's compositions, in either catalog.
public protocol CompositionStore {
    /// Inserts the composition, or replaces the row its session and path already have.
    func saveComposition(_ composition: CompositionRecord) throws(CatalogError)
    /// Oldest first (by when they were composed), then by session and path.
    func compositions(_ filter: CompositionFilter) throws(CatalogError) -> [CompositionRecord]
    /// Deletes the session's rows for these paths (files a prune removed); how many went.
    func removeCompositions(sessionID: String, paths: [String]) throws(CatalogError) -> Int
}

extension Catalog: CompositionStore {
    public func saveComposition(_ composition: CompositionRecord) throws(CatalogError) {
        try write { db in try composition.save(db) }
    }

    public func compositions(_ filter: CompositionFilter) throws(CatalogError) -> [CompositionRecord] {
        try read { db in
            var request = CompositionRecord.all()
            if let session = filter.sessionID { request = request.filter(Column("session_id") == session) }
            if let channel = filter.channelID {
                request = request.filter(sql: "session_id IN (SELECT id FROM sessions WHERE channel_id = ?)", arguments: [channel])
            }
            request = request.order(Column("composed_at"), Column("session_id"), Column("path"))
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db)
        }
    }

    public func removeCompositions(sessionID: String, paths: [String]) throws(CatalogError) -> Int {
        guard !paths.isEmpty else { return 0 }
        return try write { db in
            try CompositionRecord.filter(Column("session_id") == sessionID && paths.contains(Column("path"))).deleteAll(db)
        }
    }
}
