@testable import PeerConnection
import Testing
import WireCoding

/// The overload governor (how many video streams to pause, and which) and the check that drops
/// a paused stream's new pictures before SRTP.
@Suite struct OverloadPolicyTests {
    static let order = (0..<64).map { UInt32(1_000 + $0) }

    /// Feeds one interval's worth of samples of `wait` ms and returns the decision.
    static func interval(_ governor: inout OverloadGovernor, wait milliseconds: Int64, at time: inout Int64) -> Set<UInt32>? {
        var due = false
        for _ in 0..<5 {
            time += 50_000_000
            due = governor.observe(wait: milliseconds * 1_000_000, now: MonotonicTime(nanoseconds: time)) || due
        }
        #expect(due)
        return governor.decide(order: { Self.order }, now: MonotonicTime(nanoseconds: time))
    }

    @Test func nothingIsAskedWhileEverythingKeepsUp() {
        var governor = OverloadGovernor(policy: OverloadPolicy())
        var time: Int64 = 0
        var asked = false
        for _ in 0..<20 {
            for _ in 0..<5 {
                time += 50_000_000
                _ = governor.observe(wait: 30_000_000, now: MonotonicTime(nanoseconds: time))
            }
            #expect(governor.decide(order: { asked = true; return Self.order }, now: MonotonicTime(nanoseconds: time)) == nil)
        }
        #expect(!asked, "the streams are not even sorted while nothing is shed")
    }

    @Test func shedsAnEighthPerIntervalAndHoldsWhileTheBacklogDrains() throws {
        var governor = OverloadGovernor(policy: OverloadPolicy())
        var time: Int64 = 0
        _ = governor.observe(wait: 0, now: MonotonicTime(nanoseconds: 0))
        for _ in 0..<3 { #expect(Self.interval(&governor, wait: 500, at: &time) == nil, "not yet a second of it") }
        #expect(try #require(Self.interval(&governor, wait: 500, at: &time)).count == 8)
        #expect(try #require(Self.interval(&governor, wait: 450, at: &time)).count == 16, "still high, not falling fast")
        #expect(try #require(Self.interval(&governor, wait: 300, at: &time)).count == 16, "falling by a third: the last step is draining")
        #expect(try #require(Self.interval(&governor, wait: 290, at: &time)).count == 24)
        for _ in 0..<10 { _ = Self.interval(&governor, wait: 900, at: &time) }
        #expect(governor.pausedCount == 64, "never more than every stream")
    }

    @Test func aStallShorterThanASecondPausesNothing() {
        var governor = OverloadGovernor(policy: OverloadPolicy())
        var time: Int64 = 0
        _ = governor.observe(wait: 0, now: MonotonicTime(nanoseconds: 0))
        for round in 0..<10 {
            // A busy host: three intervals (750 ms) of seconds-long waits, then a calm one.
            for _ in 0..<3 { #expect(Self.interval(&governor, wait: 2_000, at: &time) == nil, "round \(round)") }
            #expect(Self.interval(&governor, wait: 10, at: &time) == nil)
        }
    }

    @Test func allBackWithinFiveSecondsOfCalm() throws {
        var governor = OverloadGovernor(policy: OverloadPolicy())
        var time: Int64 = 0
        _ = governor.observe(wait: 0, now: MonotonicTime(nanoseconds: 0))
        for _ in 0..<12 { _ = Self.interval(&governor, wait: 900, at: &time) }  // a second to notice, then eight eighths
        #expect(governor.pausedCount == 64)
        let calmFrom = time
        var counts: [Int] = []
        while governor.pausedCount > 0 && time - calmFrom < 10_000_000_000 {
            counts.append(try #require(Self.interval(&governor, wait: 10, at: &time)).count)
        }
        #expect(governor.pausedCount == 0 && time - calmFrom <= 5_000_000_000, "back after \(Double(time - calmFrom) / 1e9) s: \(counts)")
        // Gently at first (one stream in 8) from the first calm interval's end, faster as the
        // calm holds; all back within a second.
        #expect(counts.first == 56 && counts.last == 0 && time - calmFrom <= 1_000_000_000, "\(counts)")
    }

    @Test func aSteadyOverloadRotatesEveryStreamThroughThePause() {
        var governor = OverloadGovernor(policy: OverloadPolicy())
        var time: Int64 = 0
        var pausedIntervals: [UInt32: Int] = [:]
        _ = governor.observe(wait: 0, now: MonotonicTime(nanoseconds: 0))
        // A host that carries 48 of the 64 streams: the wait is high while fewer than 16 are paused.
        for _ in 0..<480 {  // two minutes
            let wait: Int64 = governor.pausedCount < 16 ? 400 : 20
            guard let paused = Self.interval(&governor, wait: wait, at: &time) else { continue }
            for ssrc in paused { pausedIntervals[ssrc, default: 0] += 1 }
        }
        let shares = Self.order.map { pausedIntervals[$0, default: 0] }
        #expect(shares.min()! > 0 && shares.max()! <= 2 * shares.min()!, "each stream's paused intervals: \(shares.sorted())")
    }

    @Test func aDisabledPolicyNeverSheds() {
        var policy = OverloadPolicy()
        policy.enabled = false
        var governor = OverloadGovernor(policy: policy)
        for step in 0..<100 {
            let due = governor.observe(wait: 5_000_000_000, now: MonotonicTime(nanoseconds: Int64(step) * 100_000_000))
            #expect(!due)
        }
    }

    // MARK: - Dropping before SRTP

    static func rtp(ssrc: UInt32, timestamp: UInt32, payloadType: UInt8 = 96) -> [UInt8] {
        [0x80, payloadType, 0, 1] + bigEndian(timestamp) + bigEndian(ssrc) + [UInt8](repeating: 0xAB, count: 100)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    @Test func aPausedStreamKeepsItsLastPictureAndDropsNewerOnes() {
        var paused = PausedVideo()
        paused.pause(ssrc: 7, boundary: 90_000)
        let shed1 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 90_000))
        #expect(!shed1, "the last picture taken in can complete")
        let shed2 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 87_000))
        #expect(!shed2, "an older picture's retransmission still helps")
        let shed3 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 93_000))
        #expect(shed3)
        let shed4 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 93_000))
        #expect(shed4)
        let shed5 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 96_000))
        #expect(shed5)
        let shed6 = paused.sheds(Self.rtp(ssrc: 8, timestamp: 96_000))
        #expect(!shed6, "other streams pass")
        let shed7 = paused.sheds(Self.rtp(ssrc: 7, timestamp: 99_000, payloadType: 201))
        #expect(!shed7, "RTCP (a receiver report's type) always passes")
        let shed8 = paused.sheds(Array(Self.rtp(ssrc: 7, timestamp: 99_000).prefix(11)))
        #expect(!shed8, "too short to read: left to SRTP")
        #expect(paused.shedFrames == 2 && paused.shedPackets == 3)
        let shed = paused.resume(ssrc: 7)
        let after = paused.sheds(Self.rtp(ssrc: 7, timestamp: 120_000))
        #expect(shed && paused.isEmpty && !after)
    }

    @Test func newerIsJudgedAcrossTheTimestampWrap() {
        var paused = PausedVideo()
        paused.pause(ssrc: 7, boundary: UInt32.max - 1_000)
        let pastTheWrap = paused.sheds(Self.rtp(ssrc: 7, timestamp: 2_000))
        let before = paused.sheds(Self.rtp(ssrc: 7, timestamp: UInt32.max - 4_000))
        #expect(pastTheWrap && !before)
    }
}
