import Archive
import Foundation
@testable import SessionExport
import Testing

@Suite struct WebVTTTextTests {
    @Test func timestampsHaveHoursMinutesSecondsAndMilliseconds() {
        #expect(WebVTTText.timestamp(milliseconds: 0) == "00:00:00.000")
        #expect(WebVTTText.timestamp(milliseconds: 3_723_456) == "01:02:03.456")
        #expect(WebVTTText.timestamp(milliseconds: 360_000_000) == "100:00:00.000")
        #expect(WebVTTText.timestamp(milliseconds: -5) == "00:00:00.000")
    }

    /// A sender controls the text: it cannot open a tag, end the cue or hide characters.
    @Test func hostileTextCannotBreakOutOfItsCue() {
        let text = WebVTTText.cueText("<b>hi</b> & bye --> 00:00:01.000\n\n\nnext\u{7}line\u{202E}cba\r\n ")
        #expect(!text.contains("<") && !text.contains(">") && !text.contains("\n\n"))
        #expect(text == "&lt;b&gt;hi&lt;/b&gt; &amp; bye --&gt; 00:00:01.000\nnext\\u{7}line\\u{202E}cba")
        #expect(WebVTTText.cueText("\n \n") == "(empty)")
        #expect(WebVTTText.cueText(String(repeating: "a", count: 600)).count == 501)
        #expect(WebVTTText.voiceName("a<b>&c\n") == "abc")
    }
}

@Suite struct MessageCaptionsTests {
    let session = SessionRecord(id: "01JD2G0000AAAAAAAAAAAAAAAA", channelID: "sora", startedAt: 1_000_000)

    func recording(startedAt: Int64 = 1_001_000, durationMs: Int64? = 10_000) -> RecordingRecord {
        var r = RecordingRecord(sessionID: session.id, connectionID: "SENDER1", part: 0, path: "recordings/x/archive-SENDER1.webm", videoCodec: "VP8", audioCodec: "OPUS",
                                startedAt: startedAt)
        r.durationMs = durationMs
        return r
    }

    func chat(_ text: String, at time: Int64, label: String = "#chat", sender: String = "ALICE") -> EventRecord {
        EventRecord(sessionID: session.id, kind: .datachannel, label: label, senderConnectionID: sender, receivedAt: time, payload: .text(text))
    }

    @Test func cuesSitOnTheFilesTimelineAndEndWithIt() throws {
        let events = [
            chat("before the file", at: 1_000_500), chat("hello", at: 1_003_500), chat("last words", at: 1_009_000),
            chat("after the file", at: 1_011_000),
            EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", senderConnectionID: "BOB", receivedAt: 1_004_000,
                        payload: .binary([0, 1, 2])),
            chat("not a messaging channel", at: 1_005_000, label: "stats"),
        ]
        let text = try #require(MessageCaptions.render(recording: recording(), events: events))
        #expect(text == """
            WEBVTT - messages of session 01JD2G0000AAAAAAAAAAAAAAAA over SENDER1

            00:00:02.500 --> 00:00:07.500
            <v ALICE>#chat: hello</v>

            00:00:03.000 --> 00:00:08.000
            <v BOB>#chat: [binary message, 3 bytes]</v>

            00:00:08.000 --> 00:00:10.000
            <v ALICE>#chat: last words</v>

