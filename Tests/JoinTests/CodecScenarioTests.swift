import Archive
import Foundation
import Testing
import TestSupport

/// Every codec a Sora channel carries, recorded end to end and checked by `recbot verify`
/// (libwebm + the codecs' own decoders) and by ffprobe.
@Suite(.serialized) struct CodecScenarioTests {
    static let webmCodec = ["vp8": "V_VP8", "vp9": "V_VP9", "av1": "V_AV1", "h264": "V_MPEG4/ISO/AVC"]
    static let ffprobeCodec = ["vp8": "vp8", "vp9": "vp9", "av1": "av1", "h264": "h264"]

    /// One VP8, VP9, AV1 and H.264 publisher; VP9 and AV1 send a keyframe every 2 s, and every
    /// publisher's video changes size after 4 s (for AV1 a new sequence header).
    @Test func fourCodecsInOneChannelAreRecordedAndVerify() async throws {
        try await blocking(heavy: true) {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp9", "--publisher", "av1", "--publisher", "h264",
                                                          "--keyframe-interval", "2", "--resolution-change-after", "4"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "9s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            let session = try #require(try scenario.catalog().sessions().first)
            let verify = try scenario.recbot(["verify", session.id, "--json", "--data-dir", scenario.dataDirectory])
            #expect(verify.status == 0, "verify: \(verify.stderr.suffix(2_000))")
            let reports = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [[String: Any]])
            let recordings = try scenario.catalog().recordings()
            let publishers = try #require(truth["publishers"] as? [[String: Any]])
            #expect(publishers.count == 4 && recordings.count == 4 && reports.count == 4)
            for publisher in publishers {
                let codec = try #require(publisher["codec"] as? String)
                let recording = try #require(recordings.first { $0.connectionID == publisher["connection_id"] as? String }, "no recording for \(codec)")
                #expect(recording.verification == .verified, "\(codec)")
                let report = try #require(reports.first { $0["recording_id"] as? Int == recording.id.map(Int.init) }?["report"] as? [String: Any])
                let tracks = try #require(report["tracks"] as? [[String: Any]])
                let video = try #require(tracks.first { $0["kind"] as? String == "video" })
                #expect(video["codec_id"] as? String == CodecScenarioTests.webmCodec[codec])
                let frames = try #require(video["frames"] as? Int)
                #expect(video["decoded"] as? Int == frames && video["decode_errors"] as? Int == 0, "\(codec): \(video)")
                let sent = try #require(publisher["video_frames_sent"] as? Int)
                #expect(Double(frames) >= 0.98 * Double(sent), "\(codec): \(frames) of \(sent) video frames")
                #expect(video["sizes"] as? [String] == ["320x240", "480x272"], "\(codec): \(video["sizes"] ?? "-")")
                // ffprobe, the second reader, counts the same frames.
                let probe = try Scenario.probe(scenario.dataDirectory + "/" + recording.path)
                #expect(probe.streams.first { $0.codec == CodecScenarioTests.ffprobeCodec[codec] }?.frames == frames, "\(codec): \(probe.streams)")
                let audio = try #require(tracks.first { $0["kind"] as? String == "audio" })
                // Whole: the audio decodes, and holds what its publisher sent (on a busy host the test
                // server's four encoders start late and stall, so neither the span nor the timeline
                // says how much there was; the publisher's own count does).
                let audioFrames = audio["frames"] as? Int ?? 0
                let audioSent = try #require(publisher["audio_frames_sent"] as? Int)
                #expect(audio["decode_errors"] as? Int == 0 && audioFrames >= 100 && Double(audioFrames) >= 0.98 * Double(audioSent),
                        "\(codec): \(audioFrames) of \(audioSent) audio frames; \(audio); dropped by recbot \(recording.framesDropped) (recorder \(recording.framesDroppedRecorder)); wire \(publisher["rtp"] ?? "-")")
            }
            // Every block on its sender's RTP clock, in every codec; FFmpeg finds nothing to say.
            try TimelineChecks.expectTimelinesOnTheGrid(scenario)
        }
    }

    /// The test server's own payloaders against independent depacketizers (GStreamer's
    /// rtpvp9depay, FFmpeg's AV1 RTP demuxer), every frame decoded: the publishers above send
    /// what other stacks accept, not just what recbot reads.
    @Test func theTestPublishersPassIndependentDepacketizers() async {
        await blocking(heavy: true) {
            #expect(throws: Never.self) { try runChecked(["/usr/bin/env", "python3", Scenario.checkersDirectory.appendingPathComponent("depay_check.py").path]) }
        }
    }
}

