import Archive
import PostgresNIO

/// Writes made by a recording session, as the SQLite catalog makes them (same effects, same
/// errors), in PostgreSQL's SQL.
extension PostgresCatalog {
    public func insertSession(_ session: SessionRecord) throws(CatalogError) {
        let columns = session.postgresColumns
        try link.transaction { db in
            try db.query(PostgresQuery(unsafeSQL: "INSERT INTO sessions \(columns.insertClause)", binds: columns.binds))
            try db.query("""
                INSERT INTO session_segments (session_id, segment, hostname, pid, recbot_version, started_at)
                VALUES (\(session.id), \(Int64(session.segment ?? SessionSegmentRecord.first)), \(session.hostname), \(session.pid.map(Int64.init)),
                \(session.recbotVersion), \(session.startedAt))
                """)
        }
    }

    public func endSession(id: String, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError) {
        let changed = try link.transaction { db in
            let changed = try db.changes("UPDATE sessions SET ended_at = \(endedAt), end_reason = \(CatalogText.stored(endReason)), exit_status = \(exitStatus) WHERE id = \(id)")
            try db.query("""
                UPDATE session_segments SET ended_at = \(endedAt), end_reason = \(CatalogText.stored(endReason)), exit_status = \(exitStatus)
                WHERE session_id = \(id) AND segment = (SELECT coalesce(segment, 1) FROM sessions WHERE id = \(id))
                """)
            return changed
        }
        if changed == 0 { throw CatalogError(path: location, reason: .notFound("session \(id)")) }
    }

    public func updateSession(id: String, soraSessionID: String?, connectionID: String?, clientID: String?, bundleID: String?,
                              signalingURL: String?) throws(CatalogError) {
        try link.withConnection { db in
            try db.query("""
                UPDATE sessions SET sora_session_id = coalesce(\(CatalogText.stored(soraSessionID)), sora_session_id),
                connection_id = coalesce(\(CatalogText.stored(connectionID)), connection_id),
                client_id = coalesce(\(CatalogText.stored(clientID)), client_id),
                bundle_id = coalesce(\(CatalogText.stored(bundleID)), bundle_id), signaling_url = coalesce(\(signalingURL), signaling_url)
                WHERE id = \(id)
                """)
        }
    }

    /// One statement, so concurrent writers of the same connection cannot both insert it.
    @discardableResult
    public func upsertConnection(_ connection: ConnectionRecord) throws(CatalogError) -> ConnectionRecord {
        let columns = connection.postgresColumns
        let keep = ["client_id", "bundle_id", "role", "metadata", "authn_metadata", "authz_metadata", "left_at"]
            .map { "\($0) = coalesce(EXCLUDED.\($0), connections.\($0))" }.joined(separator: ", ")
        return try link.withConnection { db in
            let rows = try db.query(PostgresQuery(unsafeSQL: """
                INSERT INTO connections \(columns.insertClause)
                ON CONFLICT (session_id, connection_id) DO UPDATE SET
                last_seen_at = greatest(connections.last_seen_at, EXCLUDED.last_seen_at), \(keep)
                RETURNING \(ConnectionRecord.selectColumns)
                """, binds: columns.binds))
            guard let row = rows.rows.first else { throw CatalogError(path: location, reason: .server("upsert returned no row")) }
            return try ConnectionRecord(postgres: row)
        }
    }

    @discardableResult
    public func insertRecording(_ recording: RecordingRecord) throws(CatalogError) -> RecordingRecord {
        let columns = recording.postgresColumns
        return try link.withConnection { db in
            var record = recording
            record.id = try Self.insertReturningID(db, table: "recordings", columns: columns)
            return record
        }
    }

    public func updateRecording(_ recording: RecordingRecord) throws(CatalogError) {
        guard let id = recording.id else { throw CatalogError(path: location, reason: .notFound("recording without an id")) }
        let columns = recording.postgresColumns
        var binds = columns.binds
        binds.append(id)
        let changed = try link.withConnection { db in
            try db.changes(PostgresQuery(unsafeSQL: "UPDATE recordings SET \(columns.assignments()) WHERE id = $\(columns.names.count + 1)",
                                         binds: binds))
        }
        if changed == 0 { throw CatalogError(path: location, reason: .notFound("recording \(id)")) }
    }

