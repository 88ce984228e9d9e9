import Synchronization

/// A stop asked for from outside (SIGINT/SIGTERM). It travels on its own path, not in the
/// session's event stream, so it is seen in every phase, including while signaling is still
/// connecting, and never waits behind data-channel messages.
final class StopRequest: Sendable {
    private struct State {
        var reason: String?
        var closed = false
        var waiters: [Int: CheckedContinuation<String?, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// The first request wins; later ones are ignored.
    func request(_ why: String) {
        let woken = state.withLock { state -> [CheckedContinuation<String?, Never>] in
            guard state.reason == nil else { return [] }
            state.reason = why
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume(returning: why) }
    }

    var requested: String? { state.withLock { $0.reason } }

    /// The reason once a stop is requested; nil when the request path is closed first, or
    /// the waiting task is cancelled (a rejoin's wait that ended otherwise leaves nothing behind).
    func wait() async -> String? {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate = state.withLock { state -> String?? in
                    if let reason = state.reason { return .some(reason) }
                    if state.closed || Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// No stop can matter any more (the session is over): waiters return nil.
    func close() {
        let woken = state.withLock { state -> [CheckedContinuation<String?, Never>] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume(returning: nil) }
    }
}

/// Claims an outcome once, for a race between two tasks.
final class FirstOutcome: Sendable {
    private let taken = Mutex(false)

    func claim() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}

/// Tasks to cancel together; one added after the cancel is cancelled at once.
final class TaskSet: Sendable {
    private struct State {
        var tasks: [Task<Void, Never>] = []
        var cancelled = false
    }

    private let state = Mutex(State())

    func add(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            if !state.cancelled { state.tasks.append(task) }
            return state.cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancelAll() {
        let all = state.withLock { state -> [Task<Void, Never>] in
            state.cancelled = true
            defer { state.tasks.removeAll() }
            return state.tasks
        }
        for task in all { task.cancel() }
    }
}
