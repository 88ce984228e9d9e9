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
}