    @discardableResult
    public func completeRecording(_ recording: RecordingRecord, createdPath: String) throws(CatalogError) -> RecordingRecord {
        let columns = recording.postgresColumns
        return try link.transaction { db in
            var record = recording
            record.id = try db.query("""
                SELECT id FROM recordings WHERE session_id = \(recording.sessionID) AND connection_id = \(recording.connectionID)
                AND path = \(createdPath) AND status = 'recording' FOR UPDATE
                """).rows.first?.decode(Int64.self)
            if let id = record.id {
                var binds = columns.binds
                binds.append(id)
                try db.query(PostgresQuery(unsafeSQL: "UPDATE recordings SET \(columns.assignments()) WHERE id = $\(columns.names.count + 1)",
                                           binds: binds))
            } else {
                record.id = try Self.insertReturningID(db, table: "recordings", columns: columns)
            }
            return record
        }
    }

    public func updateRecordingProgress(sessionID: String, path: String, progress: RecordingProgress) throws(CatalogError) {
        try link.withConnection { db in
            try db.query("""
                UPDATE recordings SET bytes = \(progress.bytes), duration_ms = \(progress.durationMs), video_frames = \(progress.videoFrames),
                audio_frames = \(progress.audioFrames), video_codec = coalesce(\(progress.videoCodec), video_codec)
                WHERE session_id = \(sessionID) AND path = \(path) AND status = 'recording'
                """)
        }
    }

    public func recordSessionCounters(id: String, counters: SessionCounters) throws(CatalogError) {
        try link.withConnection { db in
            try db.query("""
                UPDATE sessions SET events_stored = \(counters.eventsStored), events_refused = \(counters.eventsRefused),
                events_refused_bytes = \(counters.eventsRefusedBytes), messages_dropped = \(counters.messagesDropped),
                catalog_writes_dropped = \(counters.catalogWritesDropped) WHERE id = \(id)
                """)
        }
    }

    public func recordVerification(recordingID: Int64, status: VerificationStatus, at time: Int64, report: String) throws(CatalogError) {
        try link.withConnection { db in
            try db.query("""
                UPDATE recordings SET verification = \(status.rawValue), verified_at = \(time), verification_report = \(CatalogText.stored(report)),
                missing_at = NULL WHERE id = \(recordingID)
                """)
        }
    }

    public func recordMissing(recordingID: Int64, at time: Int64) throws(CatalogError) {
        try link.withConnection { db in try db.query("UPDATE recordings SET missing_at = \(time) WHERE id = \(recordingID)") }
    }

    @discardableResult
    public func saveUpload(_ upload: UploadRecord) throws(CatalogError) -> UploadRecord {
        let columns = upload.postgresColumns
        let upsert = columns.upsert(into: "uploads", conflictKeys: ["session_id", "file_name", "object_url"])
        return try link.withConnection { db in
            let rows = try db.query(PostgresQuery(unsafeSQL: upsert + " RETURNING \(UploadRecord.selectColumns)", binds: columns.binds))
            guard let row = rows.rows.first else { throw CatalogError(path: location, reason: .server("upsert returned no row")) }
            return try UploadRecord(postgres: row)
        }
    }

    public func saveInterruption(_ interruption: InterruptionRecord) throws(CatalogError) {
        let columns = interruption.postgresColumns
        try link.withConnection { db in
            _ = try db.query(PostgresQuery(unsafeSQL: columns.upsert(into: "interruptions", conflictKeys: ["session_id", "ordinal"]), binds: columns.binds))
        }
    }

    public func insertEvents(_ events: [EventRecord]) throws(CatalogError) {
        guard !events.isEmpty else { return }
        // Multi-row INSERTs: one round trip per 1,000 events, not one each (a data-channel
        // flood sends thousands a second, and the server may be a network away).
        try link.transaction { db in
            var start = events.startIndex
            while start < events.endIndex {
                let end = min(start + 1_000, events.endIndex)
                var columns = events[start].postgresColumns
                for event in events[(start + 1)..<end] { columns.append(row: event.postgresColumns) }
                try db.query(PostgresQuery(unsafeSQL: "INSERT INTO events \(columns.insertClause)", binds: columns.binds))
                start = end
            }
        }
    }

    @discardableResult
    public func insertEvent(_ event: EventRecord) throws(CatalogError) -> EventRecord {
        let columns = event.postgresColumns
        return try link.withConnection { db in
            var record = event
            record.id = try Self.insertReturningID(db, table: "events", columns: columns)
            return record
        }
    }

    static func insertReturningID(_ db: PostgresLink.Session, table: String, columns: ColumnValues) throws -> Int64 {
        let rows = try db.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table) \(columns.insertClause) RETURNING id", binds: columns.binds))
        guard let id = try rows.rows.first?.decode(Int64.self) else {
            throw CatalogError(path: "", reason: .server("INSERT INTO \(table) returned no id"))
        }
        return id
    }
}
