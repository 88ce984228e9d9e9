import Foundation
import SoraSignalingCore
import Synchronization

/// What reaches the join session while it records, on two paths. Control (a stop request,
/// the duration, a transport failure) is never dropped and is taken first, so a flood of
/// messages cannot delay it. Messages (WebSocket, data channels, candidates) wait in order in
/// a queue bounded by count and bytes; beyond it they are dropped and counted. The end of a
/// message source (a WebSocket or signaling-channel close) queues behind its messages, so
/// the messages before it are handled first, and is never dropped.
final class SessionInbox: Sendable {
    struct Limits {
        var messages = 8_192
        var bytes = 64 << 20
    }

    struct Dropped: Equatable {
        var messages = 0
        var bytes = 0
    }

    /// The queues and the one waiting consumer, behind the mutex.
    private struct Queues {
        var control: [SignalingSession.Input] = []
        /// Taken slots are cleared at once, so a consumed message's memory does not wait for compaction.
        var messages: [SignalingSession.Input?] = []
        var head = 0
        var queuedBytes = 0
        var dropped = Dropped()
        var waiter: CheckedContinuation<SignalingSession.Input?, Never>?
        var closed = false

        var depth: Int { messages.count - head + control.count }

        mutating func take() -> SignalingSession.Input? {
            if !control.isEmpty { return control.removeFirst() }
            guard head < messages.count, let input = messages[head] else { return nil }
            messages[head] = nil
            head += 1
            queuedBytes -= SessionInbox.size(of: input)
            if head == messages.count {
                messages.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1_024 && head * 2 >= messages.count {  // compact now and then, not per message
                messages.removeFirst(head)
                head = 0
            }
            return input
        }
    }

    private let queues = Mutex(Queues())
    private let limits: Limits
    /// Called (outside the lock) when the first message is dropped, to log it once.
    private let onFirstDrop: @Sendable () -> Void

    init(limits: Limits = Limits(), onFirstDrop: @escaping @Sendable () -> Void = {}) {
        self.limits = limits
        self.onFirstDrop = onFirstDrop
    }

    var dropped: Dropped { queues.withLock { $0.dropped } }
    /// Messages waiting to be handled.
    var depth: Int { queues.withLock { $0.depth } }

    /// A stop or a failure: never dropped, handed out before any message.
    func post(control input: SignalingSession.Input) {
        deliver { queues in
            queues.control.append(input)
            return true
        }
    }

    /// A message, or the end of its source (`essential`: never dropped). False when dropped.
    @discardableResult
    func post(message input: SignalingSession.Input, essential: Bool = false) -> Bool {
        let size = Self.size(of: input)
        let limits = self.limits
        var firstDrop = false
        let accepted = deliver { queues in
            let pendingCount = queues.messages.count - queues.head
            guard essential || (pendingCount < limits.messages && queues.queuedBytes + size <= limits.bytes) else {
                firstDrop = queues.dropped.messages == 0
                queues.dropped.messages += 1
                queues.dropped.bytes += size
                return false
            }
            queues.messages.append(input)
            queues.queuedBytes += size
            return true
        }
        if firstDrop { onFirstDrop() }
        return accepted
    }

    /// The next input (control first); nil once closed and empty.
    func next() async -> SignalingSession.Input? {
        await withCheckedContinuation { continuation in
            let ready = queues.withLock { queues -> SignalingSession.Input?? in
                if let input = queues.take() { return .some(input) }
                if queues.closed { return .some(nil) }
                precondition(queues.waiter == nil, "SessionInbox has one consumer")
                queues.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// No more input will be waited for; what is queued can still be taken with `drain`.
    func close() {
        let woken = queues.withLock { queues -> CheckedContinuation<SignalingSession.Input?, Never>? in
            queues.closed = true
            defer { queues.waiter = nil }
            return queues.waiter
        }
        woken?.resume(returning: nil)
    }

    /// Everything still queued, messages only (after the session ended, to store what came in).
    func drainMessages() -> [SignalingSession.Input] {
        queues.withLock { queues in
            defer { (queues.messages, queues.head, queues.queuedBytes) = ([], 0, 0) }
            return queues.messages[queues.head...].compactMap { $0 }
        }
    }

    @discardableResult
    private func deliver(_ enqueue: (inout Queues) -> Bool) -> Bool {
        let (accepted, woken) = queues.withLock { queues -> (Bool, (CheckedContinuation<SignalingSession.Input?, Never>, SignalingSession.Input)?) in
            guard !queues.closed, enqueue(&queues) else { return (false, nil) }
            guard let waiter = queues.waiter, let input = queues.take() else { return (true, nil) }
            queues.waiter = nil
            return (true, (waiter, input))
        }
        if let (waiter, input) = woken { waiter.resume(returning: input) }
        return accepted
    }

    fileprivate static func size(of input: SignalingSession.Input) -> Int {
        switch input {
        case .webSocketMessage(let text): text.utf8.count
        case .dataChannelMessage(_, _, let data, _): data.count
        case .localCandidate(let text): text.utf8.count
        default: 0
        }
    }
}
