import CodecBindings
import DiskLayout
import Foundation
import Media
@testable import Recorder
import SystemClock
import Testing
import WebMReader
import WireCoding

/// Time-split recording (`--split-duration`): a VP8 + Opus sender through a split every 2 s.
/// The simulated sender answers a keyframe request 60 ms later, as a publisher through Sora would.
@Suite struct SplitRecordingTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-split-\(UUID())").path
    var layout: ArchiveLayout { ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000") }
    let context = SidecarContext(recordingID: "01JD0000000000000000000000", channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")

    /// A set splitting every 2 s, with the whole file beside the parts unless `only`.
    func makeSet(only: Bool) -> RecordingsProbe {
        RecordingsProbe(archive: layout, split: SplitPolicy(seconds: 2, only: only))
    }

    /// 7 s of media; returns the set and how many keyframes the sender was asked for.
    func record(only: Bool, seconds: Int = 7) throws -> (RecordingsProbe, Int) {
        let set = makeSet(only: only)
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP8", audioChannels: 1)])
        let audio = try OpusEncoder(channels: 1)
        // No keyframe of its own after the first: every part's first keyframe is one recbot asked for.
        let video = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 10_000)
        var keyframeDue: MonotonicTime?
        var requests = 0
        for index in 0..<(seconds * 50) {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
            set.add(ReceivedFrame(ssrc: 2, sender: "PUB", kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
            if index % 2 == 0 {
                let force = keyframeDue.map { t >= $0 } ?? false
                if force { keyframeDue = nil }
                for encoded in try video.encode(.testPattern(width: 96, height: 64, frame: index / 2), pts: Int64(index / 2), forceKeyframe: force) {
                    let frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index / 2 * 3_600), isKeyframe: encoded.isKeyframe,
                                             width: encoded.isKeyframe ? 96 : nil, height: encoded.isKeyframe ? 64 : nil)
                    set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: "VP8", frame: frame, mediaTime: t, completedAt: t), now: t)
                }
            }
            let wanted = set.takeKeyframesWanted()
            #expect(wanted.allSatisfy { $0 == 1 }, "only the video stream is asked")
            if !wanted.isEmpty && keyframeDue == nil {
                keyframeDue = t.adding(milliseconds: 60)
                requests += 1
            }
        }
        return (set, requests)
    }

    func finishAll(_ set: RecordingsProbe, at end: Int64) throws -> [FinishedRecording] {
        var finished = try set.takeRetired().map { try #require($0.finish(stoppedAtMilliseconds: end, now: .milliseconds(end), context: context)) }
        for recorder in set.endAll() {
            finished.append(try #require(recorder.finish(stoppedAtMilliseconds: end, now: .milliseconds(end), context: context)))
        }
        return finished.sorted { $0.part < $1.part }
    }

    /// Absolute times (ms on the recording's clock) of one track's blocks in a finished part.
    func blockTimes(_ part: FinishedRecording, track: UInt64) -> [Int64] {
        let parsed = WebMReader.parse(path: layout.directory + "/" + part.filename)
        return parsed.frames.filter { $0.track == track }.map { $0.timecode + part.startOffsetSeconds * 1_000 }
    }

    @Test func partsTileTheTimelineAndEachStartsWithAKeyframe() throws {
        let (set, requests) = try record(only: true)
        let parts = try finishAll(set, at: 7_000)
        #expect(parts.map(\.filename) == (1...4).map { "split-archive-PUB_000\($0).webm" })
        #expect(requests == 3, "one keyframe asked for at each of the boundaries 2, 4 and 6 s")
        #expect(parts.map(\.startOffsetSeconds) == [0, 2, 4, 6] && parts.map(\.stopOffsetSeconds) == [2, 4, 6, 7],
                "each part stops at the boundary where the next starts")
        for part in parts {
            let parsed = WebMReader.parse(path: layout.directory + "/" + part.filename)
            #expect(parsed.isComplete)
            #expect(parsed.frames.first { $0.track == 1 }?.isKeyframe == true, "\(part.filename) starts with a keyframe")
        }
        for (previous, next) in zip(parts, parts.dropFirst()) {
            let boundary = next.startOffsetSeconds * 1_000
            // Audio is cut at the boundary: the next part's first block follows the previous part's last by one frame.
            let (lastAudio, firstAudio) = (try #require(blockTimes(previous, track: 2).last), try #require(blockTimes(next, track: 2).first))
            #expect(lastAudio < boundary && firstAudio >= boundary && firstAudio - lastAudio == 20, "audio \(lastAudio) | \(firstAudio)")
            // Video is cut at the keyframe after it: no frame twice, none missing.
            let (lastVideo, firstVideo) = (try #require(blockTimes(previous, track: 1).last), try #require(blockTimes(next, track: 1).first))
            #expect(firstVideo >= boundary && firstVideo - lastVideo == 40, "video \(lastVideo) | \(firstVideo)")
        }
        #expect(parts.reduce(0) { $0 + $1.statistics.audioFrames } == 350 && parts.reduce(0) { $0 + $1.statistics.videoFrames } == 175)
        #expect(FileManager.default.fileExists(atPath: layout.directory + "/split-archive-PUB_0004.json"))
        #expect(!FileManager.default.fileExists(atPath: layout.directory + "/archive-PUB.webm"), "--split-only: no whole file")
    }

    /// Without `only`, the whole-file archive is written beside the parts, with every frame.
    @Test func theWholeFileIsWrittenBesideTheParts() throws {
        let (set, _) = try record(only: false)
        let parts = try finishAll(set, at: 7_000)
        #expect(parts.map(\.part) == [0, 1, 2, 3, 4])
        let whole = parts[0]
        #expect(whole.filename == "archive-PUB.webm" && whole.statistics.audioFrames == 350 && whole.statistics.videoFrames == 175)
        #expect(parts.dropFirst().reduce(0) { $0 + $1.statistics.videoFrames } == 175)
    }

    /// The metrics count each frame once though the whole file writes it again; the bytes
    /// written count both files. Checked while recording and after every file is finished.
    @Test func totalsCountEachFrameOnceAndEveryByteWritten() throws {
        let (set, _) = try record(only: false)
        let running = set.totals
        // While recording, the last frames still wait in the interleaving buffers: never more than were sent.
        #expect(running.videoFrames > 150 && running.videoFrames <= 175 && running.audioFrames > 300 && running.audioFrames <= 350, "\(running)")
        for recorder in set.takeRetired() + set.endAll() {
            _ = try #require(recorder.finish(stoppedAtMilliseconds: 7_000, now: .milliseconds(7_000), context: context))
            set.finished(ObjectIdentifier(recorder), totals: RecordingTotals(recorder))
        }
        let final = set.totals
        #expect(final.videoFrames == 175 && final.audioFrames == 350, "\(final)")
        let files = try FileManager.default.contentsOfDirectory(atPath: layout.directory).filter { $0.hasSuffix(".webm") }
        let onDisk = try files.reduce(UInt64(0)) { total, name in
            total + ((try FileManager.default.attributesOfItem(atPath: layout.directory + "/" + name)[.size] as? NSNumber)?.uint64Value ?? 0)
        }
        #expect(files.count == 5 && final.bytes >= onDisk * 9 / 10, "\(final.bytes) bytes counted, \(onDisk) on disk in \(files.count) files")
    }

    /// A codec change at 3 s ends the current part there and the whole-file archive with it;
    /// the split parts carry on, on the same 2 s grid.
    @Test func aCodecChangeEndsThePartAndTheWholeFile() throws {
        let set = makeSet(only: false)
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP8", audioChannels: nil)])
        let vp8 = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 25)
        let vp9 = try VPXEncoder(codec: .vp9, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 25)
        for index in 0..<125 {  // 5 s at 25 frames a second, VP9 from 3 s
            let t = MonotonicTime.milliseconds(Int64(index) * 40)
            let (encoder, codec) = index < 75 ? (vp8, "VP8") : (vp9, "VP9")
            for encoded in try encoder.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index)) {
                let frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3_600), isKeyframe: encoded.isKeyframe,
                                         width: encoded.isKeyframe ? 96 : nil, height: encoded.isKeyframe ? 64 : nil)
                set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: codec, frame: frame, mediaTime: t, completedAt: t), now: t)
            }
        }
        let parts = try finishAll(set, at: 5_000)
        #expect(parts.map(\.part) == [0, 1, 2, 3, 4])
        #expect(parts.map(\.startOffsetSeconds) == [0, 0, 2, 3, 4] && parts.dropFirst().map(\.stopOffsetSeconds) == [2, 3, 4, 5])
        #expect(parts.map { $0.tracks.videoCodec } == [.vp8, .vp8, .vp8, .vp9, .vp9])
        #expect(parts[0].statistics.videoFrames == 75, "the whole file ends at the codec change")
        #expect(parts.dropFirst().reduce(0) { $0 + $1.statistics.videoFrames } == 125)
    }

    /// Issue 39 item 1: a video-only VP9 sender with a keyframe every 10 s loses its connection
    /// at 7 s while its current part waits for the keyframe after a boundary (so it has no
    /// media). When it is back after the rejoin, its next part takes the number that empty part
    /// had, not one of an existing file: no EEXIST, no catalog collision, nothing lost.
    @Test func aRejoinWhileAPartWaitsForItsKeyframeReusesNoNumber() throws {
        let set = makeSet(only: true)
        let vp9 = try VPXEncoder(codec: .vp9, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 250)
        func send(_ range: Range<Int>, forceKeyframeAt first: Bool = false) throws {
            for index in range {
                let t = MonotonicTime.milliseconds(Int64(index) * 40)
                for encoded in try vp9.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index),
                                              forceKeyframe: first && index == range.lowerBound) {
                    let frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3_600), isKeyframe: encoded.isKeyframe,
                                             width: encoded.isKeyframe ? 96 : nil, height: encoded.isKeyframe ? 64 : nil)
                    set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: "VP9", frame: frame, mediaTime: t, completedAt: t), now: t)
                }
                _ = set.takeKeyframesWanted()  // this sender does not answer: its next keyframe is at 10 s
            }
        }
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP9", audioChannels: nil)])
        try send(0..<175)  // 0–7 s
        var ended = set.endForInterruption(boundary: .milliseconds(6_960))
        ended += set.takeRetired()
        // The rejoin: the sender is named again and sends from 8 s, starting with a keyframe.
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP9", audioChannels: nil)])
        try send(200..<300, forceKeyframeAt: true)
        ended += set.endAll()
        ended += set.takeRetired()  // after endAll, which ends a cut under way
        let finished = ended.compactMap { recorder -> FinishedRecording? in
            guard recorder.hasMedia else { return nil }
            return recorder.finish(stoppedAtMilliseconds: 12_000, now: .milliseconds(12_000), context: context)
        }.sorted { $0.part < $1.part }
        #expect(finished.allSatisfy { $0.error == nil }, "\(finished.compactMap(\.error))")
        let parts = finished.map(\.part)
        #expect(Set(parts).count == parts.count && parts == Array(1...parts.count), "parts \(parts): each number once, no hole")
        #expect(finished.reduce(0) { $0 + $1.statistics.videoFrames } >= 175 - 50 + 100 - 1, "only frames no keyframe could start are missing")
        for part in finished {
            #expect(WebMReader.parse(path: layout.directory + "/" + part.filename).isComplete, "\(part.filename)")
        }
    }

    /// Issue 39 item 2: with the whole file beside the parts, a codec change between a boundary
    /// and the next part's first keyframe ends the whole file: it never takes the new codec.
    @Test func aCodecChangeWhileAPartWaitsForItsKeyframeEndsTheWholeFile() throws {
        let set = makeSet(only: false)
        _ = set.update(senders: ["PUB": SenderLayout(videoCodec: "VP8", audioChannels: nil)])
        let vp8 = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 10_000)
        let vp9 = try VPXEncoder(codec: .vp9, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 25)
        for index in 0..<100 {  // VP8 until 2.2 s (past the 2 s boundary, no keyframe since 0 s), then VP9
            let t = MonotonicTime.milliseconds(Int64(index) * 40)
            let (encoder, codec) = index < 55 ? (vp8, "VP8") : (vp9, "VP9")
            for encoded in try encoder.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index)) {
                let frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3_600), isKeyframe: encoded.isKeyframe,
                                         width: encoded.isKeyframe ? 96 : nil, height: encoded.isKeyframe ? 64 : nil)
                set.add(ReceivedFrame(ssrc: 1, sender: "PUB", kind: .video, codec: codec, frame: frame, mediaTime: t, completedAt: t), now: t)
            }
            _ = set.takeKeyframesWanted()
        }
        let parts = try finishAll(set, at: 4_000)
        #expect(parts.allSatisfy { $0.error == nil })
        let whole = try #require(parts.first { $0.part == 0 })
        #expect(whole.tracks.videoCodec == .vp8 && whole.statistics.videoFrames == 55, "the whole file ends at the codec change")
        for part in parts {
            let parsed = WebMReader.parse(path: layout.directory + "/" + part.filename)
            let codec = parsed.tracks.first { $0.number == 1 }?.codecID
            #expect(parsed.isComplete && codec == (part.tracks.videoCodec == .vp8 ? "V_VP8" : "V_VP9"), "\(part.filename)")
            #expect(part.tracks.videoCodec == .vp9 ? part.statistics.videoFrames > 0 : true)
        }
        #expect(parts.filter { $0.tracks.videoCodec == .vp9 }.reduce(0) { $0 + $1.statistics.videoFrames } == 45, "every VP9 frame in a VP9 part")
    }

    @Test func boundariesSitOnTheSessionsTimeline() {
        let policy = SplitPolicy(seconds: 10, only: false)
        let start = MonotonicTime.milliseconds(5_000)
        #expect(policy.boundary(after: .milliseconds(5_000), recordingStart: start) == .milliseconds(15_000))
        #expect(policy.boundary(after: .milliseconds(14_999), recordingStart: start) == .milliseconds(15_000))
        #expect(policy.boundary(after: .milliseconds(15_000), recordingStart: start) == .milliseconds(25_000))
        #expect(policy.boundary(after: .milliseconds(0), recordingStart: start) == .milliseconds(15_000))
    }
}
