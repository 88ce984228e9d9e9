import Archive
import Foundation
import TestSupport
import Testing

/// The web archive (issue 44) in a real browser: headless Chromium loads `recbot serve`'s pages
/// for a recorded session with chat (Tests/Checkers/archive_browser.py drives it over the DevTools
/// protocol). The list shows the session, search finds its message, the player plays at the
/// recording's size, the session's composition plays on its page, the chat is a caption at its time, a `#t=` link lands on its second, and a
/// server bound beyond loopback refuses a browser without credentials. RECBOT_WEB_SCREENSHOTS
/// keeps each page's screenshot in that folder.
@Suite(.serialized) struct WebArchiveScenarioTests {
    /// The start (seconds) of the first cue of a WebVTT document whose text has `text`.
    static func cueStart(in document: String, containing text: String) -> Double? {
        let blocks = document.components(separatedBy: "\n\n")
        guard let block = blocks.first(where: { $0.contains(text) && $0.contains("-->") }),
              let timing = block.split(separator: "\n").first(where: { $0.contains("-->") }) else { return nil }
        let start = timing.components(separatedBy: " --> ")[0].split(separator: ":").compactMap { Double($0) }
        return start.reduce(0) { $0 * 60 + $1 }
    }

    @Test func aRecordedSessionCanBeFoundPlayedAndLinkedInABrowser() async throws {
        try await blocking {
            let scenario = try Scenario.exportedChatSession()
            defer { scenario.stop() }
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let recording = try #require(try catalog.recordings().first { $0.videoCodec != nil })
            let recordingID = try #require(recording.id)
            let size = try #require(recording.videoSizes.flatMap { Self.firstSize($0) }, "sizes: \(recording.videoSizes ?? "none")")
            let late = try #require((try scenario.truth()["late_chat"] as? [[String: Any]])?.first)
            let lateAt = Double(try #require(late["sent_at_ms"] as? Int) - Int(recording.startedAt)) / 1000
            let screenshots = ProcessInfo.processInfo.environment["RECBOT_WEB_SCREENSHOTS"] ?? scenario.directory.appendingPathComponent("screenshots").path

            let composed = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--width", "640", "--height", "360"])
            #expect(composed.status == 0, "\(composed.stderr.suffix(1_000))")

            let serve = try ServeProcess(scenario: scenario, arguments: ["--capacity", "0"], name: "web")
            defer { serve.stop() }
            let report = try Self.browse(["--base", "http://127.0.0.1:\(serve.port)", "--session", session.id, "--recording", String(recordingID),
                                          "--search", "late message", "--cue-at", String(format: "%.1f", lateAt + 0.4), "--seek", "3.0",
                                          "--screenshots", screenshots])
            let sessions = try #require(report["sessions"] as? [String: Any])
            #expect(sessions["status"] as? Int == 200 && (sessions["text"] as? String)?.contains(session.id) == true, "\(sessions)")
            let page = try #require(report["session"] as? [String: Any])
            #expect(page["parts"] as? Int == 1 && page["players"] as? Int == 2 /* the recording and the composition */ && (page["ticks"] as? Int ?? 0) >= 1, "\(page)")
            let composition = try #require(page["composition"] as? [String: Any], "the session page shows its composition: \(page)")
            #expect(composition["videoWidth"] as? Int == 640 && (composition["played"] as? Double ?? 0) > 0.3, "\(composition)")
            // The chat is on the composition too: the late message at its session time, under its sender's client id.
            let compositionCues = composition["cues"] as? [[String: Any]] ?? []
            let lateCue = try #require(compositionCues.first { ($0["text"] as? String)?.contains("late message on #chat") == true }, "\(composition)")
            let lateOnSession = Double(try #require(late["sent_at_ms"] as? Int) - Int(session.startedAt)) / 1000
            #expect(composition["captionMode"] as? String == "showing" && abs((lateCue["start"] as? Double ?? -1) - lateOnSession) <= 0.1,
                    "cue \(lateCue) vs sent \(lateOnSession) s into the session")
            #expect((lateCue["text"] as? String)?.hasPrefix("<v publisher-0>") == true, "\(lateCue)")
            // ... and inside the file, as its WebVTT text track, which FFmpeg reads back with the cue at the same time.
            let composedPath = composed.stdout.split(separator: "\n").first.map(String.init) ?? ""
            let track = try runProcess("/usr/bin/ffmpeg", ["-v", "error", "-copyts", "-i", composedPath, "-map", "0:s:0", "-f", "webvtt", "-"]).stdoutText
            let trackCue = Self.cueStart(in: track, containing: "late message on #chat")
            #expect(trackCue.map { abs($0 - lateOnSession) <= 0.1 } == true, "the file's text track: \(track)")
            let verified = try scenario.recbot(["verify", composedPath, "--data-dir", scenario.dataDirectory, "--json"])
            #expect(verified.status == 0 && verified.stdout.contains("\"subtitles\""), "a composition with its chat track verifies: \(verified.stdout)")
            let search = try #require(report["search"] as? [String: Any])
            #expect(search["rows"] as? Int == 1, "\(search)")
            #expect((search["moment"] as? String)?.contains("/archive/recordings/\(recordingID)#t=") == true, "\(search)")
            let play = try #require(report["play"] as? [String: Any])
            let (before, after) = (play["before"] as? Double ?? -1, play["after"] as? Double ?? -1)
            #expect(after - before >= 0.5, "the player advanced \(after - before) s in 1.5 s: \(play)")
            #expect(play["videoWidth"] as? Int == size.width && play["videoHeight"] as? Int == size.height, "\(play) vs \(size)")
            let captions = try #require(report["captions"] as? [String: Any])
            let cues = captions["cues"] as? [String] ?? []
            #expect(captions["mode"] as? String == "showing" && cues.contains { $0.contains("late message on #chat") }, "\(captions)")
            let seek = try #require(report["seek"] as? [String: Any])
            #expect(abs((seek["time"] as? Double ?? 0) - 3.0) < 0.05, "a #t=3.0 link landed at \(seek)")
            #expect(try serve.request("GET", "/archive/files/\(recordingID).webm", headers: ["range": "bytes=0-3"]).status == 206)
            #expect(try serve.request("GET", "/archive/files/\(recordingID + 1000).webm").status == 404)
            // The search page's other filters, as `recbot search` has them.
            let chat = try serve.request("GET", "/archive/search?q=late+message&kind=datachannel&since=1d")
            #expect(chat.status == 200 && chat.body.contains("/archive/recordings/\(recordingID)#t=") && chat.body.contains("<option selected>datachannel"), "\(chat.status) \(chat.body.suffix(1_500))")
            let notify = try serve.request("GET", "/archive/search?q=late+message&kind=notify")
            #expect(notify.status == 200 && notify.body.contains("No message contains"), "\(notify.body.suffix(1_000))")
            let future = try serve.request("GET", "/archive/search?q=late+message&until=2000-01-01")
            #expect(future.status == 200 && future.body.contains("No message contains"), "\(future.body.suffix(1_000))")
            #expect(try serve.request("GET", "/archive/search?q=x&since=yesterday-ish").status == 400)
            #expect(try serve.request("GET", "/archive/search?q=x&kind=signaling").status == 400)

            // Beyond loopback the archive needs its user: refused without, shown with.
            let exposed = try ServeProcess(scenario: scenario, arguments: ["--capacity", "0"],
                                           environment: ["RECBOT_SERVE_WEB_BASIC_AUTH": "viewer:s3cret"], name: "web-exposed", listen: "0.0.0.0:0")
            defer { exposed.stop() }
            let refused = try Self.browse(["--base", "http://127.0.0.1:\(exposed.port)", "--only-refusal", "--screenshots", screenshots])
            let refusal = try #require(refused["refusal"] as? [String: Any])
            #expect(refusal["status"] as? Int == 401 && (refusal["text"] as? String)?.contains(session.id) == false, "\(refusal)")
            let signedIn = try Self.browse(["--base", "http://127.0.0.1:\(exposed.port)", "--basic-auth", "viewer:s3cret", "--session", session.id])
            #expect(((signedIn["sessions"] as? [String: Any])?["text"] as? String)?.contains(session.id) == true, "\(signedIn)")
            #expect(try exposed.request("GET", "/archive/files/\(recordingID).webm").status == 401)
        }
    }

    static func browse(_ arguments: [String]) throws -> [String: Any] {
        let script = Scenario.checkersDirectory.appendingPathComponent("archive_browser.py").path
        let output = try runProcess("/usr/bin/env", ["python3", script] + arguments, killAfterSeconds: 180)
        guard output.status == 0, let report = try JSONSerialization.jsonObject(with: Data(output.stdoutText.utf8)) as? [String: Any] else {
            throw BrowserCheckFailed(message: output.stderrText.suffix(3_000).description)
        }
        return report
    }

    struct BrowserCheckFailed: Error { var message: String }

    /// `["320x240", …]` or `320x240`: the first size.
    static func firstSize(_ text: String) -> (width: Int, height: Int)? {
        let digits = text.split { !$0.isNumber }.compactMap { Int($0) }
        return digits.count >= 2 ? (digits[0], digits[1]) : nil
    }
}
