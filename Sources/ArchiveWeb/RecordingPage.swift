import Archive

/// One file: a player that starts at the link's moment (`#t=seconds`), with what the catalog
/// knows about the file.
public struct RecordingPage: Sendable {
    public var recording: RecordingRecord
    public var session: SessionRecord?
    public var hasCaptions: Bool

    public init(recording: RecordingRecord, session: SessionRecord?, hasCaptions: Bool) {
        (self.recording, self.session, self.hasCaptions) = (recording, session, hasCaptions)
    }

    public func rendered() -> String {
        guard let id = recording.id else { return WebPage(title: "Recording", body: "<p class=\"error\">No such recording.</p>").rendered() }
        var body = "<h1>\(HTML.escape(recording.connectionID))\(recording.part > 0 ? " part \(recording.part)" : "")</h1>\n"
        if let session {
            body += "<p><a href=\"\(WebPaths.session(session.id))\">\(HTML.escape(session.channelID)), \(WebFormat.time(milliseconds: session.startedAt)) UTC</a></p>\n"
        }
        body += "<figure class=\"player main\">" + MediaElement.render(recording, id: id, captions: hasCaptions) + "</figure>\n"
        let items: [(String, String?)] = [
            ("Started", WebFormat.time(milliseconds: recording.startedAt) + " UTC"),
            ("Length", recording.durationMs.map { WebFormat.duration(milliseconds: $0) }),
            ("Codecs", [recording.videoCodec, recording.audioCodec].compactMap { $0 }.joined(separator: ", ")),
            ("Sizes", recording.videoSizes),
            ("Status", recording.status.rawValue),
            ("Verification", recording.verification?.rawValue ?? "not verified"),
            ("Frames", "\(recording.videoFrames) video, \(recording.audioFrames) audio"),
            ("Packets lost", "\(recording.packetsLost) of \(recording.packetsReceived + recording.packetsLost) (\(recording.packetsRecovered) recovered)"),
            ("Bytes", String(recording.bytes)),
        ]
        body += "<dl class=\"summary\">" + items.compactMap { name, value in value.map { "<dt>\(name)</dt><dd>\(HTML.escape($0))</dd>" } }.joined() + "</dl>\n"
        body += "<p><a href=\"\(WebPaths.media(id))\" download>Download the WebM</a></p>\n"
        return WebPage(title: recording.connectionID, body: body).rendered()
    }
}
