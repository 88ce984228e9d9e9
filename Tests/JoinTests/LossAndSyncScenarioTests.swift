import Archive
import CodecBindings
import Foundation
import TestSupport
import Testing
import WebMReader

/// Every video frame of a recording, decoded in order with libvpx (the file must play from its first keyframe).
func decodeVP8Track(_ path: String) throws -> (frames: Int, errors: Int, firstIsKeyframe: Bool) {
    let parsed = WebMReader.parse(path: path)
    #expect(parsed.isComplete, "\(path) is not a complete WebM file")
    let video = parsed.frames.filter { $0.track == 1 }
    let decoder = try VPXDecoder(codec: .vp8)
    var errors = 0
    for frame in video {
        do { _ = try decoder.decode(frame.data) } catch { errors += 1 }
    }
    return (video.count, errors, video.first?.isKeyframe ?? false)
}

@Suite(.serialized) struct LossAndSyncScenarioTests {
    /// The publisher's path drops 5 % of its RTP (retransmissions too, seeded). NACK and RTX must
    /// repair it against aiortc: every written frame decodes, and few frames are missing; the
    /// offer also allows NACK for Opus, so audio must be repaired as well. (Heavier loss runs on
    /// the manual clock in SimulationTests.)
    @Test(arguments: [(5, 0.97, true)])
    func aLossyPathIsRepairedByNACKAndRTX(lossPercent: Int, minimumShare: Double, audioNack: Bool) async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--loss", String(lossPercent), "--loss-seed", "7"]
                                        + (audioNack ? ["--audio-nack"] : []))
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "10s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            let publisher = try #require((truth["publishers"] as? [[String: Any]])?.first)
            let recording = try #require(try scenario.catalog().recordings().first)
            let decoded = try decodeVP8Track(scenario.dataDirectory + "/" + recording.path)
            #expect(decoded.firstIsKeyframe && decoded.errors == 0, "\(decoded.errors) of \(decoded.frames) frames failed to decode")
            let sent = try #require(publisher["video_frames_sent"] as? Int)
            // Frames sent while recbot was still connecting or already leaving count as missing here;
            // the benchmark (bench/loss-bench.py) measures the share against a clean run instead.
            #expect(Double(decoded.frames) >= minimumShare * Double(sent), "\(decoded.frames) of \(sent) video frames at \(lossPercent) % loss")
            #expect(recording.packetsRecovered > 0 && recording.nacksSent >= recording.packetsRecovered, "\(recording)")
            #expect(recording.framesDropped < sent / 10, "\(recording)")
            if audioNack {
                let audioSent = try #require(publisher["audio_frames_sent"] as? Int)
                let audioInFile = WebMReader.parse(path: scenario.dataDirectory + "/" + recording.path).frames.filter { $0.track == 2 }.count
                #expect(Double(audioInFile) >= minimumShare * Double(audioSent), "\(audioInFile) of \(audioSent) audio frames")
            }
            // The publisher heard our NACKs and receiver reports (aiortc counts them as they arrive).
            let video = try #require((publisher["rtp"] as? [String: Any])?["video"] as? [String: Any],
                                     "truth: \(publisher.keys.sorted())")
            #expect((video["nack_received"] as? Int ?? 0) > 0 && (video["rr_received"] as? Int ?? 0) > 0, "\(video)")
        }
    }

    // Audio delayed on the wire and aligned by sender reports moved to SimulationTests
    // (SyncAndTimelineTests), where the sender's capture clock is known exactly.
}
