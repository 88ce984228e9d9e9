import CodecBindings
import DiskLayout
import Foundation
import Media
import SystemClock
import Testing
import WebM
import WebMReader
import WireCoding
@testable import Recorder

@Suite struct SenderRecorderTests {
    func layout() throws -> ArchiveLayout {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-rec-\(UUID())").path
        return ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
    }

    @Test func recordsAudioAndVideoFromTheFirstKeyframeWithWholeSecondOffset() throws {
        let layout = try layout()
        let start = MonotonicTime.milliseconds(1_000_000)
        let recorder = try SenderRecorder(connectionID: "SENDER01", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 2), layout: layout,
                                          recordingStartMilliseconds: 1_795_168_800_000, recordingStartTime: start, segmentUID: Array(1...16), clock: SystemTimeSource())
        let video = try VPXEncoder(codec: .vp8, width: 128, height: 96, framesPerSecond: 25, keyframeInterval: 25)
        let audio = try OpusEncoder(channels: 2)
        // The sender appears 2.3 s into the recording; audio arrives first, video's first frame is not a keyframe.
        let origin: Int64 = start.nanoseconds + 2_300_000_000
        var events: [(Int64, Bool, EncodedFrame)] = []
        for index in 0..<100 {  // 4 s of video
            for encoded in try video.encode(.testPattern(width: 128, height: 96, frame: index), pts: Int64(index), forceKeyframe: index == 3) {
                var frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3600), isKeyframe: encoded.isKeyframe && index >= 3)
                if frame.isKeyframe { frame.width = 128; frame.height = 96 }
                if index >= 1 { events.append((origin + Int64(index) * 40_000_000, true, frame)) }
            }
        }
        for index in 0..<200 {
            let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: index, channels: 2))
            events.append((origin + Int64(index) * 20_000_000, false, EncodedFrame(data: packet, rtpTimestamp: UInt32(index * 960), isKeyframe: true)))
        }
        // Deliver in arrival order with audio slightly ahead of video, as a network would.
        events.sort { ($0.0 - ($0.1 ? 0 : 30_000_000)) < ($1.0 - ($1.1 ? 0 : 30_000_000)) }
        for (time, isVideo, frame) in events {
            let t = MonotonicTime(nanoseconds: time)
            recorder.add(frame, video: isVideo, mediaTime: t, arrival: t.adding(milliseconds: isVideo ? 5 : 0))
        }
        let end = MonotonicTime(nanoseconds: origin + 4_100_000_000)
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "lobby", soraSessionID: "S", clientIDs: ["SENDER01": "cam"],
                                     botConnectionID: "BOT", recbotVersion: "test")
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 1_795_168_800_000 + 6_400, now: end, context: context))
        #expect(finished.error == nil)
        #expect(finished.startOffsetSeconds == 2 && finished.startOffsetMilliseconds == 2_300)
        #expect(finished.statistics.framesDroppedBeforeStart == 2, "video before its first keyframe")

        let parsed = WebMReader.parse(path: layout.directory + "/archive-SENDER01.webm")
        #expect(parsed.isComplete)
        #expect(parsed.tracks.map(\.number) == [1, 2] && parsed.tracks[0].pixelWidth == 128)
        let times = parsed.frames.map(\.timecode)
        #expect(times == times.sorted(), "never backwards across tracks")
        let firstVideo = try #require(parsed.frames.first { $0.track == 1 })
        #expect(firstVideo.isKeyframe && firstVideo.timecode == 300 + 120, "keyframe at 2.42 s is 420 ms after file time 0 (2 s)")
        #expect(parsed.frames.first?.timecode == 300, "first audio at 2.3 s")
        #expect(parsed.frames.filter { $0.track == 2 }.count == 200)
        #expect(parsed.frames.filter { $0.track == 1 }.count == 97)

        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: layout.directory + "/archive-SENDER01.json"))) as? [String: Any])
        #expect(sidecar["connection_id"] as? String == "SENDER01" && sidecar["start_time_offset"] as? Int == 2 && sidecar["stop_time_offset"] as? Int == 7)
        #expect(sidecar["video_codec_type"] as? String == "VP8" && sidecar["audio_codec_type"] as? String == "OPUS" && sidecar["client_id"] as? String == "cam")
        #expect((sidecar["size"] as? NSNumber)?.intValue == Int(finished.size))
    }

    /// A keyframe claims 20000x240 (a VP9 or AV1 header can; WebM holds at most 16,384): the
    /// size is ignored and counted, the sender's audio and its later keyframes are recorded. It
    /// once made the file impossible to start and lost the sender, audio included, unlogged.
    @Test func aKeyframeSizeBeyondWebMIsIgnoredAndTheSenderRecorded() throws {
        let layout = try layout()
        let start = MonotonicTime.milliseconds(1_000_000)
        let recorder = try SenderRecorder(connectionID: "BIGSIZE01", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 2), layout: layout,
                                          recordingStartMilliseconds: 1_795_168_800_000, recordingStartTime: start, segmentUID: Array(1...16), clock: SystemTimeSource())
        var refused: [(Int, Int)] = []
        recorder.onVideoSizeRefused = { _, width, height in refused.append((width, height)) }
        let video = try VPXEncoder(codec: .vp8, width: 128, height: 96, framesPerSecond: 25, keyframeInterval: 25)
        let audio = try OpusEncoder(channels: 2)
        for index in 0..<75 {  // 3 s; a keyframe every second
            let time = start.adding(milliseconds: Int64(index) * 40)
            for encoded in try video.encode(.testPattern(width: 128, height: 96, frame: index), pts: Int64(index), forceKeyframe: index % 25 == 0) {
                var frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3600), isKeyframe: encoded.isKeyframe)
                // The first keyframe's header claims a size WebM cannot hold.
                if frame.isKeyframe { (frame.width, frame.height) = index == 0 ? (20_000, 240) : (128, 96) }
                recorder.add(frame, video: true, mediaTime: time, arrival: time)
            }
            for half in 0..<2 {
                let audioTime = time.adding(milliseconds: Int64(half) * 20)
                let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: index * 2 + half, channels: 2))
                recorder.add(EncodedFrame(data: packet, rtpTimestamp: UInt32((index * 2 + half) * 960), isKeyframe: true), video: false,
                             mediaTime: audioTime, arrival: audioTime)
            }
        }
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "lobby", soraSessionID: "S", botConnectionID: "BOT", recbotVersion: "test")
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 1_795_168_803_100, now: start.adding(milliseconds: 3_100), context: context))
        #expect(finished.error == nil, "\(finished.error ?? "")")
        #expect(finished.statistics.videoSizesRefused == 1 && refused.count == 1 && refused.first?.0 == 20_000)
        #expect(finished.statistics.audioFrames == 150, "every audio frame kept")
        #expect(finished.statistics.videoFrames >= 50, "video from the first keyframe with a size: \(finished.statistics.videoFrames)")
        let parsed = WebMReader.parse(path: layout.directory + "/archive-BIGSIZE01.webm")
        #expect(parsed.isComplete && parsed.tracks.first?.pixelWidth == 128)
    }

    /// A track stalled under load: its first frames arrive after the file started, with times
    /// before the file's time 0. They are dropped and counted; placing them all at 0 repeated a
    /// timestamp (seen under ThreadSanitizer, where everything runs ten times slower).
    @Test func framesBeforeTheFilesTimeZeroAreDroppedNotRepeated() throws {
        let layout = try layout()
        let start = MonotonicTime.milliseconds(1_000_000)
        let recorder = try SenderRecorder(connectionID: "LATEAUDIO01", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 1_795_168_800_000, recordingStartTime: start, segmentUID: Array(1...16), clock: SystemTimeSource())
        let video = try VPXEncoder(codec: .vp8, width: 128, height: 96, framesPerSecond: 25, keyframeInterval: 25)
        let audio = try OpusEncoder(channels: 1)
        var audioIndex = 0
        func addAudio(at milliseconds: Int64) throws {
            let time = start.adding(milliseconds: milliseconds)
            let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: audioIndex, channels: 1))
            recorder.add(EncodedFrame(data: packet, rtpTimestamp: UInt32(audioIndex * 960), isKeyframe: true), video: false, mediaTime: time, arrival: time)
            audioIndex += 1
        }
        for index in 0..<25 {  // video from 1.5 s: the file's time 0 is on 1.0 s
            let time = start.adding(milliseconds: 1_500 + Int64(index) * 40)
            for encoded in try video.encode(.testPattern(width: 128, height: 96, frame: index), pts: Int64(index)) {
                var frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3600), isKeyframe: encoded.isKeyframe)
                if frame.isKeyframe { (frame.width, frame.height) = (128, 96) }
                recorder.add(frame, video: true, mediaTime: time, arrival: time)
            }
            // The audio stalled: its first two frames (0.90 s, 0.92 s) come 400 ms after the first
            // video frame, when the file has started on it.
            if index == 10 { try addAudio(at: 900); try addAudio(at: 920) }
            try addAudio(at: 1_500 + Int64(index) * 40)
            try addAudio(at: 1_520 + Int64(index) * 40)
        }
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "lobby", soraSessionID: "S", botConnectionID: "BOT", recbotVersion: "test")
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 1_795_168_802_600, now: start.adding(milliseconds: 2_600), context: context))
        #expect(finished.statistics.audioFrames == 50 && finished.statistics.framesDroppedBeforeStart == 2, "\(finished.statistics)")
        let parsed = WebMReader.parse(path: layout.directory + "/archive-LATEAUDIO01.webm")
        for track in [1, 2] as [UInt64] {
            let timecodes = parsed.frames.filter { $0.track == track }.map(\.timecode)
            #expect(Set(timecodes).count == timecodes.count, "track \(track): no timestamp repeats: \(timecodes.prefix(4))")
        }
    }

    @Test func unsafeConnectionIDsAreRefused() throws {
        let layout = try layout()
        for bad in ["../evil", "a/b", "", String(repeating: "A", count: 65), "nul\u{0}id", "é"] {
            #expect(throws: RecorderError.self) {
                try SenderRecorder(connectionID: bad, tracks: SenderTracks(videoCodec: nil, audioChannels: 1), layout: layout,
                                   recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
            }
        }
        #expect(ArchiveLayout.isSafeConnectionID("8C2R4W6Y0TQ1H3J5K7M9N0PBSD"))
    }

    /// The offer gave the sender video, but its first keyframe comes 6 s after its audio: the
    /// file still holds both, starting on a provisional size that the keyframe's replaces.
    @Test func videoThatStartsLateLandsInTheSameFileAsItsAudio() throws {
        let layout = try layout()
        let recorder = try SenderRecorder(connectionID: "S3", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let audio = try OpusEncoder(channels: 1)
        let video = try VPXEncoder(codec: .vp8, width: 128, height: 96, framesPerSecond: 25, keyframeInterval: 25)
        var videoFrames = 0
        for index in 0..<500 {  // 10 s of audio; video from 6 s on
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            recorder.add(EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true),
                         video: false, mediaTime: t, arrival: t)
            if index >= 300 && index % 2 == 0 {
                for frame in try video.encode(.testPattern(width: 128, height: 96, frame: index), pts: Int64(index)) {
                    recorder.add(EncodedFrame(data: frame.data, rtpTimestamp: 0, isKeyframe: frame.isKeyframe, width: frame.isKeyframe ? 128 : nil,
                                              height: frame.isKeyframe ? 96 : nil), video: true, mediaTime: t, arrival: t)
                    videoFrames += 1
                }
            }
        }
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 10_000, now: .milliseconds(10_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")))
        #expect(finished.tracks.videoCodec == .vp8 && finished.statistics.audioFrames == 500)
        #expect(finished.statistics.videoFrames == videoFrames && finished.statistics.videoSizes == ["128x96"])
        let parsed = WebMReader.parse(path: layout.directory + "/archive-S3.webm")
        #expect(parsed.isComplete && parsed.tracks.map(\.number) == [1, 2])
        #expect(parsed.tracks.first { $0.number == 1 }.map { ($0.pixelWidth, $0.pixelHeight) } ?? (0, 0) == (128, 96))
        #expect(parsed.frames.filter { $0.track == 1 }.count == videoFrames && parsed.frames.filter { $0.track == 2 }.count == 500)
    }

    /// A video frame that comes too late for the file's order is dropped and reported with its
    /// own stream and RTP time; delta frames after it are skipped until a keyframe.
    @Test func aVideoFrameDroppedForOrderIsReportedWithItsSource() throws {
        let layout = try layout()
        let recorder = try SenderRecorder(connectionID: "S4", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let audio = try OpusEncoder(channels: 1)
        let video = try VPXEncoder(codec: .vp8, width: 64, height: 48, framesPerSecond: 25, keyframeInterval: 100)
        let frames = try (0..<4).flatMap { try video.encode(.testPattern(width: 64, height: 48, frame: $0), pts: Int64($0), forceKeyframe: $0 == 3) }
        func videoFrame(_ index: Int) -> EncodedFrame {
            EncodedFrame(data: frames[index].data, rtpTimestamp: UInt32(1_000 + index), isKeyframe: frames[index].isKeyframe, width: 64, height: 48)
        }
        #expect(recorder.add(videoFrame(0), video: true, mediaTime: .milliseconds(0), arrival: .milliseconds(0), ssrc: 7) == nil)
        for index in 0..<50 {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let data = try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1))
            #expect(recorder.add(EncodedFrame(data: data, rtpTimestamp: 0, isKeyframe: true), video: false, mediaTime: t, arrival: t, ssrc: 3) == nil)
        }
        // Frame 1 belongs 100 ms in, but audio up to about 600 ms is already in the file.
        let dropped = recorder.add(videoFrame(1), video: true, mediaTime: .milliseconds(100), arrival: .milliseconds(1_000), ssrc: 7)
        #expect(dropped == FrameSource(ssrc: 7, rtpTimestamp: 1_001))
        _ = recorder.add(videoFrame(2), video: true, mediaTime: .milliseconds(1_040), arrival: .milliseconds(1_040), ssrc: 7)
        _ = recorder.add(videoFrame(3), video: true, mediaTime: .milliseconds(1_080), arrival: .milliseconds(1_080), ssrc: 7)
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 2_000, now: .milliseconds(2_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")))
        #expect(finished.statistics.framesDroppedForOrder == 1 && finished.statistics.framesDroppedAwaitingKeyframe == 1)
        #expect(finished.statistics.videoFrames == 2, "the first keyframe and the forced one")
    }

    @Test func videoThatNeverComesLeavesAnEmptyVideoTrackAndAllTheAudio() throws {
        let layout = try layout()
        let recorder = try SenderRecorder(connectionID: "S2", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let audio = try OpusEncoder(channels: 1)
        for index in 0..<400 {  // 8 s of audio, no video at all
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            recorder.add(EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true),
                         video: false, mediaTime: t, arrival: t)
        }
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 8_000, now: .milliseconds(8_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")))
        // The sidecar says there is no video (hisui then ignores the empty track).
        #expect(finished.tracks.videoCodec == nil && finished.statistics.audioFrames == 400)
        let parsed = WebMReader.parse(path: layout.directory + "/archive-S2.webm")
        #expect(parsed.isComplete && parsed.tracks.map(\.number) == [1, 2] && parsed.frames.count == 400)
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: layout.directory + "/archive-S2.json"))) as? [String: Any])
        #expect(sidecar["video"] as? Bool == false && sidecar["audio"] as? Bool == true)
    }
}

