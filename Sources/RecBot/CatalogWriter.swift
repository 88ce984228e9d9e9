import Archive
import Foundation
import Logging

/// Catalog writes off the network event loop: one serial queue, bounded by count and by the
/// bytes the queued writes carry (event payloads). Dropped writes are counted and logged (a
/// full queue means the disk cannot keep up).
final class CatalogWriter: @unchecked Sendable {
    let catalog: Catalog
    private let queue = DispatchQueue(label: "recbot.catalog-writer")
    private let lock = NSLock()
    private var pending = 0
    private var pendingBytes = 0
    private var droppedWrites = 0
    private var droppedEventCount = 0
    private var eventBatch: [(EventRecord, Int)] = []
    private(set) var firstError: CatalogError?
    private let logger: Logger
    static let maximumPending = 50_000
    static let maximumPendingBytes = 64 << 20

    init(catalog: Catalog, logger: Logger) {
        self.catalog = catalog
        self.logger = logger
    }

    /// `bytes`: what the write carries (an event's payload); rows without one count a little.
    /// `essential` writes (the session's and its recordings' rows, a handful per sender) are
    /// never dropped, so a flood of events cannot cost the catalog its record of the files.
    func submit(_ what: String, bytes: Int = 256, essential: Bool = false, _ body: @escaping @Sendable (Catalog) throws(CatalogError) -> Void) {
        guard admit(what, bytes: bytes, essential: essential) else { return }
        queue.async { [self] in
            do throws(CatalogError) { try body(catalog) } catch {
                lock.withLock { if firstError == nil { firstError = error } }
                logger.error("catalog write failed", metadata: ["what": "\(what)", "error": "\(error)"])
            }
            lock.withLock { pending -= 1; pendingBytes -= bytes }
        }
    }

    /// An event to insert. Events are batched: all that wait go in one transaction, so a burst
    /// of thousands a second costs a few commits, not one each. False when it was dropped.
    @discardableResult
    func submitEvent(_ event: EventRecord, bytes: Int) -> Bool {
        guard admit("event", bytes: bytes, essential: false) else {
            lock.withLock { droppedEventCount += 1 }
            return false
        }
        let startsBatch = lock.withLock { () -> Bool in
            eventBatch.append((event, bytes))
            return eventBatch.count == 1
        }
        if startsBatch { queue.async { [self] in flushEvents() } }
        return true
    }

    private func flushEvents() {
        let batch = lock.withLock { () -> [(EventRecord, Int)] in
            defer { eventBatch.removeAll(keepingCapacity: true) }
            return eventBatch
        }
        guard !batch.isEmpty else { return }
        do throws(CatalogError) { try catalog.insertEvents(batch.map(\.0)) } catch {
            lock.withLock { if firstError == nil { firstError = error } }
            logger.error("catalog write failed", metadata: ["what": "events", "count": "\(batch.count)", "error": "\(error)"])
        }
        let bytes = batch.reduce(0) { $0 + $1.1 }
        lock.withLock { pending -= batch.count; pendingBytes -= bytes }
    }

    /// Takes a place in the queue, or counts the drop (logged once, not per write: a flood of
    /// drops must not become a flood of log lines).
    private func admit(_ what: String, bytes: Int, essential: Bool) -> Bool {
        let (accepted, firstDrop) = lock.withLock { () -> (Bool, Bool) in
            guard essential || (pending < CatalogWriter.maximumPending && pendingBytes + bytes <= CatalogWriter.maximumPendingBytes) else {
                droppedWrites += 1
                return (false, droppedWrites == 1)
            }
            pending += 1
            pendingBytes += bytes
            return (true, false)
        }
        if firstDrop { logger.error("catalog writes dropped: queue full (counted; total at the end)", metadata: ["what": "\(what)"]) }
        return accepted
    }

    /// Events that were dropped because the queue was full (so the report does not count them as stored).
    var droppedEvents: Int { lock.withLock { droppedEventCount } }

    /// Waits until every submitted write is done, at most `timeoutSeconds` (the catalog may sit
    /// on a disk that hangs); false when it gave up.
    func drain(timeoutSeconds: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + max(0, timeoutSeconds)) == .success
    }

    var error: CatalogError? { lock.withLock { firstError } }
    var dropped: Int { lock.withLock { droppedWrites } }
    /// Writes waiting for the catalog, and the bytes they carry.
    var queued: (writes: Int, bytes: Int) { lock.withLock { (pending, pendingBytes) } }
}
