import CodecBindings
import RTP
import Testing
import WireCoding
@testable import Media

/// Every frame the receiver emits must decode, in order, from the first keyframe on.
func expectDecodable(_ frames: [ReceivedFrame], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let decoder = try VPXDecoder(codec: .vp8)
    #expect(frames.first?.frame.isKeyframe == true, sourceLocation: sourceLocation)
    var errors = 0
    for frame in frames where frame.kind == .video {
        do { _ = try decoder.decode(frame.frame.data) } catch { errors += 1 }
    }
    #expect(errors == 0, "\(errors) of \(frames.count) frames failed to decode", sourceLocation: sourceLocation)
}

@Suite struct LossRecoveryTests {
    @Test func wholeFramesAreReleasedAtOnce() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        for index in 0..<30 {
            let packets = try publisher.nextFrame().packets
            for (position, bytes) in packets.enumerated() {
                let out = harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index) * 33))
                // The frame comes out of the very call that completes it: no waiting when nothing is lost.
                #expect(out.count == (position == packets.count - 1 ? 1 : 0))
            }
        }
        #expect(harness.frames.count == 30 && harness.nacked.isEmpty && harness.pictureLossIndications == 0)
        try expectDecodable(harness.frames)
    }

    /// libwebrtc tags the last packet of each keyframe, and of every frame while turned, with
    /// its video orientation; a frame without the tag keeps the last one. Only a negotiated
    /// extension id is read.
    @Test func videoOrientationTagsReachTheFrames() throws {
        for negotiated in [true, false] {
            let publisher = try SimulatedPublisher()
            publisher.orientation = [0: 0x01, 1: 0x01, 20: 0x0A, 40: 0x00]  // 90°; 180° with the camera bit; upright
            var track = Fixtures.videoTrack()
            if negotiated { track.videoOrientationExtensionID = 4 }
            let harness = Harness(Fixtures.receiver([track]))
            for index in 0..<60 {
                for bytes in try publisher.nextFrame().packets {
                    harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index) * 33))
                }
            }
            let turns = harness.frames.map(\.frame.quarterTurns)
            let expected: [UInt8?] = negotiated ? Array(repeating: 1, count: 20) + Array(repeating: 2, count: 20) + Array(repeating: 0, count: 20)
                                                : Array(repeating: nil, count: 60)
            #expect(turns == expected, "negotiated: \(negotiated)")
        }
    }

    @Test(arguments: [(0.05, 0.995, UInt64(5)), (0.20, 0.985, UInt64(20))])
    func randomLossIsRecoveredByNACKAndRTX(loss: Double, minimumShare: Double, seed: UInt64) throws {
        var network = LossyNetwork(loss: loss, random: SeededRandom(seed: seed))
        let receiver = Fixtures.receiver([Fixtures.videoTrack()])
        let result = try network.run(seconds: 20, receiver: receiver, publisher: try SimulatedPublisher())
        let share = Double(result.frames.count) / Double(result.framesSent)
        let counters = receiver.counters(sender: Fixtures.sender)
        #expect(share >= minimumShare, "\(result.frames.count) of \(result.framesSent) frames at \(loss) loss; \(counters)")
        #expect(counters.recovered > 0 && counters.nackedSequenceNumbers >= counters.recovered)
        #expect(receiver.counters.feedback == FeedbackBudgetCounters(), "one lossy stream is never held back by the session's budget")
        // NACK does the work: keyframe requests stay rare (≤ 1 per 10 s at 5 %).
        if loss <= 0.05 { #expect(counters.keyframeRequests <= 2, "\(counters)") }
        try expectDecodable(result.frames)
        // Frames leave in RTP order, each once.
        let timestamps = result.frames.map(\.frame.rtpTimestamp)
        #expect(timestamps == timestamps.sorted() && Set(timestamps).count == timestamps.count)
    }

    @Test func aBurstAndALostRetransmissionAreRetried() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var sent: [[UInt8]] = []
        for _ in 0..<20 { sent += try publisher.nextFrame().packets }
        let burst = 10..<24  // 14 packets lost in a row
        let clock: Int64 = 1_000  // everything arrives at once, so the retry timing is exact
        for (index, bytes) in sent.enumerated() where !burst.contains(index) {
            harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(clock))
        }
        #expect(harness.nacked.count == burst.count, "the whole gap is NACKed at once")
        // Every first retransmission is lost on the way; the retry's answers get through.
        #expect(publisher.answer(harness.feedback).count == burst.count)
        let before = harness.feedback.count
        harness.advance(to: .milliseconds(clock + 150))  // past the retry interval, before the next
        let retry = Array(harness.feedback[before...])
        #expect(harness.nacked.count == 2 * burst.count, "retried once each")
        for bytes in publisher.answer(retry) { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(clock + 160)) }
        #expect(harness.frames.count == 20)
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        // Nothing had been resent on this young stream when the retry went, so a keyframe was
        // asked for beside it (one, in case the sender keeps no copies); nothing is given up for it.
        #expect(counters.recovered == burst.count && counters.lost == 0 && counters.keyframeRequests == 1, "\(counters)")
        #expect(counters.gapsSkippedToKeyframe == 0)
        try expectDecodable(harness.frames)
    }

    /// Issue 39 item 8: with a short round trip measured (10 ms), a retransmission that a busy
    /// sender or a reordering path delays by 600 ms is still taken within the 1 s recovery
    /// window; before, the packet was given up once ten NACKs 25 ms apart were spent, after a
    /// quarter of a second.
    @Test func aRetransmissionThatComesLongAfterTheRetryIntervalIsStillTaken() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var sent: [[UInt8]] = []
        for _ in 0..<30 { sent += try publisher.nextFrame().packets }
        let third = sent.count / 3
        // A first gap, answered 10 ms after its NACK: the round trip measured is short.
        for (index, bytes) in sent[..<third].enumerated() where index != 3 { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000)) }
        for bytes in publisher.answer(harness.feedback) { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_010)) }
        // A second gap, answered only after 600 ms, while time passes in small steps.
        let before = harness.feedback.count
        for (offset, bytes) in sent[third...].enumerated() where offset != 2 { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_100)) }
        for step in 1...60 { harness.advance(to: .milliseconds(1_100 + Int64(step) * 10)) }
        #expect(harness.nacked.count - 2 == nackTimes(interval: 25_000_000, within: 600_000_000).count, "asked again, as the spacing allows")
        for bytes in publisher.answer(Array(harness.feedback[before...])).prefix(1) {
            harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_700))
        }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.lost == 0 && counters.recovered == 2, "\(counters)")
        #expect(harness.frames.count == 30)
        try expectDecodable(harness.frames)
    }

    /// Janus resends a NACKed packet once, then ignores NACKs for it for 200 ms. With a 1 ms
    /// round trip measured, ten NACKs 20 ms apart all fell in that window, so a lost
    /// retransmission was never asked for again; spaced out, one is asked for after the
    /// window, and is taken.
    @Test func aRetryReachesASenderThatIgnoresRepeatsFor200ms() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var sent: [[UInt8]] = []
        for _ in 0..<30 { sent += try publisher.nextFrame().packets }
        let half = sent.count / 2
        for (index, bytes) in sent[..<half].enumerated() where index != 3 { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000)) }
        for bytes in publisher.answer(harness.feedback) { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_001)) }
        var seen = harness.feedback.count
        for (offset, bytes) in sent[half...].enumerated() where offset != 2 { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_100)) }
        var resentAt: Int64?
        for now in stride(from: Int64(1_100), through: 2_000, by: 5) {
            harness.advance(to: .milliseconds(now))
            let asked = Array(harness.feedback[seen...])
            seen = harness.feedback.count
            guard !asked.isEmpty else { continue }
            if let resentAt, now - resentAt < 200 { continue }  // ignored, as Janus does
            let answers = publisher.answer(asked)
            if resentAt == nil { resentAt = now; continue }  // the first retransmission is lost
            for bytes in answers { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(now + 1)) }
            break
        }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.lost == 0 && counters.recovered == 2 && counters.keyframeRequests == 0, "\(counters)")
        #expect(harness.frames.count == 30)
    }

    /// Janus keeps no packet to resend until it knows the round trip (about the first second
    /// of a subscription): a loss then is never answered. The receiver asks for a keyframe
    /// after three unanswered NACKs, and once a whole keyframe is held behind the gap it goes
    /// on from there, instead of waiting out the 1 s recovery window and asking only then.
    @Test func aGapNobodyAnswersIsSkippedToTheKeyframeAskedForMeanwhile() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var seen = 0
        var emittedBy: [Int: Int] = [:]
        for index in 0..<30 {
            var packets = try publisher.nextFrame().packets
            if index == 5 { packets.removeFirst() }  // never resent
            for bytes in packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index) * 33)) }
            _ = publisher.answer(Array(harness.feedback[seen...]))  // PLIs are heeded; the resends never arrive
            seen = harness.feedback.count
            emittedBy[index] = harness.frames.count
        }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.gapsSkippedToKeyframe == 1 && counters.keyframeRequests == 1 && counters.recovered == 0, "\(counters)")
        // Going again within ~300 ms of the loss (frame 5 + 10), not after the 1 s window (frame 5 + 30).
        #expect((emittedBy[15] ?? 0) > 5, "\(emittedBy.sorted { $0.key < $1.key })")
        #expect(harness.frames.count >= 20)
        try expectDecodable(harness.frames)
    }

    /// Before a sender has resent anything on a stream, one unanswered retry is enough to ask
    /// for a keyframe: a loss in the first second of a Janus subscription (no copies kept yet)
    /// costs the frames until the next one, and that wait is what is shortened.
    @Test func aSenderThatHasNeverResentIsAskedForAKeyframeAfterOneUnansweredRetry() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var seen = 0
        var lossAt: MonotonicTime?
        for index in 0..<30 {
            var packets = try publisher.nextFrame().packets
            let time = MonotonicTime.milliseconds(1_000 + Int64(index) * 33)
            if index == 5 { packets.removeFirst(); lossAt = time }  // never resent
            for bytes in packets { harness.receive(try RTPPacket(parsing: bytes), at: time) }
            _ = publisher.answer(Array(harness.feedback[seen...]))  // PLIs are heeded; the resends never arrive
            seen = harness.feedback.count
        }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.keyframeRequests == 1 && counters.gapsSkippedToKeyframe == 1, "\(counters)")
        // The PLI goes with the second NACK, one default retry interval (100 ms) after the
        // first; this publisher hears it as it encodes the fifth frame after the loss, so five
        // are lost (waiting for the third NACK, as before, lost eight).
        #expect(harness.frames.count == 30 - 5, "lost since \(String(describing: lossAt))")
        try expectDecodable(harness.frames)
    }

    /// A lossy path that eats some answers is not a sender that does not answer: while other
    /// retransmissions keep arriving, a gap is NACKed for its whole window and no keyframe is asked for.
    @Test func whileOtherResendsArriveAGapIsNotSkipped() throws {
        let publisher = try SimulatedPublisher()
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        var sent: [[UInt8]] = []
        for _ in 0..<30 { sent += try publisher.nextFrame().packets }
        for (index, bytes) in sent.enumerated() where index != 3 && index != 40 {
            harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index)))
        }
        // 40's resend arrives at once; 3's only after 600 ms.
        let answers = publisher.answer(harness.feedback)
        try #require(answers.count == 2)
        harness.receive(try RTPPacket(parsing: answers[1]), at: .milliseconds(1_100))
        harness.advance(to: .milliseconds(1_700))
        harness.receive(try RTPPacket(parsing: answers[0]), at: .milliseconds(1_700))
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.gapsSkippedToKeyframe == 0 && counters.keyframeRequests == 0 && counters.recovered == 2, "\(counters)")
        #expect(harness.frames.count == 30)
    }

    @Test func retriesAfterTheFirstAreSpacedPastASendersRepeatFilter() {
        #expect((0...4).map { NackRegister.backoff(20_000_000, after: $0) / 1_000_000 } == [20, 20, 110, 110, 110])
        #expect(NackRegister.backoff(300_000_000, after: 3) == 300_000_000, "never shorter than the interval itself")
    }

    /// A stream's first SR is echoed (LSR/DLSR) within milliseconds, so an SFU learns its round
    /// trip, and starts keeping packets to resend, without waiting for the regular report.
    @Test func aStreamsFirstSenderReportIsEchoedAtOnce() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let publisher = try SimulatedPublisher()
        for _ in 0..<3 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000)) } }
        harness.advance(to: .milliseconds(1_010))
        let before = harness.receiverReports.count
        harness.receive(rtcp: [.senderReport(ssrc: publisher.ssrc, ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 0, packetCount: 3, octetCount: 300, reports: [])], at: .milliseconds(1_020))
        harness.advance(to: .milliseconds(1_030))
        let echo = try #require(harness.receiverReports.dropFirst(before).first { $0.ssrc == publisher.ssrc })
        #expect(echo.lastSenderReport == 0x0000_8000)
        // A later SR waits for the regular report.
        let after = harness.receiverReports.count
        harness.receive(rtcp: [.senderReport(ssrc: publisher.ssrc, ntpTimestamp: 0xE000_0001_8000_0000, rtpTimestamp: 90_000, packetCount: 3, octetCount: 300, reports: [])], at: .milliseconds(1_040))
        harness.advance(to: .milliseconds(1_050))
        #expect(harness.receiverReports.count == after)
    }

    @Test func rtxOnItsOwnSSRCIsMappedByAptAndMIDWithoutAFIDGroup() throws {
        let publisher = try SimulatedPublisher(ssrc: 77, rtxSSRC: 78)
        publisher.midExtension = "0"
        // The offer names no SSRCs at all (as with simulcast or unsignalled streams).
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(ssrcs: [], rtxSSRCs: [:])]))
        var sent: [[UInt8]] = []
        for _ in 0..<10 { sent += try publisher.nextFrame().packets }
        for (index, bytes) in sent.enumerated() where index != 5 { harness.receive(try RTPPacket(parsing: bytes)) }
        for bytes in publisher.answer(harness.feedback) { harness.receive(try RTPPacket(parsing: bytes)) }
        #expect(harness.frames.count == 10)
        #expect(harness.receiver.counters(sender: Fixtures.sender).recovered == 1)
    }

    @Test func withoutNACKAGapIsGivenUpAfterTheReorderWaitAndAnIntactKeyframeAfterItIsKept() throws {
        let publisher = try SimulatedPublisher(keyframeInterval: 10)
        let track = Fixtures.videoTrack(rtx: nil, feedback: FeedbackSupport(pictureLossIndication: true), rtxSSRCs: [:])
        let harness = Harness(Fixtures.receiver([track]))
        var frames: [(packets: [[UInt8]], isKeyframe: Bool)] = []
        for _ in 0..<25 { frames.append(try publisher.nextFrame()) }
        let nextKey = try #require(frames.indices.first { $0 > 3 && frames[$0].isKeyframe })
        var clock: Int64 = 1_000
        for (index, frame) in frames.enumerated() {
            // Frame 3's last packet and the whole frame before the next keyframe are lost.
            var packets = frame.packets
            if index == 3 { packets.removeLast() }
            if index == nextKey - 1 { packets = [] }
            for bytes in packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(clock)) }
            clock += 33
        }
        harness.advance(to: .milliseconds(clock + 500))
        #expect(harness.nacked.isEmpty, "NACK was not negotiated")
        #expect(harness.pictureLossIndications >= 1)
        let emitted = harness.frames.map(\.frame.rtpTimestamp)
        let kept: [Int] = Array(0..<3) + Array(nextKey..<25)
        let expected: [UInt32] = kept.map { index in UInt32(1_000 + index * 3_000) }
        #expect(emitted == expected, "the intact keyframe right after a lost frame is kept")
        try expectDecodable(harness.frames)
    }

    @Test func aGiantGapIsAJumpNotAThousandNACKs() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let publisher = try SimulatedPublisher(keyframeInterval: 5)
        for _ in 0..<5 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) } }
        // The sender's numbering leaps 5000 ahead.
        for _ in 0..<5_000 { _ = publisher.answer([]) }
        var shifted: [[UInt8]] = []
        for _ in 0..<10 {
            for bytes in try publisher.nextFrame().packets {
                var copy = bytes
                let sequence = (UInt16(copy[2]) << 8 | UInt16(copy[3])) &+ 5_000
                copy[2] = UInt8(sequence >> 8); copy[3] = UInt8(sequence & 0xFF)
                shifted.append(copy)
            }
        }
        for bytes in shifted { harness.receive(try RTPPacket(parsing: bytes)) }
        harness.advance(to: harness.now.adding(milliseconds: 2_000))
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(harness.nacked.isEmpty && counters.sequenceJumps == 1 && counters.lost == 0)
        #expect(harness.frames.count >= 10, "recording goes on from the next keyframe")
    }

    /// Far behind the stream: a restart. The second case crosses the 16-bit wrap, where the
    /// restarted number differs from the old extended one.
    @Test(arguments: [(UInt16(40_000), UInt16(20_000)), (UInt16(10_000), UInt16(50_000))])
    func aSenderThatRestartsItsNumberingIsFollowed(from: UInt16, to: UInt16) throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let first = try SimulatedPublisher(firstSequence: from, keyframeInterval: 5)
        for _ in 0..<10 { for bytes in try first.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) } }
        let before = harness.frames.count
        let second = try SimulatedPublisher(firstSequence: to, keyframeInterval: 5)
        for _ in 0..<15 { for bytes in try second.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) } }
        #expect(harness.frames.count > before + 5)
        #expect(harness.receiver.counters(sender: Fixtures.sender).sequenceJumps == 1)
    }

    @Test func paddingOnlyPacketsOnTheMediaSSRCTakeANumberAndNothingElse() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let publisher = try SimulatedPublisher()
        for index in 0..<20 {
            for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) }
            guard index % 3 == 0 else { continue }
            // A bandwidth probe without RTX: same SSRC, next sequence number, only padding.
            var copy = RTPPacketBuilder(payloadType: 96, sequenceNumber: publisher.sequence, timestamp: 99, ssrc: 1).build(payload: [0, 0, 0, 4])
            copy[0] |= 0x20  // P bit: the 4 bytes are all padding
            harness.receive(try RTPPacket(parsing: copy))
            _ = try publisher.skipSequenceNumber()
        }
        #expect(harness.frames.count == 20)
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.framesDropped.total == 0 && harness.pictureLossIndications == 0 && harness.nacked.isEmpty, "\(counters)")
    }

    @Test func aGoodbyeReleasesWhatTheStreamHolds() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.audioTrack()]))
        for index in 0..<10 where index != 5 {
            let bytes = RTPPacketBuilder(payloadType: 111, sequenceNumber: UInt16(index), timestamp: UInt32(index * 960), ssrc: 3).build(payload: [0xFC, 1])
            harness.receive(try RTPPacket(parsing: bytes))
        }
        #expect(harness.frames.count == 5, "6…9 wait behind the gap")
        harness.receive(rtcp: [.goodbye(ssrcs: [3])])
        #expect(harness.frames.count == 9 && harness.receiver.activeStreamCount == 0)
        #expect(harness.receiver.counters(sender: Fixtures.sender).lost == 1)
    }

    @Test func anAnnouncedSSRCStillRoutesAfterAGoodbye() throws {
        // Two video sections share payload type 96 and there is no MID extension: only the
        // offer's SSRCs tell the streams apart, and a BYE must not make the router forget them.
        var first = Fixtures.videoTrack(ssrcs: [1], rtxSSRCs: [:], mid: "0")
        var second = Fixtures.videoTrack(ssrcs: [11], rtxSSRCs: [:], mid: "1")
        first.midExtensionID = nil
        second.midExtensionID = nil
        let harness = Harness(Fixtures.receiver([first, second]))
        let publisher = try SimulatedPublisher(rtxSSRC: nil)
        var sent = 0
        for _ in 0..<3 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)); sent += 1 } }
        harness.receive(rtcp: [.goodbye(ssrcs: [1])])
        for _ in 0..<3 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)); sent += 1 } }
        harness.advance(to: harness.now.adding(milliseconds: 60))  // past the new stream's start window
        // Every packet reached a stream (the one after the BYE waits for a keyframe and asks for it).
        #expect(harness.receiver.counters.unknownStream == 0 && harness.receiver.counters(sender: Fixtures.sender).packets == sent)
        #expect(harness.pictureLossIndications == 1)
    }

    @Test func aSmallGapWithAFullRegisterGivesUpTheOldestInsteadOfJumping() throws {
        let policy = RecoveryPolicy(maximumMissingPackets: 20)
        let harness = Harness(Fixtures.receiver([Fixtures.audioTrack()], recovery: policy))
        func send(_ sequence: Int) throws {
            let bytes = RTPPacketBuilder(payloadType: 111, sequenceNumber: UInt16(sequence), timestamp: UInt32(sequence * 960), ssrc: 3).build(payload: [0xFC, 1])
            harness.receive(try RTPPacket(parsing: bytes))
        }
        try send(0)
        try send(16)   // 15 missing
        try send(27)   // 10 more: the register holds 20, so the 5 oldest are given up
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.sequenceJumps == 0 && counters.lost == 5, "\(counters)")
        #expect(harness.receiver.counters(sender: Fixtures.sender).packets == 3)
    }

    @Test func aNewSSRCOnTheSameSectionIsFollowedAndTheOldOneForgotten() throws {
        // The offer names no SSRCs: both are learned from the MID extension.
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(ssrcs: [], rtxSSRCs: [:])]))
        let first = try SimulatedPublisher(ssrc: 500, rtxSSRC: nil)
        first.midExtension = "0"
        for index in 0..<30 {
            for bytes in try first.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index) * 33)) }
        }
        let second = try SimulatedPublisher(ssrc: 600, rtxSSRC: nil, firstSequence: 7)  // e.g. the sender restarted its encoder
        second.midExtension = "0"
        for index in 30..<60 {
            for bytes in try second.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes), at: .milliseconds(1_000 + Int64(index) * 33)) }
        }
        #expect(harness.frames.filter { $0.ssrc == 500 }.count == 30 && harness.frames.filter { $0.ssrc == 600 }.count == 30)
        // Expiry is checked with each receiver report (0.5–1.5 s apart): 5 s of silence plus one interval.
        harness.advance(to: .milliseconds(1_000 + 59 * 33 + 7_000))
        #expect(harness.receiver.counters.streamsExpired == 2 && harness.receiver.activeStreamCount == 0, "\(harness.receiver.counters)")
        #expect(harness.receiver.counters(sender: Fixtures.sender).packets > 60, "counters outlive their streams")
    }

    @Test func aStreamThatGoesSilentIsForgottenAndNotAskedForKeyframesForever() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let publisher = try SimulatedPublisher()
        var packets: [[UInt8]] = []
        for _ in 0..<3 { packets += try publisher.nextFrame().packets }
        for bytes in packets.dropFirst(2) { harness.receive(try RTPPacket(parsing: bytes)) }  // never a keyframe start
        harness.advance(to: harness.now.adding(milliseconds: 30_000))
        #expect(harness.receiver.activeStreamCount == 0 && harness.receiver.counters.streamsExpired == 1)
        let requests = harness.pictureLossIndications
        harness.advance(to: harness.now.adding(milliseconds: 30_000))
        #expect(harness.pictureLossIndications == requests && requests <= 12)
    }

    @Test func nacksAreBatchedIntoOnePacketAndFIRIsUsedWhenOnlyItIsOffered() throws {
        let track = Fixtures.videoTrack(feedback: FeedbackSupport(nack: true, fullIntraRequest: true))
        let harness = Harness(Fixtures.receiver([track], recovery: RecoveryPolicy(maximumRecoveryDelayNanoseconds: 300_000_000)))
        let publisher = try SimulatedPublisher()
        var packets: [[UInt8]] = []
        while packets.count < 50 { packets += try publisher.nextFrame().packets }
        harness.receive(try RTPPacket(parsing: packets[0]))
        harness.receive(try RTPPacket(parsing: packets[45]))
        let nackPackets = harness.feedback.filter { packet in
            guard case .nack = packet else { return false }
            return true
        }
        #expect(nackPackets.count == 1 && harness.nacked.count == 44)
        #expect(harness.datagrams.count == 1 && harness.datagrams[0].count < 1_200)
        harness.advance(to: harness.now.adding(milliseconds: 1_000))
        #expect(harness.fullIntraRequests >= 1 && harness.pictureLossIndications == 0)
    }

    /// Feedback (a NACK here, a PLI below) starts with an RR holding its stream's report block,
    /// with reduced-size RTCP too: a recvonly receiver's SSRC is in no SDP, and an SFU (Janus)
    /// tells which stream a PLI is for only from the report block before it.
    @Test func feedbackStartsWithItsStreamsReportBlockWithOrWithoutReducedSize() throws {
        for reduced in [false, true] {
            let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()], reducedSize: reduced))
            let publisher = try SimulatedPublisher()
            var packets: [[UInt8]] = []
            for _ in 0..<3 { packets += try publisher.nextFrame().packets }
            harness.receive(try RTPPacket(parsing: packets[0]))
            harness.receive(try RTPPacket(parsing: packets[3]))
            for datagram in harness.datagrams {
                let compound = try RTCPPacket.parseCompound(datagram)
                guard case .receiverReport(_, let blocks) = compound[0], blocks.first?.ssrc == publisher.ssrc else {
                    Issue.record("reduced \(reduced): \(compound)"); continue
                }
                #expect(compound.contains { if case .nack = $0 { true } else { false } })
            }
            // A keyframe request (here one a split part asks for) is led by the block too,
            // once the stream has been silent since its last report.
            harness.advance(to: harness.now.adding(milliseconds: 3_000))
            let before = harness.datagrams.count
            let asked = harness.receiver.requestKeyframe(ssrc: publisher.ssrc, now: harness.now)
            let withPLI = try asked.rtcp.map { try RTCPPacket.parseCompound($0) }
                .filter { $0.contains { if case .pictureLossIndication = $0 { true } else { false } } }
            #expect(withPLI.count == 1 && harness.datagrams.count == before)
            for compound in withPLI {
                guard case .receiverReport(_, let blocks) = compound[0], blocks.first?.ssrc == publisher.ssrc else {
                    Issue.record("reduced \(reduced): \(compound)"); continue
                }
            }
        }
    }
}