            """)
    }

    /// A composition's captions: zero is where the composition starts on the session's timeline,
    /// and each sender is called by its name.
    @Test func compositionCaptionsUseTheSessionTimelineAndSenderNames() throws {
        let names = SenderNames(connections: [
            ConnectionRecord(sessionID: session.id, connectionID: "ALICE", firstSeenAt: 0, clientID: "ALICE", metadata: #"{"display_name":"Alice <A>"}"#),
            ConnectionRecord(sessionID: session.id, connectionID: "BOB", firstSeenAt: 0, clientID: "bob-laptop", metadata: #"{"name":""}"#),
            ConnectionRecord(sessionID: session.id, connectionID: "CAROL", firstSeenAt: 0, clientID: "CAROL", metadata: "not json"),
        ])
        #expect(names.name(for: "ALICE") == "Alice <A>" && names.name(for: "BOB") == "bob-laptop" && names.name(for: "CAROL") == "CAROL")
        #expect(names.name(for: "DAVE") == "DAVE")
        let events = [chat("too early", at: 1_001_000), chat("hi", at: 1_003_000), chat("yo", at: 1_004_000, sender: "BOB"),
                      chat("carol", at: 1_005_000, sender: "CAROL"), chat("too late", at: 1_006_000)]
        // An excerpt from 2 s to 5.5 s into the session.
        let text = try #require(MessageCaptions.render(sessionID: session.id, start: 1_002_000, length: 3_500, events: events,
                                                       options: CaptionOptions(names: names)))
        #expect(text == """
            WEBVTT - messages of session 01JD2G0000AAAAAAAAAAAAAAAA

            00:00:01.000 --> 00:00:03.500
            <v Alice A>#chat: hi</v>

            00:00:02.000 --> 00:00:03.500
            <v bob-laptop>#chat: yo</v>

            00:00:03.000 --> 00:00:03.500
            <v CAROL>#chat: carol</v>

