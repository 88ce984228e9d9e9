import Archive
import Foundation

/// What goes into a recording's caption file besides the chat.
public struct CaptionOptions: Sendable {
    /// Also show connection.created / connection.destroyed notifications.
    public var connectionEvents: Bool
    /// How long a message stays on screen (cut short by the end of the file).
    public var cueMilliseconds: Int64
    /// What each sender is called (its connection id when it has no name).
    public var names: SenderNames

    public init(connectionEvents: Bool = false, cueMilliseconds: Int64 = 5_000, names: SenderNames = SenderNames()) {
        self.connectionEvents = connectionEvents
        self.cueMilliseconds = max(1, cueMilliseconds)
        self.names = names
    }
}

/// A session's messages as WebVTT captions for one recording: cue times are on that file's
/// timeline (the clock of its blocks, whose zero is the recording's `started_at`), so a player
/// shows each message over the frames captured when it arrived.
public enum MessageCaptions {
    /// The caption file, or nil when no message falls within the recording.
    public static func render(recording: RecordingRecord, events: [EventRecord], options: CaptionOptions = CaptionOptions()) -> String? {
        let length = recording.durationMs ?? recording.endedAt.flatMap { CatalogTime.span(from: recording.startedAt, to: $0) } ?? 0
        let header = "WEBVTT - messages of session \(WebVTTText.voiceName(recording.sessionID)) over \(WebVTTText.voiceName(recording.connectionID))"
        return render(header: header, start: recording.startedAt, length: length, events: events, options: options)
    }

    /// A session's messages on a composition's timeline: zero is `start` (the session's start
    /// plus the excerpt's offset), `length` milliseconds long.
    public static func render(sessionID: String, start: Int64, length: Int64, events: [EventRecord], options: CaptionOptions = CaptionOptions()) -> String? {
        render(header: "WEBVTT - messages of session \(WebVTTText.voiceName(sessionID))", start: start, length: length, events: events, options: options)
    }

    static func render(header: String, start: Int64, length: Int64, events: [EventRecord], options: CaptionOptions) -> String? {
        guard length > 0 else { return nil }
        var cues: [String] = []
        for event in events.sorted(by: { $0.receivedAt < $1.receivedAt }) {
            guard let offset = CatalogTime.span(from: start, to: event.receivedAt), offset >= 0, offset < length,
                  let text = caption(event, options: options) else { continue }
            let end = offset + min(options.cueMilliseconds, length - offset)  // never past the file's end, never overflowing
            cues.append("\(WebVTTText.timestamp(milliseconds: offset)) --> \(WebVTTText.timestamp(milliseconds: end))\n\(text)")
        }
        guard !cues.isEmpty else { return nil }
        return ([header] + cues).joined(separator: "\n\n") + "\n"
    }

    /// A message of a messaging channel (a label starting with "#": Sora's), with its sender and
    /// label; a connection event when asked for; nil for everything else.
    static func caption(_ event: EventRecord, options: CaptionOptions) -> String? {
        switch event.kind {
        case .datachannel:
            guard let label = event.label, label.hasPrefix("#") else { return nil }
            let sender = WebVTTText.voiceName(event.senderConnectionID.map(options.names.name(for:)) ?? "unknown sender")
            return "<v \(sender)>\(WebVTTText.cueText(label, limit: 64)): \(WebVTTText.cueText(describe(event.payload)))</v>"
        case .notify:
            guard options.connectionEvents, let type = event.eventType,
                  ["connection.created", "connection.destroyed"].contains(type) else { return nil }
            let who = connectionID(in: event.payload).map { " " + $0 } ?? ""
            return WebVTTText.cueText("[\(type)\(who)]")
        default:
            return nil
        }
    }

    /// Text as it is; JSON as its text; bytes as a short description, never raw.
    static func describe(_ payload: EventPayload) -> String {
        switch payload {
        case .text(let text), .json(let text): text
        case .binary(let bytes): "[binary message, \(bytes.count) bytes]"
        }
    }

    private static func connectionID(in payload: EventPayload) -> String? {
        guard case .json(let text) = payload,
              let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
        return object["connection_id"] as? String
    }
}
