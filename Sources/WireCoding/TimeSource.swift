/// Where the time comes from, injected: the cores take `MonotonicTime` as input, and everything
/// above them (the session, the recorder, the catalog writer, the uploader) asks one of these
/// instead of reading a clock, so a test can run them on a simulated clock. `SystemTimeSource`
/// (target SystemClock, which no protocol core depends on) is the only place that reads the
/// operating system's clocks.
public protocol TimeSource: Sendable {
    /// Monotonic time, for deadlines and durations.
    func now() -> MonotonicTime
    /// Wall-clock time in milliseconds since the Unix epoch, for what is stored and shown.
    func wallClockMilliseconds() -> Int64
}
