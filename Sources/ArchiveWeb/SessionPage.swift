import Archive
import DiskLayout
import Foundation

/// One session: what it was, its timeline, a player per file (with the chat as captions when
/// it was exported), and its messages with links to the moment each arrived.
public struct SessionPage: Sendable {
    public struct Player: Sendable {
        public var recording: RecordingRecord
        /// The file's captions were exported (`<file>.messages.vtt` exists).
        public var hasCaptions: Bool
        public init(recording: RecordingRecord, hasCaptions: Bool) { (self.recording, self.hasCaptions) = (recording, hasCaptions) }
    }

    public static let eventLimit = 500

    public var session: SessionRecord
    public var connections: [ConnectionRecord]
    public var players: [Player]
    public var interruptions: [InterruptionRecord]
    /// The first `eventLimit` messages (by arrival), and how many there are in all.
    public var events: [EventRecord]
    public var eventTotal: Int
    public var now: Int64
    /// `recbot compose` wrote the session's composition where it writes it by default.
    public var hasComposition = false
    /// ...and the chat on its timeline beside it.
    public var hasCompositionCaptions = false

    public init(session: SessionRecord, connections: [ConnectionRecord], players: [Player], interruptions: [InterruptionRecord],
                events: [EventRecord], eventTotal: Int, now: Int64) {
        (self.session, self.connections, self.players, self.interruptions, self.events, self.eventTotal, self.now) =
            (session, connections, players, interruptions, events, eventTotal, now)
    }

    /// What the page shows, read from the catalog (nil: no such session). Blocking: call it
    /// off the event loop.
    public static func load(from store: any CatalogStore, id: String, dataDirectory: DataDirectory, now: Int64) throws(CatalogError) -> SessionPage? {
        guard let session = try store.session(id: id) else { return nil }
        let players = try store.recordings(RecordingFilter(sessionID: id)).map { Player(recording: $0, hasCaptions: hasCaptions($0, in: dataDirectory)) }
        let total = try store.eventCounts(sessionID: id).filter { $0.kind != .signaling }.reduce(0) { $0 + $1.count }
        var events: [EventRecord] = []
        for kind in [EventKind.notify, .push, .datachannel] {
            events += try store.events(EventFilter(sessionID: id, kind: kind, limit: eventLimit))
        }
        events = Array(events.sorted { ($0.receivedAt, $0.id ?? 0) < ($1.receivedAt, $1.id ?? 0) }.prefix(eventLimit))
        var page = SessionPage(session: session, connections: try store.connections(sessionID: id), players: players,
                               interruptions: try store.interruptions(sessionID: id), events: events, eventTotal: total, now: now)
        page.hasComposition = compositionPath(session: id, in: dataDirectory).map(FileManager.default.fileExists) ?? false
        page.hasCompositionCaptions = page.hasComposition
            && (compositionCaptionsPath(session: id, in: dataDirectory).map(FileManager.default.fileExists) ?? false)
        return page
    }

    /// Where `recbot compose` writes the session's composition, for a session id recbot makes.
    public static func compositionPath(session: String, in dataDirectory: DataDirectory) -> String? {
        dataDirectory.confinedLayout(session: session).map { $0.path(of: $0.compositionFilename) }
    }

    /// Where `recbot compose` writes the composition's captions.
    public static func compositionCaptionsPath(session: String, in dataDirectory: DataDirectory) -> String? {
        dataDirectory.confinedLayout(session: session).map { $0.path(of: $0.compositionCaptionsFilename) }
    }

    /// A recording's exported captions, where recbot writes them: only for a row whose file is
    /// one recbot could have written (the data directory's layout decides, not the row).
    public static func captionsPath(_ recording: RecordingRecord, in dataDirectory: DataDirectory) -> String? {
        guard let layout = dataDirectory.confinedLayout(session: recording.sessionID),
              dataDirectory.recordingFile(catalogPath: recording.path, sessionID: recording.sessionID, connectionID: recording.connectionID) != nil
        else { return nil }
        return layout.path(of: layout.messagesFilename(connectionID: recording.connectionID, part: recording.part))
    }

    public static func hasCaptions(_ recording: RecordingRecord, in dataDirectory: DataDirectory) -> Bool {
        captionsPath(recording, in: dataDirectory).map(FileManager.default.fileExists) ?? false
    }

