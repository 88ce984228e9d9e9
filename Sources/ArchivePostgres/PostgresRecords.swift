import Archive
import Foundation
import NIOCore
import PostgresNIO

/// Rows to records and records to column lists: the PostgreSQL side of what GRDB's record
/// protocols do for the SQLite catalog (GRDB has no PostgreSQL backend).
struct ColumnValues {
    private(set) var names: [String] = []
    /// One per value, in order; binds are built when the statement is (a multi-row INSERT
    /// concatenates the rows' values, which PostgresBindings cannot do itself).
    private var values: [(inout PostgresBindings) -> Void] = []
    private(set) var rows = 1

    mutating func add<Value: PostgresDynamicTypeEncodable>(_ name: String, _ value: Value?) {
        names.append(name)
        values.append { $0.append(value) }
    }

    /// Another row with the same columns, for one multi-row INSERT.
    mutating func append(row other: ColumnValues) {
        values += other.values
        rows += 1
    }

    var binds: PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { value(&binds) }
        return binds
    }

    /// `(a, b, c) VALUES ($1, $2, $3)`, with one tuple per row.
    var insertClause: String {
        let tuples = (0..<rows).map { row in "(\(placeholders(from: 1 + row * names.count).joined(separator: ", ")))" }
        return "(\(names.joined(separator: ", "))) VALUES \(tuples.joined(separator: ", "))"
    }

    /// `INSERT INTO table (…) VALUES (…) ON CONFLICT (keys) DO UPDATE SET` every other column
    /// to the new row's value: an insert, or a rewrite of the row the keys already name.
    func upsert(into table: String, conflictKeys keys: [String]) -> String {
        let refresh = names.filter { !keys.contains($0) }.map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        return "INSERT INTO \(table) \(insertClause) ON CONFLICT (\(keys.joined(separator: ", "))) DO UPDATE SET \(refresh)"
    }

    /// `a = $1, b = $2`, numbered from `first`.
    func assignments(from first: Int = 1) -> String {
        zip(names, placeholders(from: first)).map { "\($0) = \($1)" }.joined(separator: ", ")
    }

    private func placeholders(from first: Int) -> [String] { names.indices.map { "$\($0 + first)" } }
}

/// Reads named columns, with the column in the error when a value does not decode.
struct RowReader {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) { self.row = row.makeRandomAccess() }

    func callAsFunction<Value: PostgresDecodable>(_ column: String, as type: Value.Type = Value.self) throws -> Value {
        try row[column].decode(Value.self)
    }
}

