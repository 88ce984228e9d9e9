import Archive
import DiskLayout
import Foundation

/// A session's notify, push and data-channel messages as JSON Lines: one object per message, in
/// arrival order, with its absolute time and its offset on the session's timeline (milliseconds
/// since the session started, the origin of the archive's `start_time_offset`).
public enum EventLog {
    public static func render(session: SessionRecord, events: [EventRecord]) -> String {
        events.sorted { ($0.receivedAt, $0.id ?? 0) < ($1.receivedAt, $1.id ?? 0) }
            .map { line($0, sessionStart: session.startedAt) + "\n" }.joined()
    }

    static func line(_ event: EventRecord, sessionStart: Int64) -> String {
        let fields: [(String, String)] = [
            ("session_id", quoted(event.sessionID)),
            ("kind", quoted(event.kind.rawValue)),
            ("event_type", event.eventType.map(quoted) ?? "null"),
            ("label", event.label.map(quoted) ?? "null"),
            ("sender_connection_id", event.senderConnectionID.map(quoted) ?? "null"),
            ("received_at", quoted(rfc3339(milliseconds: event.receivedAt))),
            ("received_at_ms", String(event.receivedAt)),
            ("session_offset_ms", CatalogTime.span(from: sessionStart, to: event.receivedAt).map { String($0) } ?? "null"),
            ("payload", payload(event.payload)),
        ]
        return "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// JSON as the sender wrote it (one line: whitespace between tokens only; JSON strings hold
    /// no raw line breaks), so no number or key order is changed; text as {"text"}; bytes as
    /// {"base64"}.
    static func payload(_ payload: EventPayload) -> String {
        switch payload {
        case .json(let text):
            guard StrictJSON.isValid(text) else {
                return "{\"text\":\(quoted(text))}"
            }
            return String(text.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 })
        case .text(let text):
            return "{\"text\":\(quoted(text))}"
        case .binary(let bytes):
            return "{\"base64\":\(quoted(Data(bytes).base64EncodedString())),\"bytes\":\(bytes.count)}"
        }
    }

    /// A JSON string literal (RFC 8259 escaping, via Foundation's encoder).
    static func quoted(_ text: String) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed, .withoutEscapingSlashes]) else {
            return "\"\""
        }
        return String(decoding: data, as: UTF8.self)
    }
}
