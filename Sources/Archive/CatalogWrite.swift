/// A write a recording session makes, as a value: the join's writer applies it to the
/// catalog, or, while a PostgreSQL catalog is unreachable, keeps it in the local spool
/// (`CatalogSpool`) and applies it when the server is back. Applying one twice has the effect
/// of applying it once, since a write whose commit was lost with the connection is replayed.
public enum CatalogWrite: Codable, Sendable, Equatable {
    case updateSession(id: String, soraSessionID: String?, connectionID: String?, clientID: String?, bundleID: String?, signalingURL: String?)
    case upsertConnection(ConnectionRecord)
    /// A file was created (status `recording`).
    case startRecording(RecordingRecord)
    /// A file was finished; `createdPath` is the name it was created under.
    case completeRecording(RecordingRecord, createdPath: String)
    case recordingProgress(sessionID: String, path: String, RecordingProgress)
    case events([EventRecord])
    /// `segment`: the process's segment of the session; counters of a segment another process
    /// continued after are not stored (nil: written by a version without segments).
    case sessionCounters(id: String, SessionCounters, segment: Int? = nil)
    /// Ends the session's current segment, whichever it is (`recbot repair`; older spools).
    case endSession(id: String, endedAt: Int64, endReason: String, exitStatus: Int?)
    /// Ends this process's segment, and the session only while no other process continues it.
    case endSegment(id: String, segment: Int, endedAt: Int64, endReason: String, exitStatus: Int?)
    /// An outage began, or ended (the same row, by session and ordinal). Not stored when
    /// `segment` is one another process continued after: its ordinals are the new process's now.
    case interruption(InterruptionRecord, segment: Int? = nil)
    /// Webhook events into the outbox (a replay adds none twice: event id and URL are unique).
    case webhooks([WebhookRecord])

    /// The session's own rows and its recordings' rows: never dropped for lack of room (a
    /// flood of events must not cost the catalog its record of the files).
    public var isEssential: Bool {
        switch self {
        case .updateSession, .startRecording, .completeRecording, .sessionCounters, .endSession, .endSegment, .interruption, .webhooks: true
        case .upsertConnection, .recordingProgress, .events: false
        }
    }

    /// A write a spool replay may drop when the catalog refuses it for good: a file's progress
    /// (its completion follows) and a connection's refresh. Anything else holds the replay
    /// until it goes in, so no session end, recording, counter or event is ever deleted.
    public var mayBeDropped: Bool {
        switch self {
        case .recordingProgress, .upsertConnection: true
        default: false
        }
    }

    /// A few words for logs.
    public var name: String {
        switch self {
        case .updateSession: "session"
        case .upsertConnection: "connection"
        case .startRecording, .completeRecording: "recording"
        case .recordingProgress: "progress"
        case .events: "events"
        case .sessionCounters, .endSession, .endSegment: "session end"
        case .interruption: "interruption"
        case .webhooks: "webhooks"
        }
    }
}

extension CatalogStore {
    /// Applies a write. `replay` says it may have been applied already (its first attempt
    /// lost the connection, perhaps after the server committed it): rows it would duplicate
    /// are recognised and skipped.
    public func apply(_ write: CatalogWrite, replay: Bool = false) throws(CatalogError) {
        switch write {
        case .updateSession(let id, let sora, let connection, let client, let bundle, let url):
            try updateSession(id: id, soraSessionID: sora, connectionID: connection, clientID: client, bundleID: bundle, signalingURL: url)
        case .upsertConnection(let record):
            try upsertConnection(record)
        case .startRecording(let record):
            if replay, try recordingExists(record) { return }
            try insertRecording(record)
        case .completeRecording(let record, let createdPath):
            if replay, let stored = try recording(path: record.path), stored.sessionID == record.sessionID, stored.status != .recording { return }
            try completeRecording(record, createdPath: createdPath)
        case .recordingProgress(let session, let path, let progress):
            try updateRecordingProgress(sessionID: session, path: path, progress: progress)
        case .events(let events):
            let missing = replay ? try eventsNotStored(events) : events
            if missing.isEmpty { return }
            try insertEventsSalvaging(missing)
        case .sessionCounters(let id, let counters, let segment):
            guard try isCurrent(segment, of: id) else { return }
            try recordSessionCounters(id: id, counters: counters)
        case .endSession(let id, let endedAt, let reason, let status):
            try endSession(id: id, endedAt: endedAt, endReason: reason, exitStatus: status)
        case .endSegment(let id, let segment, let endedAt, let reason, let status):
            try endSegment(id: id, segment: segment, endedAt: endedAt, endReason: reason, exitStatus: status)
        case .interruption(let record, let segment):
            guard try isCurrent(segment, of: record.sessionID) else { return }
            try saveInterruption(record)  // an upsert: a replay rewrites the same row
        case .webhooks(let rows):
            try enqueueWebhooks(rows)
        }
    }

