import Glibc
import WireCoding

/// The operating system's clocks: CLOCK_MONOTONIC (NIO's and Dispatch's uptime clock) and
/// CLOCK_REALTIME.
public struct SystemTimeSource: TimeSource {
    public init() {}

    public func now() -> MonotonicTime { MonotonicTime(nanoseconds: Self.read(CLOCK_MONOTONIC)) }

    public func wallClockMilliseconds() -> Int64 { Self.read(CLOCK_REALTIME) / 1_000_000 }

    private static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
