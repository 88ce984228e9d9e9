import Foundation

/// A stop asked for from outside (SIGINT/SIGTERM). It travels on its own path, not in the
/// session's event stream, so it is seen in every phase, including while signaling is still
/// connecting, and never waits behind data-channel messages.
final class StopRequest: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var reason: String?
    private var closed = false
    private var waiters: [Int: CheckedContinuation<String?, Never>] = [:]
    private var nextWaiter = 0

    /// The first request wins; later ones are ignored.
    func request(_ why: String) {
        let woken = lock.withLock { () -> [CheckedContinuation<String?, Never>] in
            guard reason == nil else { return [] }
            reason = why
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in woken { waiter.resume(returning: why) }
    }

    var requested: String? { lock.withLock { reason } }

    /// The reason once a stop is requested; nil when the request path is closed first, or
    /// the waiting task is cancelled (a rejoin's wait that ended otherwise leaves nothing behind).
    func wait() async -> String? {
        let id = lock.withLock { () -> Int in nextWaiter += 1; return nextWaiter }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate = lock.withLock { () -> String?? in
                    if let reason { return .some(reason) }
                    if closed || Task.isCancelled { return .some(nil) }
                    waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            lock.withLock { waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// No stop can matter any more (the session is over): waiters return nil.
    func close() {
        let woken = lock.withLock { () -> [CheckedContinuation<String?, Never>] in
            closed = true
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in woken { waiter.resume(returning: nil) }
    }
}

/// Claims an outcome once, for a race between two tasks.
final class FirstOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = false

    func claim() -> Bool { lock.withLock { defer { taken = true }; return !taken } }
}

/// Tasks to cancel together; one added after the cancel is cancelled at once.
final class TaskSet: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []
    private var cancelled = false

    func add(_ task: Task<Void, Never>) {
        let cancelNow = lock.withLock { () -> Bool in
            if !cancelled { tasks.append(task) }
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancelAll() {
        let all = lock.withLock { () -> [Task<Void, Never>] in
            cancelled = true
            defer { tasks.removeAll() }
            return tasks
        }
        for task in all { task.cancel() }
    }
}
