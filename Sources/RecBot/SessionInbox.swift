import Foundation
import SoraSignalingCore

/// What reaches the join session while it records, on two paths. Control (a stop request,
/// the duration, a transport failure) is never dropped and is taken first, so a flood of
/// messages cannot delay it. Messages (WebSocket, data channels, candidates) wait in order in
/// a queue bounded by count and bytes; beyond it they are dropped and counted. The end of a
/// message source (a WebSocket or signaling-channel close) queues behind its messages, so
/// the messages before it are handled first, and is never dropped.
final class SessionInbox: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    struct Limits {
        var messages = 8_192
        var bytes = 64 << 20
    }

    struct Dropped: Equatable {
        var messages = 0
        var bytes = 0
    }

    private let lock = NSLock()
    private let limits: Limits
    private var control: [SignalingSession.Input] = []
    /// Taken slots are cleared at once, so a consumed message's memory does not wait for compaction.
    private var messages: [SignalingSession.Input?] = []
    private var head = 0
    private var queuedBytes = 0
    private var droppedCounts = Dropped()
    private var waiter: CheckedContinuation<SignalingSession.Input?, Never>?
    private var closed = false
    /// Called (outside the lock) when the first message is dropped, to log it once.
    private let onFirstDrop: @Sendable () -> Void

    init(limits: Limits = Limits(), onFirstDrop: @escaping @Sendable () -> Void = {}) {
        self.limits = limits
        self.onFirstDrop = onFirstDrop
    }

    var dropped: Dropped { lock.withLock { droppedCounts } }
    /// Messages waiting to be handled.
    var depth: Int { lock.withLock { messages.count - head + control.count } }

    /// A stop or a failure: never dropped, handed out before any message.
    func post(control input: SignalingSession.Input) {
        deliver { control.append(input); return true }
    }

    /// A message, or the end of its source (`essential`: never dropped). False when dropped.
    @discardableResult
    func post(message input: SignalingSession.Input, essential: Bool = false) -> Bool {
        let size = Self.size(of: input)
        var firstDrop = false
        let accepted = deliver {
            let pendingCount = messages.count - head
            guard essential || (pendingCount < limits.messages && queuedBytes + size <= limits.bytes) else {
                firstDrop = droppedCounts.messages == 0
                droppedCounts.messages += 1
                droppedCounts.bytes += size
                return false
            }
            messages.append(input)
            queuedBytes += size
            return true
        }
        if firstDrop { onFirstDrop() }
        return accepted
    }

    /// The next input (control first); nil once closed and empty.
    func next() async -> SignalingSession.Input? {
        await withCheckedContinuation { continuation in
            let ready = lock.withLock { () -> SignalingSession.Input?? in
                if let input = takeLocked() { return .some(input) }
                if closed { return .some(nil) }
                precondition(waiter == nil, "SessionInbox has one consumer")
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// No more input will be waited for; what is queued can still be taken with `drain`.
    func close() {
        let woken = lock.withLock { () -> CheckedContinuation<SignalingSession.Input?, Never>? in
            closed = true
            defer { waiter = nil }
            return waiter
        }
        woken?.resume(returning: nil)
    }

    /// Everything still queued, messages only (after the session ended, to store what came in).
    func drainMessages() -> [SignalingSession.Input] {
        lock.withLock {
            defer { messages.removeAll(); head = 0; queuedBytes = 0 }
            return messages[head...].compactMap { $0 }
        }
    }

    @discardableResult
    private func deliver(_ enqueue: () -> Bool) -> Bool {
        let (accepted, woken) = lock.withLock { () -> (Bool, (CheckedContinuation<SignalingSession.Input?, Never>, SignalingSession.Input)?) in
            guard !closed, enqueue() else { return (false, nil) }
            guard let waiter, let input = takeLocked() else { return (true, nil) }
            self.waiter = nil
            return (true, (waiter, input))
        }
        if let (waiter, input) = woken { waiter.resume(returning: input) }
        return accepted
    }

    private func takeLocked() -> SignalingSession.Input? {
        if !control.isEmpty { return control.removeFirst() }
        guard head < messages.count, let input = messages[head] else { return nil }
        messages[head] = nil
        head += 1
        queuedBytes -= Self.size(of: input)
        if head == messages.count {
            messages.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 && head * 2 >= messages.count {  // compact now and then, not per message
            messages.removeFirst(head)
            head = 0
        }
        return input
    }

    private static func size(of input: SignalingSession.Input) -> Int {
        switch input {
        case .webSocketMessage(let text): text.utf8.count
        case .dataChannelMessage(_, _, let data): data.count
        case .localCandidate(let text): text.utf8.count
        default: 0
        }
    }
}