@Suite struct ReportAndSyncTests {
    @Test func receiverReportsCarryTheRFC3550Statistics() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.audioTrack(feedback: FeedbackSupport())]))
        var builder = RTPPacketBuilder(payloadType: 111, sequenceNumber: 100, timestamp: 0, ssrc: 3)
        var clock: Int64 = 1_000
        for index in 0..<100 {
            builder.sequenceNumber = UInt16(100 + index)
            builder.timestamp = UInt32(index * 960)
            // Every 10th packet is lost; arrival jitters by ±2 ms.
            if index % 10 != 5 { harness.receive(try RTPPacket(parsing: builder.build(payload: [0xFC, 1, 2])), at: .milliseconds(clock + (index % 2 == 0 ? 2 : 0))) }
            clock += 20
        }
        harness.receive(rtcp: [.senderReport(ssrc: 3, ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 96_000, packetCount: 100, octetCount: 300, reports: [])])
        harness.advance(to: .milliseconds(clock + 2_000))
        let block = try #require(harness.receiverReports.last { $0.ssrc == 3 })
        #expect(block.cumulativeLost == 10)
        #expect(block.highestSequence == 199)
        // 2 ms of alternating transit is 96 ticks at 48 kHz; the estimate converges near it.
        #expect(block.jitter > 40 && block.jitter < 120, "\(block.jitter)")
        #expect(block.lastSenderReport == 0x0000_8000)  // middle 32 bits of the SR's NTP time
        #expect(block.delaySinceLastSenderReport > 0)
        let first = try #require(harness.receiverReports.first { $0.ssrc == 3 })
        #expect(first.fractionLost > 0 && first.fractionLost < 64, "about 10 % is 25/256")
        // Silent since: no more blocks for it (RFC 3550 §6.4), though it is not forgotten yet.
        let blocks = harness.receiverReports.count
        harness.advance(to: harness.now.adding(milliseconds: 2_500))
        #expect(harness.receiverReports.count == blocks && harness.receiver.activeStreamCount == 1)
    }

    /// Audio reaches us 300 ms after video, though both were captured together. With sender
    /// reports, the two must land within 20 ms of each other on the media clock, from the first
    /// frame on: the first frames wait for the SRs (a second here) instead of starting on
    /// arrival time and stepping later.
    @Test func senderReportsAlignAudioDelayedBy300ms() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(), Fixtures.audioTrack()], senderReportHold: 2_000_000_000))
        let videoRTPBase: UInt32 = 4_000_000_000  // wraps during the run
        let audioRTPBase: UInt32 = 123_456
        let captureStart: Int64 = 5_000_000_000   // sender NTP ns of capture 0 (seconds since 1900, small)
        func ntp(_ nanoseconds: Int64) -> UInt64 {
            UInt64(nanoseconds / 1_000_000_000) << 32 | UInt64((nanoseconds % 1_000_000_000) << 32 / 1_000_000_000)
        }
        let publisher = try SimulatedPublisher(keyframeInterval: 1_000)
        var events: [(at: Int64, video: Bool, bytes: [UInt8])] = []
        for frame in 0..<150 {  // 5 s of video
            let captured = Int64(frame) * 33_333_333
            for bytes in try publisher.nextFrame().packets {
                var copy = bytes
                let timestamp = videoRTPBase &+ UInt32(frame * 3_000)
                copy[4] = UInt8(timestamp >> 24); copy[5] = UInt8(timestamp >> 16 & 0xFF); copy[6] = UInt8(timestamp >> 8 & 0xFF); copy[7] = UInt8(timestamp & 0xFF)
                events.append((1_000_000_000 + captured + 10_000_000, true, copy))
            }
        }
        for index in 0..<250 {  // 5 s of audio, 300 ms late on the wire
            var builder = RTPPacketBuilder(payloadType: 111, sequenceNumber: UInt16(index), timestamp: audioRTPBase &+ UInt32(index * 960), ssrc: 3)
            builder.marker = false
            events.append((1_000_000_000 + Int64(index) * 20_000_000 + 10_000_000 + 300_000_000, false, builder.build(payload: [0xFC, 0xFF, 0xFE])))
        }
        events.sort { $0.at < $1.at }
        var reportsSent = Set<Int>()
        for event in events {
            // SRs every second for both streams, mapping capture NTP to RTP exactly.
            let second = Int((event.at - 1_000_000_000) / 1_000_000_000)
            if second >= 1, reportsSent.insert(second).inserted {
                let at = Int64(second) * 1_000_000_000
                harness.receive(rtcp: [.senderReport(ssrc: 1, ntpTimestamp: ntp(captureStart + at), rtpTimestamp: videoRTPBase &+ UInt32(at / 1_000_000 * 90),
                                                     packetCount: 0, octetCount: 0, reports: [])],
                                at: MonotonicTime(nanoseconds: event.at))
                harness.receive(rtcp: [.senderReport(ssrc: 3, ntpTimestamp: ntp(captureStart + at), rtpTimestamp: audioRTPBase &+ UInt32(at / 1_000_000 * 48),
                                                     packetCount: 0, octetCount: 0, reports: [])],
                                at: MonotonicTime(nanoseconds: event.at))
            }
            harness.receive(try RTPPacket(parsing: event.bytes), at: MonotonicTime(nanoseconds: event.at))
        }
        // Compare frames captured at the same instant, from the first one on.
        var video: [Int64: Int64] = [:]  // capture ms → media time
        var audio: [Int64: Int64] = [:]
        for frame in harness.frames {
            if frame.kind == .video {
                video[Int64(frame.frame.rtpTimestamp &- videoRTPBase) / 90] = frame.mediaTime.nanoseconds
            } else {
                audio[Int64(frame.frame.rtpTimestamp &- audioRTPBase) / 48] = frame.mediaTime.nanoseconds
            }
        }
        var checked = 0
        for (capture, videoTime) in video where capture % 100 == 0 {
            guard let audioTime = audio[capture] else { continue }
            #expect(abs(audioTime - videoTime) <= 20_000_000, "capture \(capture) ms: audio − video = \((audioTime - videoTime) / 1_000_000) ms")
            checked += 1
        }
        #expect(checked >= 45)
        #expect(harness.receiver.counters.sync.framesHeldForSync > 50 && harness.receiver.counters.sync.arrivalStarts == 0)
        // And each stream's media time never runs backwards.
        for kind in [MediaKind.video, .audio] {
            let times = harness.frames.filter { $0.kind == kind }.map(\.mediaTime.nanoseconds)
            #expect(times == times.sorted())
        }
    }
}

