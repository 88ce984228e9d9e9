import Foundation
import WireCoding

/// A clock a test moves by hand: what the session, the recorder or the catalog writer read
/// through their `TimeSource` is exactly what the test set.
public final class ManualTimeSource: TimeSource, @unchecked Sendable {
    private let lock = NSLock()
    private var monotonic: MonotonicTime
    private var wallClock: Int64

    public init(monotonic: MonotonicTime = .milliseconds(0), wallClockMilliseconds: Int64 = 1_700_000_000_000) {
        (self.monotonic, self.wallClock) = (monotonic, wallClockMilliseconds)
    }

    public func now() -> MonotonicTime { lock.withLock { monotonic } }

    public func wallClockMilliseconds() -> Int64 { lock.withLock { wallClock } }

    /// Moves both clocks on.
    public func advance(milliseconds: Int64) {
        lock.withLock {
            monotonic = monotonic.adding(milliseconds: milliseconds)
            wallClock += milliseconds
        }
    }
}
