import Foundation
import WireCoding

/// A clock a test moves by hand: what the session, the recorder or the catalog writer read
/// through their `TimeSource` is exactly what the test set, and whoever sleeps on it wakes when
/// `advance` reaches its deadline (in deadline order), or when its task is cancelled.
public final class ManualTimeSource: TimeSource, @unchecked Sendable {
    private let lock = NSLock()
    private var monotonic: MonotonicTime
    private var wallClock: Int64
    private var sleepers: [UInt64: (deadline: MonotonicTime, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var nextSleeper: UInt64 = 0

    public init(monotonic: MonotonicTime = .milliseconds(0), wallClockMilliseconds: Int64 = 1_700_000_000_000) {
        (self.monotonic, self.wallClock) = (monotonic, wallClockMilliseconds)
    }

    public func now() -> MonotonicTime { lock.withLock { monotonic } }

    public func wallClockMilliseconds() -> Int64 { lock.withLock { wallClock } }

    /// How many tasks sleep on this clock now.
    public var sleeping: Int { lock.withLock { sleepers.count } }

    public func sleep(until deadline: MonotonicTime) async throws {
        let id = lock.withLock { () -> UInt64 in
            defer { nextSleeper += 1 }
            return nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = lock.withLock { () -> Bool in
                    if Task.isCancelled { return true }
                    guard deadline > monotonic else { return true }
                    sleepers[id] = (deadline, continuation)
                    return false
                }
                if due {
                    if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                }
            }
        } onCancel: {
            lock.withLock { sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves both clocks on, and wakes whoever sleeps until then.
    public func advance(milliseconds: Int64) {
        let due = lock.withLock { () -> [CheckedContinuation<Void, any Error>] in
            monotonic = monotonic.adding(milliseconds: milliseconds)
            wallClock += milliseconds
            let woken = sleepers.filter { $0.value.deadline <= monotonic }.sorted { $0.value.deadline < $1.value.deadline }
            for (id, _) in woken { sleepers[id] = nil }
            return woken.map(\.value.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}
