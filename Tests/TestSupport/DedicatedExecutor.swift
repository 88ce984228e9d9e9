import Foundation

/// Threads of its own for async tests whose timing matters (a deadline kept, a reply within
/// 2 s): Swift's cooperative pool has one thread per core, and the suite's many blocking tests
/// (a child process waited for, a Thread.sleep) hold them, so a continuation there can wait for
/// minutes on a 2-core machine. `await withTaskExecutorPreference(DedicatedExecutor.shared) { … }`
/// runs a test's tasks, its task groups' children and its sleeps' continuations here instead.
public final class DedicatedExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is guarded by `condition`.
    public static let shared = DedicatedExecutor(threads: 4)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    public init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "test-executor-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: UnownedJob) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
