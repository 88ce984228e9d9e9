import DTLS
import Foundation
import Media
import RTP
import SDP
import SRTP
import Testing
import WireCoding
@testable import LoadGen

/// The load generator's sans-IO parts, checked against recbot's own receive side (its VP8
/// depacketizer, SDP parser and answer builder) — end to end it is checked in
/// LoadGenScenarioTests with the real `recbot join`.
@Suite struct LoadGenTests {
    static func syntheticClip(frames: Int = 60) -> MediaClip {
        var random = SplitMix64(seed: 3)
        var video: [MediaClip.Frame] = []
        for index in 0..<frames {
            let isKeyframe = index % 30 == 0
            let size = isKeyframe ? 5_000 : 700
            var data = [UInt8](repeating: 0, count: size)
            for offset in data.indices { data[offset] = UInt8(truncatingIfNeeded: random.next()) }
            video.append(MediaClip.Frame(timeNanoseconds: Int64(index) * 33_333_333, durationNanoseconds: 33_333_333, isKeyframe: isKeyframe, data: data))
        }
        let audio = (0..<(frames * 5 / 3)).map { index in
            MediaClip.Frame(timeNanoseconds: Int64(index) * 20_000_000, durationNanoseconds: 20_000_000, isKeyframe: true, data: [0xFC, 1, 2, 3])
        }
        return MediaClip(video: video, audio: audio, width: 640, height: 360, audioChannels: 1)
    }

    @Test(arguments: [1, 1_168, 1_169, 5_000, 40_000])
    func vp8PacketsReassembleToTheFrameInRecbotsDepacketizer(size: Int) throws {
        var frame = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        frame[0] = 0x31  // an interframe (P bit set): the depacketizer checks a keyframe's start code
        let payloads = Packetizers.vp8(frame, pictureID: 0x1234)
        #expect(payloads.allSatisfy { 12 + $0.count + 16 <= 1_200 })
        let depacketizer = VP8Depacketizer()
        #expect(depacketizer.isFrameStart(payloads[0][...]) && payloads.dropFirst().allSatisfy { !depacketizer.isFrameStart($0[...]) })
        let assembled = try depacketizer.assemble(payloads.map { $0[...] }, timestamp: 9)
        #expect(assembled.data == frame)
    }

