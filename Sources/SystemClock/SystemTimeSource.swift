import Glibc
import NIOCore
import NIOPosix
import WireCoding

/// The operating system's clocks: CLOCK_MONOTONIC (NIO's and Dispatch's uptime clock) and
/// CLOCK_REALTIME.
public struct SystemTimeSource: TimeSource {
    public init() {}

    public func now() -> MonotonicTime { MonotonicTime(nanoseconds: Self.read(CLOCK_MONOTONIC)) }

    public func wallClockMilliseconds() -> Int64 { Self.read(CLOCK_REALTIME) / 1_000_000 }

    /// On an event loop's timer rather than `Task.sleep`: it fires on NIO's own thread and wakes
    /// the sleeper through a continuation, so a deadline (a request's limit, a drain's end, a
    /// backoff) does not wait for a thread of Swift's cooperative pool, which blocking work
    /// elsewhere in the process can hold. Cancelling the task cancels the timer.
    public func sleep(until deadline: MonotonicTime) async throws {
        try Task.checkCancellation()
        let delay = deadline.nanosecondsLeft(from: now())
        let scheduled = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .nanoseconds(delay)) {}
        try await withTaskCancellationHandler {
            do { try await scheduled.futureResult.get() } catch { throw CancellationError() }
        } onCancel: {
            scheduled.cancel()
        }
    }

    private static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