    public func rendered() -> String {
        let recordings = players.map(\.recording)
        let timeline = SessionTimeline(session: session, connections: connections, recordings: recordings, interruptions: interruptions,
                                       eventTimes: events.map { ($0.senderConnectionID, $0.receivedAt) }, now: now)
        var body = "<h1>\(HTML.escape(session.channelID)) <small>\(WebFormat.time(milliseconds: session.startedAt)) UTC</small></h1>\n"
        body += summary()
        body += "<h2>Timeline</h2>\n<div class=\"timeline-box\">" + TimelineSVG.render(timeline) + "</div>\n"
        if hasComposition {
            let track = hasCompositionCaptions
                ? "<track kind=\"captions\" label=\"Messages\" srclang=\"und\" src=\"\(WebPaths.compositionCaptions(session.id))\" default>" : ""
            body += "<h2>Composition</h2>\n<figure class=\"player composition\"><video controls preload=\"metadata\" src=\"\(WebPaths.composition(session.id))\">\(track)</video>"
                + "<figcaption>The whole session: <code>recbot compose</code>'s grid of the senders, their audio mixed.</figcaption></figure>\n"
        }
        body += "<h2>Recordings</h2>\n"
        body += players.isEmpty ? "<p class=\"empty\">No files were recorded.</p>\n" : playerList(recordings: recordings)
        body += "<h2>Messages</h2>\n" + messages(recordings: recordings)
        return WebPage(title: session.channelID, body: body).rendered()
    }

    private func summary() -> String {
        var items: [(String, String)] = [("Session", session.id)]
        if let sora = session.soraSessionID { items.append(("Sora session", sora)) }
        items.append(("Length", session.endedAt.map { WebFormat.duration(milliseconds: $0 - session.startedAt) } ?? "recording now"))
        if let reason = session.endReason { items.append(("Ended because", reason)) }
        items.append(("Senders", String(Set(connections.map(\.connectionID)).count)))
        if !interruptions.isEmpty { items.append(("Outages", String(interruptions.count))) }
        return "<dl class=\"summary\">" + items.map { "<dt>\($0.0)</dt><dd>\(HTML.escape($0.1))</dd>" }.joined() + "</dl>\n"
    }

    private func playerList(recordings: [RecordingRecord]) -> String {
        var out = "<div class=\"players\">\n"
        for player in players {
            guard let id = player.recording.id else { continue }
            out += "<figure class=\"player\">" + MediaElement.render(player.recording, id: id, captions: player.hasCaptions)
                + "<figcaption><a href=\"\(WebPaths.recording(id))\">\(HTML.escape(player.recording.connectionID))"
                + (player.recording.part > 0 ? " part \(player.recording.part)" : "") + "</a> · "
                + "\(WebFormat.time(milliseconds: player.recording.startedAt)) · \(HTML.escape(player.recording.status.rawValue))</figcaption></figure>\n"
        }
        return out + "</div>\n"
    }

    private func messages(recordings: [RecordingRecord]) -> String {
        guard !events.isEmpty else { return "<p class=\"empty\">No messages.</p>\n" }
        var out = eventTotal > events.count ? "<p>The first \(events.count) of \(eventTotal) messages.</p>\n" : ""
        out += "<table class=\"events\"><thead><tr><th>At</th><th>Kind</th><th>Sender</th><th>Message</th></tr></thead><tbody>\n"
        for event in events {
            let at = WebFormat.duration(milliseconds: event.receivedAt - session.startedAt)
            let senderRecordings = recordings.filter { $0.connectionID == event.senderConnectionID }
            let atCell = MessagePlacement.locate(event, in: senderRecordings)
                .flatMap { placement in placement.recording.id.map { "<a href=\"\(WebPaths.moment($0, milliseconds: placement.offsetMilliseconds))\">\(at)</a>" } } ?? at
            let kind = [event.kind.rawValue, event.label ?? event.eventType].compactMap { $0 }.joined(separator: " ")
            out += "<tr><td>\(atCell)</td><td>\(HTML.escape(kind))</td><td>\(HTML.escape(event.senderConnectionID ?? ""))</td>"
                + "<td class=\"message\">\(HTML.escape(MessageText.shown(event.payload)))</td></tr>\n"
        }
        return out + "</tbody></table>\n"
    }
}

/// A `<video>` (or `<audio>` for a file without video) that plays a recording, with its captions.
enum MediaElement {
    static func render(_ recording: RecordingRecord, id: Int64, captions: Bool) -> String {
        let tag = recording.videoCodec == nil ? "audio" : "video"
        let track = captions ? "<track kind=\"captions\" label=\"Messages\" srclang=\"und\" src=\"\(WebPaths.captions(id))\" default>" : ""
        return "<\(tag) controls preload=\"metadata\" data-recording=\"\(id)\" src=\"\(WebPaths.media(id))\">\(track)</\(tag)>"
    }
}

/// A message as a line of text: JSON and text as received, a binary one as its text or its size.
public enum MessageText {
    public static let maximumCharacters = 400

    public static func shown(_ payload: EventPayload) -> String {
        let text: String
        switch payload {
        case .json(let json): text = SearchText.of(payload) ?? json
        case .text(let value): text = value
        case .binary(let bytes): text = SearchText.of(payload) ?? "(\(bytes.count) bytes)"
        }
        return text.count > maximumCharacters ? String(text.prefix(maximumCharacters)) + "…" : text
    }
}
