import DiskLayout
import Foundation
import WebM
import WireCoding

/// The I/O half of a sender's recording: creates the file and applies the muxer's writes on a
/// serial queue of its own, bounded by bytes; survives a write error by cutting the file back
/// to its last whole cluster and finalizing it there.
///
/// `lock` guards what the caller's event loop reads (`pendingBytes`, `writeError`,
/// `writtenLength`) and is never held during file I/O, so a hung disk stalls this queue (then
/// `admit` refuses frames), never the event loop.
final class RecordingFile: @unchecked Sendable {
    enum Admission { case accepted, queueFull, fileFailed }

    /// Finalizing's outcome: `error` means nothing usable; `interruption` a usable file cut short.
    struct Finalized {
        var error: String?
        var interruption: String?
        var size: UInt64
        var muxer: WebMMuxer
    }

    /// The writer queue (internal so a test can hold it, as a hung disk would).
    let queue: DispatchQueue
    private let maximumPendingBytes: Int
    /// Shared with the other recordings of the process.
    private let budget: WriteBudget
    private let lock = NSLock()
    /// Touched only on `queue`.
    private var writer: WebMFileWriter?
    private var writtenLength: UInt64 = 0
    private var pendingBytes = 0
    private var writeError: String?
    /// Called on the queue, once, with the first error (its errno in the text).
    var onWriteFailed: (@Sendable (String) -> Void)?

    /// What ages a batch.
    private let clock: any TimeSource

    init(label: String, maximumPendingBytes: Int, budget: WriteBudget, clock: any TimeSource) {
        queue = DispatchQueue(label: label)
        self.clock = clock
        self.maximumPendingBytes = maximumPendingBytes
        self.budget = budget
    }

    /// The file's length after its last whole append.
    var length: UInt64 { lock.withLock { writtenLength } }

    /// mkdir and open are blocking file-system calls: they run on the queue, before any write.
    func create(in layout: ArchiveLayout, path: String) {
        queue.async { [self] in
            do {
                try layout.createDirectory()
                writer = try WebMFileWriter(creatingAt: path)
            } catch {
                fail("\(error)")
            }
        }
    }

    /// Reserves room for `size` bytes of a frame about to be muxed.
    func admit(_ size: Int) -> Admission {
        lock.withLock {
            if writeError != nil { return .fileFailed }
            guard pendingBytes + size <= maximumPendingBytes, budget.reserve(size) else { return .queueFull }
            pendingBytes += size
            return .accepted
        }
    }

    /// Gives back what `admit` reserved for a frame that was not muxed after all.
    func release(_ size: Int) {
        lock.withLock { pendingBytes -= size }
        budget.release(size)
    }

    /// Reservations (and writes) gathered on the caller's loop until the next flush: one queue
    /// hop per batch, not per frame (a hop wakes a thread; per frame, that was a tenth of the
    /// receive path's CPU, and most frames only join the muxer's open cluster).
    private var batch: [WebMWrite] = []
    private var batchReservedBytes = 0
    private var batchStartedAt = MonotonicTime(nanoseconds: 0)
    /// A batch goes to the queue once it holds this much…
    static let batchMaximumBytes = 256 << 10
    /// …or is this old, so a kill loses little more than the muxer's own hold.
    static let batchMaximumAgeNanoseconds: Int64 = 200_000_000

    /// Queues writes in order; `size` is what `admit` reserved for them. Call from one thread
    /// (the caller's event loop, or the finisher once the loop has let go of the recording).
    /// `now`: the caller's time, when it has one (a clock read per frame is not free).
    func submit(_ writes: [WebMWrite], releasing size: Int, now: MonotonicTime? = nil) {
        let now = now ?? clock.now()
        if batch.isEmpty { batchStartedAt = now }
        batch.append(contentsOf: writes)
        batchReservedBytes += size
        // Bytes to write (a closed cluster, an in-place update) go at once, so a kill costs no
        // more than the muxer's open cluster; frames the muxer only buffered carry just their
        // reservation, which travels with the next batch.
        if !writes.isEmpty || batchReservedBytes >= Self.batchMaximumBytes || now.nanoseconds &- batchStartedAt.nanoseconds >= Self.batchMaximumAgeNanoseconds {
            flush()
        }
    }

