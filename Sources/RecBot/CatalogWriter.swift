import Archive
import Foundation
import Logging
import WireCoding

/// Catalog writes off the network event loop: one serial queue, bounded by count and by the
/// bytes the queued writes carry (event payloads). Dropped writes are counted and logged (a
/// full queue means the catalog cannot keep up).
///
/// When the catalog is unreachable (a PostgreSQL server gone away), writes go to a local
/// spool (`CatalogSpool`) in order, and are replayed, still in order, once the server answers
/// again: the recording goes on and the catalog ends up with every row.
final class CatalogWriter: @unchecked Sendable {
    let catalog: any CatalogStore
    private let queue = DispatchQueue(label: "recbot.catalog-writer")
    private let lock = NSLock()
    private var pending = 0
    private var pendingBytes = 0
    private var droppedWrites = 0
    private var droppedEventCount = 0
    /// Events admitted to the queue (so counted as stored by the event log) that a full spool refused.
    private var spoolDroppedEventCount = 0
    private var eventBatch: [(EventRecord, Int)] = []
    private(set) var firstError: CatalogError?
    private let logger: Logger
    static let maximumPending = 50_000
    static let maximumPendingBytes = 64 << 20

    // Spooling state: touched on `queue` only.
    private let spoolPath: String?
    private var spool: CatalogSpool?
    private var lastReplayAttempt = MonotonicTime(nanoseconds: 0)
    private let clock: any TimeSource
    private var replayScheduled = false
    private var lastHeld: String?
    /// The spool's size as last seen on `queue`, and every write that ever went there: for the
    /// metrics (read from other threads, so under `lock`).
    private var spoolSize = (writes: 0, bytes: 0)
    private var spooledTotal = 0
    /// How often the writer asks an unreachable catalog again.
    let replayInterval: Double

    /// `spoolPath`: where writes wait while the catalog is unreachable; nil disables spooling
    /// (an SQLite catalog is never "unreachable").
    init(catalog: any CatalogStore, spoolPath: String? = nil, replayIntervalSeconds: Double = 2, clock: any TimeSource,
         logger: Logger) {
        self.catalog = catalog
        self.clock = clock
        self.spoolPath = spoolPath
        self.replayInterval = replayIntervalSeconds
        self.logger = logger
    }

