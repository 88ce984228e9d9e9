import NIOCore
import NIOPosix

/// A wait on an event loop's timer rather than `Task.sleep`: it wakes through a continuation,
/// which needs no thread of Swift's cooperative pool to fire, so the webhook deadlines (a
/// request's limit, a drain's end) hold however busy that pool is (blocking work elsewhere in
/// the process can hold its one thread per core). Cancelling the task cancels the timer.
enum LoopTimer {
    static func sleep(nanoseconds: UInt64) async {
        let scheduled = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .nanoseconds(Int64(clamping: nanoseconds))) {}
        await withTaskCancellationHandler {
            _ = try? await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }
}
