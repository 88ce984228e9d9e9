import RTP
import Testing
import WireCoding
@testable import Media

/// A path that reorders (issue 42, harsh networks at scale): 30 ms of jitter made recbot NACK
/// five times the packets that were lost, take a keyframe's start for the past, and ask for
/// keyframes when a retransmission was only late.
@Suite struct ReorderingTests {
    @Test(arguments: [UInt64(3), 8])
    func thirtyMillisecondsOfJitterAndFivePercentLossKeepEveryFrameWithFewSpuriousNACKs(seed: UInt64) throws {
        var network = LossyNetwork(loss: 0.05, jitter: 30_000_000, random: SeededRandom(seed: seed))
        let receiver = Fixtures.receiver([Fixtures.videoTrack()])
        let result = try network.run(seconds: 20, receiver: receiver, publisher: try SimulatedPublisher())
        let counters = receiver.counters(sender: Fixtures.sender)
        let share = Double(result.frames.count) / Double(result.framesSent)
        #expect(share >= 0.995, "\(result.frames.count) of \(result.framesSent) frames; \(counters)")
        #expect(counters.keyframeRequests <= 2, "\(counters)")
        // A NACK for a packet that was only late brings a duplicate: with the first NACK waiting
        // out the path's reordering, they are about as many as the packets actually recovered
        // (before: five times as many).
        let (duplicates, recovered, nacked) = (counters.duplicates, counters.recovered, counters.nackedSequenceNumbers)

        #expect(recovered > 0 && duplicates < 2 * recovered, "duplicates \(duplicates), recovered \(recovered), NACKed \(nacked)")
        try expectDecodable(result.frames)
        let timestamps = result.frames.map(\.frame.rtpTimestamp)
        #expect(timestamps == timestamps.sorted() && Set(timestamps).count == timestamps.count)
    }

    /// The first packet received is the keyframe's third: the two before it come 20 ms later.
    /// They move the stream's start back, and the keyframe is recorded without asking for another.
    @Test func aKeyframeWhoseFirstPacketsComeLateIsStillTheStart() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let keyframe = try publisher.nextFrame()
        #expect(keyframe.isKeyframe && keyframe.packets.count >= 4)
        let packets = try keyframe.packets.map { try RTPPacket(parsing: $0) }
        harness.receive(packets[2], at: .milliseconds(1_000))
        harness.receive(packets[0], at: .milliseconds(1_020))
        harness.receive(packets[1], at: .milliseconds(1_021))
        for packet in packets.dropFirst(3) { harness.receive(packet, at: .milliseconds(1_022)) }
        #expect(harness.frames.isEmpty, "nothing goes out while the start may still move back")
        harness.advance(to: .milliseconds(1_060))
        #expect(harness.frames.count == 1 && harness.frames.first?.frame.isKeyframe == true)
        for index in 1..<10 {
            for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_060 + Int64(index) * 33)) }
        }
        // The one packet between the late two and the first was NACKed while it was missing.
        #expect(harness.frames.count == 10 && harness.pictureLossIndications == 0 && harness.nacked.count <= 1)
        try expectDecodable(harness.frames)
    }

    /// A stream whose first packet begins a frame delivers at once, as before (no start wait).
    @Test func aStreamThatStartsOnAFrameDeliversAtOnce() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let packets = try publisher.nextFrame().packets
        var out: [ReceivedFrame] = []
        for bytes in packets { out += harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000)) }
        #expect(out.count == 1)
    }

    /// Only a packet that starts a keyframe lets a stream start at once (VP8: the frame tag's
    /// low bit; a stream starting on anything else waits for earlier packets).
    @Test func vp8PacketsSayWhetherTheyStartAKeyframe() throws {
        let frames = try vp8Frames(count: 3, keyframeInterval: 10)
        var sequence: UInt16 = 0
        let depacketizer = VP8Depacketizer()
        let key = packetizeVP8(frames[0].data, pictureID: 0, sequence: &sequence, timestamp: 0, maximumPayload: 60)
        let delta = packetizeVP8(frames[1].data, pictureID: 1, sequence: &sequence, timestamp: 3_000, maximumPayload: 300)
        #expect(frames[0].isKeyframe && !frames[1].isKeyframe && key.count > 1)
        #expect(depacketizer.isKeyframeStart(key[0].payload))
        #expect(!depacketizer.isKeyframeStart(key[1].payload) && depacketizer.isFrameStart(delta[0].payload))
        #expect(!depacketizer.isKeyframeStart(delta[0].payload))
        #expect(!depacketizer.isKeyframeStart([0x10]) && !depacketizer.isKeyframeStart([]), "truncated: no")
    }

    /// The wait follows the latest lateness seen, decays when the path stops reordering, and
    /// never exceeds its bound.
    @Test func theReorderWaitFollowsThePathAndDecays() {
        var wait = ReorderWait(maximumNanoseconds: 100_000_000)
        #expect(wait.wait(now: .milliseconds(0)) == 0)
        wait.reordered(lateness: 24_000_000, now: .milliseconds(1_000))
        #expect(wait.wait(now: .milliseconds(1_000)) == 27_000_000)  // a little past what was seen
        wait.reordered(lateness: 8_000_000, now: .milliseconds(1_500))
        #expect(wait.wait(now: .milliseconds(1_500)) == 17_000_000, "a shorter lateness does not lower it (beyond the decay)")
        #expect(wait.wait(now: .milliseconds(2_350)) == 0, "back to NACK at once on a path that stopped reordering")
        wait.reordered(lateness: 900_000_000, now: .milliseconds(3_000))
        #expect(wait.wait(now: .milliseconds(3_000)) == 100_000_000)
    }
}
