import Foundation
import GRDB

/// Catalog times are integers a damaged or hand-edited catalog may hold at any value, so every
/// difference between two of them is checked: nil, not a trap, where it does not fit.
public enum CatalogTime {
    public static func span(from start: Int64, to end: Int64) -> Int64? {
        let (difference, overflow) = end.subtractingReportingOverflow(start)
        return overflow ? nil : difference
    }
}

/// One `recbot join`. Times are Unix milliseconds (UTC).
public struct SessionRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "sessions"

    public var id: String
    public var channelID: String
    public var soraSessionID: String?
    public var connectionID: String?
    public var clientID: String?
    public var bundleID: String?
    public var signalingURL: String?
    public var recbotVersion: String?
    public var hostname: String?
    public var pid: Int?
    public var startedAt: Int64
    public var endedAt: Int64?
    public var endReason: String?
    public var exitStatus: Int?
    /// Set when the session ends (nil for one a repair ended).
    public var eventsStored: Int64?
    public var eventsRefused: Int64?
    public var eventsRefusedBytes: Int64?
    public var messagesDropped: Int64?
    public var catalogWritesDropped: Int64?
    /// Sora's `split_duration` (seconds) and `split_only`, when the session was time-split.
    public var splitDuration: Int64?
    public var splitOnly: Bool?
    /// The operator's `recording_metadata` (JSON text).
    public var recordingMetadata: String?
    /// The process recording it now, or last (`session_segments`): nil is segment 1.
    public var segment: Int?
    /// `recbot sessions hold`: kept from every prune while set.
    public var heldAt: Int64?
    public var holdReason: String?
    /// The session's own retention (`join --retention`): `recbot prune --expired` removes it after this.
    public var retainUntil: Int64?
    /// When `recbot prune` removed its files (every host's).
    public var prunedAt: Int64?

    public init(
        id: String, channelID: String, startedAt: Int64, soraSessionID: String? = nil, connectionID: String? = nil,
        clientID: String? = nil, bundleID: String? = nil, signalingURL: String? = nil, recbotVersion: String? = nil,
        hostname: String? = nil, pid: Int? = nil, endedAt: Int64? = nil, endReason: String? = nil, exitStatus: Int? = nil
    ) {
        self.id = id
        self.channelID = channelID
        self.startedAt = startedAt
        self.soraSessionID = soraSessionID
        self.connectionID = connectionID
        self.clientID = clientID
        self.bundleID = bundleID
        self.signalingURL = signalingURL
        self.recbotVersion = recbotVersion
        self.hostname = hostname
        self.pid = pid
        self.endedAt = endedAt
        self.endReason = endReason
        self.exitStatus = exitStatus
    }

    enum CodingKeys: String, CodingKey {
        case id, pid, hostname
        case channelID = "channel_id", soraSessionID = "sora_session_id", connectionID = "connection_id"
        case clientID = "client_id", bundleID = "bundle_id", signalingURL = "signaling_url"
        case recbotVersion = "recbot_version", startedAt = "started_at", endedAt = "ended_at"
        case endReason = "end_reason", exitStatus = "exit_status"
        case eventsStored = "events_stored", eventsRefused = "events_refused", eventsRefusedBytes = "events_refused_bytes"
        case messagesDropped = "messages_dropped", catalogWritesDropped = "catalog_writes_dropped"
        case splitDuration = "split_duration", splitOnly = "split_only", recordingMetadata = "recording_metadata", segment
        case heldAt = "held_at", holdReason = "hold_reason", retainUntil = "retain_until", prunedAt = "pruned_at"
    }
}

/// A participant seen in a session's channel.
public struct ConnectionRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "connections"

    public var id: Int64?
    public var sessionID: String
    public var connectionID: String
    public var clientID: String?
    public var bundleID: String?
    public var role: String?
    public var metadata: String?
    public var authnMetadata: String?
    public var authzMetadata: String?
    public var firstSeenAt: Int64
    public var lastSeenAt: Int64
    public var leftAt: Int64?

    public init(
        sessionID: String, connectionID: String, firstSeenAt: Int64, lastSeenAt: Int64? = nil, clientID: String? = nil,
        bundleID: String? = nil, role: String? = nil, metadata: String? = nil, authnMetadata: String? = nil,
        authzMetadata: String? = nil, leftAt: Int64? = nil
    ) {
        self.sessionID = sessionID
        self.connectionID = connectionID
        self.firstSeenAt = firstSeenAt
        self.lastSeenAt = lastSeenAt ?? firstSeenAt
        self.clientID = clientID
        self.bundleID = bundleID
        self.role = role
        self.metadata = metadata
        self.authnMetadata = authnMetadata
        self.authzMetadata = authzMetadata
        self.leftAt = leftAt
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, role, metadata
        case sessionID = "session_id", connectionID = "connection_id", clientID = "client_id", bundleID = "bundle_id"
        case authnMetadata = "authn_metadata", authzMetadata = "authz_metadata"
        case firstSeenAt = "first_seen_at", lastSeenAt = "last_seen_at", leftAt = "left_at"
    }
}

