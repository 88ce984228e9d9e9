import Bitstreams
import CodecBindings
import DiskLayout
import Foundation
import Media
import SystemClock
import Testing
import TestSupport
import WebM
import WebMReader
import WireCoding
@testable import Recorder

/// AV1 needs its av1C record in the track header, built from a sequence header.
@Suite struct AV1RecordingTests {
    func record(videoFromMilliseconds videoStart: Int64) throws -> (FinishedRecording, WebMParsedFile, [AV1TemporalUnit], String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-av1-\(UUID())").path
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        let recorder = try SenderRecorder(connectionID: "AV1SENDER", tracks: SenderTracks(videoCodec: .av1, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let units = try av1TemporalUnits(frames: 60, width: 160, height: 96, keyframeInterval: 30)
        let audio = try OpusEncoder(channels: 1)
        // 10 s of audio; 2 s of 30 fps video from `videoStart`, in time order.
        var events: [(time: Int64, frame: EncodedFrame, video: Bool)] = []
        for index in 0..<500 {
            let data = try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1))
            events.append((Int64(index) * 20, EncodedFrame(data: data, rtpTimestamp: 0, isKeyframe: true), false))
        }
        for (index, unit) in units.enumerated() {
            // One RTP payload (W=0, OBUs keep their size fields), read by the depacketizer (key frame, render size).
            var payload: [UInt8] = [0x00]
            for obu in unit.obus { LEB128.append(obu.count, to: &payload); payload += obu }
            events.append((videoStart + Int64(index) * 100 / 3, try AV1Depacketizer().assemble([payload[...]], timestamp: 0), true))
        }
        for event in events.sorted(by: { $0.time < $1.time }) {
            recorder.add(event.frame, video: event.video, mediaTime: .milliseconds(event.time), arrival: .milliseconds(event.time))
        }
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 10_000, now: .milliseconds(10_000),
                                                    context: SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil,
                                                                            botConnectionID: nil, recbotVersion: "t")))
        let path = layout.directory + "/archive-AV1SENDER.webm"
        return (finished, WebMReader.parse(path: path), units, path)
    }

    @Test func theFirstKeyframeGivesTheTrackItsCodecConfiguration() throws {
        let (finished, parsed, units, path) = try record(videoFromMilliseconds: 500)
        #expect(finished.error == nil && finished.statistics.videoFrames == 60 && finished.statistics.videoSizes == ["160x96"])
        let track = try #require(parsed.tracks.first { $0.number == 1 })
        #expect(track.codecID == "V_AV1" && track.pixelWidth == 160 && track.pixelHeight == 96)
        #expect(track.codecPrivate == (try AV1CodecConfiguration(temporalUnit: units[0].data)).codecPrivate)
        #expect(try ffmpegDecodes(path) == 60)
    }

    /// Video 6 s after audio: the file starts on the provisional record, and the first
    /// sequence header's fields replace it in place.
    @Test func lateVideoStartsOnTheProvisionalRecordAndPatchesIt() throws {
        let (finished, parsed, units, path) = try record(videoFromMilliseconds: 6_000)
        #expect(finished.error == nil && finished.statistics.videoFrames == 60 && finished.statistics.audioFrames == 500)
        let track = try #require(parsed.tracks.first { $0.number == 1 })
        let real = try AV1CodecConfiguration(temporalUnit: units[0].data)
        #expect(track.codecPrivate == AV1CodecConfiguration.recordFields(real.sequence))
        #expect(track.codecPrivate != AV1CodecConfiguration.provisionalRecord)
        #expect(track.pixelWidth == 160 && track.pixelHeight == 96)
        #expect(try ffmpegDecodes(path) == 60)
    }

    /// Video frames ffmpeg decodes from the file (it fails on any decode error).
    func ffmpegDecodes(_ path: String) throws -> Int {
        let result = try runProcess("/usr/bin/env", ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                                     "stream=nb_read_frames", "-of", "csv=p=0", path])
        return result.status == 0 ? Int(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 : -1
    }
}
