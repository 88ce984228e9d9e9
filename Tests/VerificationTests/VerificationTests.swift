import CodecBindings
import Foundation
import Testing
import TestSupport
import Verification
import WebM

/// Writes a file with recbot's muxer: video frames at 30 fps from `videoStart`, and 20 ms Opus
/// frames for the whole span.
func writeRecording(video: (codec: WebMVideoCodec, frames: [(data: [UInt8], isKeyframe: Bool)], width: Int, height: Int, codecPrivate: [UInt8]?)?,
                    audioSeconds: Double = 2, videoMilliseconds: (Int) -> Int64 = { Int64($0) * 100 / 3 }, finalize: Bool = true) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID()).webm").path
    var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
        video: video.map { WebMVideoTrack(codec: $0.codec, width: $0.width, height: $0.height, codecPrivate: $0.codecPrivate) },
        audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 1)), segmentUID: Array(1...16)))
    let writer = try WebMFileWriter(creatingAt: path)
    let opus = try OpusEncoder(channels: 1)
    var events: [(Int64, WebMFrame)] = []
    for index in 0..<Int(audioSeconds * 50) {
        let packet = try opus.encode(OpusEncoder.tone(frequency: 440, frame: index, channels: 1))
        events.append((Int64(index) * 20, WebMFrame(track: .audio, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: true, data: packet)))
    }
    for (index, frame) in (video?.frames ?? []).enumerated() {
        let milliseconds = videoMilliseconds(index)
        events.append((milliseconds, WebMFrame(track: .video, timestampNanoseconds: milliseconds * 1_000_000, isKeyframe: frame.isKeyframe, data: frame.data)))
    }
    for (_, frame) in events.sorted(by: { $0.0 < $1.0 }) { try writer.apply(try muxer.write(frame)) }
    if finalize { try writer.apply(try muxer.finalize()) } else { try writer.apply(muxer.flush()) }
    try writer.close()
    return path
}

func vpxFrames(_ codec: VPXCodec, count: Int) throws -> [(data: [UInt8], isKeyframe: Bool)] {
    let encoder = try VPXEncoder(codec: codec, width: 160, height: 96, framesPerSecond: 30, keyframeInterval: 30)
    return try (0..<count).flatMap { try encoder.encode(.testPattern(width: 160, height: 96, frame: $0), pts: Int64($0)).map { ($0.data, $0.isKeyframe) } }
}

