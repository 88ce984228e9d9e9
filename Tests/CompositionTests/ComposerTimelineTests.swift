import CodecBindings
@testable import Composition
import Foundation
import Testing
import WebM
import WebMReader

/// The composer on real files: a hisui layout's `trim` cuts the span where nobody sends, so the
/// output is as long as the senders' time together, back to back, on one continuous clock,
/// and its chat cues land on that clock.
struct ComposerTimelineTests {
    /// A 2 s sender file: 160x96 VP8 at 30 fps and a mono Opus tone.
    static func senderFile(seconds: Int = 2) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sender-\(UUID()).webm").path
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .vp8, width: 160, height: 96), audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 1)), segmentUID: Array(1...16)))
        let writer = try WebMFileWriter(creatingAt: path)
        let video = try VPXEncoder(codec: .vp8, width: 160, height: 96, framesPerSecond: 30, keyframeInterval: 30)
        let audio = try OpusEncoder(channels: 1)
        var frames: [(Int64, WebMFrame)] = []
        for index in 0..<(seconds * 50) {
            let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: index, channels: 1))
            frames.append((Int64(index) * 20, WebMFrame(track: .audio, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: true, data: packet)))
        }
        for index in 0..<(seconds * 30) {
            let at = Int64(index) * 100 / 3
            for encoded in try video.encode(.testPattern(width: 160, height: 96, frame: index), pts: Int64(index)) {
                frames.append((at, WebMFrame(track: .video, timestampNanoseconds: at * 1_000_000, isKeyframe: encoded.isKeyframe, data: encoded.data)))
            }
        }
        for (_, frame) in frames.sorted(by: { $0.0 < $1.0 }) { try writer.apply(try muxer.write(frame)) }
        try writer.apply(try muxer.finalize(durationMilliseconds: Int64(seconds) * 1_000))
        try writer.close()
        return path
    }

    @Test func trimCutsTheGapAndTheClockRunsOn() throws {
        // A sends from 1 s to 3 s, B from 6 s to 8 s: hisui's trim keeps 1–3 s and 6–8 s.
        let (pathA, pathB) = (try Self.senderFile(), try Self.senderFile())
        let files = [HisuiSourceFile(name: "archive-A.json", connectionID: "A", start: 1_000, end: 3_000),
                     HisuiSourceFile(name: "archive-B.json", connectionID: "B", start: 6_000, end: 8_000)]
        let layout = #"{"audio_sources": ["archive-*.json"], "video_layout": {"main": {"video_sources": ["archive-*.json"], "cell_width": 160, "cell_height": 96}}}"#
        let plan = try HisuiPlan(layout: HisuiLayout(bytes: Array(layout.utf8)), files: files)
        var settings = CompositionSettings()
        settings.apply(plan)
        settings.threads = 1
        let senders = [("A", [try SourceFile(path: pathA, start: 1_000, durationMilliseconds: 2_000)]),
                       ("B", [try SourceFile(path: pathB, start: 6_000, durationMilliseconds: 2_000)])]
        let composer = try Composer(senders: senders.map { (connectionID: $0.0, files: $0.1) }, settings: settings)
        #expect(composer.timeline.kept == [.init(start: 1_000, end: 3_000), .init(start: 6_000, end: 8_000)])
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("trimmed-\(UUID()).webm").path
        // A cue at B's first second: 7 s on the session, 3 s into the composition.
        let cueAt = try #require(composer.timeline.outputTime(at: 7_000))
        let result = try composer.run(to: out, captions: [(cueAt, cueAt + 500, "<v B>#chat: hello</v>")])
        #expect(result.durationMilliseconds == 4_000 && result.startMilliseconds == 1_000 && cueAt == 3_000)
        #expect(result.videoFrames == 100 && result.audioFrames == 200 && result.captionCues == 1, "\(result)")

        let parsed = WebMReader.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        #expect(parsed.isComplete)
        let audioTimes = parsed.frames.filter { $0.track == 2 }.map(\.timecode)
        #expect(audioTimes.first == 0 && audioTimes.last == 3_980 && zip(audioTimes, audioTimes.dropFirst()).allSatisfy { $1 - $0 == 20 },
                "one continuous 20 ms clock across the cut: \(audioTimes.prefix(3))…\(audioTimes.suffix(3))")
        let cue = try #require(parsed.frames.first { $0.track == 3 })
        #expect(cue.timecode == 3_000 && String(decoding: cue.data, as: UTF8.self) == "\n\n<v B>#chat: hello</v>")
        // The canvas is hisui's: A and B never overlap, so they share one 160x96 cell (reuse).
        #expect(parsed.tracks.first { $0.type == 1 }.map { [$0.pixelWidth, $0.pixelHeight] } == [160, 96])
    }
}
