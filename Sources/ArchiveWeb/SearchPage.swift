import Archive

/// Search results: each message with its session, sender and time, linked to the moment it
/// arrived in the sender's recording.
public struct SearchPage: Sendable {
    public var text: String
    public var channelID: String?
    public var results: [SearchResults.Result]
    public var limit: Int
    public var error: String?
    public var caveat: String?
    /// The other filters as typed (shown again in the form): `recbot search`'s --since, --until, --kind.
    public var sinceText: String?
    public var untilText: String?
    public var kind: EventKind?

    /// The kinds the form offers (what `recbot search --kind` takes).
    public static let kinds: [EventKind] = [.datachannel, .notify, .push]

    public init(text: String, channelID: String?, results: [SearchResults.Result], limit: Int, error: String? = nil, caveat: String? = nil) {
        (self.text, self.channelID, self.results, self.limit, self.error, self.caveat) = (text, channelID, results, limit, error, caveat)
    }

    public func rendered() -> String {
        var body = "<h1>Search</h1>\n"
        body += "<form class=\"filters\" method=\"get\" action=\"\(WebPaths.search)\">"
            + "<label>Text <input type=\"search\" name=\"q\" value=\"\(HTML.escape(text))\"></label>"
            + "<label>Channel <input name=\"channel\" value=\"\(HTML.escape(channelID ?? ""))\" placeholder=\"any\"></label>"
            + "<label>Since <input name=\"since\" value=\"\(HTML.escape(sinceText ?? ""))\" placeholder=\"7d, 2026-11-22\"></label>"
            + "<label>Until <input name=\"until\" value=\"\(HTML.escape(untilText ?? ""))\" placeholder=\"now\"></label>"
            + "<label>Kind <select name=\"kind\"><option value=\"\">any</option>"
            + Self.kinds.map { "<option\($0 == kind ? " selected" : "")>\($0.rawValue)</option>" }.joined() + "</select></label>"
            + "<button>Search</button></form>\n"
        if let error { body += "<p class=\"error\">\(HTML.escape(error))</p>\n" }
        if let caveat { body += "<p class=\"warning\">\(HTML.escape(caveat))</p>\n" }
        if !text.isEmpty && error == nil {
            body += results.isEmpty ? "<p class=\"empty\">No message contains “\(HTML.escape(text))”.</p>\n" : table()
            if results.count >= limit { body += "<p>The newest \(limit) matches; narrow by channel, time or kind to see others.</p>\n" }
        }
        return WebPage(title: text.isEmpty ? "Search" : "Search: \(text)", body: body, searchText: text).rendered()
    }

    private func table() -> String {
        var out = "<table class=\"results\"><thead><tr><th>Received (UTC)</th><th>Channel</th><th>Sender</th><th>Kind</th><th>Play at</th><th>Message</th></tr></thead><tbody>\n"
        for result in results {
            let event = result.match.event
            let play = result.placement.flatMap { placement in
                placement.recording.id.map { "<a class=\"moment\" href=\"\(WebPaths.moment($0, milliseconds: placement.offsetMilliseconds))\">\(WebFormat.duration(milliseconds: placement.offsetMilliseconds))</a>" }
            } ?? ""
            let kind = [event.kind.rawValue, event.label ?? event.eventType].compactMap { $0 }.joined(separator: " ")
            out += "<tr><td><a href=\"\(WebPaths.session(event.sessionID))\">\(WebFormat.time(milliseconds: event.receivedAt))</a></td>"
                + "<td>\(HTML.escape(result.match.channelID))</td><td>\(HTML.escape(event.senderConnectionID ?? ""))</td>"
                + "<td>\(HTML.escape(kind))</td><td>\(play)</td>"
                + "<td class=\"message\">\(HTML.escape(SearchSnippet.around(result.match.searchedText ?? MessageText.shown(event.payload), match: text)))</td></tr>\n"
        }
        return out + "</tbody></table>\n"
    }
}
