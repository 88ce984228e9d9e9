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
    /// Suspends until `deadline` on this clock (at once if it has passed): every driver waits
    /// here, never on `Task.sleep`, so a session runs on a simulated clock as it reads one.
    /// Throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: MonotonicTime) async throws
}

extension TimeSource {
    /// Suspends for `nanoseconds` from now (saturating: a very long wait is not an overflow).
    public func sleep(nanoseconds: Int64) async throws {
        let (deadline, overflow) = now().nanoseconds.addingReportingOverflow(max(0, nanoseconds))
        try await sleep(until: MonotonicTime(nanoseconds: overflow ? .max : deadline))
    }
}
