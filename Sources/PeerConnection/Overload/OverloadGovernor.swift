import WireCoding

/// When recbot sheds video, and how fast it takes it back (`OverloadGovernor`).
public struct OverloadPolicy: Sendable, Equatable {
    /// Shedding is off: what the core cannot keep up with waits in the receive backlog (and is
    /// dropped there when that is full).
    public var enabled = true
    /// How long a media datagram may wait between the socket and the core before video is
    /// shed. Well above a busy host's scheduling hiccups, well below what fills the backlog.
    public var shedAboveNanoseconds: Int64 = 200_000_000
    /// Below this wait the core has room again, and paused video comes back step by step.
    public var calmBelowNanoseconds: Int64 = 50_000_000
    /// How often the wait is judged (its largest sample in the interval).
    public var intervalNanoseconds: Int64 = 250_000_000
    /// How long the wait must stay above the threshold before the first stream is paused: a
    /// busy host's stall of a few hundred milliseconds is what the backlog is for, and pausing
    /// for it would cost every paused stream a keyframe's wait.
    public var sustainNanoseconds: Int64 = 1_000_000_000
    /// Calm time before each step of resuming.
    public var resumeStepNanoseconds: Int64 = 250_000_000
    /// How long one stream stays paused before another takes its turn (while shedding lasts).
    /// Every turn costs a keyframe, so turns are long.
    public var rotationNanoseconds: Int64 = 10_000_000_000

    public init() {}
}

/// Decides how many video streams to pause, and which, from how long media waits before the
/// core handles it: a sans-IO policy fed one sample per batch of datagrams.
///
/// - Shedding grows by an eighth of the video streams per interval while the wait stays high
///   and is not already falling (the backlog behind a pause drains quickly, because a paused
///   stream's queued packets are dropped unread); by half when media waits five times the
///   threshold (a sudden loss of capacity).
/// - Resuming starts with one stream in 8 and doubles each calm step up to a half, so a
///   small surplus is probed gently and a lifted limit is back within a second of the
///   backlog draining (before the keyframes); a new overload resets it. Calm counts from the
///   start of the first interval whose every sample was calm, so the first step comes at the
///   end of that interval, not one interval later.
/// - The paused streams are a window over the streams in a fixed order that slides along it,
///   so every sender pauses in turn and for about as long as every other.
struct OverloadGovernor {
    let policy: OverloadPolicy
    private var intervalStart: MonotonicTime?
    private var intervalMaximum: Int64 = 0
    /// The largest wait of the interval `decide` last judged (what a log line should quote).
    private(set) var previousMaximum: Int64 = 0
    private var calmSince: MonotonicTime?
    /// Since when the wait has stayed above the threshold (nil while it is below).
    private var highSince: MonotonicTime?
    private var resumeFraction = Self.firstResumeFraction
    private static let firstResumeFraction = 1.0 / 8
    /// How many streams are paused, and where their window starts in the order.
    private(set) var pausedCount = 0
    private var offset = 0
    private var rotationCredit = 0.0

    init(policy: OverloadPolicy) { self.policy = policy }

    /// One batch's wait. True when an interval has ended and `decide` should run.
    mutating func observe(wait: Int64, now: MonotonicTime) -> Bool {
        guard policy.enabled else { return false }
        intervalMaximum = max(intervalMaximum, wait)
        guard let start = intervalStart else {
            intervalStart = now
            return false
        }
        return now.nanoseconds - start.nanoseconds >= policy.intervalNanoseconds
    }

    /// The streams (of `order`, fixed by the caller) to pause from now on; nil when there is
    /// nothing to pause or resume (`order` is not asked for then: it sorts every stream).
    mutating func decide(order: () -> [UInt32], now: MonotonicTime) -> Set<UInt32>? {
        let wait = intervalMaximum
        defer {
            previousMaximum = wait
            intervalMaximum = 0
            intervalStart = now
        }
        if wait > policy.shedAboveNanoseconds {
            highSince = highSince ?? intervalStart ?? now
        } else {
            highSince = nil
        }
        let sustained = highSince.map { now.nanoseconds - $0.nanoseconds >= policy.sustainNanoseconds } ?? false
        guard pausedCount > 0 || sustained else { return nil }
        let order = order()
        let count = order.count
        guard count > 0 else {
            pausedCount = 0
            return []
        }
        pausedCount = min(pausedCount, count)
        if wait > policy.shedAboveNanoseconds {
            calmSince = nil
            resumeFraction = Self.firstResumeFraction
            // Hold while the wait falls by a quarter or more: the last step is still draining.
            if previousMaximum <= policy.shedAboveNanoseconds || wait * 4 > previousMaximum * 3 {
                let severe = wait > 5 * policy.shedAboveNanoseconds
                pausedCount = min(count, pausedCount + Self.step(count, fraction: severe ? 1.0 / 2 : 1.0 / 8))
            }
        } else if wait < policy.calmBelowNanoseconds, pausedCount > 0 {
            // The whole interval was calm: it counts.
            let since = calmSince ?? intervalStart ?? now
            calmSince = since
            if now.nanoseconds - since.nanoseconds >= policy.resumeStepNanoseconds {
                // The longest-paused streams (the window's front) come back first.
                let step = min(pausedCount, Self.step(count, fraction: resumeFraction))
                pausedCount -= step
                offset = (offset + step) % count
                resumeFraction = min(1.0 / 2, resumeFraction * 2)
                calmSince = now
            }
        } else {
            calmSince = nil
        }
        rotate(count: count)
        return Set((0..<pausedCount).map { order[(offset + $0) % count] })
    }

    /// Slides the window so each paused stream gets its turn to run after `rotationNanoseconds`.
    private mutating func rotate(count: Int) {
        guard pausedCount > 0, pausedCount < count else {
            rotationCredit = 0
            return
        }
        rotationCredit += Double(pausedCount) * Double(policy.intervalNanoseconds) / Double(policy.rotationNanoseconds)
        let shift = Int(rotationCredit)
        rotationCredit -= Double(shift)
        offset = (offset + shift) % count
    }

    private static func step(_ count: Int, fraction: Double) -> Int { max(1, Int((Double(count) * fraction).rounded(.up))) }
}