    /// Whether a write of `segment` still speaks for the session: nil (a version without
    /// segments) always does. A stale one is skipped, not refused: a spool holding it must not
    /// stall on it, and what it says is no longer the session's.
    private func isCurrent(_ segment: Int?, of sessionID: String) throws(CatalogError) -> Bool {
        guard let segment else { return true }
        guard let session = try session(id: sessionID) else { return true }  // the write itself reports the missing row
        return (session.segment ?? SessionSegmentRecord.first) == segment
    }

    private func recordingExists(_ record: RecordingRecord) throws(CatalogError) -> Bool {
        try recordings(RecordingFilter(sessionID: record.sessionID, connectionID: record.connectionID)).contains { $0.part == record.part }
    }

    /// A batch in one transaction; when the catalog refuses it for good, its events one by
    /// one, so one row it cannot take does not cost the others (those it refused are named in
    /// a `.rowsRefused` error once the rest are in).
    private func insertEventsSalvaging(_ events: [EventRecord]) throws(CatalogError) {
        do {
            try insertEvents(events)
        } catch where !error.isRetryable && events.count > 1 {
            var refused: [CatalogError] = []
            for event in events {
                do { try insertEvents([event]) } catch where !error.isRetryable { refused.append(error) }
            }
            guard let first = refused.first else { return }
            throw CatalogError(path: first.path, reason: .rowsRefused(
                "\(refused.count) of \(events.count) events refused, the rest stored; the first: \(first)"))
        }
    }

    /// The batch's events the catalog does not hold yet. A batch is one transaction, but one
    /// that was being stored row by row (after a refusal) can have lost its connection half way,
    /// so each event is looked for; identical events (same time, sender and payload) are counted,
    /// not merged.
    private func eventsNotStored(_ events: [EventRecord]) throws(CatalogError) -> [EventRecord] {
        var stored: [StoredEventQuery: [StoredEventKey: Int]] = [:]
        var missing: [EventRecord] = []
        for event in events {
            let query = StoredEventQuery(session: event.sessionID, kind: event.kind, type: event.eventType, label: event.label)
            if stored[query] == nil {
                let rows = try self.events(EventFilter(sessionID: query.session, kind: query.kind, eventType: query.type, label: query.label))
                stored[query] = rows.reduce(into: [:]) { $0[StoredEventKey(receivedAt: $1.receivedAt, payload: $1.payload, sender: $1.senderConnectionID), default: 0] += 1 }
            }
            let key = StoredEventKey(receivedAt: event.receivedAt, payload: event.payload, sender: event.senderConnectionID)
            if let count = stored[query]?[key], count > 0 {
                stored[query]?[key] = count - 1
            } else {
                missing.append(event)
            }
        }
        return missing
    }
}

/// What identifies an event a replay may find stored already, and the query that finds it.
private struct StoredEventKey: Hashable {
    var receivedAt: Int64
    var payload: EventPayload
    var sender: String?
}

private struct StoredEventQuery: Hashable {
    var session: String
    var kind: EventKind
    var type: String?
    var label: String?
}