public enum RecordingStatus: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    case recording, complete, interrupted, repaired
}

public enum VerificationStatus: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    case verified, failed
}

/// One media file of one sender.
public struct RecordingRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "recordings"

    public var id: Int64?
    public var sessionID: String
    public var connectionID: String
    public var part: Int
    /// Relative to the data directory.
    public var path: String
    public var videoCodec: String?
    public var audioCodec: String?
    public var startedAt: Int64
    public var endedAt: Int64?
    public var durationMs: Int64?
    public var bytes: Int64
    public var videoFrames: Int64
    public var audioFrames: Int64
    public var packetsReceived: Int64
    public var packetsLost: Int64
    public var nacksSent: Int64
    public var packetsRecovered: Int64
    public var framesDropped: Int64
    public var keyframeRequests: Int64
    public var status: RecordingStatus
    public var pliSent: Int64 = 0
    public var firSent: Int64 = 0
    /// Packets that arrived after their place had been given up.
    public var packetsLate: Int64 = 0
    public var packetsDuplicate: Int64 = 0
    public var jitterMs: Double?
    public var framesDroppedIncomplete: Int64 = 0
    public var framesDroppedKeyframeWait: Int64 = 0
    public var framesDroppedMalformed: Int64 = 0
    public var framesDroppedRecorder: Int64 = 0
    /// Picture sizes in the order seen, e.g. "640x360,1280x720".
    public var videoSizes: String?
    /// The video codec the sender offered that WebM cannot hold (its video is not in the file).
    public var videoRefused: String?
    /// `recbot verify`'s verdict; nil until verified.
    public var verification: VerificationStatus?
    public var verifiedAt: Int64?
    /// The verification result as JSON.
    public var verificationReport: String?
    /// Why the recording is `interrupted` (nil otherwise).
    public var error: String?
    /// The name of the host whose data directory holds the file (nil: not known, a row from
    /// before hosts were recorded with no session host either).
    public var host: String?
    /// When `recbot verify` last looked for the file on its host and did not find it.
    public var missingAt: Int64?
    /// The session's segment (process) that wrote the file: nil is segment 1.
    public var segment: Int?
    /// When `recbot prune` removed the file.
    public var prunedAt: Int64?

    public init(
        sessionID: String, connectionID: String, part: Int = 0, path: String, videoCodec: String?, audioCodec: String?,
        startedAt: Int64, status: RecordingStatus = .recording
    ) {
        self.sessionID = sessionID
        self.connectionID = connectionID
        self.part = part
        self.path = path
        self.videoCodec = videoCodec
        self.audioCodec = audioCodec
        self.startedAt = startedAt
        self.bytes = 0
        self.videoFrames = 0
        self.audioFrames = 0
        self.packetsReceived = 0
        self.packetsLost = 0
        self.nacksSent = 0
        self.packetsRecovered = 0
        self.framesDropped = 0
        self.keyframeRequests = 0
        self.status = status
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, part, path, bytes, status
        case sessionID = "session_id", connectionID = "connection_id", videoCodec = "video_codec"
        case audioCodec = "audio_codec", startedAt = "started_at", endedAt = "ended_at", durationMs = "duration_ms"
        case videoFrames = "video_frames", audioFrames = "audio_frames", packetsReceived = "packets_received"
        case packetsLost = "packets_lost", nacksSent = "nacks_sent", packetsRecovered = "packets_recovered"
        case framesDropped = "frames_dropped", keyframeRequests = "keyframe_requests"
        case pliSent = "pli_sent", firSent = "fir_sent", packetsLate = "packets_late", packetsDuplicate = "packets_duplicate"
        case jitterMs = "jitter_ms", framesDroppedIncomplete = "frames_dropped_incomplete"
        case framesDroppedKeyframeWait = "frames_dropped_keyframe_wait", framesDroppedMalformed = "frames_dropped_malformed"
        case framesDroppedRecorder = "frames_dropped_recorder", videoSizes = "video_sizes", videoRefused = "video_refused"
        case verification, verifiedAt = "verified_at", verificationReport = "verification_report", error
        case host, missingAt = "missing_at", segment, prunedAt = "pruned_at"
    }
}