@Suite struct HostileMediaInputTests {
    @Test func unknownRetransmissionsFarOSNsTenThousandSSRCsAndAbsurdReportsAreBounded() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(ssrcs: [], rtxSSRCs: [:])], maximumStreams: 64))
        // 10 000 SSRCs on the video section (learned by payload type): bounded streams, no crash.
        for ssrc in 0..<10_000 {
            let bytes = RTPPacketBuilder(payloadType: 96, sequenceNumber: UInt16(ssrc & 0xFFFF), timestamp: 0, ssrc: UInt32(10_000 + ssrc))
                .build(payload: [0x90, 0x80, 0x00, 0x01, 0x00])
            harness.receive(try RTPPacket(parsing: bytes))
        }
        #expect(harness.receiver.activeStreamCount == 64)
        #expect(harness.receiver.counters.tooManyStreams > 9_000)
        // RTX for a stream nobody knows, and an RTX whose OSN is far outside the window.
        let unknown = RTPPacketBuilder(payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 555).build(payload: [0x12, 0x34, 0x90, 0x80, 0, 1, 0])
        harness.receive(try RTPPacket(parsing: unknown))
        let far = RTPPacketBuilder(payloadType: 97, sequenceNumber: 2, timestamp: 0, ssrc: 556).build(payload: [0xFF, 0x00, 0x90, 0x80, 0, 1, 0])
        harness.receive(try RTPPacket(parsing: far))
        let padding = RTPPacketBuilder(payloadType: 97, sequenceNumber: 3, timestamp: 0, ssrc: 557).build(payload: [0x00, 0x01])
        harness.receive(try RTPPacket(parsing: padding))
        // Absurd sender reports: NTP zero, NTP at the end of time, RTP anywhere.
        for ntp: UInt64 in [0, .max, 1, 0x8000_0000_0000_0000] {
            harness.receive(rtcp: [.senderReport(ssrc: 10_000, ntpTimestamp: ntp, rtpTimestamp: .max, packetCount: 0, octetCount: 0, reports: []),
                                   .goodbye(ssrcs: [10_001, 10_002, 999_999])])
        }
        harness.advance(to: harness.now.adding(milliseconds: 10_000))
        #expect(harness.receiver.activeStreamCount == 0)
        #expect(harness.receiver.counters.sync.implausibleSenderReports >= 1)
    }

    @Test func aRetransmissionOfSomethingNeverMissedCannotMoveTheStream() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack()]))
        let publisher = try SimulatedPublisher(firstSequence: 100)
        for _ in 0..<5 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) } }
        let before = harness.frames.count
        // RTX (on the FID-announced SSRC 2) naming sequence numbers far ahead and already delivered.
        for osn: UInt16 in [40_000, 100, 101] {
            let rtx = RTPPacketBuilder(payloadType: 97, sequenceNumber: osn, timestamp: 0, ssrc: 2)
                .build(payload: [UInt8(osn >> 8), UInt8(osn & 0xFF), 0x90, 0x80, 0x00, 0x01, 0x00])
            harness.receive(try RTPPacket(parsing: rtx))
        }
        for _ in 0..<5 { for bytes in try publisher.nextFrame().packets { harness.receive(try RTPPacket(parsing: bytes)) } }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.sequenceJumps == 0 && counters.lost == 0 && harness.nacked.isEmpty)
        #expect(counters.unexpectedRetransmissions + counters.duplicates + counters.lateArrivals == 3, "\(counters)")
        #expect(harness.frames.count == before + 5)
    }

    @Test func hostileSequencesNeverCrashOrGrowWithoutBound() throws {
        var random = SeededRandom(seed: 7)
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(), Fixtures.audioTrack()]))
        for step in 0..<50_000 {
            let isRTX = random.chance(0.2)
            let ssrc: UInt32 = isRTX ? 2 : [1, 3][Int(random.next() % 2)]
            var builder = RTPPacketBuilder(payloadType: isRTX ? 97 : (ssrc == 3 ? 111 : 96), sequenceNumber: UInt16(truncatingIfNeeded: random.next()),
                                           timestamp: UInt32(truncatingIfNeeded: random.next()), ssrc: ssrc)
            builder.marker = random.chance(0.3)
            let payload = (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            harness.receive(try RTPPacket(parsing: builder.build(payload: payload)), at: .milliseconds(1_000 + Int64(step)))
            if step % 1_000 == 0 {
                harness.receive(rtcp: [.senderReport(ssrc: ssrc, ntpTimestamp: random.next(), rtpTimestamp: UInt32(truncatingIfNeeded: random.next()),
                                                     packetCount: 0, octetCount: 0, reports: [])])
            }
        }
        let counters = harness.receiver.counters(sender: Fixtures.sender)
        #expect(counters.packets > 0)
        // Feedback stays bounded: no more NACKed numbers than the register can hold per attempt.
        #expect(harness.datagrams.allSatisfy { $0.count <= 1_200 })
    }
}

