import Testing
import RTP
import WireCoding
@testable import Media

/// The session-wide feedback budget: when every stream loses packets at once (an overloaded
/// host), NACKs and keyframe requests stay proportional to what arrives, first requests for
/// gaps go out before retries, and the budget is shared across streams.
@Suite struct FeedbackBudgetTests {
    struct Overload {
        var nacked: Set<[UInt32]> = []  // (media SSRC, sequence number)
        var nackedNumbers = 0
        var lost: Set<[UInt32]> = []
        var received = 0
        var keyframeRequestsBySSRC: [UInt32: Int] = [:]
        var counters: MediaReceiverCounters
    }

    /// `streams` video streams of one-packet frames at 50 packets/s each for `seconds`; each
    /// packet is lost with probability `loss`, and nobody answers NACKs or keyframe requests.
    static func overload(streams: Int, seconds: Int, loss: Double, policy: FeedbackBudgetPolicy) throws -> Overload {
        var configuration = MediaReceiverConfiguration(localSSRC: 0xABCD, cname: "recbot-test", maximumStreams: 4_096)
        configuration.feedbackBudget = policy
        var seeded = SeededRandom(seed: 3)
        let receiver = MediaReceiver(configuration: configuration, random: { seeded.next() })
        _ = receiver.update(tracks: [Fixtures.videoTrack(ssrcs: [], rtxSSRCs: [:])])
        let harness = Harness(receiver)
        var random = SeededRandom(seed: 17)
        var result = Overload(counters: MediaReceiverCounters())
        let start = harness.now
        let packetsPerStream = seconds * 50
        for index in 0..<packetsPerStream {
            for stream in 0..<streams {
                let ssrc = UInt32(10_000 + stream)
                let sequence = UInt16(index)
                // 20 ms between a stream's packets, the streams spread evenly inside them.
                let at = start.adding(nanoseconds: Int64(index) * 20_000_000 + Int64(stream) * 20_000_000 / Int64(streams))
                // The first packet always arrives (it starts the stream); afterwards, the loss.
                guard index == 0 || !random.chance(loss) else {
                    result.lost.insert([ssrc, UInt32(sequence)])
                    continue
                }
                var builder = RTPPacketBuilder(payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(index) * 1_800, ssrc: ssrc)
                builder.marker = true
                harness.receive(try RTPPacket(parsing: builder.build(payload: [0x90, 0x80, 0x00, 0x01, 0x01, 0x00])), at: at)
                result.received += 1
            }
        }
        harness.advance(to: harness.now.adding(milliseconds: 1_500))
        for packet in harness.feedback {
            switch packet {
            case .nack(_, let media, let lost):
                result.nackedNumbers += lost.count
                for sequence in lost { result.nacked.insert([media, UInt32(sequence)]) }
            case .pictureLossIndication(_, let media), .fullIntraRequest(_, let media, _):
                result.keyframeRequestsBySSRC[media, default: 0] += 1
            default:
                break
            }
        }
        result.counters = receiver.counters
        return result
    }

    @Test func anOverloadedSessionAsksForNoMoreThanItsBudgetAndFirstRequestsGoFirst() throws {
        let policy = FeedbackBudgetPolicy()
        let seconds = 2
        let run = try Self.overload(streams: 100, seconds: seconds, loss: 0.3, policy: policy)
        let unlimited = try Self.overload(streams: 100, seconds: seconds, loss: 0.3, policy: .unlimited)
        let elapsed = Double(seconds) + 1.5
        let nackBound = policy.nacksPerReceivedPacket * Double(run.received) + policy.nacksPerSecond * elapsed + policy.nackBurst
        #expect(Double(run.nackedNumbers) <= nackBound, "\(run.nackedNumbers) NACKed numbers for \(run.received) packets received")
        // Without the budget every gap is asked for again and again (no retransmission comes).
        #expect(unlimited.nackedNumbers > 3 * run.nackedNumbers, "unlimited \(unlimited.nackedNumbers), budget \(run.nackedNumbers)")
        #expect(run.counters.feedback.nacksDeferred > 0 && unlimited.counters.feedback == FeedbackBudgetCounters())
        // Retries waited; first requests did not: nearly every lost packet was asked for once.
        let askedOnce = Double(run.lost.intersection(run.nacked).count) / Double(run.lost.count)
        #expect(askedOnce >= 0.95, "\(run.lost.intersection(run.nacked).count) of \(run.lost.count) lost packets NACKed")

        let keyframeRequests = run.keyframeRequestsBySSRC.values.reduce(0, +)
        let keyframeBound = policy.keyframeRequestsPerReceivedPacket * Double(run.received) + policy.keyframeRequestsPerSecond * elapsed
            + policy.keyframeRequestBurst
        #expect(Double(keyframeRequests) <= keyframeBound, "\(keyframeRequests) keyframe requests")
        #expect(unlimited.keyframeRequestsBySSRC.values.reduce(0, +) > 3 * keyframeRequests)
        #expect(run.counters.feedback.keyframeRequestsDeferred > 0)
        // Shared: the requests went to many streams, not the same few again and again.
        #expect(run.keyframeRequestsBySSRC.count >= min(keyframeRequests, 100) * 3 / 4,
                "\(keyframeRequests) requests went to \(run.keyframeRequestsBySSRC.count) streams")
    }

    @Test func oneLossyStreamIsNeverHeldBack() throws {
        // 30 % loss on one stream, with no retransmission ever arriving: all of its retries fit.
        let run = try Self.overload(streams: 1, seconds: 10, loss: 0.3, policy: FeedbackBudgetPolicy())
        #expect(run.counters.feedback == FeedbackBudgetCounters(), "\(run.counters.feedback)")
        #expect(run.lost.isSubset(of: run.nacked))
    }
}
