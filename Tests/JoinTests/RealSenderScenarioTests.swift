import Foundation
import TestSupport
import Testing

/// Real libwebrtc senders through a real SFU: four headless Chromium publishers (VP8 with three
/// simulcast layers, VP9 SVC, AV1, H.264; Opus with DTX and in-band FEC) in a Janus VideoRoom,
/// behind the Sora-signaling front (Tests/Peers/sora_janus_server.py), recorded by `recbot join`.
/// The files are judged against the senders' own truth (Tests/Peers/judge_recording.py): their
/// getStats() while recbot was subscribed, the frame numbers drawn into the pictures, the
/// flashes and beeps. The fault campaign runs the 60 s version (dev/faults.py --only real-senders).
@Suite(.serialized) struct RealSenderScenarioTests {
    /// The forwarded VP8 layer goes r1 → r0 → r2 (Janus's substream switches, as Sora's
    /// RequestSimulcastRid makes them): one file per sender, the sizes inside it, no picture twice.
    @Test func chromiumPublishersThroughJanusAreRecordedFrameForFrame() async throws {
        try await blocking(heavy: true) {
            let scenario = try Scenario(serverArguments: ["--chromium", "vp8,vp9,av1,h264", "--duration", "20",
                                                          "--layer-switch-after", "7:r0", "--layer-switch-after", "14:r2"],
                                        server: "sora_janus_server.py")
            defer { scenario.stop() }
            #expect(!scenario.url.isEmpty, "the Janus front did not start")
            // Janus gathers no loopback candidates: media runs over the host's own address (it never
            // leaves the machine), so recbot keeps its default host addresses here. No video
            // shedding: the browsers and Janus run ahead of recbot (nice -10), so on CI's busy two
            // cores recbot can fall behind and, as designed, pause a sender's video until its next
            // keyframe (once 1.3 s of the VP8 sender's, reported in its sidecar). That is for the
            // overload tests; this one measures what recbot keeps of what the senders sent.
            let result = try scenario.recbot(["join", "--channel", "sora", "--url", scenario.url, "--data-dir", scenario.dataDirectory,
                                              "--duration", "90s", "--simulcast-rid", "r1", "--no-video-shedding"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(2_000))")
            _ = try scenario.truth()
            // On a loaded 2-core machine the browsers' fake cameras and microphones stall, and their
            // encoders drop pictures to keep up (CI: the VP8 sender's three layers went out at 10 of
            // 30 frames a second, half the numbers never sent). So CI holds the files to the frames
            // the senders did send (getStats), and leaves the missing numbers and the A/V drift of
            // those stalls to the fault campaign's quieter run (kept >= 99.5 %, missing <= 0.5 %).
            // Within 5 %, not 2 %: the start snapshot reaches a busy page ~0.7 s after the
            // subscription, and the frames sent in between are only estimated (3.5 % of a 20 s run;
            // CI once judged 97.0 % a sender of which recbot had recorded more pictures than the
            // snapshots counted and dropped none but the 2 before its first keyframe). A switch's
            // second keyframe can come after recbot's 150 ms keyframe wait when the machine is that
            // busy: then the picture is written twice, 1 ms apart (three switches at most: the
            // start, r0, r2).
            let judge = try runProcess("/usr/bin/env", [
                "python3", Scenario.peersDirectory.appendingPathComponent("judge_recording.py").path,
                "--data-dir", scenario.dataDirectory, "--truth", scenario.directory.appendingPathComponent("truth.json").path,
                "--recbot", Scenario.recbot, "--min-kept", "0.95", "--max-missing-ratio", "1", "--max-av-drift-ms", "1000",
                "--max-repeated", "3", "--table",
            ])
            #expect(judge.status == 0, "judge: \(judge.stderrText.suffix(4_000))")
            let report = try #require(try JSONSerialization.jsonObject(with: judge.stdout) as? [String: Any])
            let publishers = try #require(report["publishers"] as? [String: [String: Any]])
            #expect(Set(publishers.values.compactMap { $0["codec"] as? String }) == ["vp8", "vp9", "av1", "h264"])
            // The switches happened inside the VP8 sender's one file.
            let recordings = try scenario.catalog().recordings()
            #expect(recordings.count == 4, "one file per sender: \(recordings.map(\.path))")
            let vp8 = try #require(recordings.first { $0.videoCodec == "VP8" })
            let sizes = (vp8.videoSizes ?? "").split(separator: ",")
            #expect(sizes.count >= 2, "VP8 sizes: \(vp8.videoSizes ?? "none")")
        }
    }

    /// A tab closed abruptly (its browser killed: no BYE, no DTLS close) and a camera track
    /// stopped and started again: the first sender's file ends where it went (Janus notices and
    /// re-offers), the second's video has a gap as long as the camera was off, and both verify.
    @Test func aTabClosedAbruptlyAndACameraOffAndOnAreRecordedAsTheyHappened() async throws {
        try await blocking(heavy: true) {
            let scenario = try Scenario(serverArguments: ["--chromium", "vp8,h264", "--duration", "18", "--kill-after", "6",
                                                          "--video-publisher", "1", "--video-off-after", "8", "--video-on-after", "12"],
                                        server: "sora_janus_server.py")
            defer { scenario.stop() }
            let result = try scenario.recbot(["join", "--channel", "sora", "--url", scenario.url, "--data-dir", scenario.dataDirectory, "--duration", "90s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(2_000))")
            let session = try #require(try scenario.catalog().sessions().first)
            let verify = try scenario.recbot(["verify", "--json", "--data-dir", scenario.dataDirectory, session.id])
            #expect(verify.status == 0, "\(verify.stderr.suffix(2_000))")
            let reports = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [[String: Any]])
            #expect(reports.count == 2)
            let tracks = reports.compactMap { ($0["report"] as? [String: Any])?["tracks"] as? [[String: Any]] }
            let videos = tracks.compactMap { $0.first { $0["kind"] as? String == "video" } }
            let lasts = videos.compactMap { $0["last_ms"] as? Int }.sorted()
            #expect(lasts.count == 2 && lasts[0] < 9_000 && lasts[1] > 14_000, "the killed tab's file ends early, the other's late: \(lasts)")
            let gaps = videos.flatMap { $0["gaps"] as? [[String: Any]] ?? [] }
            let gapLengths = gaps.compactMap { gap in (gap["to_ms"] as? Int).flatMap { to in (gap["from_ms"] as? Int).map { to - $0 } } }
            #expect(gapLengths.contains { (2_500...6_000).contains($0) }, "the camera's 4 s off is a gap of its length: \(gaps)")
        }
    }
}
