import Archive
import PostgresNIO

/// Retention in PostgreSQL: the same contract as the SQLite catalog's. The prune mark locks
/// the session's row, so a hold and a prune of one session are never both taken.
extension PostgresCatalog {
    public func holdSession(id: String, at: Int64?, reason: String?) throws(CatalogError) -> Bool {
        try link.withConnection { db in
            try db.changes("UPDATE sessions SET held_at = \(at), hold_reason = \(at == nil ? nil : CatalogText.stored(reason)) WHERE id = \(id)") == 1
        }
    }

    public func markPruned(sessionID: String, host: String?, at: Int64, deletingEvents: Bool) throws(CatalogError) -> PruneMark {
        let location = self.location
        return try link.transaction { db in
            let rows = try db.query("SELECT \(unescaped: SessionRecord.selectColumns) FROM sessions WHERE id = \(sessionID) FOR UPDATE").rows
            guard let session = try rows.first.map(SessionRecord.init(postgres:)) else {
                throw CatalogError(path: location, reason: .notFound("session \(sessionID)"))
            }
            if let refusal = PruneMark.refusal(session) { throw CatalogError(path: location, reason: .superseded(refusal)) }
            let recordings = try db.changes("""
                UPDATE recordings SET pruned_at = \(at) WHERE session_id = \(sessionID) AND pruned_at IS NULL
                AND (\(host)::text IS NULL OR coalesce(host, \(host)) = \(host))
                """)
            let left = try db.query("SELECT count(*) FROM recordings WHERE session_id = \(sessionID) AND pruned_at IS NULL").rows.first?
                .decode(Int64.self) ?? 0
            if left == 0 { try db.query("UPDATE sessions SET pruned_at = coalesce(pruned_at, \(at)) WHERE id = \(sessionID)") }
            let events = deletingEvents ? try db.changes("DELETE FROM events WHERE session_id = \(sessionID)") : 0
            return PruneMark(recordings: recordings, sessionPruned: left == 0, eventsDeleted: events)
        }
    }
}