            """)
    }

    @Test func connectionEventsOnlyWhenAskedFor() throws {
        let created = EventRecord(sessionID: session.id, kind: .notify, eventType: "connection.created", receivedAt: 1_002_000,
                                  payload: .json(#"{"type":"notify","event_type":"connection.created","connection_id":"CAROL"}"#))
        #expect(MessageCaptions.render(recording: recording(), events: [created]) == nil)
        let text = try #require(MessageCaptions.render(recording: recording(), events: [created], options: CaptionOptions(connectionEvents: true)))
        #expect(text.hasSuffix("00:00:01.000 --> 00:00:06.000\n[connection.created CAROL]\n"))
    }

    @Test func aRecordingWithoutALengthHasNoCaptions() {
        #expect(MessageCaptions.render(recording: recording(durationMs: nil), events: [chat("hi", at: 1_002_000)]) == nil)
    }
}

@Suite struct EventLogTests {
    let session = SessionRecord(id: "01JD2G0000AAAAAAAAAAAAAAAA", channelID: "sora", startedAt: 1_700_000_000_000)

    /// Each line is one JSON object; a sender's JSON is kept as written (a 20-digit number would
    /// lose digits through a parse), made one line.
    @Test func everyLineIsJSONAndKeepsTheSendersJSON() throws {
        let events = [
            EventRecord(sessionID: session.id, kind: .notify, eventType: "connection.created", receivedAt: 1_700_000_001_250,
                        payload: .json("{\n  \"type\": \"notify\",\n  \"n\": 12345678901234567890\n}")),
            EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", senderConnectionID: "ALICE",
                        receivedAt: 1_700_000_002_000, payload: .text("line\n\"quoted\"")),
            EventRecord(sessionID: session.id, kind: .datachannel, label: "#bin", receivedAt: 1_700_000_000_500, payload: .binary([0xFF, 0])),
        ]
        let lines = EventLog.render(session: session, events: events).split(separator: "\n")
        #expect(lines.count == 3)
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["session_offset_ms"] as? Int } == [500, 1_250, 2_000])
        #expect(objects[0]["received_at"] as? String == "2023-11-14T22:13:20.500Z")
        #expect((objects[0]["payload"] as? [String: Any])?["base64"] as? String == "/wA=")
        #expect(lines[1].contains("\"n\": 12345678901234567890"))
        #expect((objects[2]["payload"] as? [String: Any])?["text"] as? String == "line\n\"quoted\"")
        #expect(objects[2]["sender_connection_id"] as? String == "ALICE" && objects[1]["label"] is NSNull)
    }

    /// A message that begins with a byte-order mark (Foundation's parser skips it; JSON Lines
    /// readers do not) is stored as JSON without it, and a row stored raw before that rule is
    /// exported as text: every line stays JSON that a strict reader takes.
    @Test func aByteOrderMarkNeverReachesTheExport() throws {
        let received = "\u{FEFF}{\"message\":\"hi\"}"
        #expect(EventPayload.classify(text: received) == .json("{\"message\":\"hi\"}"))
        #expect(EventPayload.classify(text: "\u{FEFF}not json") == .text("\u{FEFF}not json"))
        #expect(EventPayload.json(received: received) == .json("{\"message\":\"hi\"}"))
        let stale = EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", receivedAt: 1_700_000_000_000,
                                payload: .json(received))
        let line = EventLog.render(session: session, events: [stale])
        #expect(line.hasPrefix("{") && line.contains("\"payload\":{\"text\":"), "\(line)")
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((object["payload"] as? [String: Any])?["text"] is String, "a stale row goes out as text, not as raw JSON")
    }
}

/// A catalog is a file anyone with access can edit: times at Int64's ends export without a trap.
@Suite struct ExtremeCatalogTimesTests {
    @Test func timesAtInt64sEndsExportAsValidLines() throws {
        let session = SessionRecord(id: "01JD2G0000AAAAAAAAAAAAAAAA", channelID: "sora", startedAt: .min)
        let events = [Int64.max, .min, 0].map {
            EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", senderConnectionID: "A", receivedAt: $0, payload: .text("x"))
        }
        let lines = EventLog.render(session: session, events: events).split(separator: "\n")
        #expect(lines.count == 3)
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let time = try #require(object["received_at"] as? String)
            #expect(time.count == 24 && time.hasSuffix("Z"), "\(time)")
        }
        var recording = RecordingRecord(sessionID: session.id, connectionID: "A", part: 0, path: "p", videoCodec: nil, audioCodec: nil, startedAt: .min)
        recording.endedAt = .max
        #expect(MessageCaptions.render(recording: recording, events: events) == nil)
        recording.startedAt = -10
        recording.durationMs = .max
        let captions = try #require(MessageCaptions.render(recording: recording, events: events))
        #expect(captions.contains("00:00:00.010 --> 00:00:05.010"))
    }
}

@Suite struct SessionExportFilesTests {
    @Test func namesFollowTheArchiveAndFilesAreWrittenWhole() throws {
        let session = SessionRecord(id: "01JD2G0000AAAAAAAAAAAAAAAA", channelID: "sora", startedAt: 0)
        var first = RecordingRecord(sessionID: session.id, connectionID: "A", part: 0, path: "p", videoCodec: nil, audioCodec: nil, startedAt: 0)
        first.durationMs = 5_000
        var second = RecordingRecord(sessionID: session.id, connectionID: "A", part: 2, path: "q", videoCodec: nil, audioCodec: nil, startedAt: 5_000)
        second.durationMs = 5_000
        var unsafe = first
        unsafe.connectionID = "../x"
        let events = [EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", receivedAt: 6_000, payload: .text("hi")),
                      EventRecord(sessionID: session.id, kind: .datachannel, label: "#chat", receivedAt: 1_000, payload: .text("yo"))]
        let files = SessionExport.files(session: session, events: events, recordings: [second, first, unsafe], formats: [.jsonl, .webvtt])
        #expect(files.map(\.name) == ["events.jsonl", "archive-A.messages.vtt", "split-archive-A_0002.messages.vtt"])
        #expect(SessionExport.files(session: session, events: events, recordings: [first], formats: [.webvtt]).map(\.name) == ["archive-A.messages.vtt"])

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paths = try SessionExport.write(files, to: directory)
        #expect(try paths.map { try String(contentsOfFile: $0, encoding: .utf8) } == files.map(\.contents))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == files.map(\.name).sorted())
    }
}
