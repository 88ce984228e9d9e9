import Glibc
import WireCoding

/// The operating system's clocks: CLOCK_MONOTONIC (NIO's and Dispatch's uptime clock) and
/// CLOCK_REALTIME.
public struct SystemTimeSource: TimeSource {
    public init() {}

    public func now() -> MonotonicTime { MonotonicTime(nanoseconds: Self.read(CLOCK_MONOTONIC)) }

    public func wallClockMilliseconds() -> Int64 { Self.read(CLOCK_REALTIME) / 1_000_000 }

    public func sleep(until deadline: MonotonicTime) async throws {
        let remaining = deadline.nanoseconds.subtractingReportingOverflow(now().nanoseconds)
        let nanoseconds = remaining.overflow ? (deadline.nanoseconds > 0 ? Int64.max : 0) : max(0, remaining.partialValue)
        try await Task.sleep(nanoseconds: UInt64(nanoseconds))
    }

    private static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
