import Foundation

/// A stop asked for from outside (SIGINT/SIGTERM). It travels on its own path, not in the
/// session's event stream, so it is seen in every phase, including while signaling is still
/// connecting, and never waits behind data-channel messages.
final class StopRequest: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var reason: String?
    private var closed = false
    private var waiters: [CheckedContinuation<String?, Never>] = []

    /// The first request wins; later ones are ignored.
    func request(_ why: String) {
        let woken = lock.withLock { () -> [CheckedContinuation<String?, Never>] in
            guard reason == nil else { return [] }
            reason = why
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in woken { waiter.resume(returning: why) }
    }

    var requested: String? { lock.withLock { reason } }

    /// The reason once a stop is requested; nil when the request path is closed first.
    func wait() async -> String? {
        await withCheckedContinuation { continuation in
            let immediate = lock.withLock { () -> String?? in
                if let reason { return .some(reason) }
                if closed { return .some(nil) }
                waiters.append(continuation)
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// No stop can matter any more (the session is over): waiters return nil.
    func close() {
        let woken = lock.withLock { () -> [CheckedContinuation<String?, Never>] in
            closed = true
            defer { waiters.removeAll() }
            return waiters
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
