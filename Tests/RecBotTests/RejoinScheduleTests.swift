import Archive
import Testing
import WireCoding
@testable import RecBot

/// The rejoin schedule, on a simulated clock: when the next attempt comes, when it stops, and
/// what an outage cost.
struct RejoinScheduleTests {
    static let second: Int64 = 1_000_000_000

    func time(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: Int64(seconds * 1e9)) }

    func retryTime(_ decision: RejoinSchedule.Decision) -> Int64? {
        if case .retry(let at) = decision { return at.nanoseconds }
        return nil
    }

    @Test func backoffStartsWithinASecondAndDoublesToTheCapWithJitter() {
        // The jitter's extremes: the lower half of each step, and all of it.
        for (random, expected) in [(0.0, [0.5, 1, 2, 4, 8, 15, 15, 15]), (0.999_999, [1.0, 2, 4, 8, 16, 30, 30, 30])] {
            var schedule = RejoinSchedule(settings: .init(), random: { random })
            var now = time(100)
            var delays: [Double] = []
            var decision = schedule.connectionFailed(cause: "x", connectedAt: time(0), lastMediaAt: nil, now: now)
            for _ in expected.indices {
                guard let at = retryTime(decision) else { Issue.record("gave up"); return }
                delays.append((Double(at - now.nanoseconds) / 1e9 * 10).rounded() / 10)
                now = MonotonicTime(nanoseconds: at)
                schedule.attemptStarted()
                decision = schedule.attemptFailed(now: now)
            }
            #expect(delays == expected)
        }
    }

    @Test func attemptsPerOutageAreBoundedAndZeroMeansNoRejoin() {
        var bounded = RejoinSchedule(settings: .init(maximumAttempts: 2), random: { 0.5 })
        var decision = bounded.connectionFailed(cause: "x", connectedAt: time(0), lastMediaAt: nil, now: time(60))
        for _ in 0..<2 {
            #expect(retryTime(decision) != nil)
            bounded.attemptStarted()
            decision = bounded.attemptFailed(now: time(70))
        }
        #expect(decision == .giveUp("2 rejoin attempt(s) failed"))

        var off = RejoinSchedule(settings: .init(maximumAttempts: 0), random: { 0.5 })
        #expect(off.connectionFailed(cause: "x", connectedAt: time(0), lastMediaAt: nil, now: time(60)) == .giveUp("rejoining is off (--no-rejoin)"))
    }

    @Test func aStableConnectionStartsTheBackoffOverAFlappingOneDoesNot() {
        var schedule = RejoinSchedule(settings: .init(), random: { 0.999_999 })
        var now = time(100)
        _ = schedule.connectionFailed(cause: "a", connectedAt: time(0), lastMediaAt: nil, now: now)
        for _ in 0..<3 { schedule.attemptStarted(); now = now.adding(nanoseconds: Self.second); _ = schedule.attemptFailed(now: now) }
        _ = schedule.recovered(now: now)
        // It failed again 5 s after recording: the backoff goes on where it was (16 s).
        let flapping = schedule.connectionFailed(cause: "b", connectedAt: now, lastMediaAt: nil, now: now.adding(nanoseconds: 5 * Self.second))
        #expect(retryTime(flapping).map { ($0 - now.nanoseconds - 5 * Self.second) / Self.second } == 15)
        _ = schedule.recovered(now: now.adding(nanoseconds: 20 * Self.second))
        // This one held for a minute: the next outage starts at the first step again.
        let stable = schedule.connectionFailed(cause: "c", connectedAt: now, lastMediaAt: nil, now: now.adding(nanoseconds: 80 * Self.second))
        #expect(retryTime(stable).map { (990_000_000...Self.second).contains($0 - now.nanoseconds - 80 * Self.second) } == true)
        #expect(schedule.outages == 3)
    }

    @Test func mediaLostRunsFromTheLastFrameBeforeToTheRecovery() {
        var schedule = RejoinSchedule(settings: .init(), random: { 0 })
        // Consent loss is noticed 10 s after the media stopped: those 10 s are lost too.
        _ = schedule.connectionFailed(cause: "transport: consent lost", connectedAt: time(0), lastMediaAt: time(20), now: time(30))
        schedule.attemptStarted()
        let recovery = schedule.recovered(now: time(32.5))
        #expect(recovery?.mediaLostNanoseconds == Int64(12.5 * 1e9))
        #expect(recovery?.outage.attempts == 1 && recovery?.outage.ordinal == 1)
        #expect(schedule.outage == nil)
        #expect(schedule.recovered(now: time(40)) == nil)
    }

    @Test func theEndReasonTellsTheOutagesAndAnUnendedOneIsANetworkFailure() {
        var summary = InterruptionLog.Summary()
        #expect(JoinSession.sessionEnding(SessionEnding(.completed, "duration-elapsed"), interruptions: summary, failOnInterruption: true).reason
                == "duration-elapsed")
        summary.count = 2
        summary.mediaLostNanoseconds = 9_400_000_000
        let recovered = JoinSession.sessionEnding(SessionEnding(.completed, "duration-elapsed"), interruptions: summary, failOnInterruption: false)
        #expect(recovered.cause == .recoveredAfterInterruptions(strict: false) && recovered.result == .success)
        #expect(recovered.reason == "duration-elapsed (2 interruptions, 9.4 s lost)")
        let strict = JoinSession.sessionEnding(SessionEnding(.completed, "duration-elapsed"), interruptions: summary, failOnInterruption: true)
        #expect(strict.result == .network)
        summary.current = "transport: consent lost"
        let unended = JoinSession.sessionEnding(SessionEnding(.connectionLost, "duration-elapsed"), interruptions: summary, failOnInterruption: false)
        #expect(unended.cause == .connectionLost && unended.result == .network)
        #expect(unended.reason == "duration-elapsed (still rejoining after transport: consent lost; 2 interruptions, 9.4 s lost)")
    }
}
