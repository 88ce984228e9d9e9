import Dispatch

/// Runs an interop session's async steps on a queue of its own instead of the cooperative
/// pool. Swift Testing runs the synchronous scenario tests on that pool too (two threads on a
/// 2-core machine), and each blocks its thread for seconds at a time; an interop test that
/// waited its turn there would miss its peer's timeouts (webrtcbin and aiortc give up on
/// their own clocks). Serial dispatch queues run on overcommit threads, which the blocked
/// pool does not hold back.
final class PeerSessionExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = PeerSessionExecutor()
    private let queue = DispatchQueue(label: "recbot.interop-session")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
