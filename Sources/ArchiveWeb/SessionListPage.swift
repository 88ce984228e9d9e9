import Archive

/// The first page: sessions newest first, filtered like `recbot sessions list`, a page at a time.
public struct SessionListPage: Sendable {
    public struct Filter: Sendable, Equatable {
        public var channelID: String?
        public var since: Int64?
        public var until: Int64?
        /// Texts as typed, to put back in the form.
        public var sinceText: String?
        public var untilText: String?

        public init(channelID: String? = nil, since: Int64? = nil, until: Int64? = nil, sinceText: String? = nil, untilText: String? = nil) {
            (self.channelID, self.since, self.until, self.sinceText, self.untilText) = (channelID, since, until, sinceText, untilText)
        }
    }

    public static let pageSize = 50

    public var sessions: [SessionRecord]
    public var filter: Filter
    /// One more row than shown was found: there is an older page.
    public var hasOlder: Bool
    public var error: String?

    public init(sessions: [SessionRecord], filter: Filter, hasOlder: Bool, error: String? = nil) {
        (self.sessions, self.filter, self.hasOlder, self.error) = (sessions, filter, hasOlder, error)
    }

    /// The page's sessions from the catalog: one row more than shown says whether there is an
    /// older page. Blocking: call it off the event loop.
    public static func load(from store: any CatalogStore, filter: Filter) throws(CatalogError) -> SessionListPage {
        let found = try store.sessions(SessionFilter(channelID: filter.channelID, since: filter.since, until: filter.until, limit: pageSize + 1))
        return SessionListPage(sessions: Array(found.prefix(pageSize)), filter: filter, hasOlder: found.count > pageSize)
    }

    public func rendered() -> String {
        var body = "<h1>Sessions</h1>\n" + filterForm()
        if let error { body += "<p class=\"error\">\(HTML.escape(error))</p>\n" }
        if sessions.isEmpty {
            body += "<p class=\"empty\">No sessions\(filter == Filter() ? " yet" : " match these filters").</p>\n"
        } else {
            body += "<table class=\"sessions\"><thead><tr><th>Started (UTC)</th><th>Channel</th><th>Length</th><th>Ended because</th><th>Session</th></tr></thead><tbody>\n"
            for session in sessions { body += row(session) }
            body += "</tbody></table>\n"
        }
        if hasOlder, let last = sessions.last {
            let older = HTML.query([("channel", filter.channelID), ("since", filter.sinceText), ("until", String(last.startedAt))])
            body += "<p class=\"pager\"><a rel=\"next\" href=\"\(HTML.escape(WebPaths.sessions + older))\">Older sessions</a></p>\n"
        }
        return WebPage(title: "Sessions", body: body).rendered()
    }

    private func filterForm() -> String {
        func field(_ name: String, _ label: String, _ value: String?, _ hint: String) -> String {
            "<label>\(label) <input name=\"\(name)\" value=\"\(HTML.escape(value ?? ""))\" placeholder=\"\(hint)\"></label>"
        }
        return "<form class=\"filters\" method=\"get\" action=\"\(WebPaths.sessions)\">"
            + field("channel", "Channel", filter.channelID, "any")
            + field("since", "Since", filter.sinceText, "7d or 2026-11-22")
            + field("until", "Until", filter.untilText, "now")
            + "<button>Filter</button></form>\n"
    }

    private func row(_ session: SessionRecord) -> String {
        let length = session.endedAt.map { WebFormat.duration(milliseconds: $0 - session.startedAt) } ?? "recording"
        let link = WebPaths.session(session.id)
        return "<tr><td><a href=\"\(link)\">\(WebFormat.time(milliseconds: session.startedAt))</a></td>"
            + "<td>\(HTML.escape(session.channelID))</td><td>\(length)</td>"
            + "<td>\(HTML.escape(session.endReason ?? ""))</td><td class=\"id\"><a href=\"\(link)\">\(HTML.escape(session.id))</a></td></tr>\n"
    }
}