/// A live file's progress, written to its catalog row every few seconds.
public struct RecordingProgress: Codable, Sendable, Equatable {
    public var bytes: Int64
    public var durationMs: Int64
    public var videoFrames: Int64
    public var audioFrames: Int64
    public var videoCodec: String?

    public init(bytes: Int64, durationMs: Int64, videoFrames: Int64, audioFrames: Int64, videoCodec: String?) {
        (self.bytes, self.durationMs, self.videoFrames, self.audioFrames, self.videoCodec) = (bytes, durationMs, videoFrames, audioFrames, videoCodec)
    }
}

/// What a session refused or dropped, stored when it ends.
public struct SessionCounters: Codable, Sendable, Equatable {
    public var eventsStored: Int64 = 0
    public var eventsRefused: Int64 = 0
    public var eventsRefusedBytes: Int64 = 0
    public var messagesDropped: Int64 = 0
    public var catalogWritesDropped: Int64 = 0

    public init() {}
}

public enum EventKind: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    case notify, push, datachannel
    /// Signaling messages of a type recbot does not know, kept rather than dropped.
    case signaling
    /// What recbot itself decided about the channel's media (e.g. a video codec it refused).
    case recbot
}

/// The payload of an event as received: JSON text, other text, or bytes.
public enum EventPayload: Codable, Sendable, Hashable {
    case json(String)
    case text(String)
    case binary([UInt8])

    /// Classifies received text: JSON when it is JSON text as RFC 8259 defines it, text
    /// otherwise. A leading byte-order mark is dropped first: Foundation's parser tolerates it,
    /// but a JSON Lines export or `--json` output that copied it raw would not parse (§8.1:
    /// networked JSON carries none).
    public static func classify(text: String) -> EventPayload {
        let body = StrictJSON.withoutByteOrderMark(text)
        return StrictJSON.isValid(body) ? .json(body) : .text(text)
    }

    /// A payload that the signaling parser already read as JSON, stored without a byte-order mark.
    public static func json(received text: String) -> EventPayload {
        .json(StrictJSON.withoutByteOrderMark(text))
    }
}

/// The one test of "this text is JSON" that every writer of raw JSON (catalog, exports, `--json`)
/// shares, so that what one accepts the others can copy verbatim.
public enum StrictJSON {
    /// JSON text that any JSON reader accepts as it stands: Foundation parses it and it does not
    /// begin with a byte-order mark (which Foundation skips, and Python's `json` and `jq` refuse).
    public static func isValid(_ text: String) -> Bool {
        guard text.unicodeScalars.first != byteOrderMark else { return false }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil
    }

    public static func withoutByteOrderMark(_ text: String) -> String {
        guard text.unicodeScalars.first == byteOrderMark else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.dropFirst()))
    }

    private static let byteOrderMark: Unicode.Scalar = "\u{FEFF}"
}

/// A notify / push / data-channel message.
public struct EventRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "events"

    public var id: Int64?
    public var sessionID: String
    public var kind: EventKind
    public var eventType: String?
    public var label: String?
    public var senderConnectionID: String?
    public var receivedAt: Int64
    public var payload: EventPayload

    public init(
        sessionID: String, kind: EventKind, eventType: String? = nil, label: String? = nil,
        senderConnectionID: String? = nil, receivedAt: Int64, payload: EventPayload
    ) {
        self.sessionID = sessionID
        self.kind = kind
        self.eventType = eventType
        self.label = label
        self.senderConnectionID = senderConnectionID
        self.receivedAt = receivedAt
        self.payload = payload
    }

    public init(row: Row) throws {
        id = row["id"]
        sessionID = row["session_id"]
        let kindText: String = row["kind"]
        kind = EventKind(rawValue: kindText) ?? .signaling
        eventType = row["event_type"]
        label = row["label"]
        senderConnectionID = row["sender_connection_id"]
        receivedAt = row["received_at"]
        let format: String = row["payload_format"]
        switch format {
        case "json": payload = .json(row["payload_text"])
        case "text": payload = .text(row["payload_text"])
        default:
            let data: Data? = row["payload_blob"]
            payload = .binary(data.map { Array($0) } ?? [])
        }
    }

    public func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["session_id"] = sessionID
        container["kind"] = kind.rawValue
        container["event_type"] = eventType
        container["label"] = label
        container["sender_connection_id"] = senderConnectionID
        container["received_at"] = receivedAt
        switch payload {
        case .json(let text):
            container["payload_format"] = "json"
            container["payload_text"] = text
        case .text(let text):
            container["payload_format"] = "text"
            container["payload_text"] = text
        case .binary(let bytes):
            container["payload_format"] = "binary"
            container["payload_blob"] = Data(bytes)
        }
        container["search_text"] = SearchText.of(payload)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

