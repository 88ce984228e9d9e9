import GRDB

extension Catalog: MessageSearchStore {
    /// Newest first. FTS5 hands its matches over fastest in rowid (storage) order, and events
    /// are stored as they arrive, so the newest matches are found among the last stored: the
    /// first window of matches in storage order is sorted by arrival, and kept when no event
    /// stored before the window arrived later than the last result (a spool replayed late
    /// would). Otherwise, and for queries too short for trigrams, the catalog sorts every
    /// match by arrival time.
    public func searchMessages(_ search: MessageSearch) throws(CatalogError) -> [MessageMatch] {
        try read { db in
            guard search.usesTrigrams else { return try Self.matches(db, search, order: .arrival, limit: search.limit) }
            let window = max(search.limit * 20, 1_000)
            let stored = try Self.matches(db, search, order: .storage, limit: window)
            let newest = Array(stored.sorted(by: Self.newerFirst).prefix(search.limit))
            guard stored.count == window, let last = newest.last, let lowestID = stored.compactMap(\.event.id).min() else { return newest }
            let arrivedLater = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM events WHERE received_at > ? AND id < ?)",
                                                 arguments: [last.event.receivedAt, lowestID]) ?? true
            return arrivedLater ? try Self.matches(db, search, order: .arrival, limit: search.limit) : newest
        }
    }

    enum SearchOrder { case storage, arrival }

    static func newerFirst(_ a: MessageMatch, _ b: MessageMatch) -> Bool {
        (a.event.receivedAt, a.event.id ?? 0) > (b.event.receivedAt, b.event.id ?? 0)
    }

    private static func matches(_ db: Database, _ search: MessageSearch, order: SearchOrder, limit: Int) throws -> [MessageMatch] {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        func require(_ condition: String, _ values: [any DatabaseValueConvertible]) {
            conditions.append(condition)
            _ = arguments.append(contentsOf: StatementArguments(values))
        }
        let source: String
        if search.usesTrigrams {
            // A phrase of the query's trigrams: an exact (case-folded) substring.
            source = "event_search JOIN events e ON e.id = event_search.rowid"
            require("event_search MATCH ?", [phrase(search.text)])
        } else {
            source = "events e"
            require("coalesce(e.search_text, e.payload_text) LIKE ? ESCAPE '\\'", [search.likePattern])
        }
        require("e.kind IN (\(databaseQuestionMarks(count: search.kinds.count)))", search.kinds.map(\.rawValue))
        if let channel = search.channelID { require("s.channel_id = ?", [channel]) }
        if let session = search.sessionID { require("e.session_id = ?", [session]) }
        if let since = search.since { require("e.received_at >= ?", [since]) }
        if let until = search.until { require("e.received_at < ?", [until]) }
        _ = arguments.append(contentsOf: [limit])
        let orderBy = order == .storage ? "event_search.rowid DESC" : "e.received_at DESC, e.id DESC"
        let rows = try Row.fetchAll(db, sql: """
            SELECT e.*, s.channel_id AS matched_channel FROM \(source) JOIN sessions s ON s.id = e.session_id
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(orderBy) LIMIT ?
            """, arguments: arguments)
        return try rows.map { row in MessageMatch(event: try EventRecord(row: row).catalogLoaded, channelID: row["matched_channel"]) }
    }

    /// An FTS5 string: the query in double quotes, quotes inside doubled, so no character of
    /// it is read as query syntax.
    static func phrase(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
