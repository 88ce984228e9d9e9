import GRDB

public struct SessionFilter: Sendable {
    public var channelID: String?
    /// Sessions that started at or after this time (Unix ms).
    public var since: Int64?
    /// Sessions that started before this time (Unix ms).
    public var until: Int64?
    public var limit: Int?

    public init(channelID: String? = nil, since: Int64? = nil, until: Int64? = nil, limit: Int? = nil) {
        self.channelID = channelID
        self.since = since
        self.until = until
        self.limit = limit
    }
}

public struct RecordingFilter: Sendable {
    public var sessionID: String?
    public var connectionID: String?
    public var channelID: String?
    public var limit: Int?
    /// Only finished recordings `recbot verify` has not looked at yet.
    public var unverifiedOnly = false
    /// Only recordings whose file is on this host's disk.
    public var host: String?

    public init(sessionID: String? = nil, connectionID: String? = nil, channelID: String? = nil, limit: Int? = nil, unverifiedOnly: Bool = false,
                host: String? = nil) {
        self.sessionID = sessionID
        self.connectionID = connectionID
        self.channelID = channelID
        self.limit = limit
        self.unverifiedOnly = unverifiedOnly
        self.host = host
    }
}

public struct UploadFilter: Sendable {
    public var sessionID: String?
    /// Uploads to objects under this URL (`s3://bucket/prefix/`).
    public var objectURLPrefix: String?
    public var status: UploadStatus?

    public init(sessionID: String? = nil, objectURLPrefix: String? = nil, status: UploadStatus? = nil) {
        (self.sessionID, self.objectURLPrefix, self.status) = (sessionID, objectURLPrefix, status)
    }
}

public struct EventFilter: Sendable {
    public var sessionID: String
    public var kind: EventKind?
    public var eventType: String?
    public var label: String?
    public var limit: Int?

    public init(sessionID: String, kind: EventKind? = nil, eventType: String? = nil, label: String? = nil, limit: Int? = nil) {
        self.sessionID = sessionID
        self.kind = kind
        self.eventType = eventType
        self.label = label
        self.limit = limit
    }
}

public struct EventCount: Sendable, Equatable {
    public var kind: EventKind
    public var count: Int

    public init(kind: EventKind, count: Int) { (self.kind, self.count) = (kind, count) }
}

extension Catalog {
    /// Newest first.
    public func sessions(_ filter: SessionFilter) throws(CatalogError) -> [SessionRecord] {
        try read { db in
            var request = SessionRecord.all()
            if let channel = filter.channelID { request = request.filter(Column("channel_id") == channel) }
            if let since = filter.since { request = request.filter(Column("started_at") >= since) }
            if let until = filter.until { request = request.filter(Column("started_at") < until) }
            request = request.order(Column("started_at").desc, Column("id").desc)
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db).map(\.catalogLoaded)
        }
    }

    public func session(id: String) throws(CatalogError) -> SessionRecord? {
        try read { db in try SessionRecord.fetchOne(db, key: id)?.catalogLoaded }
    }

    public func connections(sessionID: String) throws(CatalogError) -> [ConnectionRecord] {
        try read { db in
            try ConnectionRecord.filter(Column("session_id") == sessionID)
                .order(Column("first_seen_at"), Column("id")).fetchAll(db).map(\.catalogLoaded)
        }
    }

    public func interruptions(sessionID: String) throws(CatalogError) -> [InterruptionRecord] {
        try read { db in
            try InterruptionRecord.filter(Column("session_id") == sessionID).order(Column("ordinal")).fetchAll(db).map(\.catalogLoaded)
        }
    }

    public func recording(id: Int64) throws(CatalogError) -> RecordingRecord? {
        try read { db in try RecordingRecord.fetchOne(db, key: id)?.catalogLoaded }
    }

    /// The recording stored at this catalog path (relative to the data directory).
    public func recording(path: String) throws(CatalogError) -> RecordingRecord? {
        try read { db in try RecordingRecord.filter(Column("path") == path).fetchOne(db)?.catalogLoaded }
    }

    /// Oldest first, within a session by sender and part.
    public func recordings(_ filter: RecordingFilter) throws(CatalogError) -> [RecordingRecord] {
        try read { db in
            var request = RecordingRecord.all()
            if let session = filter.sessionID { request = request.filter(Column("session_id") == session) }
            if let connection = filter.connectionID { request = request.filter(Column("connection_id") == connection) }
            if let host = filter.host { request = request.filter(Column("host") == host) }
            if filter.unverifiedOnly { request = request.filter(Column("verification") == nil && Column("status") != RecordingStatus.recording.rawValue) }
            if let channel = filter.channelID {
                request = request.filter(
                    sql: "session_id IN (SELECT id FROM sessions WHERE channel_id = ?)", arguments: [channel])
            }
            request = request.order(Column("started_at"), Column("connection_id"), Column("part"), Column("id"))
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db).map(\.catalogLoaded)
        }
    }

    /// In arrival order.
    public func events(_ filter: EventFilter) throws(CatalogError) -> [EventRecord] {
        try read { db in
            var request = EventRecord.filter(Column("session_id") == filter.sessionID)
            if let kind = filter.kind { request = request.filter(Column("kind") == kind.rawValue) }
            if let type = filter.eventType { request = request.filter(Column("event_type") == CatalogText.stored(type)) }
            if let label = filter.label { request = request.filter(Column("label") == CatalogText.stored(label)) }
            request = request.order(Column("received_at"), Column("id"))
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db).map(\.catalogLoaded)
        }
    }

    public func eventCounts(sessionID: String) throws(CatalogError) -> [EventCount] {
        try read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT kind, count(*) AS n FROM events WHERE session_id = ? GROUP BY kind ORDER BY kind",
                arguments: [sessionID])
            return rows.compactMap { row in
                EventKind(rawValue: row["kind"]).map { EventCount(kind: $0, count: row["n"]) }
            }
        }
    }

    public func uploads(_ filter: UploadFilter) throws(CatalogError) -> [UploadRecord] {
        try read { db in
            var request = UploadRecord.all()
            if let session = filter.sessionID { request = request.filter(Column("session_id") == session) }
            if let prefix = filter.objectURLPrefix {
                // substr, not LIKE: a prefix may hold % or _ and LIKE ignores case.
                request = request.filter(sql: "substr(object_url, 1, ?) = ?", arguments: [prefix.unicodeScalars.count, prefix])
            }
            if let status = filter.status { request = request.filter(Column("status") == status.rawValue) }
            return try request.order(Column("session_id"), Column("id")).fetchAll(db).map(\.catalogLoaded)
        }
    }
}
