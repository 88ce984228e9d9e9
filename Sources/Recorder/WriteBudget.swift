import Synchronization

/// Bytes of media waiting to be written, across every recorder of the process. Each file's
/// queue has its own bound; this one keeps the sum bounded too, so many senders behind one slow
/// disk cannot together take unbounded memory (beyond it, frames are dropped and counted as
/// backpressure, the same as a full file queue).
public final class WriteBudget: Sendable {
    /// What the recorders share unless given another budget.
    public static let shared = WriteBudget(limitBytes: 256 << 20)

    public let limitBytes: Int
    private let reserved = Atomic<Int>(0)

    public init(limitBytes: Int) { self.limitBytes = limitBytes }

    /// Bytes reserved now.
    public var reservedBytes: Int { reserved.load(ordering: .relaxed) }

    /// Reserves `size` bytes if they fit.
    public func reserve(_ size: Int) -> Bool {
        var current = reserved.load(ordering: .relaxed)
        while current + size <= limitBytes {
            let (exchanged, original) = reserved.compareExchange(expected: current, desired: current + size, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    public func release(_ size: Int) { reserved.subtract(size, ordering: .relaxed) }
}
