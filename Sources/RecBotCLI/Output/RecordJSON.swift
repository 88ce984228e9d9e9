import Archive
import DiskLayout
import Foundation
import Recorder

/// How catalog rows look in `--json` output. Keys are stable: scripts depend on them.
enum RecordJSON {
    static func time(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(HumanFormat.rfc3339(milliseconds: $0)) } ?? .null
    }

    static func session(_ s: SessionRecord) -> [(String, JSONValue)] {
        [
            ("id", .string(s.id)),
            ("channel_id", .string(s.channelID)),
            ("sora_session_id", .string(s.soraSessionID)),
            ("connection_id", .string(s.connectionID)),
            ("client_id", .string(s.clientID)),
            ("bundle_id", .string(s.bundleID)),
            ("signaling_url", .string(s.signalingURL)),
            ("started_at", time(s.startedAt)),
            ("ended_at", time(s.endedAt)),
            ("duration_ms", .int(s.endedAt.flatMap { HumanFormat.span(from: s.startedAt, to: $0) })),
            ("end_reason", .string(s.endReason)),
            ("exit_status", .int(s.exitStatus)),
            ("recbot_version", .string(s.recbotVersion)),
            ("hostname", .string(s.hostname)),
            ("pid", .int(s.pid)),
            ("events_stored", .int(s.eventsStored)),
            ("events_refused", .int(s.eventsRefused)),
            ("events_refused_bytes", .int(s.eventsRefusedBytes)),
            ("messages_dropped", .int(s.messagesDropped)),
            ("catalog_writes_dropped", .int(s.catalogWritesDropped)),
            ("split_duration", .int(s.splitDuration)),
            ("split_only", s.splitOnly.map(JSONValue.bool) ?? .null),
            ("recording_metadata", s.recordingMetadata.map { JSONValue.isValidJSON($0) ? .raw($0) : .string($0) } ?? .null),
            ("segment", .int(Int64(s.segment ?? 1))),
            ("held_at", time(s.heldAt)),
            ("hold_reason", .string(s.holdReason)),
            ("retain_until", time(s.retainUntil)),
            ("pruned_at", time(s.prunedAt)),
        ]
    }

    static func webhook(_ w: WebhookRecord) -> [(String, JSONValue)] {
        [
            ("id", .int(w.id)),
            ("event_id", .string(w.eventID)),
            ("type", .string(w.eventType)),
            ("session_id", .string(w.sessionID)),
            ("url", .string(w.url)),
            ("status", .string(w.status.rawValue)),
            ("attempts", .int(Int64(w.attempts))),
            ("created_at", time(w.createdAt)),
            ("next_attempt_at", time(w.nextAttemptAt)),
            ("expires_at", time(w.expiresAt)),
            ("delivered_at", time(w.deliveredAt)),
            ("last_error", .string(w.lastError)),
            ("body", JSONValue.isValidJSON(w.body) ? .raw(w.body) : .string(w.body)),
        ]
    }

    static func interruption(_ i: InterruptionRecord) -> [(String, JSONValue)] {
        [
            ("ordinal", .int(Int64(i.ordinal))),
            ("started_at", time(i.startedAt)),
            ("ended_at", time(i.endedAt)),
            ("duration_ms", .int(i.endedAt.map { max(0, $0 - i.startedAt) })),
            ("cause", .string(i.cause)),
            ("attempts", .int(Int64(i.attempts))),
            ("media_lost_ms", .int(i.mediaLostMs)),
            ("connection_id", .string(i.connectionID)),
        ]
    }

    static func connection(_ c: ConnectionRecord) -> [(String, JSONValue)] {
        [
            ("connection_id", .string(c.connectionID)),
            ("client_id", .string(c.clientID)),
            ("bundle_id", .string(c.bundleID)),
            ("role", .string(c.role)),
            ("metadata", storedJSON(c.metadata)),
            ("authn_metadata", storedJSON(c.authnMetadata)),
            ("authz_metadata", storedJSON(c.authzMetadata)),
            ("first_seen_at", time(c.firstSeenAt)),
            ("last_seen_at", time(c.lastSeenAt)),
            ("left_at", time(c.leftAt)),
        ]
    }

    static func composition(_ c: CompositionRecord, dataDirectory: DataDirectory) -> [(String, JSONValue)] {
        [
            ("kind", .string("composed")), ("session_id", .string(c.sessionID)), ("path", .string(dataDirectory.absolute(catalogPath: c.path))),
            ("captions_path", .string(c.captionsPath.map { dataDirectory.absolute(catalogPath: $0) })), ("layout", .string(c.layout)),
            ("from_ms", .int(c.fromMs)), ("duration_ms", .int(c.durationMs)), ("width", .int(c.width)), ("height", .int(c.height)),
            ("fps", .int(c.fps)), ("video_codec", .string(c.videoCodec)), ("audio_codec", .string(c.audioCodec)),
            ("senders", .int(c.senders)), ("bytes", .int(c.bytes)), ("host", .string(c.host)), ("composed_at", time(c.composedAt)),
        ]
    }

    static func recording(_ r: RecordingRecord, dataDirectory: DataDirectory) -> [(String, JSONValue)] {
        [
            ("id", .int(r.id)),
            ("session_id", .string(r.sessionID)),
            ("connection_id", .string(r.connectionID)),
            ("part", .int(Int64(r.part))),
            ("path", .string(dataDirectory.absolute(catalogPath: r.path))),
            ("video_codec", .string(r.videoCodec)),
            ("audio_codec", .string(r.audioCodec)),
            ("started_at", time(r.startedAt)),
            ("ended_at", time(r.endedAt)),
            ("duration_ms", .int(r.durationMs)),
            ("bytes", .int(r.bytes)),
            ("video_frames", .int(r.videoFrames)),
            ("audio_frames", .int(r.audioFrames)),
            ("packets_received", .int(r.packetsReceived)),
            ("packets_lost", .int(r.packetsLost)),
            ("nacks_sent", .int(r.nacksSent)),
            ("packets_recovered", .int(r.packetsRecovered)),
            ("frames_dropped", .int(r.framesDropped)),
            ("keyframe_requests", .int(r.keyframeRequests)),
            ("pli_sent", .int(r.pliSent)),
            ("fir_sent", .int(r.firSent)),
            ("packets_late", .int(r.packetsLate)),
            ("packets_duplicate", .int(r.packetsDuplicate)),
            ("jitter_ms", r.jitterMs.flatMap { $0.isFinite ? JSONValue.raw("\($0)") : nil } ?? .null),
            ("frames_dropped_incomplete", .int(r.framesDroppedIncomplete)),
            ("frames_dropped_keyframe_wait", .int(r.framesDroppedKeyframeWait)),
            ("frames_dropped_malformed", .int(r.framesDroppedMalformed)),
            ("frames_dropped_recorder", .int(r.framesDroppedRecorder)),
            ("video_sizes", .array((r.videoSizes ?? "").split(separator: ",").map { .string(String($0)) })),
            ("video_refused", .string(r.videoRefused)),
            ("status", .string(r.status.rawValue)),
            ("error", .string(r.error)),
            ("verification", .string(r.verification?.rawValue ?? "not verified")),
            ("verified_at", time(r.verifiedAt)),
            ("host", .string(r.host)),
            ("missing_at", time(r.missingAt)),
        ]
    }

    static func event(_ e: EventRecord) -> [(String, JSONValue)] {
        [
            ("id", .int(e.id)),
            ("session_id", .string(e.sessionID)),
            ("kind", .string(e.kind.rawValue)),
            ("event_type", .string(e.eventType)),
            ("label", .string(e.label)),
            ("sender_connection_id", .string(e.senderConnectionID)),
            ("received_at", time(e.receivedAt)),
            ("payload", payload(e.payload)),
        ]
    }

    /// JSON payloads as their parsed value; text as {"text"}; bytes as {"base64", "text" when UTF-8}.
    static func payload(_ payload: EventPayload) -> JSONValue {
        switch payload {
        case .json(let text):
            return JSONValue.isValidJSON(text) ? .raw(text) : .object([("text", .string(text))])
        case .text(let text):
            return .object([("text", .string(text))])
        case .binary(let bytes):
            var members: [(String, JSONValue)] = [("base64", .string(Data(bytes).base64EncodedString()))]
            if let text = String(validating: bytes, as: UTF8.self) { members.append(("text", .string(text))) }
            return .object(members)
        }
    }

    /// Metadata columns hold JSON text; print it as JSON (or as a string if it is not valid).
    static func storedJSON(_ text: String?) -> JSONValue {
        guard let text else { return .null }
        return JSONValue.isValidJSON(text) ? .raw(text) : .string(text)
    }

    /// One-line preview of a payload for tables.
    static func preview(_ payload: EventPayload, limit: Int = 80) -> String {
        let text: String
        switch payload {
        case .json(let json): text = json
        case .text(let plain): text = plain
        case .binary(let bytes):
            text = String(validating: bytes, as: UTF8.self).map { "(\(bytes.count) bytes) \($0)" } ?? "(\(bytes.count) bytes)"
        }
        let oneLine = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return oneLine.count > limit ? String(oneLine.prefix(limit - 1)) + "…" : oneLine
    }
}
