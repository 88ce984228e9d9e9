import CodecBindings
import DiskLayout
import Foundation
import Media
@testable import Recorder
import SystemClock
import Testing
import WebMReader
import WireCoding

/// A sender whose video codec changes mid-recording: WebM cannot change a track's codec, so
/// the file becomes split part 1 and the rest goes to part 2, each a whole, playable file.
@Suite struct RecordingsTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-set-\(UUID())").path
    var layout: ArchiveLayout { ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000") }

    func makeSet() -> RecordingsProbe {
        RecordingsProbe(archive: layout)
    }

    func videoFrames(_ codec: VPXCodec, count: Int) throws -> [EncodedFrame] {
        let encoder = try VPXEncoder(codec: codec, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 25)
        return try (0..<count).flatMap { index in
            try encoder.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index)).map {
                EncodedFrame(data: $0.data, rtpTimestamp: UInt32(index * 3_600), isKeyframe: $0.isKeyframe,
                             width: $0.isKeyframe ? 96 : nil, height: $0.isKeyframe ? 64 : nil)
            }
        }
    }

    @Test func aCodecChangeSplitsTheSenderIntoParts() throws {
        let set = makeSet()
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP8", audioChannels: 1)])
        let audio = try OpusEncoder(channels: 1)
        let vp8 = try videoFrames(.vp8, count: 50), vp9 = try videoFrames(.vp9, count: 50)
        for index in 0..<250 {  // 5 s of audio; VP8 video for 2 s, then VP9
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
            set.add(ReceivedFrame(ssrc: 2, sender: "PUB", kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
            guard index % 2 == 0, index < 200 else { continue }
            let frame = index < 100 ? vp8[index / 2] : vp9[index / 2 - 50]
            set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: index < 100 ? "VP8" : "VP9", frame: frame, mediaTime: t,
                                      completedAt: t), now: t)
        }
        let retired = set.takeRetired()
        #expect(retired.count == 1 && retired.first?.part == 1 && set.counters.codecChanges == 1)
        #expect(set.takeRetired().isEmpty, "handed out once")
        let current = try #require(set.recorders["PUB"])
        #expect(current.part == 2 && current.tracks.videoCodec == .vp9)

        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        let first = try #require(retired[0].finish(stoppedAtMilliseconds: 2_000, now: .milliseconds(2_000), context: context))
        let second = try #require(current.finish(stoppedAtMilliseconds: 5_000, now: .milliseconds(5_000), context: context))
        #expect(first.error == nil && second.error == nil)
        #expect(first.filename == "split-archive-PUB_0001.webm" && second.filename == "split-archive-PUB_0002.webm")
        #expect(first.stopOffsetSeconds == 2 && second.startOffsetSeconds == 2, "parts meet at the switch's whole second, no overlap")
        #expect(!FileManager.default.fileExists(atPath: layout.directory + "/archive-PUB.webm"), "part 1 was renamed")
        let parts = [first, second].map { WebMReader.parse(path: layout.directory + "/" + $0.filename) }
        #expect(parts.allSatisfy { $0.isComplete })
        #expect(parts.map { $0.tracks.first { $0.number == 1 }?.codecID } == ["V_VP8", "V_VP9"])
        #expect(parts.map { $0.frames.filter { $0.track == 1 }.count } == [50, 50])
        #expect(parts.map { $0.frames.filter { $0.track == 2 }.count }.reduce(0, +) == 250, "no audio lost at the split")
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: layout.directory + "/split-archive-PUB_0002.json"))) as? [String: Any])
        #expect(sidecar["split_index"] as? String == "0002" && sidecar["video_codec_type"] as? String == "VP9")
    }

    /// Before the file exists, another codec just changes the track: no split.
    @Test func aCodecChangeBeforeTheFileStartsIsNoSplit() throws {
        let set = makeSet()
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP9", audioChannels: nil)])
        for (index, frame) in try videoFrames(.vp8, count: 10).enumerated() {
            let t = MonotonicTime.milliseconds(Int64(index) * 40)
            set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: "VP8", frame: frame, mediaTime: t, completedAt: t), now: t)
        }
        #expect(set.takeRetired().isEmpty && set.counters.codecChanges == 0)
        let recorder = try #require(set.recorders["PUB"])
        #expect(recorder.part == 0 && recorder.tracks.videoCodec == .vp8)
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        let done = try #require(recorder.finish(stoppedAtMilliseconds: 1_000, now: .milliseconds(1_000), context: context))
        #expect(done.filename == "archive-PUB.webm" && done.statistics.videoFrames == 10)
    }

    /// Refused video (H.265) is named on the sender's recording, whose audio is kept.
    @Test func refusedVideoIsNamedOnTheAudioRecording() throws {
        let set = makeSet()
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: nil, audioChannels: 1)], refusedVideo: ["PUB": "H265"])
        let audio = try OpusEncoder(channels: 1)
        for index in 0..<50 {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
            set.add(ReceivedFrame(ssrc: 2, sender: "PUB", kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
        }
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        let done = try #require(set.recorders["PUB"]?.finish(stoppedAtMilliseconds: 1_000, now: .milliseconds(1_000), context: context))
        #expect(done.refusedVideoCodec == "H265" && done.statistics.audioFrames == 50 && done.tracks.videoCodec == nil)
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: layout.directory + "/archive-PUB.json"))) as? [String: Any])
        #expect(sidecar["video"] as? Bool == false && sidecar["video_refused_codec"] as? String == "H265")
    }

    /// A sender a re-offer removed and a later re-offer names again under the same connection
    /// id: the finished file stays, and the returning media goes to the next part, not into a
    /// collision with the finished file's name.
    @Test func aSenderThatComesBackRecordsIntoANewPart() throws {
        let set = makeSet()
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        let audio = try OpusEncoder(channels: 1)
        func sendAudio(from start: Int, count: Int) throws {
            for index in start..<(start + count) {
                let t = MonotonicTime.milliseconds(Int64(index) * 20)
                let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
                set.add(ReceivedFrame(ssrc: 2, sender: "PUB", kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
            }
        }
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: nil, audioChannels: 1)])
        try sendAudio(from: 0, count: 50)
        let gone = set.update(senders: [:])
        #expect(gone.count == 1 && set.recorders.isEmpty)
        let first = try #require(gone[0].finish(stoppedAtMilliseconds: 1_000, now: .milliseconds(1_000), context: context))

        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: nil, audioChannels: 1)])
        try sendAudio(from: 100, count: 50)
        let back = try #require(set.recorders["PUB"])
        #expect(back.part == 1 && set.counters.returningSenders == 1)
        let second = try #require(back.finish(stoppedAtMilliseconds: 3_000, now: .milliseconds(3_000), context: context))
        #expect(first.error == nil && second.error == nil, "no EEXIST: the second file has its own name")
        #expect(first.filename == "archive-PUB.webm" && second.filename == "split-archive-PUB_0001.webm")
        let files = [first, second].map { WebMReader.parse(path: layout.directory + "/" + $0.filename) }
        #expect(files.allSatisfy { $0.isComplete } && files.map { $0.frames.count } == [50, 50])
    }
}

