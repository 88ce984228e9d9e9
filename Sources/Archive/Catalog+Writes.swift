import GRDB

/// Writes made by a recording session.
extension Catalog {
    public func insertSession(_ session: SessionRecord) throws(CatalogError) {
        try write { db in
            try session.catalogStored.insert(db)
            try SessionSegmentRecord(sessionID: session.id, segment: session.segment ?? SessionSegmentRecord.first, hostname: session.hostname,
                                     pid: session.pid, jobFence: nil, recbotVersion: session.recbotVersion, startedAt: session.startedAt).insert(db)
        }
    }

    /// `exitStatus` is nil when no process reported one (a session `recbot repair` ended).
    public func endSession(id: String, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError) {
        let changed = try write { db in
            try db.execute(
                sql: "UPDATE sessions SET ended_at = ?, end_reason = ?, exit_status = ? WHERE id = ?",
                arguments: [endedAt, CatalogText.stored(endReason), exitStatus, id])
            let changed = db.changesCount
            try db.execute(sql: """
                UPDATE session_segments SET ended_at = ?, end_reason = ?, exit_status = ?
                WHERE session_id = ? AND segment = (SELECT coalesce(segment, 1) FROM sessions WHERE id = ?)
                """, arguments: [endedAt, CatalogText.stored(endReason), exitStatus, id, id])
            return changed
        }
        if changed == 0 { throw CatalogError(path: path, reason: .notFound("session \(id)")) }
    }