/// Sora names every stream's SSRCs in the offer: a packet on any other SSRC, even one that
/// carries the section's MID or its only payload type, is not taken into that sender's file.
@Suite struct UnannouncedStreamTests {
    static func packet(ssrc: UInt32, payloadType: UInt8, sequenceNumber: UInt16, mid: String?) throws -> RTPPacket {
        var builder = RTPPacketBuilder(payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: UInt32(sequenceNumber) * 3_000, ssrc: ssrc)
        builder.marker = true
        if let mid { builder.extensions = [(1, Array(mid.utf8))] }
        return try RTPPacket(parsing: builder.build(payload: [0x90, 0x80, 0x00, 0x01, 0x00]))
    }

    @Test func announcedSectionsLearnNoStreamsButSilentOnesStillDo() throws {
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(), Fixtures.audioTrack()]))
        for index in 0..<50 {
            harness.receive(try Self.packet(ssrc: 0xBAD0 + UInt32(index), payloadType: 96, sequenceNumber: UInt16(index), mid: "0"))  // MID says video
            harness.receive(try Self.packet(ssrc: 0xBEEF, payloadType: 111, sequenceNumber: UInt16(index), mid: nil))  // only audio has PT 111
            harness.receive(try Self.packet(ssrc: 0xCAFE, payloadType: 97, sequenceNumber: UInt16(index), mid: "0"))  // RTX, FID group declared
        }
        #expect(harness.receiver.counters.unannouncedStream == 150)
        #expect(harness.frames.isEmpty && harness.receiver.counters(sender: Fixtures.sender).packets == 0)

        // A section that names no SSRC (webrtcbin without a=ssrc) still learns its stream.
        let silent = Harness(Fixtures.receiver([Fixtures.videoTrack(ssrcs: [], rtxSSRCs: [:])]))
        silent.receive(try Self.packet(ssrc: 0x1234, payloadType: 96, sequenceNumber: 1, mid: "0"))
        #expect(silent.receiver.counters.unannouncedStream == 0 && silent.receiver.counters(sender: Fixtures.sender).packets == 1)
    }
}

