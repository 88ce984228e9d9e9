import Bitstreams
import CodecBindings
import Foundation
import RTP
import Testing
import TestSupport
import WireCoding
@testable import Media

/// A VP8 RTP packetizer for tests (RFC 7741), with a 15-bit picture id as browsers send.
func packetizeVP8(_ frame: [UInt8], pictureID: UInt16, sequence: inout UInt16, timestamp: UInt32, maximumPayload: Int = 900) -> [RTPPacket] {
    var packets: [RTPPacket] = []
    var offset = 0
    while offset < frame.count {
        let chunk = Array(frame[offset..<min(frame.count, offset + maximumPayload)])
        let descriptor: [UInt8] = [0x80 | (offset == 0 ? 0x10 : 0), 0x80, 0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF)]
        var builder = RTPPacketBuilder(payloadType: 96, sequenceNumber: sequence, timestamp: timestamp, ssrc: 1)
        offset += chunk.count
        builder.marker = offset >= frame.count
        packets.append(try! RTPPacket(parsing: builder.build(payload: descriptor + chunk)))
        sequence &+= 1
    }
    return packets
}

func vp8Frames(count: Int, keyframeInterval: Int = 10) throws -> [EncodedVideoFrame] {
    let encoder = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 30, keyframeInterval: keyframeInterval)
    var frames: [EncodedVideoFrame] = []
    for index in 0..<count { frames += try encoder.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index)) }
    return frames
}

/// Runs packets through a one-track receiver, in the order given, all at one instant unless timed.
func assemble(_ packets: [RTPPacket], track: ReceiveTrack = Fixtures.videoTrack(), at times: [MonotonicTime]? = nil) -> (frames: [EncodedFrame], harness: Harness) {
    let harness = Harness(Fixtures.receiver([track]))
    for (index, packet) in packets.enumerated() { harness.receive(packet, at: times?[index]) }
    return (harness.frames.map(\.frame), harness)
}

@Suite struct VP8AssemblyTests {
    @Test func framesRoundTripThroughPacketsAcrossSequenceWrap() throws {
        let frames = try vp8Frames(count: 30)
        var sequence: UInt16 = 65_500
        var packets: [RTPPacket] = []
        for (index, frame) in frames.enumerated() {
            packets += packetizeVP8(frame.data, pictureID: UInt16(index), sequence: &sequence, timestamp: UInt32(index * 3000), maximumPayload: 300)
        }
        let (out, harness) = assemble(packets)
        #expect(out.map(\.data) == frames.map(\.data))
        #expect(out.map(\.isKeyframe) == frames.map(\.isKeyframe))
        #expect(out.first?.width == 96 && out.first?.height == 64)
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.lost == 0 && counters.framesDropped.total == 0)
    }

    @Test func reorderedPacketsStillAssemble() throws {
        let frames = try vp8Frames(count: 12)
        var sequence: UInt16 = 10
        var packets: [RTPPacket] = []
        for (index, frame) in frames.enumerated() {
            packets += packetizeVP8(frame.data, pictureID: UInt16(index), sequence: &sequence, timestamp: UInt32(index * 3000), maximumPayload: 200)
        }
        // Swap neighbours throughout (after the first packet, which anchors the stream), and deliver one twice.
        for index in stride(from: 1, to: packets.count - 1, by: 2) { packets.swapAt(index, index + 1) }
        packets.insert(packets[5], at: 9)
        let (out, harness) = assemble(packets)
        #expect(out.map(\.data) == frames.map(\.data))
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.duplicates == 1 && counters.lost == 0 && counters.reordered > 0)
    }

    @Test func aMissingPacketDropsFramesUntilTheNextKeyframe() throws {
        let frames = try vp8Frames(count: 25, keyframeInterval: 10)
        let keyIndices = frames.indices.filter { frames[$0].isKeyframe }
        #expect(keyIndices.count >= 2 && keyIndices[0] == 0)
        var sequence: UInt16 = 0
        var packets: [RTPPacket] = []
        var times: [MonotonicTime] = []
        for (index, frame) in frames.enumerated() {
            // Small packets, so every frame spans several and the loss is inside frame 3.
            var framePackets = packetizeVP8(frame.data, pictureID: UInt16(index), sequence: &sequence, timestamp: UInt32(index * 3000), maximumPayload: 20)
            if index == 3 {
                #expect(framePackets.count >= 3)
                framePackets.remove(at: framePackets.count / 2)  // lost on the way, and never retransmitted
            }
            packets += framePackets
            times += Array(repeating: .milliseconds(1_000 + Int64(index) * 100), count: framePackets.count)
        }
        let (out, harness) = assemble(packets, track: Fixtures.videoTrack(feedback: FeedbackSupport(pictureLossIndication: true)), at: times)
        let secondKey = keyIndices[1]
        // Frames 0-2 and everything from the next keyframe on; nothing that depends on the lost packet.
        #expect(out.map(\.data) == frames[0..<3].map(\.data) + frames[secondKey...].map(\.data))
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(harness.pictureLossIndications >= 1 && counters.lost == 1)
        #expect(counters.framesDropped.total == secondKey - 3, "\(counters) second keyframe \(secondKey)")
    }

    @Test func videoStartsAtTheFirstKeyframe() throws {
        let frames = try vp8Frames(count: 15, keyframeInterval: 10)
        var sequence: UInt16 = 0
        var packets: [RTPPacket] = []
        for (index, frame) in frames.enumerated() where index >= 2 {  // joined late
            packets += packetizeVP8(frame.data, pictureID: UInt16(index), sequence: &sequence, timestamp: UInt32(index * 3000))
        }
        let (_, harness) = assemble(packets)
        // Starting on a delta frame, the stream first waits a moment for earlier packets (a
        // keyframe reordered behind it), then takes what it holds.
        harness.advance(to: harness.now.adding(milliseconds: 60))
        let out = harness.frames.map(\.frame)
        let firstKeyframe = try #require(frames.indices.first { $0 >= 2 && frames[$0].isKeyframe })
        #expect(out.first?.isKeyframe == true)
        #expect(out.map(\.data) == frames[firstKeyframe...].map(\.data))
        #expect(harness.receiver.counters(sender: Fixtures.sender).framesDropped.waitingForKeyframe == firstKeyframe - 2)
    }
}


