import WireCoding

/// When to join the channel again after a connection to Sora failed, as a sans-IO core: the
/// driver reports failures and recoveries with the time, and gets back when to try next (or
/// that it must stop). The backoff starts within a second and doubles to a cap, with jitter,
/// so a fleet of bots that lost one Sora node do not all come back in the same instant.
public struct RejoinSchedule {
    public struct Settings: Sendable, Equatable {
        /// Attempts per outage; nil: until the session's window ends. 0 turns rejoining off.
        public var maximumAttempts: Int?
        public var firstDelayNanoseconds: Int64 = 1_000_000_000
        public var maximumDelayNanoseconds: Int64 = 30_000_000_000
        /// A connection that lived this long before it failed starts the backoff over;
        /// one that failed sooner (a flapping network, a node that accepts and drops) does not.
        var stableNanoseconds: Int64 = 30_000_000_000

        public init(maximumAttempts: Int? = nil) { self.maximumAttempts = maximumAttempts }
    }

    enum Decision: Equatable {
        /// Try again at this time.
        case retry(at: MonotonicTime)
        /// No more attempts: the outage lasts until the session ends.
        case giveUp(String)
    }

    /// The outage being ridden out.
    struct Outage: Equatable {
        var ordinal: Int
        var startedAt: MonotonicTime
        var cause: String
        var attempts = 0
        /// The last media the failed connection received (nil: none).
        var lastMediaAt: MonotonicTime?
    }

    /// An outage that ended: the session records again.
    struct Recovery: Equatable {
        var outage: Outage
        var endedAt: MonotonicTime
        var mediaLostNanoseconds: Int64
    }

    let settings: Settings
    private(set) var outage: Outage?
    private(set) var outages = 0
    /// Failures since the last stable connection: the backoff's exponent.
    private var failuresInARow = 0
    private var random: () -> Double

    /// `random` returns a number in [0, 1) (injected so tests are deterministic).
    init(settings: Settings, random: @escaping () -> Double) {
        self.settings = settings
        self.random = random
    }

    /// The recording connection failed for a reason joining again may cure.
    /// `connectedAt`: when it started recording; `lastMediaAt`: its last frame.
    mutating func connectionFailed(cause: String, connectedAt: MonotonicTime, lastMediaAt: MonotonicTime?, now: MonotonicTime) -> Decision {
        if now.nanoseconds - connectedAt.nanoseconds >= settings.stableNanoseconds { failuresInARow = 0 }
        outages += 1
        outage = Outage(ordinal: outages, startedAt: now, cause: cause, lastMediaAt: lastMediaAt)
        return next(now: now)
    }

    /// A join attempt during the outage failed (before it recorded anything).
    mutating func attemptFailed(now: MonotonicTime) -> Decision {
        guard outage != nil else { return .giveUp("no outage") }
        return next(now: now)
    }

    /// A join attempt starts now.
    mutating func attemptStarted() { outage?.attempts += 1 }

    /// The rejoined connection records: the outage is over. `firstMediaAt`: its first frame,
    /// when one came already (else the outage's media loss runs to `now`).
    mutating func recovered(now: MonotonicTime, firstMediaAt: MonotonicTime? = nil) -> Recovery? {
        guard let ended = outage else { return nil }
        outage = nil
        let from = min(ended.lastMediaAt ?? ended.startedAt, ended.startedAt)
        let to = firstMediaAt ?? now
        return Recovery(outage: ended, endedAt: now, mediaLostNanoseconds: max(0, to.nanoseconds - from.nanoseconds))
    }

    private mutating func next(now: MonotonicTime) -> Decision {
        guard let outage else { return .giveUp("no outage") }
        if let limit = settings.maximumAttempts, outage.attempts >= limit {
            return .giveUp(limit == 0 ? "rejoining is off (--no-rejoin)" : "\(limit) rejoin attempt(s) failed")
        }
        let delay = delay(afterFailures: failuresInARow)
        failuresInARow += 1
        return .retry(at: now.adding(nanoseconds: delay))
    }

    /// Full-range jitter over the upper half: attempt n waits between half and all of
    /// min(first × 2ⁿ, cap), so the first comes within `firstDelay` and none past the cap.
    func delay(afterFailures failures: Int) -> Int64 {
        let doubled = settings.firstDelayNanoseconds << min(failures, 20)
        let ceiling = min(settings.maximumDelayNanoseconds, doubled)
        return ceiling / 2 + Int64(Double(ceiling / 2) * min(max(random(), 0), 1))
    }
}
