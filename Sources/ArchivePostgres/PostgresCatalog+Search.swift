import Archive
import Foundation
import PostgresNIO

extension PostgresCatalog: MessageSearchStore {
    /// ILIKE '%…%' over the searched text, which pg_trgm's GIN index answers (from three
    /// characters; shorter queries scan).
    public func searchMessages(_ search: MessageSearch) throws(CatalogError) -> [MessageMatch] {
        let columns = EventRecord.selectColumns.split(separator: ",").map { "e." + $0.trimmingCharacters(in: .whitespaces) }
        var query = FilteredQuery("""
            SELECT \(columns.joined(separator: ", ")), s.channel_id AS matched_channel FROM events e JOIN sessions s ON s.id = e.session_id
            """)
        query.require("coalesce(e.search_text, e.payload_text) ILIKE ", search.likePattern)
        query.require("e.kind = ANY(", search.kinds.map(\.rawValue), ")")
        if let channel = search.channelID { query.require("s.channel_id = ", channel) }
        if let session = search.sessionID { query.require("e.session_id = ", session) }
        if let since = search.since { query.require("e.received_at >= ", since) }
        if let until = search.until { query.require("e.received_at < ", until) }
        query.finish(orderBy: "e.received_at DESC, e.id DESC", limit: search.limit)
        return try fetch(query) { row in
            MessageMatch(event: try EventRecord(postgres: row), channelID: try RowReader(row)("matched_channel"))
        }
    }

    /// pg_trgm makes trigrams only of what the database's LC_CTYPE calls letters: under C or
    /// POSIX, Japanese gets none, so such a query scans (still correct, only slow).
    public func searchIndexCaveat() throws(CatalogError) -> String? {
        let query = FilteredQuery("SELECT datctype FROM pg_database WHERE datname = current_database()")
        guard let ctype = try fetch(query, { row in try row.decode(String.self) }).first else { return nil }
        let name = ctype.lowercased()
        guard name == "c" || name == "posix" || !(name.contains("utf8") || name.contains("utf-8")) else { return nil }
        return "the PostgreSQL database's LC_CTYPE is \(ctype): its trigram index skips non-ASCII text, so searching " +
            "Japanese scans every message (see docs/usage.md#searching-messages: create the database with a UTF-8 locale)"
    }
}
