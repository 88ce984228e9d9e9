import Glibc

/// Where the time comes from, injected: the cores take `MonotonicTime` as input, and everything
/// above them (the session, the recorder, the catalog writer, the uploader) asks one of these
/// instead of reading a clock, so a test can run them on a simulated clock. `SystemTimeSource`
/// is the only place that reads the operating system's clocks.
public protocol TimeSource: Sendable {
    /// Monotonic time, for deadlines and durations.
    func now() -> MonotonicTime
    /// Wall-clock time in milliseconds since the Unix epoch, for what is stored and shown.
    func wallClockMilliseconds() -> Int64
}

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