/// An SFU switching simulcast layers forwards the old layer's keyframe and the new layer's
/// keyframe of one capture instant, with one RTP timestamp (Janus did, going from r1 to r0).
/// Two blocks at one time would fail the file: the new layer's keyframe wins.
@Suite struct LayerSwitchKeyframeTests {
    func recorder(_ name: String, audio: Bool) throws -> (SenderRecorder, ArchiveLayout) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-switch-\(UUID())").path
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        let recorder = try SenderRecorder(connectionID: name, tracks: SenderTracks(videoCodec: .vp8, audioChannels: audio ? 1 : nil), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        return (recorder, layout)
    }

    func keyframes() throws -> (large: EncodedFrame, delta: EncodedFrame, small: EncodedFrame) {
        let large = try VPXEncoder(codec: .vp8, width: 160, height: 120, framesPerSecond: 30, keyframeInterval: 100)
        let small = try VPXEncoder(codec: .vp8, width: 80, height: 60, framesPerSecond: 30, keyframeInterval: 100)
        let first = try large.encode(.testPattern(width: 160, height: 120, frame: 0), pts: 0, forceKeyframe: true)[0]
        let delta = try large.encode(.testPattern(width: 160, height: 120, frame: 1), pts: 1, forceKeyframe: false)[0]
        let switched = try small.encode(.testPattern(width: 80, height: 60, frame: 2), pts: 0, forceKeyframe: true)[0]
        return (EncodedFrame(data: first.data, rtpTimestamp: 0, isKeyframe: true, width: 160, height: 120),
                EncodedFrame(data: delta.data, rtpTimestamp: 3_000, isKeyframe: false),
                EncodedFrame(data: switched.data, rtpTimestamp: 3_000, isKeyframe: true, width: 80, height: 60))
    }