extension SessionRecord {
    static let selectColumns = """
        id, channel_id, sora_session_id, connection_id, client_id, bundle_id, signaling_url, recbot_version, hostname, pid,
        started_at, ended_at, end_reason, exit_status, events_stored, events_refused, events_refused_bytes, messages_dropped,
        catalog_writes_dropped, split_duration, split_only, recording_metadata, segment, held_at, hold_reason, retain_until, pruned_at
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(id: try value("id"), channelID: try value("channel_id"), startedAt: try value("started_at"),
                  soraSessionID: try value("sora_session_id"), connectionID: try value("connection_id"), clientID: try value("client_id"),
                  bundleID: try value("bundle_id"), signalingURL: try value("signaling_url"), recbotVersion: try value("recbot_version"),
                  hostname: try value("hostname"), pid: try value("pid"), endedAt: try value("ended_at"), endReason: try value("end_reason"),
                  exitStatus: try value("exit_status"))
        eventsStored = try value("events_stored")
        eventsRefused = try value("events_refused")
        eventsRefusedBytes = try value("events_refused_bytes")
        messagesDropped = try value("messages_dropped")
        catalogWritesDropped = try value("catalog_writes_dropped")
        splitDuration = try value("split_duration")
        splitOnly = try value("split_only", as: Int64?.self).map { $0 != 0 }
        recordingMetadata = try value("recording_metadata")
        segment = try value("segment", as: Int64?.self).map { Int($0) }
        (heldAt, holdReason) = (try value("held_at"), try value("hold_reason"))
        (retainUntil, prunedAt) = (try value("retain_until"), try value("pruned_at"))
        self = catalogLoaded
    }

    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("id", id)
        columns.add("channel_id", channelID)
        columns.add("sora_session_id", soraSessionID)
        columns.add("connection_id", connectionID)
        columns.add("client_id", clientID)
        columns.add("bundle_id", bundleID)
        columns.add("signaling_url", signalingURL)
        columns.add("recbot_version", recbotVersion)
        columns.add("hostname", hostname)
        columns.add("pid", pid)
        columns.add("started_at", startedAt)
        columns.add("ended_at", endedAt)
        columns.add("end_reason", endReason)
        columns.add("exit_status", exitStatus)
        columns.add("events_stored", eventsStored)
        columns.add("events_refused", eventsRefused)
        columns.add("events_refused_bytes", eventsRefusedBytes)
        columns.add("messages_dropped", messagesDropped)
        columns.add("catalog_writes_dropped", catalogWritesDropped)
        columns.add("split_duration", splitDuration)
        columns.add("split_only", splitOnly.map { $0 ? Int64(1) : 0 })
        columns.add("recording_metadata", recordingMetadata)
        columns.add("segment", segment)
        columns.add("held_at", heldAt)
        columns.add("hold_reason", holdReason)
        columns.add("retain_until", retainUntil)
        columns.add("pruned_at", prunedAt)
        return columns
    }
}

extension ConnectionRecord {
    static let selectColumns = """
        id, session_id, connection_id, client_id, bundle_id, role, metadata, authn_metadata, authz_metadata, first_seen_at,
        last_seen_at, left_at
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(sessionID: try value("session_id"), connectionID: try value("connection_id"), firstSeenAt: try value("first_seen_at"),
                  lastSeenAt: try value("last_seen_at"), clientID: try value("client_id"), bundleID: try value("bundle_id"),
                  role: try value("role"), metadata: try value("metadata"), authnMetadata: try value("authn_metadata"),
                  authzMetadata: try value("authz_metadata"), leftAt: try value("left_at"))
        id = try value("id")
        self = catalogLoaded
    }

    /// Without `id`: the server assigns it.
    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("connection_id", connectionID)
        columns.add("client_id", clientID)
        columns.add("bundle_id", bundleID)
        columns.add("role", role)
        columns.add("metadata", metadata)
        columns.add("authn_metadata", authnMetadata)
        columns.add("authz_metadata", authzMetadata)
        columns.add("first_seen_at", firstSeenAt)
        columns.add("last_seen_at", lastSeenAt)
        columns.add("left_at", leftAt)
        return columns
    }
}

