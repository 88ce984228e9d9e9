import Archive
@testable import ArchiveWeb
import Foundation
import Testing

/// The web archive's pages as text: what a publisher sent never becomes markup, the timeline
/// puts each file and message where it happened, and links carry the moment to play.
struct ArchivePagesTests {
    let session = SessionRecord(id: "01JD0000000000000000000001", channelID: "room<script>", startedAt: 1_000_000, endedAt: 1_060_000)

    func recording(_ id: Int64, sender: String, part: Int, from start: Int64, to end: Int64) -> RecordingRecord {
        var record = RecordingRecord(sessionID: session.id, connectionID: sender, part: part, path: "recordings/\(session.id)/archive-\(sender).webm",
                                     videoCodec: "VP8", audioCodec: "OPUS", startedAt: start, status: .complete)
        record.id = id
        record.endedAt = end
        record.durationMs = end - start
        return record
    }

    @Test func whatSendersWroteIsEscapedEverywhere() {
        let hostile = "<img src=x onerror=alert(1)>\u{202E}gnp.exe\"'&"
        let escaped = HTML.escape(hostile)
        #expect(!escaped.contains("<") && !escaped.contains(">") && !escaped.contains("\"") && !escaped.contains("'"))
        #expect(escaped.contains("\\u{202e}"), "a bidirectional override is shown, not obeyed: \(escaped)")
        let event = EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", senderConnectionID: "A", receivedAt: 1_010_000,
                                payload: .text(hostile))
        let page = SessionPage(session: session, connections: [], players: [], interruptions: [], events: [event], eventTotal: 1,
                               now: 2_000_000).rendered()
        #expect(!page.contains("<img") && !page.contains("<script>") && page.contains("room&lt;script&gt;"))
    }

    @Test func theTimelinePlacesFilesOutagesAndMessagesOnTheSessionsAxis() {
        let recordings = [recording(1, sender: "A", part: 0, from: 1_000_000, to: 1_060_000),
                          recording(2, sender: "A", part: 1, from: 1_000_000, to: 1_030_000),
                          recording(3, sender: "A", part: 2, from: 1_030_000, to: 1_060_000),
                          recording(4, sender: "B", part: 0, from: 1_030_000, to: 1_045_000)]
        let outage = InterruptionRecord(sessionID: session.id, ordinal: 1, startedAt: 1_045_000, cause: "x", attempts: 1, endedAt: 1_048_000)
        let timeline = SessionTimeline(session: session, connections: [], recordings: recordings, interruptions: [outage],
                                       eventTimes: [("B", 1_040_000), (nil, 1_001_000), ("A", 2_000_000)], now: 9_000_000)
        #expect(timeline.rows.map(\.connectionID) == ["A", "B"])
        #expect(timeline.x(1_030_000, width: 860) == 430 && timeline.x(1_060_000, width: 860) == 860)
        #expect(timeline.rows[1].parts.map(\.span) == [.init(start: 1_030_000, end: 1_045_000)])
        #expect(timeline.rows[0].ticks == [1_060_000], "a late message is clamped to the session's end")
        #expect(timeline.sessionTicks == [1_001_000] && timeline.interruptions == [.init(start: 1_045_000, end: 1_048_000)])
        let svg = TimelineSVG.render(timeline)
        #expect(svg.contains("<a href=\"/archive/recordings/4#t=10.0\">"), "B's message 10 s into its file links there: \(svg)")
        #expect(svg.components(separatedBy: "class=\"part ").count - 1 == 4 && svg.contains("class=\"outage\""))
        // The whole file and the split parts take two lanes, not one on top of the other.
        #expect(svg.contains("y=\"51\" width=\"860\" height=\"7\"") && svg.contains("y=\"59\" width=\"430\" height=\"7\""), "\(svg)")
    }

    @Test func aBusyChatDrawsOneTickPerPixel() {
        let times = (0..<100_000).map { (sender: Optional("A"), at: Int64(1_000_000 + $0 / 2)) }
        let timeline = SessionTimeline(session: session, connections: [], recordings: [recording(1, sender: "A", part: 0, from: 1_000_000, to: 1_060_000)],
                                       interruptions: [], eventTimes: times, now: 0)
        let ticks = TimelineSVG.render(timeline).components(separatedBy: "class=\"tick message\"").count - 1
        // 100,000 messages over 50 s of a 60 s axis 860 px wide: at most one tick for each of its 717 pixels.
        #expect(ticks >= 700 && ticks <= 860 * 50 / 60 + 1, "\(ticks) ticks")
    }

    @Test func theSessionListPagesByStartTime() {
        let sessions = (0..<3).map { SessionRecord(id: "01JD00000000000000000000\(10 + $0)", channelID: "c", startedAt: 5_000_000 - Int64($0) * 1_000) }
        let filter = SessionListPage.Filter(channelID: "c&d")
        let page = SessionListPage(sessions: sessions, filter: filter, hasOlder: true).rendered()
        #expect(page.contains("href=\"/archive/?channel=c%26d&amp;until=4998000\""), "the older page starts before the last row shown")
        #expect(SessionListPage(sessions: [], filter: .init(), hasOlder: false).rendered().contains("No sessions yet"))
    }

    @Test func timesAndMomentsAreReadable() {
        #expect(WebFormat.time(milliseconds: 1_764_000_000_000) == "2025-11-24 16:00:00")
        #expect(WebFormat.duration(milliseconds: 3_723_000) == "1:02:03" && WebFormat.duration(milliseconds: 65_000) == "1:05")
        #expect(WebPaths.moment(7, milliseconds: 12_345) == "/archive/recordings/7#t=12.3")
        #expect(HTML.query([("q", "契約 & co"), ("channel", nil), ("x", "")]) == "?q=%E5%A5%91%E7%B4%84%20%26%20co")
    }
}