    func finish(_ recorder: SenderRecorder, _ layout: ArchiveLayout) throws -> (FinishedRecording, WebMParsedFile) {
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 2_000, now: .milliseconds(2_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil,
                                                                            botConnectionID: nil, recbotVersion: "t")))
        return (finished, WebMReader.parse(path: layout.directory + "/" + finished.filename))
    }

    /// The same RTP time, or 1 ms later: Janus moves the new layer's timestamps just past the old one's.
    @Test(arguments: [0, 1] as [Int64])
    func theNewLayersKeyframeReplacesTheWaitingOne(millisecondsLater: Int64) throws {
        let (recorder, layout) = try recorder("SWITCH01", audio: true)
        var (large, delta, small) = try keyframes()
        delta.isKeyframe = true  // the old layer's keyframe of the switch's instant
        let audio = try OpusEncoder(channels: 1)
        recorder.add(large, video: true, mediaTime: .milliseconds(0), arrival: .milliseconds(0))
        recorder.add(delta, video: true, mediaTime: .milliseconds(33), arrival: .milliseconds(40))
        recorder.add(small, video: true, mediaTime: .milliseconds(33 + millisecondsLater), arrival: .milliseconds(41))
        for index in 0..<20 {
            let data = try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1))
            recorder.add(EncodedFrame(data: data, rtpTimestamp: UInt32(index * 960), isKeyframe: true), video: false,
                         mediaTime: .milliseconds(Int64(index) * 20), arrival: .milliseconds(Int64(index) * 20 + 1))
        }
        let (finished, parsed) = try finish(recorder, layout)
        let video = parsed.frames.filter { $0.track == 1 }
        #expect(video.map(\.timecode) == [0, 33 + millisecondsLater] && video.last?.data == small.data, "one block per instant, the new layer's")
        #expect(finished.statistics.videoFramesSuperseded == 1 && finished.statistics.videoKeyframesNudged == 0)
    }

    /// The new layer's keyframe came after the keyframe wait (150 ms), when the old layer's
    /// picture of its instant was written: it goes 1 ms later, and a delta frame of that
    /// instant is dropped.
    @Test func aKeyframeAfterTheWrittenPictureOfItsInstantGoesOneMillisecondLater() throws {
        let (recorder, layout) = try recorder("SWITCH02", audio: false)
        let (large, delta, small) = try keyframes()
        var second = delta
        second.rtpTimestamp = 6_000
        recorder.add(large, video: true, mediaTime: .milliseconds(0), arrival: .milliseconds(0))
        recorder.add(delta, video: true, mediaTime: .milliseconds(33), arrival: .milliseconds(40))
        recorder.add(second, video: true, mediaTime: .milliseconds(66), arrival: .milliseconds(200))  // all three written now
        recorder.add(small, video: true, mediaTime: .milliseconds(66), arrival: .milliseconds(210))
        #expect(recorder.add(second, video: true, mediaTime: .milliseconds(66), arrival: .milliseconds(420)) == nil,
                "a delta frame of the waiting keyframe's instant goes")
        let (finished, parsed) = try finish(recorder, layout)
        let video = parsed.frames.filter { $0.track == 1 }
        #expect(video.map(\.timecode) == [0, 33, 66, 67] && video.last?.data == small.data)
        #expect(finished.statistics.videoFramesSuperseded == 2 && finished.statistics.videoKeyframesNudged == 1)
    }
}