    @Test func theOfferParsesAndRecbotAnswersEveryPublisher() throws {
        let transport = OfferTransport(iceUfrag: "abcd", icePwd: "0123456789abcdefghijklmn",
                                       fingerprint: try #require(try DTLSCertificate().fingerprint()).sdp, candidateAddress: "127.0.0.1", candidatePort: 4000)
        var sections: [OfferBuilder.Section] = []
        for index in 0..<300 {
            let ssrcs = SyntheticPublisher.SSRCs(audio: UInt32(3 * index + 1), video: UInt32(3 * index + 2), rtx: UInt32(3 * index + 3))
            sections.append(.init(mid: 2 * index, kind: .audio, connectionID: "PUB\(index)", ssrcs: ssrcs, active: index != 7))
            sections.append(.init(mid: 2 * index + 1, kind: .video, connectionID: "PUB\(index)", ssrcs: ssrcs, active: index != 7))
        }
        let offer = try SessionDescription(parsing: OfferBuilder.offer(sessionVersion: 2, transport: transport, sections: sections))
        #expect(offer.media.count == 600 && offer.isICELite && offer.bundleGroups.first?.count == 600)
        let video = offer.media[3]
        #expect(video.msid?.stream == "PUB1" && video.ssrcGroups.first?.ssrcs == [5, 6] && video.rtpMaps.map(\.encoding) == ["VP8", "rtx"])
        #expect(offer.media[14].direction == .inactive && offer.media[14].msid == nil, "a publisher that left keeps its mid, inactive")
    }

    @Test func aPublisherRunsOnAcrossLoopsAndAnswersPLIAndNACK() throws {
        let clip = Self.syntheticClip()
        let start = MonotonicTime.milliseconds(1_000)
        let publisher = SyntheticPublisher(connectionID: "PUB", ssrcs: .init(audio: 1, video: 2, rtx: 3), clip: clip, startedAt: start, wallClockNTP: 1 << 40)
        var rtp: [[UInt8]] = [], rtcp: [[UInt8]] = []
        publisher.due(now: start.adding(milliseconds: 4_990), rtp: &rtp, rtcp: &rtcp)  // 2.5 loops of the 2 s clip
        let video = try rtp.map { try RTPPacket(parsing: $0) }.filter { $0.ssrc == 2 }
        #expect(publisher.counts.videoFrames == 150 && publisher.counts.keyframes == 5)
        for (earlier, later) in zip(video, video.dropFirst()) {
            #expect(later.sequenceNumber == earlier.sequenceNumber &+ 1, "sequence numbers run on across loops")
            let step = later.timestamp &- earlier.timestamp
            #expect(step == 0 || step == 2_999 || step == 3_000, "90 kHz timestamps advance by one frame: \(step)")
        }
        #expect(rtcp.count == 5, "a sender report a second")

        publisher.requestKeyframe()
        rtp.removeAll()
        publisher.due(now: start.adding(milliseconds: 5_040), rtp: &rtp, rtcp: &rtcp)
        let next = try #require(rtp.compactMap { try? RTPPacket(parsing: $0) }.first { $0.ssrc == 2 })
        #expect(Array(next.payload.dropFirst(4).prefix(32)) == Array(clip.video[0].data.prefix(32)), "the next frame is the clip's first keyframe")

        let lost = video[10]
        rtp.removeAll()
        publisher.retransmit([lost.sequenceNumber], now: start.adding(milliseconds: 5_040), into: &rtp)
        let rtx = try RTPPacket(parsing: try #require(rtp.first))
        #expect(rtx.ssrc == 3 && rtx.payloadType == SyntheticPublisher.rtxPayloadType && rtx.timestamp == lost.timestamp)
        #expect(Array(rtx.payload) == [UInt8(lost.sequenceNumber >> 8), UInt8(lost.sequenceNumber & 0xFF)] + Array(lost.payload), "RFC 4588: OSN, then the payload")
    }

    @Test func seededLossDropsTheSamePacketsEveryRun() {
        func dropped() -> [Int] {
            let publisher = SyntheticPublisher(connectionID: "PUB", ssrcs: .init(audio: 1, video: 2, rtx: 3), clip: Self.syntheticClip(),
                                               startedAt: .milliseconds(0), wallClockNTP: 0, faults: PacketFaults(lossPercent: 10), seed: 42)
            var rtp: [[UInt8]] = [], rtcp: [[UInt8]] = []
            publisher.due(now: .milliseconds(3_000), rtp: &rtp, rtcp: &rtcp)
            return [publisher.counts.packetsDropped, rtp.count]
        }
        let first = dropped()
        #expect(first == dropped() && first[0] > 0 && first[0] < first[0] + first[1])
    }

    private static func sequences(_ packets: [[UInt8]], ssrc: UInt32) throws -> [UInt16] {
        try packets.map { try RTPPacket(parsing: $0) }.filter { $0.ssrc == ssrc }.map(\.sequenceNumber)
    }

    @Test func reorderingSwapsNeighboursAndDuplicationRepeatsWithoutLosingAPacket() throws {
        let publisher = SyntheticPublisher(connectionID: "PUB", ssrcs: .init(audio: 1, video: 2, rtx: 3), clip: Self.syntheticClip(),
                                           startedAt: .milliseconds(0), wallClockNTP: 0,
                                           faults: PacketFaults(reorderPercent: 10, duplicatePercent: 10), seed: 9)
        var rtp: [[UInt8]] = [], rtcp: [[UInt8]] = []
        publisher.due(now: .milliseconds(3_000), rtp: &rtp, rtcp: &rtcp)
        let video = try Self.sequences(rtp, ssrc: 2)
        #expect(publisher.counts.packetsReordered > 0 && publisher.counts.packetsDuplicated > 0)
        #expect(video.count - Set(video).count > 0, "duplicates on the wire")
        #expect(zip(video, video.dropFirst()).contains { $0 &+ 1 != $1 && $0 != $1 }, "out of order on the wire")
        // Everything sent went out at least once (a packet held back may still be waiting for its successor).
        let sent = Set(video), expectedCount = publisher.counts.packets - publisher.counts.audioFrames
        #expect(sent.count >= expectedCount - 1 && sent.count <= expectedCount)
    }

    /// A harsh path: 20 % loss in bursts of about 5 packets, and every packet delayed by up to
    /// 60 ms (so they reorder); packets the jitter holds leave once their time comes.
    @Test func burstyLossAndJitterReorderAndDropInRuns() throws {
        let publisher = SyntheticPublisher(connectionID: "PUB", ssrcs: .init(audio: 1, video: 2, rtx: 3), clip: Self.syntheticClip(),
                                           startedAt: .milliseconds(0), wallClockNTP: 0,
                                           faults: PacketFaults(burstLossPercent: 20, burstLength: 5, jitterNanoseconds: 60_000_000), seed: 5)
        var rtp: [[UInt8]] = [], rtcp: [[UInt8]] = []
        var time: Int64 = 0
        while time <= 60_000 {  // a minute, in 2 ms ticks as the generator paces
            publisher.due(now: .milliseconds(time), rtp: &rtp, rtcp: &rtcp)
            time += 2
        }
        publisher.due(now: .milliseconds(time + 100), rtp: &rtp, rtcp: &rtcp)  // the last held packets leave
        let share = Double(publisher.counts.packetsDropped) / Double(publisher.counts.packets)
        #expect(share > 0.15 && share < 0.25, "\(share)")
        // All that was not dropped went out, but for what the last due time's new frames wait for.
        let delivered = publisher.counts.packets - publisher.counts.packetsDropped
        #expect(rtp.count <= delivered && rtp.count >= delivered - 10, "\(rtp.count) of \(delivered)")
        let audio = try Self.sequences(rtp, ssrc: 1)
        #expect(zip(audio, audio.dropFirst()).contains { $1 &- $0 > 0x8000 }, "reordered on the wire")
        // Lost runs: the audio's missing sequence numbers come in bursts, not one by one.
        let offsets = audio.map { Int($0 &- audio[0]) }.filter { $0 < 0x8000 }  // from the first, across the wrap
        let missing = Set(0...offsets.max()!).subtracting(offsets).sorted()
        let runs = zip(missing, missing.dropFirst()).filter { $1 != $0 + 1 }.count + 1
        #expect(Double(missing.count) / Double(runs) > 2, "\(missing.count) lost in \(runs) runs")
        #expect(publisher.nextDeadline != nil)
    }

    @Test func aBurstSendsTenTimesTheMediaThenWaitsForTheWallClock() throws {
        let clip = Self.syntheticClip()
        let publisher = SyntheticPublisher(connectionID: "PUB", ssrcs: .init(audio: 1, video: 2, rtx: 3), clip: clip, startedAt: .milliseconds(0), wallClockNTP: 0)
        var rtp: [[UInt8]] = [], rtcp: [[UInt8]] = []
        publisher.due(now: .milliseconds(1_000), rtp: &rtp, rtcp: &rtcp)
        let beforeBurst = publisher.counts.videoFrames
        publisher.startBurst(now: .milliseconds(1_000), seconds: 0.2)
        // The next frame is due at once, at a tenth of its schedule distance.
        #expect(try #require(publisher.nextDeadline).nanoseconds <= 1_010_000_000)
        publisher.due(now: .milliseconds(1_200), rtp: &rtp, rtcp: &rtcp)
        let inBurst = publisher.counts.videoFrames - beforeBurst
        #expect((58...62).contains(inBurst), "2 s of 30 fps video in 200 ms, got \(inBurst) frames")
        // Silent until the wall clock reaches the schedule (3 s), then at the normal rate again.
        #expect(try #require(publisher.nextDeadline).nanoseconds >= 2_990_000_000)
        publisher.due(now: .milliseconds(2_900), rtp: &rtp, rtcp: &rtcp)
        #expect(publisher.counts.videoFrames - beforeBurst == inBurst)
        publisher.due(now: .milliseconds(4_000), rtp: &rtp, rtcp: &rtcp)
        #expect((88...92).contains(publisher.counts.videoFrames - beforeBurst))
        // Timestamps stay those of the schedule: 90 kHz, one frame apart.
        let timestamps = try rtp.map { try RTPPacket(parsing: $0) }.filter { $0.ssrc == 2 && $0.marker }.map(\.timestamp)
        #expect(zip(timestamps, timestamps.dropFirst()).allSatisfy { $1 &- $0 == 2_999 || $1 &- $0 == 3_000 })
        #expect(publisher.counts.bursts == 1)
    }

    @Test func theFloorLinkDecryptsInPlaceWithTheSameKeys() throws {
        let sender = try SRTPSession(peerOf: FloorKeys.material), receiver = try SRTPSession(keys: FloorKeys.material)
        let plain = RTPPacketBuilder(payloadType: 96, sequenceNumber: 7, timestamp: 9, ssrc: 0xABCD).build(payload: [1, 2, 3, 4, 5])
        var buffer = [UInt8](repeating: 0, count: 2_048)
        let sealed = try sender.protectRTP(plain)
        let length = try buffer.withUnsafeMutableBytes { raw in
            sealed.withUnsafeBytes { raw.copyMemory(from: $0) }
            return try receiver.unprotectRTP(in: raw, count: sealed.count)
        }
        #expect(Array(buffer[..<length]) == plain)
        // A replay of the same packet is refused, as recbot's own path refuses it.
        #expect(throws: SRTPError.replayed) {
            _ = try buffer.withUnsafeMutableBytes { raw in
                sealed.withUnsafeBytes { raw.copyMemory(from: $0) }
                return try receiver.unprotectRTP(in: raw, count: sealed.count)
            }
        }
    }
}
