import Archive
import PostgresNIO

/// The query commands' questions, answered in the SQLite catalog's order. Text is ordered with
/// COLLATE "C" (byte order, as SQLite's BINARY), whatever the database's locale.
extension PostgresCatalog {
    public func sessions(_ filter: SessionFilter) throws(CatalogError) -> [SessionRecord] {
        var query = FilteredQuery("SELECT \(SessionRecord.selectColumns) FROM sessions")
        if let channel = filter.channelID { query.require("channel_id = ", channel) }
        if let since = filter.since { query.require("started_at >= ", since) }
        if let until = filter.until { query.require("started_at < ", until) }
        query.finish(orderBy: "started_at DESC, id COLLATE \"C\" DESC", limit: filter.limit)
        return try fetch(query, SessionRecord.init(postgres:))
    }

    public func session(id: String) throws(CatalogError) -> SessionRecord? {
        var query = FilteredQuery("SELECT \(SessionRecord.selectColumns) FROM sessions")
        query.require("id = ", id)
        return try fetch(query, SessionRecord.init(postgres:)).first
    }

    public func connections(sessionID: String) throws(CatalogError) -> [ConnectionRecord] {
        var query = FilteredQuery("SELECT \(ConnectionRecord.selectColumns) FROM connections")
        query.require("session_id = ", sessionID)
        query.finish(orderBy: "first_seen_at, id", limit: nil)
        return try fetch(query, ConnectionRecord.init(postgres:))
    }

    public func interruptions(sessionID: String) throws(CatalogError) -> [InterruptionRecord] {
        var query = FilteredQuery("SELECT \(InterruptionRecord.selectColumns) FROM interruptions")
        query.require("session_id = ", sessionID)
        query.finish(orderBy: "ordinal", limit: nil)
        return try fetch(query, InterruptionRecord.init(postgres:))
    }

    public func recording(id: Int64) throws(CatalogError) -> RecordingRecord? {
        var query = FilteredQuery("SELECT \(RecordingRecord.selectColumns) FROM recordings")
        query.require("id = ", id)
        return try fetch(query, RecordingRecord.init(postgres:)).first
    }

    public func recording(path: String) throws(CatalogError) -> RecordingRecord? {
        var query = FilteredQuery("SELECT \(RecordingRecord.selectColumns) FROM recordings")
        query.require("path = ", path)
        query.finish(orderBy: "id", limit: 1)
        return try fetch(query, RecordingRecord.init(postgres:)).first
    }

    public func recordings(_ filter: RecordingFilter) throws(CatalogError) -> [RecordingRecord] {
        var query = FilteredQuery("SELECT \(RecordingRecord.selectColumns) FROM recordings")
        if let session = filter.sessionID { query.require("session_id = ", session) }
        if let connection = filter.connectionID { query.require("connection_id = ", connection) }
        if let host = filter.host { query.require("host = ", host) }
        if filter.unverifiedOnly { query.require("verification IS NULL AND status <> 'recording'") }
        if let channel = filter.channelID { query.require("session_id IN (SELECT id FROM sessions WHERE channel_id = ", channel, ")") }
        query.finish(orderBy: "started_at, connection_id COLLATE \"C\", part, id", limit: filter.limit)
        return try fetch(query, RecordingRecord.init(postgres:))
    }

    public func events(_ filter: EventFilter) throws(CatalogError) -> [EventRecord] {
        var query = FilteredQuery("SELECT \(EventRecord.selectColumns) FROM events")
        query.require("session_id = ", filter.sessionID)
        if let kind = filter.kind { query.require("kind = ", kind.rawValue) }
        if let type = filter.eventType { query.require("event_type = ", CatalogText.stored(type)) }
        if let label = filter.label { query.require("label = ", CatalogText.stored(label)) }
        query.finish(orderBy: "received_at, id", limit: filter.limit)
        return try fetch(query, EventRecord.init(postgres:))
    }

    public func uploads(_ filter: UploadFilter) throws(CatalogError) -> [UploadRecord] {
        var query = FilteredQuery("SELECT \(UploadRecord.selectColumns) FROM uploads")
        if let session = filter.sessionID { query.require("session_id = ", session) }
        if let prefix = filter.objectURLPrefix { query.require("starts_with(object_url, ", prefix, ")") }
        if let status = filter.status { query.require("status = ", status.rawValue) }
        query.finish(orderBy: "session_id COLLATE \"C\", id", limit: nil)
        return try fetch(query, UploadRecord.init(postgres:))
    }

    public func eventCounts(sessionID: String) throws(CatalogError) -> [EventCount] {
        try link.withConnection { db in
            let rows = try db.query("""
                SELECT kind, count(*) FROM events WHERE session_id = \(sessionID) GROUP BY kind ORDER BY kind COLLATE "C"
                """)
            return try rows.rows.compactMap { row in
                let (kind, count) = try row.decode((String, Int64).self)
                return EventKind(rawValue: kind).map { EventCount(kind: $0, count: Int(count)) }
            }
        }
    }

    func fetch<Record>(_ query: FilteredQuery, _ decode: (PostgresRow) throws -> Record) throws(CatalogError) -> [Record] {
        try link.withConnection { db in
            try db.query(PostgresQuery(unsafeSQL: query.sql, binds: query.binds)).rows.map(decode)
        }
    }
}

/// A SELECT with AND-ed conditions whose values become binds ($1, $2…), never SQL text.
struct FilteredQuery {
    private(set) var sql: String
    private(set) var binds = PostgresBindings()
    private var conditions = 0

    init(_ select: String) { sql = select }

    /// `prefix $n suffix`, or the bare condition when there is no value.
    mutating func require<Value: PostgresDynamicTypeEncodable>(_ prefix: String, _ value: Value, _ suffix: String = "") {
        binds.append(value)
        append("\(prefix)$\(binds.count)\(suffix)")
    }

    mutating func require(_ condition: String) { append(condition) }

    mutating func finish(orderBy: String, limit: Int?) {
        sql += " ORDER BY \(orderBy)"
        if let limit {
            binds.append(Int64(limit))
            sql += " LIMIT $\(binds.count)"
        }
    }

    private mutating func append(_ condition: String) {
        sql += (conditions == 0 ? " WHERE " : " AND ") + condition
        conditions += 1
    }
}