/// Frames ffprobe counts in a stream (the second, independent reader).
func ffprobeFrames(_ path: String, stream: String) throws -> Int? {
    let result = try runProcess("/usr/bin/env", ["ffprobe", "-v", "error", "-count_frames", "-select_streams", stream, "-show_entries",
                                                 "stream=nb_read_frames", "-of", "csv=p=0", path])
    return Int(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
}

@Suite struct VerificationTests {
    @Test(arguments: ["VP8", "VP9", "AV1", "H264"])
    func everyCodecDecodesAndAgreesWithFFprobe(codec: String) throws {
        let video: (codec: WebMVideoCodec, frames: [(data: [UInt8], isKeyframe: Bool)], width: Int, height: Int, codecPrivate: [UInt8]?)
        switch codec {
        case "VP8": video = (.vp8, try vpxFrames(.vp8, count: 45), 160, 96, nil)
        case "VP9": video = (.vp9, try vpxFrames(.vp9, count: 45), 160, 96, nil)
        case "AV1":
            let units = try av1TemporalUnits(frames: 45, width: 160, height: 96, keyframeInterval: 30)
            video = (.av1, units.map { ($0.data, $0.isKeyframe) }, 160, 96, try AV1CodecConfiguration(temporalUnit: units[0].data).codecPrivate)
        default: video = (.h264, try h264AccessUnits(frames: 45, width: 160, height: 96, keyframeInterval: 30), 160, 96, nil)
        }
        let path = try writeRecording(video: video)
        let report = RecordingVerifier.verify(path: path)
        #expect(report.ok, "\(report)")
        #expect(report.readerRuleViolations.isEmpty && report.error == nil)
        let videoTrack = try #require(report.tracks.first { $0.kind == "video" })
        #expect(videoTrack.frames == 45 && videoTrack.decoded == 45 && videoTrack.decodeErrors == 0 && videoTrack.keyframes == 2)
        #expect(videoTrack.sizes == ["160x96"])
        #expect(report.tracks.first { $0.kind == "audio" }.map { ($0.frames, $0.decoded) } ?? (0, 0) == (100, 100))
        #expect(try ffprobeFrames(path, stream: "v:0") == videoTrack.frames)
        #expect(try ffprobeFrames(path, stream: "a:0") == 100)
    }

    /// H.264 as other muxers write it (length-prefixed, avcC) still decodes, but breaks the
    /// Annex-B rule hisui's reader needs.
    @Test func lengthPrefixedH264DecodesButBreaksTheAnnexBRule() throws {
        let units = try h264AccessUnits(frames: 20, width: 160, height: 96)
        func nalUnits(_ unit: [UInt8]) -> [[UInt8]] {
            var starts: [(code: Int, payload: Int)] = []
            var index = 0
            while index + 3 <= unit.count {
                if unit[index] == 0, unit[index + 1] == 0, unit[index + 2] == 1 {
                    starts.append((index > 0 && unit[index - 1] == 0 ? index - 1 : index, index + 3)); index += 3
                } else { index += 1 }
            }
            return starts.enumerated().map { i, s in Array(unit[s.payload..<(i + 1 < starts.count ? starts[i + 1].code : unit.count)]) }
        }
        let first = nalUnits(units[0].data)
        let sps = try #require(first.first { $0[0] & 0x1F == 7 }), pps = try #require(first.first { $0[0] & 0x1F == 8 })
        let avcC: [UInt8] = [1, sps[1], sps[2], sps[3], 0xFF, 0xE1, UInt8(sps.count >> 8), UInt8(sps.count & 0xFF)] + sps
            + [1, UInt8(pps.count >> 8), UInt8(pps.count & 0xFF)] + pps
        let frames: [(data: [UInt8], isKeyframe: Bool)] = units.map { unit in
            let nals = nalUnits(unit.data).filter { ![7, 8].contains($0[0] & 0x1F) }
            let data: [UInt8] = nals.flatMap { nal -> [UInt8] in [0, 0, UInt8(nal.count >> 8), UInt8(nal.count & 0xFF)] + nal }
            return (data, unit.isKeyframe)
        }
        let report = RecordingVerifier.verify(path: try writeRecording(video: (.h264, frames, 160, 96, avcC)))
        let video = try #require(report.tracks.first { $0.kind == "video" })
        #expect(video.frames == 20 && video.decoded == 20 && video.decodeErrors == 0)
        #expect(!report.ok && report.readerRuleViolations.contains { $0.contains("Annex-B") })
    }

    @Test func aBrokenFrameIsADecodeError() throws {
        var frames = try vpxFrames(.vp8, count: 30)
        frames[10].data = Array(frames[10].data.prefix(4))  // its partitions cut off
        let report = RecordingVerifier.verify(path: try writeRecording(video: (.vp8, frames, 160, 96, nil)))
        #expect(!report.ok)
        let video = try #require(report.tracks.first { $0.kind == "video" })
        #expect(video.decodeErrors >= 1 && video.errorSamples.first?.hasPrefix("at 333 ms") == true)
    }

    @Test func anUnfinalizedFileBreaksTheReaderRules() throws {
        let report = RecordingVerifier.verify(path: try writeRecording(video: (.vp8, try vpxFrames(.vp8, count: 30), 160, 96, nil), finalize: false))
        #expect(!report.ok && report.readerRuleViolations.contains { $0.contains("unknown size") })
    }

    @Test func aTruncatedFileIsReported() throws {
        let path = try writeRecording(video: (.vp8, try vpxFrames(.vp8, count: 30), 160, 96, nil))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        let report = RecordingVerifier.verify(path: path)
        #expect(!report.ok && report.error != nil)
        #expect(!RecordingVerifier.verify(path: "/nonexistent/file.webm").ok)
    }

    /// Video that starts 1.5 s after the audio and pauses 2 s: the offset and the gap are reported.
    @Test func gapsAndTheStartOffsetAreReported() throws {
        let path = try writeRecording(video: (.vp8, try vpxFrames(.vp8, count: 60), 160, 96, nil), audioSeconds: 5) { index in
            1_500 + Int64(index) * 100 / 3 + (index >= 20 ? 2_000 : 0)
        }
        let report = RecordingVerifier.verify(path: path)
        #expect(report.ok && report.audioVideoStartOffsetMilliseconds == 1_500)
        let video = try #require(report.tracks.first { $0.kind == "video" })
        #expect(video.gapCount == 1 && video.gaps.first.map { ($0.fromMilliseconds, $0.toMilliseconds) } ?? (0, 0) == (2_133, 4_166))
        #expect(report.tracks.first { $0.kind == "audio" }?.gapCount == 0)
    }

    /// Issue 12: files with extreme timecodes or channel counts overflowed the reader and the checks.
    @Test func extremeValuesInAFileAreReportedNotTrapped() {
        let files = [
            "1a45dfa3874282847765626d1853806701ffffffffffffff1f43b67591e7888000000000000000a3858100008000",  // cluster timecode ≥ 2^63
            "1a45dfa3874282847765626d1853806701ffffffffffffff1f43b67591e7887fffffffffffffffa3858100018000",  // Int64.max + 1 relative
            "1a45dfa3874282847765626d1853806701ffffffffffffff1654ae6b9cae9ad781028381028686415f4f505553e18a9f888000000000000000",  // Channels ≥ 2^63
            "1a45dfa3874282847765626d1853806701ffffffffffffff1654ae6b8fae8dd781018381018685565f5650381f43b67591e7880000000000000000"
                + "a38581ffff80001f43b67591e7887fffffffffffffffa3858100008000",  // frames at −1 and Int64.max
        ]
        for hex in files {
            let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
            #expect(!RecordingVerifier.verify(bytes: bytes, label: "extreme").ok)
        }
    }

    @Test func damagedFilesNeverCrash() throws {
        let path = try writeRecording(video: (.vp9, try vpxFrames(.vp9, count: 20), 160, 96, nil), audioSeconds: 0.5)
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &generator) { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = RecordingVerifier.verify(bytes: Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator))), label: "damaged")
        }
    }
}