/// At the session's end the recorders leave the set on the loop before they are finished on
/// another thread, so the metrics never read one being finished; the frames the finishing
/// writes last still reach the totals once it reports (issue 28, finding 8).
@Suite struct RecordingsEndTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-end-\(UUID())").path

    @Test func recordersLeaveBeforeTheyAreFinishedAndTheirLastFramesCount() throws {
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        let set = RecordingsProbe(archive: layout)
        // A video track not started yet: the interleaver holds the audio for it.
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP8", audioChannels: 1)])
        let audio = try OpusEncoder(channels: 1)
        for index in 0..<100 {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
            set.add(ReceivedFrame(ssrc: 2, sender: "PUB", kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
        }
        let ended = set.endAll()
        #expect(ended.count == 1 && set.recorders.isEmpty, "out of the set before anything finishes them")
        let asTheyLeft = set.totals.audioFrames
        #expect(asTheyLeft < 100, "the interleaver still holds the last frames")
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        let recorder = try #require(ended.first)
        _ = recorder.finish(stoppedAtMilliseconds: 2_000, now: .milliseconds(2_000), context: context)
        #expect(set.totals.audioFrames == asTheyLeft, "a recorder being finished is not read")
        set.finished(ObjectIdentifier(recorder), totals: RecordingTotals(recorder))
        #expect(set.totals.audioFrames == 100, "the last frames count once the finishing reports")
        set.finished(ObjectIdentifier(recorder), totals: RecordingTotals(recorder))
        #expect(set.totals.audioFrames == 100, "reported once")
    }
}
