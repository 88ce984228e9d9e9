import Testing
import WireCoding
@testable import ICE

/// The consent schedule alone (RFC 7675 §5.1): checks 4–6 s apart, 0.8–1.2 s apart while the
/// previous one is unanswered, and consent gone 30 s after the last answer.
@Suite struct ConsentFreshnessTests {
    let configuration = ICEConfiguration(localUfrag: "a", localPassword: "passwordA", remoteUfrag: "b",
                                         remotePassword: "passwordB", role: .controlled, tieBreaker: 1)

    @Test func nothingIsDueBeforeAPairIsSelected() {
        var consent = ConsentFreshness(configuration: configuration)
        var generator = SplitMix64(seed: 1)
        #expect(consent.nextDeadline == nil && consent.expiresAt == nil)
        let due = consent.takeDueCheck(now: .milliseconds(100_000), random: { generator.next() })
        #expect(!due)
        #expect(!consent.isExpired(now: .milliseconds(100_000)))
    }

    @Test func answeredChecksKeepTheSlowPaceAndUnansweredOnesHurryIt() throws {
        var consent = ConsentFreshness(configuration: configuration)
        var generator = SplitMix64(seed: 2)
        consent.start(now: .milliseconds(0), random: { generator.next() })
        var now = MonotonicTime.milliseconds(0)
        var intervals: [Int64] = []
        // Five checks answered at once, then five left unanswered.
        for index in 0..<10 {
            let due = try #require(consent.nextCheck)
            let early = consent.takeDueCheck(now: MonotonicTime(nanoseconds: due.nanoseconds - 1), random: { generator.next() })
            let onTime = consent.takeDueCheck(now: due, random: { generator.next() })
            #expect(!early && onTime)
            intervals.append(due.milliseconds(since: now))
            now = due
            if index < 5 { consent.granted(now: now) }
        }
        // Interval i is chosen when check i-1 goes out, from whether check i-2 was answered.
        #expect(intervals[0...6].allSatisfy { (4_000...6_000).contains($0) }, "\(intervals)")
        #expect(intervals[7...].allSatisfy { (800...1_200).contains($0) }, "hurried after an unanswered check: \(intervals)")
        consent.granted(now: now)
        let due = try #require(consent.nextCheck)
        let sent = consent.takeDueCheck(now: due, random: { generator.next() })
        #expect(sent)
        #expect((4_000...6_000).contains(try #require(consent.nextCheck).milliseconds(since: due)), "an answer restores the slow pace")
    }

    @Test func consentExpiresThirtySecondsAfterTheLastAnswer() {
        var consent = ConsentFreshness(configuration: configuration)
        var generator = SplitMix64(seed: 3)
        consent.start(now: .milliseconds(0), random: { generator.next() })
        consent.granted(now: .milliseconds(12_000))
        #expect(consent.expiresAt == .milliseconds(42_000))
        #expect(!consent.isExpired(now: .milliseconds(41_999)))
        #expect(consent.isExpired(now: .milliseconds(42_000)))
        #expect(consent.nextDeadline.map { $0 <= MonotonicTime.milliseconds(42_000) } == true)  // the driver wakes by the expiry
    }
}
