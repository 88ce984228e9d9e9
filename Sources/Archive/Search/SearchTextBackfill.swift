import Foundation
import GRDB

/// Migration 0017 adds `events.search_text`; the events stored before it get theirs here, in
/// Swift (UTF-8 validation and JSON unescaping are not SQL), in batches by id.
public enum SearchTextBackfill {
    public static let migration = "0017_message_search"
    public static let batchSize = 1_000

    /// Rows whose searched text may differ from `payload_text` (the rest need nothing).
    public static let candidates = """
        (payload_format = 'binary' OR (payload_format = 'json' AND strpos(payload_text, '\\') > 0) \
        OR octet_length(payload_text) > \(SearchText.maximumBytes))
        """

    /// The payload a row of (format, text, bytes) holds.
    public static func payload(format: String, text: String?, bytes: [UInt8]?) -> EventPayload {
        switch format {
        case "json": .json(CatalogText.loaded(text ?? ""))
        case "text": .text(CatalogText.loaded(text ?? ""))
        default: .binary(bytes ?? [])
        }
    }

    static func run(_ db: Database) throws {
        // SQLite has instr and length(blob) where PostgreSQL has strpos and octet_length.
        let condition = candidates.replacingOccurrences(of: "strpos(", with: "instr(")
            .replacingOccurrences(of: "octet_length(payload_text)", with: "length(CAST(payload_text AS BLOB))")
        var after: Int64 = 0
        while true {
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, payload_format, payload_text, payload_blob FROM events WHERE id > ? AND \(condition) ORDER BY id LIMIT ?
                """, arguments: [after, batchSize])
            guard let last = rows.last else { return }
            for row in rows {
                let blob: Data? = row["payload_blob"]
                let payload = payload(format: row["payload_format"], text: row["payload_text"], bytes: blob.map { Array($0) })
                if let text = SearchText.of(payload) {
                    try db.execute(sql: "UPDATE events SET search_text = ? WHERE id = ?", arguments: [text, row["id"] as Int64])
                }
            }
            after = last["id"]
        }
    }
}