// Codable for the spool, by the record's properties; the catalog's columns are `encode(to:)`
// (GRDB's PersistenceContainer) and `init(row:)` above.
extension EventRecord {
    enum CodingKeys: String, CodingKey {
        case id, kind, label, payload
        case sessionID = "session_id", eventType = "event_type", senderConnectionID = "sender_connection_id", receivedAt = "received_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(Int64.self, forKey: .id)
        sessionID = try container.decode(String.self, forKey: .sessionID)
        kind = try container.decode(EventKind.self, forKey: .kind)
        eventType = try container.decodeIfPresent(String.self, forKey: .eventType)
        label = try container.decodeIfPresent(String.self, forKey: .label)
        senderConnectionID = try container.decodeIfPresent(String.self, forKey: .senderConnectionID)
        receivedAt = try container.decode(Int64.self, forKey: .receivedAt)
        payload = try container.decode(EventPayload.self, forKey: .payload)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(sessionID, forKey: .sessionID)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(eventType, forKey: .eventType)
        try container.encodeIfPresent(label, forKey: .label)
        try container.encodeIfPresent(senderConnectionID, forKey: .senderConnectionID)
        try container.encode(receivedAt, forKey: .receivedAt)
        try container.encode(payload, forKey: .payload)
    }
}

public enum UploadStatus: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    case uploading, uploaded, failed
}

/// One file of a session in object storage (or on its way there).
public struct UploadRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "uploads"

    public var id: Int64?
    public var sessionID: String
    public var fileName: String
    public var objectURL: String
    public var endpoint: String
    public var bytes: Int64
    public var status: UploadStatus
    public var uploadID: String?
    public var partSize: Int64?
    public var etag: String?
    public var attempts: Int
    public var error: String?
    public var startedAt: Int64
    public var uploadedAt: Int64?
    public var localDeletedAt: Int64?
    /// When `recbot prune --uploaded-objects` deleted the object from the storage.
    public var remoteDeletedAt: Int64?

    public init(sessionID: String, fileName: String, objectURL: String, endpoint: String, bytes: Int64, startedAt: Int64,
                status: UploadStatus = .uploading) {
        (self.sessionID, self.fileName, self.objectURL, self.endpoint, self.bytes) = (sessionID, fileName, objectURL, endpoint, bytes)
        (self.startedAt, self.status, self.attempts) = (startedAt, status, 0)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, endpoint, bytes, status, etag, attempts, error
        case sessionID = "session_id", fileName = "file_name", objectURL = "object_url", uploadID = "upload_id"
        case partSize = "part_size", startedAt = "started_at", uploadedAt = "uploaded_at", localDeletedAt = "local_deleted_at"
        case remoteDeletedAt = "remote_deleted_at"
    }
}

/// One outage of a session: its connection to Sora failed and recbot joined again (or kept
/// trying until the session ended). Numbered from 1 within the session.
public struct InterruptionRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "interruptions"

    public var id: Int64?
    public var sessionID: String
    public var ordinal: Int
    /// Unix milliseconds: when the failure was detected.
    public var startedAt: Int64
    /// When a rejoin was recording again; nil while rejoining, or when none succeeded.
    public var endedAt: Int64?
    /// What failed, in a few words (`signaling-closed: abruptly`, `transport: ICE consent lost`…).
    public var cause: String
    /// Join attempts made during the outage.
    public var attempts: Int
    /// Media time lost: from the last media before the failure to the first after the rejoin.
    public var mediaLostMs: Int64?
    /// recbot's connection id in the connection that ended the outage.
    public var connectionID: String?

    public init(sessionID: String, ordinal: Int, startedAt: Int64, cause: String, attempts: Int = 0, endedAt: Int64? = nil,
                mediaLostMs: Int64? = nil, connectionID: String? = nil) {
        (self.sessionID, self.ordinal, self.startedAt, self.cause, self.attempts) = (sessionID, ordinal, startedAt, cause, attempts)
        (self.endedAt, self.mediaLostMs, self.connectionID) = (endedAt, mediaLostMs, connectionID)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, ordinal, cause, attempts
        case sessionID = "session_id", startedAt = "started_at", endedAt = "ended_at", mediaLostMs = "media_lost_ms"
        case connectionID = "connection_id"
    }
}