/// H.265, which WebM cannot hold: the video is refused where everyone can see it, the audio kept.
@Suite(.serialized) struct RefusedCodecScenarioTests {
    @Test func h265VideoIsRefusedLoudlyAndItsAudioIsRecorded() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "h265", "--publisher", "vp8"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let refusals = result.stderr.split(separator: "\n").filter { $0.contains("video refused") }
            #expect(refusals.count == 1 && refusals.first?.contains("H265") == true, "one clear log line: \(refusals)")
            let truth = try scenario.truth()
            let publishers = try #require(truth["publishers"] as? [[String: Any]])
            let h265 = try #require(publishers.first { $0["codec"] as? String == "h265" })
            let h265ID = try #require(h265["connection_id"] as? String)
            let catalog = try scenario.catalog()
            let recordings = try catalog.recordings()
            let refused = try #require(recordings.first { $0.connectionID == h265ID })
            #expect(refused.videoRefused == "H265" && refused.videoCodec == nil && refused.audioCodec == "OPUS")
            let sentAudio = try #require(h265["audio_frames_sent"] as? Int)
            #expect(Double(refused.audioFrames) >= 0.9 * Double(sentAudio), "\(refused.audioFrames) of \(sentAudio) audio frames")
            let session = try #require(try catalog.sessions().first)
            let events = try catalog.events(EventFilter(sessionID: session.id, kind: .recbot))
            #expect(events.count == 1 && events.first?.eventType == "video.refused" && events.first?.senderConnectionID == h265ID)
            // The other publisher is untouched.
            let vp8 = try #require(recordings.first { $0.connectionID != h265ID })
            #expect(vp8.videoCodec == "VP8" && vp8.videoFrames > 100 && vp8.videoRefused == nil)
            let listed = try scenario.recbot(["recordings", "list", "--data-dir", scenario.dataDirectory])
            #expect(listed.stdout.contains("OPUS (H265 refused)"))
            // Participants' media and metadata are owner/group-only (umask 027 by default).
            let directory = scenario.dataDirectory + "/recordings/\(session.id)"
            func mode(_ path: String) throws -> Int { try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) }
            #expect(try mode(directory) == 0o750 && mode(scenario.dataDirectory + "/catalog.sqlite") == 0o640)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) { #expect(try mode(directory + "/" + name) == 0o640, "\(name)") }
        }
    }
}

/// A publisher that changes its video codec mid-stream: WebM cannot change a track's codec, so
/// its recording becomes split parts, each a whole file, with Sora's end marker.
@Suite(.serialized) struct CodecSwitchScenarioTests {
    @Test func aCodecSwitchSplitsTheSendersRecordingIntoParts() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--switch-codec-after", "3:vp9"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "7s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            let publishers = try #require(truth["publishers"] as? [[String: Any]])
            let switching = try #require(publishers.first { $0["codec_switch"] is [String: Any] }, "the server did not switch")
            let id = try #require(switching["connection_id"] as? String)
            let byCodec = try #require(switching["video_frames_sent_by_codec"] as? [String: Int])
            let catalog = try scenario.catalog()
            let parts = try catalog.recordings().filter { $0.connectionID == id }.sorted { $0.part < $1.part }
            #expect(parts.map(\.part) == [1, 2] && parts.map(\.videoCodec) == ["VP8", "VP9"])
            #expect(parts.map { ($0.path as NSString).lastPathComponent } == ["split-archive-\(id)_0001.webm", "split-archive-\(id)_0002.webm"])
            let directory = scenario.dataDirectory + "/" + (parts[0].path as NSString).deletingLastPathComponent
            #expect(!FileManager.default.fileExists(atPath: directory + "/archive-\(id).webm"))
            let end = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/split-archive-end-\(id).json"))) as? [String: Any])
            #expect(end["split_last_index"] as? String == "0002")
            for (index, part) in parts.enumerated() {
                let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/split-archive-\(id)_000\(index + 1).json"))) as? [String: Any])
                #expect(sidecar["split_index"] as? String == "000\(index + 1)")
                // Every frame of each codec is in its part (the last one may miss what the server sent as the session closed).
                let sent = try #require(byCodec[index == 0 ? "vp8" : "vp9"])
                #expect(Double(part.videoFrames) >= 0.95 * Double(sent), "part \(part.part): \(part.videoFrames) of \(sent)")
            }
            let verify = try scenario.recbot(["verify", parts[0].sessionID, "--data-dir", scenario.dataDirectory])
            #expect(verify.status == 0, "verify: \(verify.stdout) \(verify.stderr.suffix(2_000))")
            // The other publisher keeps its one file.
            #expect(try catalog.recordings().filter { $0.connectionID != id }.map(\.part) == [0])
        }
    }
}