    /// `bytes`: what the write carries (an event's payload); rows without one count a little.
    /// Essential writes (the session's and its recordings' rows, a handful per sender) are
    /// never dropped, so a flood of events cannot cost the catalog its record of the files.
    func submit(_ write: CatalogWrite, bytes: Int = 256) {
        guard admit(write.name, bytes: bytes, essential: write.isEssential) else { return }
        queue.async { [self] in
            perform(write)
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
        perform(.events(batch.map(\.0)))
        let bytes = batch.reduce(0) { $0 + $1.1 }
        lock.withLock { pending -= batch.count; pendingBytes -= bytes }
    }

    // MARK: Applying, spooling, replaying (on `queue`)

    private func perform(_ write: CatalogWrite) {
        guard spooledAtFinish == nil else { return fail(write.name, CatalogError(path: catalog.location, reason: .sqlite("written after the end"))) }
        if spool != nil {
            replayIfDue()
            if let spool, !spool.isEmpty { keep(write, in: spool, attempted: false); return }
        }
        do throws(CatalogError) { try catalog.apply(write) } catch {
            if error.isRetryable, let spool = openSpool(after: error) {
                // Only a lost connection may have committed it; a server that answered rolled it back.
                keep(write, in: spool, attempted: error.mayHaveBeenApplied)
            } else {
                fail(write.name, error)
            }
        }
    }

    private func openSpool(after error: CatalogError) -> CatalogSpool? {
        if let spool { return spool }
        guard let spoolPath else { return nil }
        do throws(CatalogError) {
            guard let opened = try CatalogSpool(path: spoolPath) else {
                fail("spool", CatalogError(path: spoolPath, reason: .sqlite("the spool is locked by another process")))
                return nil
            }
            spool = opened
            logger.error("catalog cannot take writes: they go to the local spool until it does", metadata: [
                "error": "\(error)", "spool": "\(spoolPath)",
            ])
            lastReplayAttempt = clock.now()
            scheduleReplay()
            return opened
        } catch {
            fail("spool", error)
            return nil
        }
    }

    private func keep(_ write: CatalogWrite, in spool: CatalogSpool, attempted: Bool) {
        do throws(CatalogError) {
            if try spool.append(write, attempted: attempted) {
                lock.withLock { spooledTotal += 1 }
            } else {
                countDrop(write.name, events: write.eventCount)
            }
        } catch {
            fail(write.name, error)
        }
        publishSpoolSize()
    }

    private func publishSpoolSize() {
        let size = (spool?.count ?? 0, spool?.bytes ?? 0)
        lock.withLock { spoolSize = size }
    }

    private func replayIfDue(force: Bool = false) {
        guard let spool, !spool.isEmpty else { return }
        guard force || clock.now() >= lastReplayAttempt.adding(nanoseconds: Int64(replayInterval * 1e9)) else { return }
        lastReplayAttempt = clock.now()
        defer { publishSpoolSize() }
        do throws(CatalogError) {
            let result = try spool.replay(into: catalog)
            for refusal in result.refused { fail("spooled write", CatalogError(path: catalog.location, reason: .server(refusal))) }
            if result.applied > 0 {
                logger.notice("catalog takes writes again: spooled writes applied", metadata: ["writes": "\(result.applied)"])
            }
            noteHeld(result.heldAt, in: spool)
        } catch {
            if error.isRetryable { return }
            fail("spool replay", error)
        }
    }

    /// A spooled write the catalog refuses for good holds the spool (it is never deleted):
    /// said once per write, not at every replay.
    private func noteHeld(_ heldAt: String?, in spool: CatalogSpool) {
        guard heldAt != lastHeld else { return }
        lastHeld = heldAt
        guard let heldAt else { return }
        fail("spooled write", CatalogError(path: catalog.location, reason: .server(
            "refused for good, kept with every later write in \(spool.path) for `recbot repair`: \(heldAt)")))
    }

    private func scheduleReplay() {
        guard !replayScheduled else { return }
        replayScheduled = true
        queue.asyncAfter(deadline: .now() + replayInterval) { [weak self] in
            guard let self else { return }
            replayScheduled = false
            replayIfDue()
            if let spool, !spool.isEmpty { scheduleReplay() }
        }
    }

    private func fail(_ what: String, _ error: CatalogError) {
        lock.withLock { if firstError == nil { firstError = error } }
        logger.error("catalog write failed", metadata: ["what": "\(what)", "error": "\(error)"])
    }

    // MARK: Admission

    /// Takes a place in the queue, or counts the drop (logged once, not per write: a flood of
    /// drops must not become a flood of log lines).
    private func admit(_ what: String, bytes: Int, essential: Bool) -> Bool {
        let accepted = lock.withLock { () -> Bool in
            guard essential || (pending < CatalogWriter.maximumPending && pendingBytes + bytes <= CatalogWriter.maximumPendingBytes) else {
                return false
            }
            pending += 1
            pendingBytes += bytes
            return true
        }
        if !accepted { countDrop(what, events: 0) }
        return accepted
    }

    private func countDrop(_ what: String, events: Int) {
        let first = lock.withLock { () -> Bool in
            droppedWrites += 1
            spoolDroppedEventCount += events
            return droppedWrites == 1
        }
        if first { logger.error("catalog writes dropped: no room (counted; total at the end)", metadata: ["what": "\(what)"]) }
    }

    /// Events that were dropped for lack of room, in the queue or in the spool.
    var droppedEvents: Int { lock.withLock { droppedEventCount + spoolDroppedEventCount } }
    /// Of those, the ones the event log had already counted as stored.
    var droppedAdmittedEvents: Int { lock.withLock { spoolDroppedEventCount } }

    /// Waits until every submitted write is done, at most `timeoutSeconds` (the catalog may sit
    /// on a disk that hangs); false when it gave up. With writes spooled, it asks the catalog
    /// once more; what is still spooled then stays in the file for `recbot repair`.
    func drain(timeoutSeconds: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            replayIfDue(force: true)
            if let spool, spool.isEmpty {
                spool.removeIfEmpty()
                self.spool = nil
            }
            done.signal()
        }
        return done.wait(timeout: .now() + max(0, timeoutSeconds)) == .success
    }

    /// The last drain: afterwards the spool, if writes are left in it, is closed and unlocked
    /// for `recbot repair`, and the catalog is not asked again.
    func finish(timeoutSeconds: Double) -> Bool {
        guard drain(timeoutSeconds: timeoutSeconds) else { return false }
        queue.sync {
            spooledAtFinish = (spool?.count ?? 0, spool?.path)
            spool = nil
        }
        return true
    }

    private var spooledAtFinish: (writes: Int, path: String?)?

    /// Writes still waiting in the spool for the catalog, and the spool's file.
    var spooled: (writes: Int, path: String?) {
        queue.sync { spooledAtFinish ?? (spool?.count ?? 0, spool.flatMap { $0.isEmpty ? nil : $0.path }) }
    }

    var error: CatalogError? { lock.withLock { firstError } }
    var dropped: Int { lock.withLock { droppedWrites } }
    /// Writes waiting for the catalog, and the bytes they carry.
    var queued: (writes: Int, bytes: Int) { lock.withLock { (pending, pendingBytes) } }
    /// Writes waiting in the spool (as of the last write or replay), their bytes, and how many
    /// went there in all.
    var spoolStats: (writes: Int, bytes: Int, total: Int) { lock.withLock { (spoolSize.writes, spoolSize.bytes, spooledTotal) } }
}

extension CatalogWrite {
    var eventCount: Int {
        if case .events(let events) = self { events.count } else { 0 }
    }
}