/// A long session where senders keep coming and going: the receiver keeps state only for the
/// senders present (and those that just left), and its totals keep growing (issue 28, finding 11).
@Suite struct SenderChurnTests {
    static func audio(sender: String, ssrc: UInt32, mid: String) -> ReceiveTrack {
        ReceiveTrack(mid: mid, kind: .audio, sender: sender,
                     codecs: [ReceiveCodec(payloadType: 111, name: "OPUS", clockRate: 48_000, channels: 2, feedback: FeedbackSupport(nack: true))],
                     ssrcs: [ssrc])
    }

    @Test func stateForSendersThatLeftIsForgotten() {
        let receiver = Fixtures.receiver([], senderReportHold: 0)
        var packets = 0
        for index in 0..<300 {
            let ssrc = UInt32(1_000 + index)
            let track = Self.audio(sender: "S\(index)", ssrc: ssrc, mid: "\(index)")
            _ = receiver.update(tracks: [track])
            for sequence in 0..<5 {
                let packet = RTPPacketBuilder(payloadType: 111, sequenceNumber: UInt16(sequence), timestamp: UInt32(sequence * 960), ssrc: ssrc)
                    .build(payload: [0xFC, 0x01, 0x02])
                _ = receiver.handle(rtp: try! RTPPacket(parsing: packet), now: .milliseconds(Int64(index * 1_000 + sequence * 20)))
                packets += 1
            }
            // The sender that just left still has its counters, for its recording's row.
            if index > 0 { #expect(receiver.counters(sender: "S\(index - 1)").packets == 5) }
            #expect(receiver.senderStateCount <= 2)
        }
        #expect(receiver.totalCounters.packets == packets, "the totals keep every sender that left")
    }
}

/// Janus reads a whole RTCP compound as one stream's: the one its sender SSRC was first seen
/// with, else the first report block's or the first NACK's, and it serves the first NACK only.
/// With several streams losing packets at once, recbot's NACKs and PLIs were answered for one
/// stream only (0 recovered on three of four at 5 % loss). Each stream's feedback now goes in a
/// datagram of its own, after its own report block, from its m-section's own SSRC, as
/// libwebrtc sends it.
@Suite struct FeedbackPackingTests {
    @Test func eachStreamsFeedbackGoesInADatagramOfItsOwn() throws {
        let first = try SimulatedPublisher(ssrc: 1, rtxSSRC: 2)
        let second = try SimulatedPublisher(ssrc: 5, rtxSSRC: 6)
        var other = Fixtures.videoTrack(ssrcs: [5], rtxSSRCs: [5: 6], mid: "2")
        other.sender = "SENDER0000000000000000000B"
        let harness = Harness(Fixtures.receiver([Fixtures.videoTrack(), other]))
        for index in 0..<40 {
            let time = MonotonicTime.milliseconds(1_000 + Int64(index) * 33)
            for publisher in [first, second] {
                for (position, bytes) in try publisher.nextFrame().packets.enumerated() where !(index % 10 == 5 && position == 0) {
                    harness.receive(try RTPPacket(parsing: bytes), at: time)
                }
            }
        }
        harness.advance(to: .milliseconds(3_000))
        var sendersByStream: [UInt32: Set<UInt32>] = [:]
        for datagram in harness.datagrams {
            let packets = try RTCPPacket.parseCompound(datagram)
            let media = Set(packets.compactMap(\.mediaSSRC))
            #expect(media.count <= 1, "one stream's feedback per datagram: \(packets)")
            guard let stream = media.first, case .receiverReport(let sender, let reports) = packets.first else { continue }
            if let block = reports.first { #expect(block.ssrc == stream, "its own report block first") }
            sendersByStream[stream, default: []].insert(sender)
            for case .nack(let from, _, _) in packets { #expect(from == sender) }
        }
        #expect(Set(sendersByStream.keys) == [1, 5])
        #expect(sendersByStream.values.allSatisfy { $0.count == 1 }, "one sender SSRC per stream")
        #expect(sendersByStream[1] != sendersByStream[5], "and a different one for each: \(sendersByStream)")
    }
}

/// When a packet first NACKed at 0 is NACKed again within `window`, for a retry `interval`.
func nackTimes(interval: Int64, within window: Int64) -> [Int64] {
    var times: [Int64] = [], last: Int64 = 0, nacks = 1
    while nacks < RecoveryPolicy().maximumNacksPerPacket {
        let next = last + NackRegister.backoff(interval, after: nacks)
        guard next <= window else { break }
        times.append(next); last = next; nacks += 1
    }
    return times
}
