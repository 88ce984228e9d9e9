import Archive
import Foundation
import Logging
import TestSupport
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
        summary.currentIsStall = true
        let dark = JoinSession.sessionEnding(SessionEnding(.completed, "duration-elapsed"), interruptions: summary, failOnInterruption: false)
        #expect(dark.result == .network && dark.reason.hasPrefix("duration-elapsed (network still down at the end after transport"), "\(dark.reason)")
    }
}

/// Issue 39 item 7: a connection that goes quiet is kept while the network is dark, given up
/// at once when the server answers but it does not, and never judged while media flows.
@Suite struct LivenessWatchTests {
    func at(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: Int64(seconds * 1e9)) }

    /// An 8 s blackout from 24 s: quiet at 28.5 s, dark until 32 s, back by 33 s: the outage
    /// is recorded and ends in place, and the connection is never ended.
    @Test func aBlackoutShorterThanTheConsentWindowIsRiddenThrough() {
        var watch = LivenessWatch()
        var actions: [LivenessWatch.Action] = []
        for step in 0...90 {  // 20 s to 65 s, every half second
            let now = 20 + Double(step) / 2
            // Consent answered every 2 s and media every 20 ms, but not while dark (24–32 s),
            // and the first answer back comes 0.8 s after the return.
            let lastAnswer = now < 24 ? (now / 2).rounded(.down) * 2 : now < 32.8 ? 24 : now
            let signals = LivenessWatch.Signals(consentAt: at(lastAnswer), mediaAt: at(now < 24 ? now : now < 32.8 ? 24 : now),
                                                webSocketAt: at(now < 24 ? now : now < 38 ? 24 : now))
            actions += watch.observe(signals, now: at(now))
            if now >= 32.5, watch.wantsProbes { watch.probeAnswered(now: at(now)) }  // the probe's TCP connect succeeds once it is back
        }
        #expect(actions.count == 2, "\(actions)")
        guard case .stalled(let cause) = actions.first, case .resumed(let after) = actions.last else { Issue.record("\(actions)"); return }
        #expect(cause.hasPrefix("no ICE consent answer for 4.5 s"), "\(cause)")
        #expect(after == 4_500_000_000, "quiet from 28.5 s, back at 33 s")
    }

    /// The server answers probes but the path stays dead (Sora restarted its node): ended 3 s
    /// after the first answer, not when consent runs out.
    @Test func aPathThatStaysDeadWhileTheServerAnswersIsEnded() {
        var watch = LivenessWatch()
        let quiet = LivenessWatch.Signals(consentAt: at(10), mediaAt: at(10), webSocketAt: at(16))
        #expect(watch.observe(quiet, now: at(15)) == [.stalled(cause: "no ICE consent answer for 5.0 s, no media for 5.0 s")])
        #expect(watch.wantsProbes)
        watch.probeAnswered(now: at(15.5))
        #expect(!watch.wantsProbes && watch.observe(quiet, now: at(18)).isEmpty)
        guard case .end(let reason)? = watch.observe(quiet, now: at(18.5)).first else { Issue.record("not ended"); return }
        #expect(reason.contains("answers again but this connection does not"))
        #expect(watch.observe(quiet, now: at(30)).isEmpty, "once")
    }

    /// Consent unanswered while media still arrives: the connection delivers, so it is not quiet.
    @Test func aConnectionThatDeliversMediaIsNeverQuiet() {
        var watch = LivenessWatch()
        for second in 10...40 {
            #expect(watch.observe(.init(consentAt: at(3), mediaAt: at(Double(second)), webSocketAt: at(Double(second))), now: at(Double(second))).isEmpty)
        }
        #expect(!watch.wantsProbes)
    }

    /// A WebSocket that stops answering while the path is fine (the peer's application is
    /// stuck): no outage, and ended 15 s after the server is seen answering (TCP's backoff
    /// after a real outage is given that long).
    @Test func aSilentWebSocketAloneIsEndedAfterItsLongerGrace() {
        var watch = LivenessWatch()
        var actions: [LivenessWatch.Action] = []
        for step in 0...60 {
            let now = 10 + Double(step) / 2
            actions += watch.observe(.init(consentAt: at(now), mediaAt: at(now), webSocketAt: at(10)), now: at(now))
            if watch.wantsProbes { watch.probeAnswered(now: at(now)) }
        }
        #expect(actions.count == 1, "\(actions)")
        guard case .end(let reason)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(reason.contains("this WebSocket does not (nothing on the WebSocket for 21.5 s)"), "\(reason)")
    }
}

/// Issue 39 item 7: an outage ridden out in place is one row that ends without a rejoin; one
/// that turns into a rejoin stays one row, begun when the connection went quiet.
@Suite struct StallBookkeepingTests {
    func log() throws -> (InterruptionLog, Catalog) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-stall-\(UUID())").path
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: "01JD0000000000000000000077", channelID: "c", startedAt: 0))
        let writer = CatalogWriter(catalog: catalog, clock: ManualTimeSource(wallClockMilliseconds: 0), logger: Logger(label: "test"))
        return (InterruptionLog(sessionID: "01JD0000000000000000000077", settings: .init(), writer: writer, logger: Logger(label: "test"),
                                random: NoJitter()), catalog)
    }

    func at(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: Int64(seconds * 1e9)) }

    @Test func aStallThatResumesIsOneEndedOutageWithoutARejoin() throws {
        let (log, _) = try log()
        log.stalled(cause: "connection quiet: no ICE consent answer for 4.5 s", lastMediaAt: at(24), now: at(28.5), wallClock: 28_500)
        #expect(log.summary(now: at(30)).currentIsStall && log.summary(now: at(30)).current?.hasPrefix("connection quiet") == true)
        log.resumed(now: at(33), wallClock: 33_000)
        let summary = log.summary(now: at(60))
        #expect(summary.count == 1 && summary.rejoins == 0 && summary.current == nil)
        #expect(summary.mediaLostNanoseconds == 9_000_000_000 && summary.rows.first?.endedAt == 33_000 && summary.rows.first?.mediaLostMs == 9_000)
    }

    @Test func aStallThatTurnsIntoARejoinIsOneOutage() throws {
        let (log, _) = try log()
        log.stalled(cause: "connection quiet: no ICE consent answer for 4.5 s", lastMediaAt: at(24), now: at(28.5), wallClock: 28_500)
        _ = log.begin(cause: "transport: the signaling server answers again but this connection does not", connectedAt: at(0),
                      lastMediaAt: at(24), now: at(32), wallClock: 32_000)
        log.attemptStarted()
        log.recovered(connectionID: "NEW", now: at(33), wallClock: 33_000)
        let summary = log.summary(now: at(60))
        #expect(summary.count == 1 && summary.rejoins == 1 && summary.current == nil, "\(summary)")
        let row = try #require(summary.rows.first)
        #expect(row.startedAt == 28_500 && row.endedAt == 33_000 && row.attempts == 1 && row.connectionID == "NEW")
        #expect(row.cause.contains("; then transport:"), "\(row.cause)")
    }
}

/// Randomness that is always 0: backoffs without jitter.
private struct NoJitter: RandomSource {
    func next() -> UInt64 { 0 }
}