    /// Sends the gathered writes to the queue.
    func flush() {
        guard !batch.isEmpty || batchReservedBytes > 0 else { return }
        let writes = batch, size = batchReservedBytes
        batch.removeAll(keepingCapacity: true)
        batchReservedBytes = 0
        queue.async { [self] in
            defer { release(size) }
            guard let writer, !writes.isEmpty, lock.withLock({ writeError == nil }) else { return }
            do {
                try writer.apply(writes)
                lock.withLock { writtenLength = writer.length }
            } catch {
                // Back to the last whole cluster, so the file on disk stays one a repair (or
                // `finalize`) can finish; if even that fails, repair cuts the partial cluster.
                try? writer.truncate(toLength: writer.length)
                fail("\(error)")
            }
        }
    }

    /// Finalizes the file (blocks until the queue gets to it): Cues, Duration and sizes, fsync,
    /// then `rename`. After a write error (before or during this) the file is finalized at its
    /// last whole cluster instead, without Cues if the disk still refuses them.
    func finalize(_ muxer: WebMMuxer, durationMilliseconds: Int64, rename: (from: String, to: String)?) -> Finalized {
        flush()
        return queue.sync { finalizeOnQueue(muxer, durationMilliseconds: durationMilliseconds, rename: rename) }
    }

    private func finalizeOnQueue(_ muxer: WebMMuxer, durationMilliseconds: Int64, rename: (from: String, to: String)?) -> Finalized {
        guard let writer else { return Finalized(error: lock.withLock { writeError } ?? "no file", size: 0, muxer: muxer) }
        var finished = muxer
        var interruption: String?
        func cutShort(_ cause: String) throws {
            finished = try finalizeCutShort(muxer, writer: writer)
            interruption = "\(cause); the file ends at its last whole cluster (\(finished.statistics.lastTimestampMilliseconds ?? 0) ms)"
        }
        do {
            if let failed = lock.withLock({ writeError }) {
                try cutShort(failed)
            } else {
                do {
                    try writer.apply(try finished.finalize(durationMilliseconds: durationMilliseconds))
                } catch {
                    // The disk filled just now (the last cluster or the Cues): same as mid-file.
                    fail("\(error)")
                    try cutShort("\(error)")
                }
            }
            do { try writer.sync() } catch {
                interruption = (interruption.map { $0 + "; " } ?? "") + "\(error): the file may not all be on disk"
            }
            try writer.close()
            if let rename { try FileManager.default.moveItem(atPath: rename.from, toPath: rename.to) }
        } catch {
            try? writer.close()
            return Finalized(error: "\(error)", size: writer.length, muxer: finished)
        }
        return Finalized(interruption: interruption, size: writer.length, muxer: finished)
    }

    private func finalizeCutShort(_ muxer: WebMMuxer, writer: WebMFileWriter) throws -> WebMMuxer {
        var withCues = muxer
        let writes = try withCues.finalizeTruncated(toLength: writer.length)
        try writer.truncate(toLength: withCues.statistics.bytes - UInt64(writes.appendedByteCount))
        do {
            try writer.apply(writes)
            return withCues
        } catch {
            var withoutCues = muxer  // a disk still full takes the in-place patches only
            let patches = try withoutCues.finalizeTruncated(toLength: writer.length, includeCues: false)
            try writer.truncate(toLength: withoutCues.statistics.bytes)
            try writer.apply(patches)
            return withoutCues
        }
    }

    /// The first error stops the file; the callback runs outside `lock`.
    private func fail(_ error: String) {
        let first = lock.withLock { () -> Bool in
            guard writeError == nil else { return false }
            writeError = error
            return true
        }
        if first { onWriteFailed?(error) }
    }
}

extension Array where Element == WebMWrite {
    var appendedByteCount: Int {
        reduce(0) { total, write in if case .append(let bytes) = write { total + bytes.count } else { total } }
    }
}
