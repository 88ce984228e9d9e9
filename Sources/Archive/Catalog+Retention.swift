import GRDB

/// Retention in SQLite: each change is one write transaction.
extension Catalog {
    public func holdSession(id: String, at: Int64?, reason: String?) throws(CatalogError) -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE sessions SET held_at = ?, hold_reason = ? WHERE id = ?",
                           arguments: [at, at == nil ? nil : CatalogText.stored(reason), id])
            return db.changesCount == 1
        }
    }

    public func markPruned(sessionID: String, host: String?, at: Int64, deletingEvents: Bool) throws(CatalogError) -> PruneMark {
        let path = self.path
        return try write { db in
            guard let session = try SessionRecord.fetchOne(db, key: sessionID) else {
                throw CatalogError(path: path, reason: .notFound("session \(sessionID)"))
            }
            if let refusal = PruneMark.refusal(session) { throw CatalogError(path: path, reason: .superseded(refusal)) }
            try db.execute(sql: "UPDATE recordings SET pruned_at = ? WHERE session_id = ? AND pruned_at IS NULL AND (? IS NULL OR coalesce(host, ?) = ?)",
                           arguments: [at, sessionID, host, host, host])
            let recordings = db.changesCount
            let left = try Int.fetchOne(db, sql: "SELECT count(*) FROM recordings WHERE session_id = ? AND pruned_at IS NULL", arguments: [sessionID]) ?? 0
            if left == 0 { try db.execute(sql: "UPDATE sessions SET pruned_at = coalesce(pruned_at, ?) WHERE id = ?", arguments: [at, sessionID]) }
            var events = 0
            if deletingEvents {
                try db.execute(sql: "DELETE FROM events WHERE session_id = ?", arguments: [sessionID])
                events = db.changesCount
            }
            return PruneMark(recordings: recordings, sessionPruned: left == 0, eventsDeleted: events)
        }
    }
}
