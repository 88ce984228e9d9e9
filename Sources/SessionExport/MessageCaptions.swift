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

/// One caption: milliseconds on its file's timeline, and the cue's text (WebVTT cue payload).
public struct CaptionCue: Sendable, Equatable {
    public var start: Int64
    public var end: Int64
    public var text: String

    public init(start: Int64, end: Int64, text: String) { (self.start, self.end, self.text) = (start, end, text) }
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

    /// A composition's caption file from its cues (nil when there are none).
    public static func document(sessionID: String, cues: [CaptionCue]) -> String? {
        document(header: "WEBVTT - messages of session \(WebVTTText.voiceName(sessionID))", cues: cues)
    }

    static func render(header: String, start: Int64, length: Int64, events: [EventRecord], options: CaptionOptions) -> String? {
        document(header: header, cues: cues(length: length, events: events, options: options) { CatalogTime.span(from: start, to: $0) })
    }

    /// Each message shown `cueMilliseconds` from where `place` puts it (never past `length`),
    /// in time order; messages placed outside `0..<length` are left out.
    public static func cues(length: Int64, events: [EventRecord], options: CaptionOptions = CaptionOptions(), place: (Int64) -> Int64?) -> [CaptionCue] {
        guard length > 0 else { return [] }
        return events.sorted(by: { $0.receivedAt < $1.receivedAt }).compactMap { event in
            guard let offset = place(event.receivedAt), offset >= 0, offset < length, let text = caption(event, options: options) else { return nil }
            return CaptionCue(start: offset, end: offset + min(options.cueMilliseconds, length - offset), text: text)  // never overflowing
        }
    }

    static func document(header: String, cues: [CaptionCue]) -> String? {
        guard !cues.isEmpty else { return nil }
        let blocks = cues.map { "\(WebVTTText.timestamp(milliseconds: $0.start)) --> \(WebVTTText.timestamp(milliseconds: $0.end))\n\($0.text)" }
        return ([header] + blocks).joined(separator: "\n\n") + "\n"
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