/// A phone's sender tags its pictures' orientation instead of turning them: the file's track
/// says how to turn them (Matroska Projection, read back by libwebm), and the sidecar lists
/// where the orientation changed.
@Suite struct VideoOrientationRecordingTests {
    @Test(arguments: [true, false])
    func theFirstKeyframesOrientationIsTheTracksAndChangesAreListed(tagged: Bool) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-turn-\(UUID())").path
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        let recorder = try SenderRecorder(connectionID: "PHONE01", tracks: SenderTracks(videoCodec: .vp8, audioChannels: nil), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let encoder = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 30, keyframeInterval: 30)
        for index in 0..<60 {
            let encoded = try encoder.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index), forceKeyframe: index == 0)[0]
            var frame = EncodedFrame(data: encoded.data, rtpTimestamp: UInt32(index * 3_000), isKeyframe: encoded.isKeyframe)
            if frame.isKeyframe { (frame.width, frame.height) = (96, 64) }
            if tagged { frame.quarterTurns = index < 45 ? 1 : 0 }
            let time = MonotonicTime.milliseconds(Int64(index) * 100)
            recorder.add(frame, video: true, mediaTime: time, arrival: time)
        }
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 7_000, now: .milliseconds(7_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil,
                                                                            botConnectionID: nil, recbotVersion: "t")))
        let parsed = WebMReader.parse(path: layout.directory + "/" + finished.filename)
        #expect(parsed.isComplete)
        let projection = parsed.tracks.first { $0.number == 1 }?.projection
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
            layout.directory + "/" + finished.filename.replacingOccurrences(of: ".webm", with: ".json")))) as? [String: Any])
        let rotations = sidecar["video_rotations"] as? [[String: Any]]
        if tagged {
            #expect(projection == WebMParsedFile.Projection(type: 0, roll: -90), "90° clockwise is a roll of −90")
            #expect(rotations?.map { $0["offset_ms"] as? Int } == [0, 4_500] && rotations?.map { $0["degrees"] as? Int } == [90, 0])
        } else {
            #expect(projection == nil && rotations == nil, "untagged: nothing changes")
        }
    }
}