    /// Fills in what signaling learned after the session row was created.
    public func updateSession(id: String, soraSessionID: String?, connectionID: String?, clientID: String?, bundleID: String?,
                              signalingURL: String?) throws(CatalogError) {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE sessions SET sora_session_id = coalesce(?, sora_session_id), connection_id = coalesce(?, connection_id),
                    client_id = coalesce(?, client_id), bundle_id = coalesce(?, bundle_id), signaling_url = coalesce(?, signaling_url)
                    WHERE id = ?
                    """,
                arguments: [CatalogText.stored(soraSessionID), CatalogText.stored(connectionID), CatalogText.stored(clientID),
                            CatalogText.stored(bundleID), signalingURL, id])
        }
    }

    /// Inserts the connection, or refreshes it when the session already knows it.
    @discardableResult
    public func upsertConnection(_ connection: ConnectionRecord) throws(CatalogError) -> ConnectionRecord {
        try write { db in
            if var existing = try ConnectionRecord
                .filter(Column("session_id") == connection.sessionID && Column("connection_id") == connection.connectionID)
                .fetchOne(db)?.catalogLoaded
            {
                existing.lastSeenAt = max(existing.lastSeenAt, connection.lastSeenAt)
                existing.clientID = connection.clientID ?? existing.clientID
                existing.bundleID = connection.bundleID ?? existing.bundleID
                existing.role = connection.role ?? existing.role
                existing.metadata = connection.metadata ?? existing.metadata
                existing.authnMetadata = connection.authnMetadata ?? existing.authnMetadata
                existing.authzMetadata = connection.authzMetadata ?? existing.authzMetadata
                existing.leftAt = connection.leftAt ?? existing.leftAt
                try existing.catalogStored.update(db)
                return existing
            }
            return try Self.insert(connection, db)
        }
    }

    @discardableResult
    public func insertRecording(_ recording: RecordingRecord) throws(CatalogError) -> RecordingRecord {
        try write { db in try Self.insert(recording, db) }
    }

    public func updateRecording(_ recording: RecordingRecord) throws(CatalogError) {
        try write { db in try recording.catalogStored.update(db) }
    }

    /// Stores a finished recording over the row its file got when it was created (found by
    /// the path it had then: a first part is renamed when a split follows), or inserts it.
    @discardableResult
    public func completeRecording(_ recording: RecordingRecord, createdPath: String) throws(CatalogError) -> RecordingRecord {
        try write { db in
            var record = recording
            record.id = try Int64.fetchOne(db, sql: "SELECT id FROM recordings WHERE session_id = ? AND connection_id = ? AND path = ? AND status = 'recording'",
                                           arguments: [recording.sessionID, recording.connectionID, createdPath])
            if record.id == nil { return try Self.insert(record, db) }
            try record.catalogStored.update(db)
            return record
        }
    }

    /// What a file holds so far, while it is still being written (every few seconds), so the
    /// catalog is close to the truth even after a kill.
    public func updateRecordingProgress(sessionID: String, path: String, progress: RecordingProgress) throws(CatalogError) {
        try write { db in
            try db.execute(sql: """
                UPDATE recordings SET bytes = ?, duration_ms = ?, video_frames = ?, audio_frames = ?, video_codec = COALESCE(?, video_codec)
                WHERE session_id = ? AND path = ? AND status = 'recording'
                """, arguments: [progress.bytes, progress.durationMs, progress.videoFrames, progress.audioFrames, progress.videoCodec,
                                 sessionID, path])
        }
    }

    /// What the session refused or dropped (events over its limits, messages it could not keep up with).
    public func recordSessionCounters(id: String, counters: SessionCounters) throws(CatalogError) {
        try write { db in
            try db.execute(sql: """
                UPDATE sessions SET events_stored = ?, events_refused = ?, events_refused_bytes = ?, messages_dropped = ?,
                catalog_writes_dropped = ? WHERE id = ?
                """, arguments: [counters.eventsStored, counters.eventsRefused, counters.eventsRefusedBytes, counters.messagesDropped,
                                 counters.catalogWritesDropped, id])
        }
    }

    /// Stores `recbot verify`'s verdict on a recording (the latest run wins).
    public func recordVerification(recordingID: Int64, status: VerificationStatus, at time: Int64, report: String) throws(CatalogError) {
        try write { db in
            try db.execute(sql: "UPDATE recordings SET verification = ?, verified_at = ?, verification_report = ?, missing_at = NULL WHERE id = ?",
                           arguments: [status.rawValue, time, CatalogText.stored(report), recordingID])
        }
    }

    public func recordMissing(recordingID: Int64, at time: Int64) throws(CatalogError) {
        try write { db in try db.execute(sql: "UPDATE recordings SET missing_at = ? WHERE id = ?", arguments: [time, recordingID]) }
    }

    /// Many events in one transaction (a burst of data-channel messages).
    public func insertEvents(_ events: [EventRecord]) throws(CatalogError) {
        try write { db in
            for event in events { _ = try Self.insert(event, db) }
        }
    }

    @discardableResult
    public func insertEvent(_ event: EventRecord) throws(CatalogError) -> EventRecord {
        try write { db in try Self.insert(event, db) }
    }

    @discardableResult
    public func saveUpload(_ upload: UploadRecord) throws(CatalogError) -> UploadRecord {
        try write { db in
            var record = upload
            let existing = try UploadRecord.filter(
                Column("session_id") == upload.sessionID && Column("file_name") == upload.fileName && Column("object_url") == upload.objectURL
            ).fetchOne(db)
            if let existing {
                record.id = existing.id
                try record.catalogStored.update(db)
                return record
            }
            record.id = nil
            return try Self.insert(record, db)
        }
    }

    public func saveInterruption(_ interruption: InterruptionRecord) throws(CatalogError) {
        try write { db in
            var record = interruption
            record.id = try InterruptionRecord.filter(Column("session_id") == interruption.sessionID && Column("ordinal") == interruption.ordinal)
                .fetchOne(db)?.id
            if record.id != nil { try record.catalogStored.update(db) } else { _ = try Self.insert(record, db) }
        }
    }

    /// Inserts a record with its free text escaped (`CatalogText`); returns it as given, with the id it got.
    private static func insert<Record: MutablePersistableRecord & CatalogTextFields & IdentifiedRow>(_ record: Record, _ db: Database) throws -> Record {
        var stored = record.catalogStored
        try stored.insert(db)
        var inserted = record
        inserted.id = stored.id
        return inserted
    }
}

/// A record whose row id the database assigns.
protocol IdentifiedRow {
    var id: Int64? { get set }
}

extension ConnectionRecord: IdentifiedRow {}
extension RecordingRecord: IdentifiedRow {}
extension EventRecord: IdentifiedRow {}
extension UploadRecord: IdentifiedRow {}
extension InterruptionRecord: IdentifiedRow {}
