import GRDB

/// Sessions recorded by more than one process, in SQLite: each change is one write transaction.
extension Catalog {
    public func reopenSession(_ reopen: SessionReopen) throws(CatalogError) -> SessionRecord {
        let path = self.path
        return try write { db in
            guard var session = try SessionRecord.fetchOne(db, key: reopen.sessionID)?.catalogLoaded else {
                throw CatalogError(path: path, reason: .notFound("session \(reopen.sessionID)"))
            }
            let fenceHeld = try reopen.jobFence.map { fence in
                try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM jobs WHERE id = ? AND fence = ? AND state = 'running'",
                                  arguments: [reopen.sessionID, fence]) ?? false
            } ?? false
            if let refusal = reopen.refusal(of: session, fenceHeld: fenceHeld) { throw CatalogError(path: path, reason: .superseded(refusal)) }
            let previous = session.segment ?? SessionSegmentRecord.first
            // The previous process's end, when it wrote one (a crash leaves it open).
            try db.execute(sql: """
                UPDATE session_segments SET ended_at = coalesce(ended_at, ?), end_reason = coalesce(end_reason, ?), exit_status = coalesce(exit_status, ?)
                WHERE session_id = ? AND segment = ?
                """, arguments: [session.endedAt, CatalogText.stored(session.endReason), session.exitStatus, reopen.sessionID, previous])
            let next = (try Int.fetchOne(db, sql: "SELECT max(segment) FROM session_segments WHERE session_id = ?", arguments: [reopen.sessionID])
                .map { max($0, previous) } ?? previous) + 1
            try SessionSegmentRecord(sessionID: reopen.sessionID, segment: next, hostname: reopen.hostname, pid: reopen.pid, jobFence: reopen.jobFence,
                                     recbotVersion: reopen.recbotVersion, startedAt: reopen.now).insert(db)
            try db.execute(sql: """
                UPDATE sessions SET segment = ?, hostname = ?, pid = ?, recbot_version = coalesce(?, recbot_version),
                ended_at = NULL, end_reason = NULL, exit_status = NULL WHERE id = ?
                """, arguments: [next, reopen.hostname, reopen.pid, reopen.recbotVersion, reopen.sessionID])
            (session.segment, session.hostname, session.pid) = (next, reopen.hostname, reopen.pid)
            (session.endedAt, session.endReason, session.exitStatus) = (nil, nil, nil)
            session.recbotVersion = reopen.recbotVersion ?? session.recbotVersion
            return session
        }
    }

    public func segments(sessionID: String) throws(CatalogError) -> [SessionSegmentRecord] {
        try read { db in
            try SessionSegmentRecord.filter(Column("session_id") == sessionID).order(Column("segment")).fetchAll(db)
                .map { var row = $0; row.endReason = CatalogText.loaded(row.endReason); return row }
        }
    }

    public func endSegment(id: String, segment: Int, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError) {
        let path = self.path
        try write { db in
            try db.execute(sql: "UPDATE session_segments SET ended_at = ?, end_reason = ?, exit_status = ? WHERE session_id = ? AND segment = ?",
                           arguments: [endedAt, CatalogText.stored(endReason), exitStatus, id, segment])
            try db.execute(sql: "UPDATE sessions SET ended_at = ?, end_reason = ?, exit_status = ? WHERE id = ? AND coalesce(segment, 1) = ?",
                           arguments: [endedAt, CatalogText.stored(endReason), exitStatus, id, segment])
            guard db.changesCount == 0 else { return }
            // Not the current segment: its own row is closed and the session, continued by another process, stays open.
            guard try SessionRecord.exists(db, key: id) else { throw CatalogError(path: path, reason: .notFound("session \(id)")) }
        }
    }
}
