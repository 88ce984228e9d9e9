import NIOCore
import SystemClock
import WireCoding

/// A callback on an event loop at a time on the transport's clock. For the system clock it is
/// NIO's own timer (NIO's deadlines are CLOCK_MONOTONIC, the system clock's; it is cheap to
/// move, and the core's deadline moves on most read batches). For any other clock (a simulated
/// one) it is a task sleeping on that clock, so the transport waits on the clock it reads.
enum DeadlineTimer {
    case nio(Scheduled<Void>)
    case clock(Task<Void, Never>)

    /// Runs `body` on `loop` at `deadline` (at once if it has passed), unless cancelled first.
    static func schedule(at deadline: MonotonicTime, clock: any TimeSource, on loop: EventLoop,
                         _ body: @escaping @Sendable () -> Void) -> DeadlineTimer {
        guard clock is SystemTimeSource else {
            return .clock(Task {
                guard (try? await clock.sleep(until: deadline)) != nil else { return }  // cancelled
                loop.execute(body)
            })
        }
        return .nio(loop.scheduleTask(in: .nanoseconds(deadline.nanosecondsLeft(from: clock.now())), body))
    }

    /// A task's body may already be queued on the loop; the owner checks that it still wants it.
    func cancel() {
        switch self {
        case .nio(let scheduled): scheduled.cancel()
        case .clock(let task): task.cancel()
        }
    }
}
