import Archive
import Foundation
import TestSupport
import Testing

/// `recbot compose` (issue 44) on a session recorded from the test server: the composition
/// decodes, its sender's markers (a flash and a beep once a second) keep A/V sync and land at
/// their session time, and an excerpt is as long as asked.
@Suite(.serialized) struct ComposeScenarioTests {
    /// aiortc's VP8 sender, and its H.264 one (OpenH264's pictures drawn the same way).
    @Test(arguments: ["vp8", "h264"]) func aComposedSessionKeepsItsSendersTimeAndSync(codec: String) async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", codec])
            defer { scenario.stop() }
            let joined = try scenario.join(["--duration", "7s"])
            #expect(joined.status == 0, "recbot: \(joined.stderr.suffix(2_000))")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let recording = try #require(try catalog.recordings().first { $0.videoCodec != nil })
            let source = scenario.dataDirectory + "/" + recording.path

            // One 320x240 sender on a 640x480 canvas: its picture fills the frame, so the flashes are whole frames.
            let out = scenario.directory.appendingPathComponent("composed.webm").path
            let composed = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--out", out,
                                                "--width", "640", "--height", "480", "--json"])
            #expect(composed.status == 0, "\(composed.stderr.suffix(2_000))")
            let result = try #require(try JSONSerialization.jsonObject(with: Data(composed.stdout.utf8)) as? [String: Any], "\(composed.stdout)")
            let duration = try #require(result["duration_ms"] as? Int)
            #expect(result["decode_errors"] as? Int == 0 && result["senders"] as? Int == 1, "\(result)")
            #expect(abs((result["video_frames"] as? Int ?? 0) - duration * 30 / 1_000) <= 1, "\(result)")
            #expect(abs((result["audio_frames"] as? Int ?? 0) - duration / 20) <= 1, "\(result)")

            let composition = try Self.markers(out)
            let original = try Self.markers(source)
            #expect(composition.videoDecodeErrors == 0 && composition.videoMarkers.count >= 4, "\(composition)")
            // Compose keeps each track's time, so the composition has the sender's own A/V offset:
            // within 20 ms of it, and within 20 ms of zero for aiortc's VP8 (its H.264 encoder,
            // libx264 in PyAV, stamps late on a busy machine: 114 ms once in the full suite).
            let ownOffset = try #require(original.maxAbsOffset, "\(original)")
            #expect(composition.maxAbsOffset.map { $0 <= ownOffset + 20 && (codec != "vp8" || $0 <= 20) } == true,
                    "A/V offset in the composition: \(composition); in the sender's file: \(original)")
            // Each flash of the sender's file appears in the composition at its session time, within half a frame.
            let shift = Double(recording.startedAt - session.startedAt) / 1_000
            for time in original.audioMarkers {
                let nearest = composition.audioMarkers.min { abs($0 - time - shift) < abs($1 - time - shift) }
                #expect(nearest.map { abs($0 - time - shift) <= 0.01 } == true, "beep at \(time) s in the file (+\(shift) s) vs \(composition.audioMarkers)")
            }
            for time in original.videoMarkers {
                let nearest = composition.videoMarkers.min { abs($0 - time - shift) < abs($1 - time - shift) }
                #expect(nearest.map { abs($0 - time - shift) <= 0.5 / 30 + 0.002 } == true,
                        "flash at \(time) s in the file (+\(shift) s) vs \(composition.videoMarkers)")
            }

            guard codec == "vp8" else { return }
            // An excerpt: 2 s from 2 s in, the start given as a wall-clock time (RFC 3339), the end as an offset.
            let excerpt = scenario.directory.appendingPathComponent("excerpt.webm").path
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let twoSecondsIn = formatter.string(from: Date(timeIntervalSince1970: Double(session.startedAt + 2_000) / 1_000))
            let cut = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--out", excerpt,
                                           "--width", "320", "--height", "240", "--from", twoSecondsIn, "--to", "4s", "--json"])
            let cutResult = try JSONSerialization.jsonObject(with: Data(cut.stdout.utf8)) as? [String: Any]
            #expect(cut.status == 0 && cutResult?["duration_ms"] as? Int == 2_000, "\(cut.stdout) \(cut.stderr.suffix(1_000))")
            // Both are cataloged: `recordings list --kind composed` finds them, with their place on the session's timeline.
            let listed = try scenario.recbot(["recordings", "list", "--kind", "composed", "--json", "--data-dir", scenario.dataDirectory])
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stdout) \(listed.stderr)")
            #expect(rows.map { $0["path"] as? String } == [out, excerpt] && rows.map { $0["from_ms"] as? Int } == [0, 2_000], "\(rows)")
            #expect(rows.map { $0["duration_ms"] as? Int } == [duration, 2_000] && rows.allSatisfy { $0["session_id"] as? String == session.id }, "\(rows)")
            #expect(rows.first?["width"] as? Int == 640 && rows.first?["senders"] as? Int == 1 && (rows.first?["bytes"] as? Int ?? 0) > 0, "\(rows)")
            let missing = try scenario.recbot(["compose", "01JD2G0000AAAAAAAAAAAAAAAA", "--data-dir", scenario.dataDirectory])
            #expect(missing.status == 66, "\(missing.stderr)")
        }
    }

    /// Two senders, the second "talking" (its steady tone 20 dB above the other's): the speaker
    /// layout enlarges it within about a second of its arrival and keeps it there; the quiet
    /// one's beeps never take over.
    @Test func theSpeakerLayoutEnlargesTheSenderWhoTalks() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--speaking-publisher", "1"])
            defer { scenario.stop() }
            let joined = try scenario.join(["--duration", "6s"])
            #expect(joined.status == 0, "recbot: \(joined.stderr.suffix(2_000))")
            let publishers = try #require(try scenario.truth()["publishers"] as? [[String: Any]])
            let talker = try #require(publishers.first { $0["client_id"] as? String == "publisher-1" }?["connection_id"] as? String)
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let arrived = try #require(try catalog.recordings().filter { $0.connectionID == talker }.map(\.startedAt).min()) - session.startedAt

            let out = scenario.directory.appendingPathComponent("speaker.webm").path
            let composed = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--out", out, "--layout", "speaker",
                                                "--width", "640", "--height", "360", "--json"])
            #expect(composed.status == 0, "\(composed.stderr.suffix(2_000))")
            let result = try #require(try JSONSerialization.jsonObject(with: Data(composed.stdout.utf8)) as? [String: Any], "\(composed.stdout)")
            let speakers = try #require(result["speakers"] as? [[String: Any]], "\(result)")
            let last = try #require(speakers.last)
            #expect(last["connection_id"] as? String == talker, "the talker ends as the speaker: \(speakers)")
            #expect(speakers.filter { $0["connection_id"] as? String == talker }.count == 1, "it is never replaced: \(speakers)")
            let takeover = Int64(last["at_ms"] as? Int ?? -1)
            #expect(takeover >= arrived && takeover <= arrived + 2_500, "speaker from \(takeover) ms, the talker arrived at \(arrived) ms")
            #expect(result["decode_errors"] as? Int == 0 && result["senders"] as? Int == 2, "\(result)")
            let listed = try scenario.recbot(["recordings", "list", "--kind", "composed", "--session", session.id, "--data-dir", scenario.dataDirectory])
            #expect(listed.status == 0 && listed.stdout.contains("speaker") && listed.stdout.contains("640x360@30"), "\(listed.stdout)")
        }
    }

    /// A hisui user's layout, unchanged: hisui's default layout (320x240 cells, at most three
    /// columns, VP9, encoder tuning recbot does not apply) composes a two-sender session on
    /// hisui's 642x240 canvas; a layout with a mistyped key ends with exit code 78, naming it.
    @Test func hisuisDefaultLayoutFileComposesUnchanged() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8"])
            defer { scenario.stop() }
            let joined = try scenario.join(["--duration", "5s"])
            #expect(joined.status == 0, "recbot: \(joined.stderr.suffix(2_000))")
            let session = try #require(try scenario.catalog().sessions().first)
            let layout = scenario.directory.appendingPathComponent("compose-default.jsonc").path
            try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent("hisui-default.jsonc").path, toPath: layout)

            let out = scenario.directory.appendingPathComponent("hisui.webm").path
            let composed = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--out", out, "--layout-file", layout, "--json"])
            #expect(composed.status == 0, "\(composed.stderr.suffix(2_000))")
            #expect(composed.stderr.contains("not applied: libvpx_vp8_encode_params"), "\(composed.stderr)")
            let result = try #require(try JSONSerialization.jsonObject(with: Data(composed.stdout.utf8)) as? [String: Any], "\(composed.stdout)")
            #expect(result["decode_errors"] as? Int == 0 && result["senders"] as? Int == 2, "\(result)")
            let duration = try #require(result["duration_ms"] as? Int)
            #expect(abs((result["video_frames"] as? Int ?? 0) - duration * 25 / 1_000) <= 1, "hisui's default 25 fps: \(result)")
            let listed = try scenario.recbot(["recordings", "list", "--kind", "composed", "--json", "--data-dir", scenario.dataDirectory])
            let row = try #require((try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])?.first, "\(listed.stdout)")
            #expect(row["width"] as? Int == 642 && row["height"] as? Int == 240 && row["video_codec"] as? String == "VP9", "\(row)")
            #expect(row["layout"] as? String == "hisui:compose-default.jsonc" && row["fps"] as? Int == 25, "\(row)")
            let markers = try Self.markers(out)
            // Each sender's flash covers only its own cell here, too little of the frame for the
            // whole-frame flash detector, so only the decode and the beeps are checked.
            #expect(markers.videoDecodeErrors == 0 && !markers.audioMarkers.isEmpty, "\(markers)")
            let verified = try scenario.recbot(["verify", out, "--data-dir", scenario.dataDirectory])
            #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")

            let mistyped = scenario.directory.appendingPathComponent("mistyped.json").path
            try Data(#"{"video_layout": {"main": {"video_sources": ["archive-*.json"], "max_colums": 2}}}"#.utf8).write(to: URL(fileURLWithPath: mistyped))
            let refused = try scenario.recbot(["compose", session.id, "--data-dir", scenario.dataDirectory, "--out", out, "--layout-file", mistyped])
            #expect(refused.status == 78 && refused.stderr.contains("video_layout.main.max_colums"), "\(refused.status) \(refused.stderr)")
        }
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/verify")

    struct Markers: CustomStringConvertible {
        var videoMarkers: [Double]
        var audioMarkers: [Double]
        var maxAbsOffset: Double?
        var videoDecodeErrors: Int
        var description: String { "video markers \(videoMarkers), audio markers \(audioMarkers), max |A/V| \(maxAbsOffset.map { "\($0) ms" } ?? "none"), decode errors \(videoDecodeErrors)" }
    }

    /// The flashes and beeps av_sync_check.py (PyAV) finds in a file.
    static func markers(_ path: String) throws -> Markers {
        let check = try runProcess("/usr/bin/env", ["python3", Scenario.checkersDirectory.appendingPathComponent("av_sync_check.py").path, path, "--json"])
        let report = try JSONSerialization.jsonObject(with: Data(check.stdoutText.utf8)) as? [String: Any] ?? [:]
        return Markers(videoMarkers: report["video_marker_times"] as? [Double] ?? [], audioMarkers: report["audio_marker_times"] as? [Double] ?? [],
                       maxAbsOffset: report["max_abs_offset_ms"] as? Double,
                       videoDecodeErrors: report["video_decode_errors"] as? Int ?? -1)
    }
}