extension RecordingRecord {
    static let selectColumns = """
        id, session_id, connection_id, part, path, video_codec, audio_codec, started_at, ended_at, duration_ms, bytes,
        video_frames, audio_frames, packets_received, packets_lost, nacks_sent, packets_recovered, frames_dropped,
        keyframe_requests, status, pli_sent, fir_sent, packets_late, packets_duplicate, jitter_ms, frames_dropped_incomplete,
        frames_dropped_keyframe_wait, frames_dropped_malformed, frames_dropped_recorder, video_sizes, video_refused,
        verification, verified_at, verification_report, error, host, missing_at, segment, pruned_at
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        let statusText: String = try value("status")
        self.init(sessionID: try value("session_id"), connectionID: try value("connection_id"), part: try value("part"),
                  path: try value("path"), videoCodec: try value("video_codec"), audioCodec: try value("audio_codec"),
                  startedAt: try value("started_at"), status: RecordingStatus(rawValue: statusText) ?? .interrupted)
        id = try value("id")
        endedAt = try value("ended_at")
        durationMs = try value("duration_ms")
        (bytes, videoFrames, audioFrames) = (try value("bytes"), try value("video_frames"), try value("audio_frames"))
        (packetsReceived, packetsLost, nacksSent) = (try value("packets_received"), try value("packets_lost"), try value("nacks_sent"))
        (packetsRecovered, framesDropped, keyframeRequests) = (try value("packets_recovered"), try value("frames_dropped"), try value("keyframe_requests"))
        (pliSent, firSent, packetsLate, packetsDuplicate) = (try value("pli_sent"), try value("fir_sent"), try value("packets_late"), try value("packets_duplicate"))
        jitterMs = try value("jitter_ms")
        framesDroppedIncomplete = try value("frames_dropped_incomplete")
        framesDroppedKeyframeWait = try value("frames_dropped_keyframe_wait")
        framesDroppedMalformed = try value("frames_dropped_malformed")
        framesDroppedRecorder = try value("frames_dropped_recorder")
        (videoSizes, videoRefused) = (try value("video_sizes"), try value("video_refused"))
        let verificationText: String? = try value("verification")
        verification = verificationText.flatMap(VerificationStatus.init(rawValue:))
        (verifiedAt, verificationReport, error) = (try value("verified_at"), try value("verification_report"), try value("error"))
        (host, missingAt) = (try value("host"), try value("missing_at"))
        segment = try value("segment", as: Int64?.self).map { Int($0) }
        prunedAt = try value("pruned_at")
        self = catalogLoaded
    }

    /// Without `id`: the server assigns it.
    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("connection_id", connectionID)
        columns.add("part", part)
        columns.add("path", path)
        columns.add("video_codec", videoCodec)
        columns.add("audio_codec", audioCodec)
        columns.add("started_at", startedAt)
        columns.add("ended_at", endedAt)
        columns.add("duration_ms", durationMs)
        for (name, count) in [("bytes", bytes), ("video_frames", videoFrames), ("audio_frames", audioFrames),
                              ("packets_received", packetsReceived), ("packets_lost", packetsLost), ("nacks_sent", nacksSent),
                              ("packets_recovered", packetsRecovered), ("frames_dropped", framesDropped),
                              ("keyframe_requests", keyframeRequests), ("pli_sent", pliSent), ("fir_sent", firSent),
                              ("packets_late", packetsLate), ("packets_duplicate", packetsDuplicate),
                              ("frames_dropped_incomplete", framesDroppedIncomplete),
                              ("frames_dropped_keyframe_wait", framesDroppedKeyframeWait),
                              ("frames_dropped_malformed", framesDroppedMalformed), ("frames_dropped_recorder", framesDroppedRecorder)] {
            columns.add(name, count)
        }
        columns.add("status", status.rawValue)
        columns.add("jitter_ms", jitterMs)
        columns.add("video_sizes", videoSizes)
        columns.add("video_refused", videoRefused)
        columns.add("verification", verification?.rawValue)
        columns.add("verified_at", verifiedAt)
        columns.add("verification_report", verificationReport)
        columns.add("error", error)
        columns.add("host", host)
        columns.add("missing_at", missingAt)
        columns.add("segment", segment)
        columns.add("pruned_at", prunedAt)
        return columns
    }
}

extension EventRecord {
    static let selectColumns = "id, session_id, kind, event_type, label, sender_connection_id, received_at, payload_format, payload_text, payload_blob"

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        let kindText: String = try value("kind")
        let payload: EventPayload
        switch try value("payload_format", as: String.self) {
        case "json": payload = .json(try value("payload_text"))
        case "text": payload = .text(try value("payload_text"))
        default:
            let buffer: ByteBuffer? = try value("payload_blob")
            payload = .binary(buffer.map { Array($0.readableBytesView) } ?? [])
        }
        self.init(sessionID: try value("session_id"), kind: EventKind(rawValue: kindText) ?? .signaling, eventType: try value("event_type"),
                  label: try value("label"), senderConnectionID: try value("sender_connection_id"), receivedAt: try value("received_at"),
                  payload: payload)
        id = try value("id")
        self = catalogLoaded
    }

    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("kind", kind.rawValue)
        columns.add("event_type", eventType)
        columns.add("label", label)
        columns.add("sender_connection_id", senderConnectionID)
        columns.add("received_at", receivedAt)
        // The same columns for every payload, so a batch goes in one multi-row INSERT.
        switch payload {
        case .json(let text), .text(let text):
            columns.add("payload_format", payload.format)
            columns.add("payload_text", text)
            columns.add("payload_blob", ByteBuffer?.none)
        case .binary(let bytes):
            columns.add("payload_format", payload.format)
            columns.add("payload_text", String?.none)
            columns.add("payload_blob", ByteBuffer(bytes: bytes))
        }
        columns.add("search_text", SearchText.of(payload))
        return columns
    }
}

extension EventPayload {
    var format: String {
        switch self {
        case .json: "json"
        case .text: "text"
        case .binary: "binary"
        }
    }
}

extension UploadRecord {
    static let selectColumns = """
        id, session_id, file_name, object_url, endpoint, bytes, status, upload_id, part_size, etag, attempts, error, started_at,
        uploaded_at, local_deleted_at, remote_deleted_at
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        let statusText: String = try value("status")
        self.init(sessionID: try value("session_id"), fileName: try value("file_name"), objectURL: try value("object_url"),
                  endpoint: try value("endpoint"), bytes: try value("bytes"), startedAt: try value("started_at"),
                  status: UploadStatus(rawValue: statusText) ?? .failed)
        id = try value("id")
        uploadID = try value("upload_id")
        partSize = try value("part_size")
        etag = try value("etag")
        attempts = Int(try value("attempts", as: Int64.self))
        error = try value("error")
        uploadedAt = try value("uploaded_at")
        localDeletedAt = try value("local_deleted_at")
        remoteDeletedAt = try value("remote_deleted_at")
        self = catalogLoaded
    }

    /// Without `id`: the server assigns it.
    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("file_name", fileName)
        columns.add("object_url", objectURL)
        columns.add("endpoint", endpoint)
        columns.add("bytes", bytes)
        columns.add("status", status.rawValue)
        columns.add("upload_id", uploadID)
        columns.add("part_size", partSize)
        columns.add("etag", etag)
        columns.add("attempts", Int64(attempts))
        columns.add("error", error)
        columns.add("started_at", startedAt)
        columns.add("uploaded_at", uploadedAt)
        columns.add("local_deleted_at", localDeletedAt)
        columns.add("remote_deleted_at", remoteDeletedAt)
        return columns
    }
}

extension InterruptionRecord {
    static let selectColumns = "id, session_id, ordinal, started_at, ended_at, cause, attempts, media_lost_ms, connection_id"

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(sessionID: try value("session_id"), ordinal: Int(try value("ordinal", as: Int64.self)), startedAt: try value("started_at"),
                  cause: try value("cause"), attempts: Int(try value("attempts", as: Int64.self)), endedAt: try value("ended_at"),
                  mediaLostMs: try value("media_lost_ms"), connectionID: try value("connection_id"))
        id = try value("id")
        self = catalogLoaded
    }

    /// Without `id`: the server assigns it.
    /// With its free text escaped (`CatalogText`), as the SQLite catalog stores it.
    var postgresColumns: ColumnValues { catalogStored.columnsAsGiven }

    private var columnsAsGiven: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("ordinal", Int64(ordinal))
        columns.add("started_at", startedAt)
        columns.add("ended_at", endedAt)
        columns.add("cause", cause)
        columns.add("attempts", Int64(attempts))
        columns.add("media_lost_ms", mediaLostMs)
        columns.add("connection_id", connectionID)
        return columns
    }
}
