import Archive
import Foundation
import Testing
import TestSupport

/// `join --export` and `recbot export` on a session with messaging channels: the files land in
/// the session's directory, an independent WebVTT parser reads the captions, and each caption
/// sits where its message was sent on the recording's timeline.
@Suite(.serialized) struct ExportScenarioTests {
    @Test func chatCaptionsLandOnTheMediaTimeline() async throws {
        try await blocking {
            let scenario = try Scenario.exportedChatSession()
            defer { scenario.stop() }
            let truth = try scenario.truth()
            let late = try #require((truth["late_chat"] as? [[String: Any]])?.first)
            let sentAt = try #require(late["sent_at_ms"] as? Int)

            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let recording = try #require(try catalog.recordings().first)
            let directory = scenario.dataDirectory + "/recordings/" + session.id

            // events.jsonl: every stored event, one JSON object a line.
            let lines = try String(contentsOfFile: directory + "/events.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(lines.count == (try catalog.events(EventFilter(sessionID: session.id)).count))
            for line in lines { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)") }

            // The captions, as webvtt-py reads them.
            let captions = directory + "/archive-\(recording.connectionID).messages.vtt"
            let parsed = try runProcess("/usr/bin/env", ["python3", Scenario.checkersDirectory.appendingPathComponent("webvtt_check.py").path, captions])
            #expect(parsed.status == 0, "\(parsed.stderrText)")
            let cues = try #require(try JSONSerialization.jsonObject(with: Data(parsed.stdoutText.utf8)) as? [[String: Any]])
            #expect(cues.count == 4, "the three messages sent at the switch and the late one: \(cues)")
            #expect(cues.contains { $0["text"] as? String == "#chat: [binary message, 3000 bytes]" }, "bytes are described, never shown")
            #expect(cues.contains { $0["text"] as? String == "#chat: plain text" })
            let lateCue = try #require(cues.first { ($0["text"] as? String)?.contains("late message") == true })
            #expect(lateCue["text"] as? String == "#chat: late message on #chat &lt;b&gt;&amp;")
            #expect(lateCue["voice"] as? String == "publisher-0", "a sender is called by its client id (it has no name in its metadata): \(lateCue)")
            let onTimeline = Int64(sentAt) - recording.startedAt
            let start = try #require(lateCue["start_ms"] as? Int)
            // The cue is stamped with the time recbot's sockets' thread read the message, so it
            // trails the sender's clock only by the way there: 1-2 ms here, idle or beside four
            // busy loops. (Stamped when the session stored it, it once trailed by 60 ms in CI's
            // suite on two busy cores.) A misplaced caption is off by seconds.
            #expect(abs(Int64(start) - onTimeline) <= 100, "cue at \(start) ms, sent at \(onTimeline) ms on the file's timeline")

            // `recbot export` again, one format, elsewhere; a session that does not exist is not found (66).
            let elsewhere = scenario.dataDirectory + "/elsewhere"
            let again = try scenario.recbot(["export", session.id, "--format", "jsonl", "--out", elsewhere, "--data-dir", scenario.dataDirectory])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["events.jsonl"])
            let missing = try scenario.recbot(["export", "01JD2G0000AAAAAAAAAAAAAAAA", "--data-dir", scenario.dataDirectory])
            #expect(missing.status == 66, "\(missing.stderr)")
        }
    }
}
