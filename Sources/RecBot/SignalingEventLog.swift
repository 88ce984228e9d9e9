import Archive
import DiskLayout
import Foundation
import Logging
import Recorder
import SoraSignalingCore
import WireCoding

/// Stores what Sora says: every notify and push, raw, and any message recbot does not act on,
/// up to the session's event limits; beyond them events are counted (and logged once), not stored.
final class SignalingEventLog {
    let sessionID: String
    private let clock: any TimeSource
    let writer: CatalogWriter
    let logger: Logger
    let limits: EventLimits
    private(set) var stored = 0
    private(set) var storedBytes = 0
    private(set) var refused = 0
    private(set) var refusedBytes = 0
    /// A notify told a participant's ids (for the sidecars; set before the first message).
    var onParticipant: ((ConnectionRecord) -> Void)?

    init(sessionID: String, writer: CatalogWriter, logger: Logger, clock: any TimeSource, limits: EventLimits = EventLimits()) {
        self.sessionID = sessionID
        self.clock = clock
        self.writer = writer
        self.logger = logger
        self.limits = limits
    }

    /// Submits an event unless the session's limits are reached.
    private func store(_ event: EventRecord) {
        let size = event.payloadSize
        guard stored < limits.maximumCount, storedBytes + size <= limits.maximumBytes else {
            if refused == 0 {
                logger.warning("event limit reached: further events are counted, not stored",
                               metadata: ["stored": "\(stored)", "stored_bytes": "\(storedBytes)"])
            }
            refused += 1
            refusedBytes += size
            return
        }
        guard writer.submitEvent(event, bytes: size + 256) else { return }  // the writer counts it
        stored += 1
        storedBytes += size
    }

    /// What the signaling session asked to keep; `receivedAt` (Unix milliseconds): when it was
    /// read, if known (else now).
    func store(_ record: SignalingRecord, receivedAt: Int64? = nil) {
        switch record {
        case .message(let message, let label): self.record(message, label: label, receivedAt: receivedAt)
        case .dataChannelMessage(let label, let sender, let isBinary, let data):
            recordDataChannelMessage(label: label, sender: sender, isBinary: isBinary, data: data, receivedAt: receivedAt)
        case .malformed(let text):
            store(EventRecord(sessionID: sessionID, kind: .signaling, eventType: "malformed", receivedAt: clock.wallClockMilliseconds(),
                              payload: .text(text)))
        }
    }

    /// notify / push / unknown messages go into the events table, raw; notify also keeps `connections` current.
    /// `label`: the data channel it came on (nil: the WebSocket).
    func record(_ message: IncomingMessage, label: String? = nil, receivedAt: Int64? = nil) {
        let receivedAt = receivedAt ?? clock.wallClockMilliseconds()
        let event: EventRecord
        switch message {
        case .notify(let type, let raw):
            event = EventRecord(sessionID: sessionID, kind: .notify, eventType: type, label: label, receivedAt: receivedAt, payload: .json(received: raw))
            if let connection = ConnectionNotice(raw: raw, sessionID: sessionID, at: receivedAt) {
                writer.submit(.upsertConnection(connection.record), bytes: raw.utf8.count + 256)
                onParticipant?(connection.record)
            }
        case .push(let raw):
            event = EventRecord(sessionID: sessionID, kind: .push, label: label, receivedAt: receivedAt, payload: .json(received: raw))
        case .switched(_, let raw):
            event = EventRecord(sessionID: sessionID, kind: .signaling, eventType: "switched", receivedAt: receivedAt, payload: .json(received: raw))
        case .other(let type, let raw):
            logger.info("unknown signaling message stored", metadata: ["type": "\(type)"])
            event = EventRecord(sessionID: sessionID, kind: .signaling, eventType: type, label: label, receivedAt: receivedAt, payload: .json(received: raw))
        default:
            return
        }
        store(event)
    }

    /// A video section refused because WebM cannot hold its codec: kept as a `recbot` event.
    func recordRefusedVideo(sender: String, codecs: [String]) {
        let object: [String: Any] = ["connection_id": sender, "codecs": codecs, "reason": "WebM cannot hold this video codec; audio is still recorded"]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        let event = EventRecord(sessionID: sessionID, kind: .recbot, eventType: "video.refused", senderConnectionID: sender,
                                receivedAt: clock.wallClockMilliseconds(), payload: .json(String(decoding: data, as: UTF8.self)))
        store(event)
    }

    /// A message on a messaging channel (`#label`, `e2ee`, `rpc`): text that is JSON is stored as
    /// JSON, other text as text, binary as bytes.
    func recordDataChannelMessage(label: String, sender: String?, isBinary: Bool, data: [UInt8], receivedAt: Int64? = nil) {
        let payload: EventPayload
        if !isBinary, let text = String(validating: data, as: UTF8.self) {
            payload = .classify(text: text)
        } else {
            payload = .binary(data)
        }
        let event = EventRecord(sessionID: sessionID, kind: .datachannel, label: label, senderConnectionID: sender,
                                receivedAt: receivedAt ?? clock.wallClockMilliseconds(), payload: payload)
        store(event)
    }
}

/// What a `connection.created/updated/destroyed` notify says about a participant.
struct ConnectionNotice {
    var record: ConnectionRecord

    init?(raw: String, sessionID: String, at time: Int64) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) as? [String: Any],
              let type = object["event_type"] as? String, type.hasPrefix("connection."),
              // The connection-id rule on the way in: the id names files and catalog rows.
              let connectionID = object["connection_id"] as? String, ArchiveLayout.isSafeConnectionID(connectionID)
        else { return nil }
        func json(_ key: String) -> String? {
            guard let value = object[key], !(value is NSNull),
                  let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) else { return nil }
            return String(decoding: data, as: UTF8.self)
        }
        record = ConnectionRecord(sessionID: sessionID, connectionID: connectionID, firstSeenAt: time, clientID: object["client_id"] as? String,
                                  bundleID: object["bundle_id"] as? String, role: object["role"] as? String, metadata: json("metadata"),
                                  authnMetadata: json("authn_metadata"), authzMetadata: json("authz_metadata"),
                                  leftAt: type == "connection.destroyed" ? time : nil)
    }
}

extension EventRecord {
    /// Bytes the event's payload takes in the catalog.
    var payloadSize: Int {
        switch payload {
        case .json(let text), .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}
