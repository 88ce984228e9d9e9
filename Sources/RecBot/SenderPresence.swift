import WireCoding

/// When an empty room ends the session (`--stop-when-idle`, `--wait-for-senders`), as a sans-IO
/// core: the senders Sora's offers name, and time, go in; a deadline and a verdict come out.
///
/// - Before the first sender, `--wait-for-senders` governs: nobody by its end is `nobodyCame`
///   (a cron job that started before a meeting that never happened). Without it, the idle wait
///   counts from the join.
/// - Once someone came, the room going empty starts the idle wait; a sender coming back stops it.
/// - A lost connection changes nothing: the last offer's senders stand until the next one (a
///   rejoin's offer) says otherwise, so an outage never reads as an empty room.
/// - Before the first offer nobody knows who is there: no verdict, however late (a server that
///   does not answer is a network failure, not an empty room); the waits still count from the
///   join, so an empty first offer past them ends the session at once.
public struct SenderPresence: Sendable, Equatable {
    public enum Verdict: String, Sendable, Equatable {
        /// Nobody has sent for `--stop-when-idle`: the session ends as done.
        case idle
        /// `--wait-for-senders` ran out before anyone sent: nothing was recorded.
        case nobodyCame = "no-senders"

        /// The end reason the catalog keeps.
        public var reason: String { rawValue }
    }

    public let idleNanoseconds: Int64?
    public let waitForSendersNanoseconds: Int64?
    public private(set) var senders = 0
    public private(set) var anyoneCame = false
    /// An offer has said who is sending.
    private var roomSeen = false
    /// Since when nobody has been sending (the join, until the first offer names someone).
    private var emptySince: MonotonicTime?

    public init(idleMilliseconds: Int64?, waitForSendersMilliseconds: Int64?, joinedAt: MonotonicTime) {
        idleNanoseconds = idleMilliseconds.map(Self.nanoseconds)
        waitForSendersNanoseconds = waitForSendersMilliseconds.map(Self.nanoseconds)
        emptySince = joinedAt
    }

    /// Whether anything here can end the session.
    public var isActive: Bool { idleNanoseconds != nil || waitForSendersNanoseconds != nil }

    /// An offer (or re-offer) names this many senders.
    public mutating func sendersChanged(to count: Int, now: MonotonicTime) {
        senders = max(0, count)
        roomSeen = true
        if senders > 0 {
            anyoneCame = true
            emptySince = nil
        } else if emptySince == nil {
            emptySince = now
        }
    }

    /// When the verdict falls due, if nobody comes first; nil while someone is sending (or no
    /// setting applies).
    public var deadline: MonotonicTime? {
        guard roomSeen, senders == 0, let emptySince, let wait = currentWait else { return nil }
        let (end, overflow) = emptySince.nanoseconds.addingReportingOverflow(wait)
        return MonotonicTime(nanoseconds: overflow ? .max : end)
    }

    public func verdict(now: MonotonicTime) -> Verdict? {
        guard let deadline, now >= deadline else { return nil }
        return !anyoneCame && waitForSendersNanoseconds != nil ? .nobodyCame : .idle
    }

    /// Saturating: the command line bounds both, but a wait must not overflow into the past.
    private static func nanoseconds(_ milliseconds: Int64) -> Int64 {
        let (value, overflow) = max(0, milliseconds).multipliedReportingOverflow(by: 1_000_000)
        return overflow ? .max : value
    }

    /// Before anyone came the sender wait applies (the idle wait where none is set); after, the idle wait.
    private var currentWait: Int64? {
        anyoneCame ? idleNanoseconds : (waitForSendersNanoseconds ?? idleNanoseconds)
    }
}