/// `recbot compose`'s files: not Sora archives (their own app strings) and with a chat text
/// track of WebVTT cues in BlockGroups, which verify checks cue by cue.
@Suite struct CompositionVerificationTests {
    func composition(app: String, cues: [(Int64, [UInt8])]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("composition-\(UUID()).webm").path
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .vp8, width: 160, height: 96), audio: nil, segmentUID: Array(1...16), muxingApp: app, writingApp: app,
            subtitles: WebMSubtitleTrack(name: "chat")))
        let writer = try WebMFileWriter(creatingAt: path)
        var pending = cues
        for (index, frame) in try vpxFrames(.vp8, count: 30).enumerated() {
            let at = Int64(index) * 100 / 3
            while let cue = pending.first, cue.0 <= at {
                try writer.apply(try muxer.write(WebMFrame(track: .subtitles, timestampNanoseconds: cue.0 * 1_000_000, isKeyframe: true, data: cue.1,
                                                           durationNanoseconds: 500_000_000)))
                pending.removeFirst()
            }
            try writer.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: at * 1_000_000, isKeyframe: frame.isKeyframe, data: frame.data)))
        }
        try writer.apply(try muxer.finalize())
        try writer.close()
        return path
    }

    @Test func aCompositionWithItsChatTrackVerifies() throws {
        let cues: [(Int64, [UInt8])] = [(100, Array("\n\n<v a>#chat: one</v>".utf8)), (100, Array("\n\n<v b>#chat: same ms</v>".utf8)), (400, Array("\n\nthree".utf8))]
        let report = RecordingVerifier.verify(path: try composition(app: "recbot compose", cues: cues))
        #expect(report.ok && report.readerRuleViolations.isEmpty, "\(report)")
        let chat = try #require(report.tracks.first { $0.kind == "subtitles" })
        #expect(chat.frames == 3 && chat.decodeErrors == 0, "\(chat)")
        // The same file claiming to be a Sora archive breaks hisui's rules: a third track, BlockGroups.
        let archive = RecordingVerifier.verify(path: try composition(app: "WebRTC SFU Sora", cues: cues))
        #expect(!archive.ok && archive.readerRuleViolations.contains("track 3 is neither video nor audio"), "\(archive.readerRuleViolations)")
    }

    @Test func aCueThatWouldBreakAWebVTTFileIsAnError() throws {
        for bad in ["no identifier lines", "\n\nends --> here", "\n\n", "\n\n\u{FFFD}"].map({ Array($0.utf8) }) + [[0x0A, 0x0A, 0xFF]] {
            let report = RecordingVerifier.verify(path: try composition(app: "recbot compose", cues: [(50, bad)]))
            let chat = report.tracks.first { $0.kind == "subtitles" }
            let expectedErrors = bad == Array("\n\n\u{FFFD}".utf8) ? 0 : 1
            #expect(chat?.decodeErrors == expectedErrors, "\(bad): \(report)")
        }
    }
}