@Suite struct H264AssemblyTests {
    /// Splits Annex-B into NAL units (without start codes).
    func nalUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        var starts: [(Int, Int)] = []
        var index = 0
        while index + 3 <= bytes.count {
            if bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] == 1 {
                starts.append((index > 0 && bytes[index - 1] == 0 ? index - 1 : index, index + 3))
                index += 3
            } else { index += 1 }
        }
        return starts.enumerated().map { i, start in Array(bytes[start.1..<(i + 1 < starts.count ? starts[i + 1].0 : bytes.count)]) }
    }

    @Test func stapAndFUAFramesRoundTrip() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("in.h264").path
        let ffmpeg = try runProcess("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=176x144:rate=15", "-t", "1", "-c:v", "libx264",
            "-preset", "ultrafast", "-g", "8", "-bf", "0", "-x264-params", "aud=1", "-pix_fmt", "yuv420p", "-f", "h264", path,
        ])
        #expect(ffmpeg.status == 0, "\(ffmpeg.stderrText)")
        let units = nalUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        // Group into access units at each AUD (type 9), dropping the AUDs themselves.
        var accessUnits: [[[UInt8]]] = []
        for unit in units {
            if unit[0] & 0x1F == 9 { accessUnits.append([]) } else if !accessUnits.isEmpty { accessUnits[accessUnits.count - 1].append(unit) }
        }
        #expect(accessUnits.count == 15)

        var sequence: UInt16 = 1_000
        var packets: [RTPPacket] = []
        for (index, accessUnit) in accessUnits.enumerated() {
            var payloads: [[UInt8]] = []
            let small = accessUnit.filter { $0.count < 200 }
            if small.count > 1 {  // STAP-A for the parameter sets and other small units
                payloads.append([24] + small.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 })
            } else {
                payloads += small
            }
            for unit in accessUnit where unit.count >= 200 {  // FU-A in 300-byte pieces
                let header = unit[0]
                var offset = 1
                while offset < unit.count {
                    let end = min(unit.count, offset + 300)
                    let fu: UInt8 = (offset == 1 ? 0x80 : 0) | (end == unit.count ? 0x40 : 0) | (header & 0x1F)
                    payloads.append([header & 0xE0 | 28, fu] + unit[offset..<end])
                    offset = end
                }
            }
            for (i, payload) in payloads.enumerated() {
                var builder = RTPPacketBuilder(payloadType: 102, sequenceNumber: sequence, timestamp: UInt32(index * 6000), ssrc: 9)
                builder.marker = i == payloads.count - 1
                sequence &+= 1
                packets.append(try RTPPacket(parsing: builder.build(payload: payload)))
            }
        }
        let track = ReceiveTrack(mid: "0", kind: .video, sender: Fixtures.sender,
                                 codecs: [ReceiveCodec(payloadType: 102, name: "H264", clockRate: 90_000)], ssrcs: [9])
        let out = assemble(packets, track: track).frames
        #expect(out.count == 15)
        for (frame, accessUnit) in zip(out, accessUnits) {
            #expect(frame.data.prefix(4) == [0, 0, 0, 1])
            #expect(Set(nalUnits(frame.data).map { $0 }) == Set(accessUnit))
        }
        #expect(out[0].isKeyframe && out[0].width == 176 && out[0].height == 144)
        #expect(out.filter(\.isKeyframe).count == 2)
    }

    @Test func malformedPayloadsAreRejectedNotCrashing() {
        let depacketizer = H264Depacketizer()
        for payload: [UInt8] in [[], [24, 0], [24, 0, 9, 1], [28], [28, 0x40, 1], [0x1F], [30, 1, 2]] {
            #expect(throws: DepacketizeError.self) { try depacketizer.assemble([payload[...]], timestamp: 0) }
        }
        #expect(throws: DepacketizeError.self) { try VP8Depacketizer().assemble([[0x80][...]], timestamp: 0) }
        #expect(throws: DepacketizeError.self) { try VP8Depacketizer().assemble([[0x10, 0x00, 0, 0][...]], timestamp: 0) }
        #expect(H264SPS.pictureSize([0x67, 0x42]) == nil)
    }

    /// Issue 12's finding: a delta_scale of 2^31 − 1 overflowed the scaling-list arithmetic.
    @Test func aCraftedScalingListDeltaIsRejected() {
        var sps = BitWriter()
        sps.write(100, 8)  // profile_idc: High, which carries chroma format and scaling lists
        sps.write(0, 16)  // constraint flags, level
        sps.ue(0); sps.ue(1); sps.ue(0); sps.ue(0)  // sps id, 4:2:0, bit depths
        sps.write(0, 1); sps.write(1, 1); sps.write(1, 1)  // qpprime bypass, scaling matrix present, list 0 present
        sps.ue(4_294_967_293)  // delta_scale = +(2^31 − 1)
        sps.write(0, 64)
        #expect(H264SPS.pictureSize([0x67] + sps.bytes) == nil)
    }

    @Test func randomPayloadsNeverCrash() {
        var generator = SplitMix64(seed: 77)
        func next() -> UInt64 { generator.next() }
        for _ in 0..<20_000 {
            let payload = (0..<Int(next() % 40)).map { _ in UInt8(truncatingIfNeeded: next()) }
            _ = try? H264Depacketizer().assemble([payload[...]], timestamp: 0)
            _ = try? VP8Depacketizer().assemble([payload[...]], timestamp: 0)
            _ = H264SPS.pictureSize([0x67] + payload)
        }
    }
}

@Suite struct UnwrapperTests {
    @Test func sequenceNumbersWrap() {
        var unwrapper = SequenceUnwrapper(bits: 16)
        #expect([65_534, 65_535, 0, 1, 65_535, 2].map { unwrapper.unwrap($0) } == [65_534, 65_535, 65_536, 65_537, 65_535, 65_538])
        var timestamps = SequenceUnwrapper(bits: 32)
        #expect(timestamps.unwrap(UInt32.max) == Int64(UInt32.max))
        #expect(timestamps.unwrap(10) == Int64(UInt32.max) + 11)
    }
}
