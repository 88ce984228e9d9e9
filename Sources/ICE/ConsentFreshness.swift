import WireCoding

/// RFC 7675 consent freshness for the selected pair, on its own so the agent's check logic and
/// the consent schedule can be read (and tested) apart: when the next consent check is due, how
/// soon after an unanswered one, and when consent runs out.
struct ConsentFreshness {
    private let intervalMilliseconds: Int64
    private let hurriedIntervalMilliseconds: Int64
    private let timeoutMilliseconds: Int64
    /// When the peer last proved consent (a check or consent check answered).
    private(set) var lastGranted: MonotonicTime?
    /// When the next consent check goes out; nil until a pair is selected.
    private(set) var nextCheck: MonotonicTime?
    /// When the latest consent check went out: unanswered since, the next is hurried.
    private var lastCheckSentAt: MonotonicTime?

    init(configuration: ICEConfiguration) {
        intervalMilliseconds = configuration.consentIntervalMilliseconds
        hurriedIntervalMilliseconds = configuration.hurriedConsentIntervalMilliseconds
        timeoutMilliseconds = configuration.consentTimeoutMilliseconds
    }

    /// A pair was selected: consent holds from now, and checks start one interval later.
    mutating func start(now: MonotonicTime, random: () -> UInt64) {
        lastGranted = now
        nextCheck = now.adding(milliseconds: interval(hurried: false, random: random))
    }

    /// The peer answered a check on a pair: consent is fresh.
    mutating func granted(now: MonotonicTime) { lastGranted = now }

    var expiresAt: MonotonicTime? { lastGranted?.adding(milliseconds: timeoutMilliseconds) }

    func isExpired(now: MonotonicTime) -> Bool { expiresAt.map { now >= $0 } ?? false }

    /// True when a consent check is due now; the next one is then scheduled, sooner if the
    /// previous check is still unanswered.
    mutating func takeDueCheck(now: MonotonicTime, random: () -> UInt64) -> Bool {
        guard let nextCheck, now >= nextCheck else { return false }
        let previousUnanswered = lastCheckSentAt.map { sent in lastGranted.map { $0 < sent } ?? true } ?? false
        lastCheckSentAt = now
        self.nextCheck = now.adding(milliseconds: interval(hurried: previousUnanswered, random: random))
        return true
    }

    /// The deadlines the agent must wake for while connected.
    var nextDeadline: MonotonicTime? { .earliest(nextCheck, expiresAt) }

    /// 4 to 6 s, randomised so that consent checks do not synchronise (RFC 7675 §5.1); 0.8 to
    /// 1.2 s while the previous check is unanswered.
    private func interval(hurried: Bool, random: () -> UInt64) -> Int64 {
        let base = hurried ? hurriedIntervalMilliseconds : intervalMilliseconds
        return base * 8 / 10 + Int64(random() % UInt64(max(1, base * 4 / 10)))
    }
}
