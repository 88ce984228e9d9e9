import Foundation
import NIOPosix
import Testing
import SystemClock
import TestSupport
import WireCoding
@testable import RecBot

/// The reachability probes between rejoin attempts: a long outage holds only the probes that
/// are still connecting, and the first answer ends the wait.
@Suite struct RejoinWaitTests {
    /// Counts probes under way and the most at once.
    final class ProbeGauge: @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var current = 0
        private(set) var started = 0
        private(set) var most = 0
        func enter() { lock.withLock { current += 1; started += 1; most = max(most, current) } }
        func leave() { lock.withLock { current -= 1 } }
        var snapshot: (started: Int, most: Int) { lock.withLock { (started, most) } }
    }

    let target = ProbeTarget(url: "wss://sora.invalid/signaling")!

    /// 60+ rounds into a dark network, with each probe outlasting two intervals: the probes
    /// in flight stay a few rounds' worth, and cancelling the wait ends them all.
    @Test func aLongOutageHoldsOnlyTheProbesStillConnecting() async throws {
        try await withTaskExecutorPreference(DedicatedExecutor.shared) { try await probeALongOutage() }
    }

    func probeALongOutage() async throws {
        let gauge = ProbeGauge()
        let prober = Task(executorPreference: DedicatedExecutor.shared) { [target] in
            await RejoinWait.probeUntilAnswered([target, target], intervalNanoseconds: 2_000_000, clock: SystemTimeSource()) { _ in
                gauge.enter()
                try? await Task.sleep(nanoseconds: 5_000_000)
                gauge.leave()
                return false
            }
        }
        let deadline = Date().addingTimeInterval(30)
        while gauge.snapshot.started < 120, Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
        prober.cancel()
        #expect(await prober.value == false)
        let seen = gauge.snapshot
        #expect(seen.started >= 120)
        // A probe lasts 2.5 intervals, so about three rounds of two overlap. On a busy host the
        // probes' tasks run late while the interval's timer (NIO's) keeps time: rounds are then
        // skipped, never piled up.
        #expect(seen.most <= RejoinWait.maximumRoundsInFlight * 2, "\(seen.most) probes at once")
    }

    @Test func theFirstAnswerEndsTheWait() async {
        let answered = await withTaskExecutorPreference(DedicatedExecutor.shared) { [target] in
            await RejoinWait.probeUntilAnswered([target], intervalNanoseconds: 1_000_000, clock: SystemTimeSource()) { _ in
                try? await Task.sleep(nanoseconds: 3_000_000)
                return true
            }
        }
        #expect(answered)
    }

    /// The rejoin backoff waits on the session's clock, not the host's: on a simulated clock a
    /// minute's backoff ends when the clock is moved a minute, and not a nanosecond before.
    @Test func theBackoffEndsWhenTheSessionsClockSaysSo() async throws {
        let clock = ManualTimeSource()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let waiting = Task {
            await RejoinWait.wait(until: .milliseconds(60_000), probing: [], stopRequest: StopRequest(), loop: loop, clock: clock)
        }
        for _ in 0..<2_000 where clock.sleeping == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        try #require(clock.sleeping == 1, "the wait sleeps on the session's clock")
        clock.advance(milliseconds: 59_999)
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(clock.sleeping == 1, "still waiting a millisecond before the deadline")
        clock.advance(milliseconds: 1)
        #expect(await waiting.value == true)
        #expect(clock.sleeping == 0)
        try await group.shutdownGracefully()
    }
}
