import Archive
import PostgresNIO

/// Sessions recorded by more than one process, in PostgreSQL: the same contract as the SQLite
/// catalog's. A reopen locks the session's row, so two workers cannot both continue it.
extension PostgresCatalog {
    public func reopenSession(_ reopen: SessionReopen) throws(CatalogError) -> SessionRecord {
        let location = self.location
        return try link.transaction { db in
            let rows = try db.query("SELECT \(unescaped: SessionRecord.selectColumns) FROM sessions WHERE id = \(reopen.sessionID) FOR UPDATE").rows
            guard var session = try rows.first.map(SessionRecord.init(postgres:)) else {
                throw CatalogError(path: location, reason: .notFound("session \(reopen.sessionID)"))
            }
            var fenceHeld = false
            if let fence = reopen.jobFence {
                fenceHeld = try !db.query("SELECT 1 FROM jobs WHERE id = \(reopen.sessionID) AND fence = \(fence) AND state = 'running'").rows.isEmpty
            }
            if let refusal = reopen.refusal(of: session, fenceHeld: fenceHeld) { throw CatalogError(path: location, reason: .superseded(refusal)) }
            let previous = Int64(session.segment ?? SessionSegmentRecord.first)
            try db.query("""
                UPDATE session_segments SET ended_at = coalesce(ended_at, \(session.endedAt)),
                end_reason = coalesce(end_reason, \(CatalogText.stored(session.endReason))),
                exit_status = coalesce(exit_status, \(session.exitStatus.map(Int64.init)))
                WHERE session_id = \(reopen.sessionID) AND segment = \(previous)
                """)
            let newest = try db.query("SELECT max(segment) FROM session_segments WHERE session_id = \(reopen.sessionID)").rows.first?
                .decode(Int64?.self) ?? nil
            let next = max(newest ?? previous, previous) + 1
            try db.query("""
                INSERT INTO session_segments (session_id, segment, hostname, pid, job_fence, recbot_version, started_at)
                VALUES (\(reopen.sessionID), \(next), \(reopen.hostname), \(reopen.pid.map(Int64.init)), \(reopen.jobFence),
                \(reopen.recbotVersion), \(reopen.now))
                """)
            try db.query("""
                UPDATE sessions SET segment = \(next), hostname = \(reopen.hostname), pid = \(reopen.pid.map(Int64.init)),
                recbot_version = coalesce(\(reopen.recbotVersion), recbot_version), ended_at = NULL, end_reason = NULL, exit_status = NULL
                WHERE id = \(reopen.sessionID)
                """)
            (session.segment, session.hostname, session.pid) = (Int(next), reopen.hostname, reopen.pid)
            (session.endedAt, session.endReason, session.exitStatus) = (nil, nil, nil)
            session.recbotVersion = reopen.recbotVersion ?? session.recbotVersion
            return session
        }
    }

    public func segments(sessionID: String) throws(CatalogError) -> [SessionSegmentRecord] {
        try link.withConnection { db in
            try db.query("""
                SELECT session_id, segment, hostname, pid, job_fence, recbot_version, started_at, ended_at, end_reason, exit_status
                FROM session_segments WHERE session_id = \(sessionID) ORDER BY segment
                """).rows.map { row in
                let value = RowReader(row)
                return SessionSegmentRecord(
                    sessionID: try value("session_id"), segment: Int(try value("segment", as: Int64.self)), hostname: try value("hostname"),
                    pid: try value("pid", as: Int64?.self).map { Int($0) }, jobFence: try value("job_fence"), recbotVersion: try value("recbot_version"),
                    startedAt: try value("started_at"), endedAt: try value("ended_at"),
                    endReason: CatalogText.loaded(try value("end_reason", as: String?.self)),
                    exitStatus: try value("exit_status", as: Int64?.self).map { Int($0) })
            }
        }
    }

    public func endSegment(id: String, segment: Int, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError) {
        let location = self.location
        try link.transaction { db in
            let (reason, status, segment) = (CatalogText.stored(endReason), exitStatus.map(Int64.init), Int64(segment))
            try db.query("""
                UPDATE session_segments SET ended_at = \(endedAt), end_reason = \(reason), exit_status = \(status)
                WHERE session_id = \(id) AND segment = \(segment)
                """)
            let changed = try db.changes("""
                UPDATE sessions SET ended_at = \(endedAt), end_reason = \(reason), exit_status = \(status)
                WHERE id = \(id) AND coalesce(segment, 1) = \(segment)
                """)
            guard changed == 0 else { return }
            guard try !db.query("SELECT 1 FROM sessions WHERE id = \(id)").rows.isEmpty else {
                throw CatalogError(path: location, reason: .notFound("session \(id)"))
            }
        }
    }
}
