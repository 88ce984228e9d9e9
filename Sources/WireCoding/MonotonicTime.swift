/// A point on a monotonic clock, in nanoseconds from an arbitrary origin. Protocol cores
/// take it as input instead of reading a clock, so tests can drive them with simulated time.
public struct MonotonicTime: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static func milliseconds(_ value: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: value * 1_000_000) }

    /// The earlier of two optional deadlines. Timers are recomputed after every batch of
    /// datagrams: folding with this builds no array, where `[…].compactMap { $0 }.min()` did.
    @inlinable
    public static func earliest(_ first: MonotonicTime?, _ second: MonotonicTime?) -> MonotonicTime? {
        guard let first else { return second }
        guard let second else { return first }
        return min(first, second)
    }

    public static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public func adding(milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: nanoseconds + milliseconds * 1_000_000) }
    public func adding(nanoseconds delta: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: nanoseconds + delta) }
    public func milliseconds(since earlier: MonotonicTime) -> Int64 { (nanoseconds - earlier.nanoseconds) / 1_000_000 }

    /// How long from `now` until this time, for a timer: 0 once it has passed, and saturating,
    /// so a deadline far in either direction is a long wait or none, not an overflow trap.
    public func nanosecondsLeft(from now: MonotonicTime) -> Int64 {
        let (difference, overflow) = nanoseconds.subtractingReportingOverflow(now.nanoseconds)
        return overflow ? (nanoseconds < 0 ? 0 : .max) : max(0, difference)
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}
