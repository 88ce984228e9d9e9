import Archive
import Foundation
import Logging
import Synchronization
import WireCoding

/// The session's outages as they happen: the rejoin schedule (sans-IO, `RejoinSchedule`) and
/// the catalog rows, kept together behind a lock because the rejoin driver and the transport's
/// event loop (which sees the rejoined connection record) both report to it. An outage begins
/// either as a stall (the connection went quiet and is kept: `stalled`), which ends in place
/// (`resumed`) or becomes the rejoin's outage (`begin`), or at once as a lost connection.
final class InterruptionLog: Sendable {
    struct Summary: Sendable, Equatable {
        /// Outages so far, the current one included.
        var count = 0
        /// Outages a rejoin ended.
        var rejoins = 0
        /// Media time lost in ended outages, and the time spent in outages (the current one up to now).
        var mediaLostNanoseconds: Int64 = 0
        var interruptedNanoseconds: Int64 = 0
        /// The outage still being ridden out, if any.
        var current: String?
        /// It is a stall: the connection was kept, and no rejoin has started (the network was
        /// still down, as far as recbot could tell, when the session ended).
        var currentIsStall = false
        var rows: [InterruptionRecord] = []
    }

    /// A quiet connection kept while it may come back.
    private struct Stall {
        var ordinal: Int
        var startedAt: MonotonicTime
        var cause: String
        var lastMediaAt: MonotonicTime?
    }

    /// The outages' books (the rejoin schedule and the rows), behind the mutex.
    private struct Book {
        var schedule: RejoinSchedule
        var rows: [InterruptionRecord] = []
        var endedNanoseconds: Int64 = 0
        var mediaLost: Int64 = 0
        var rejoins = 0
        /// The row of the outage the rejoin schedule is riding out.
        var rejoinOrdinal: Int?
        var stall: Stall?
        /// A rejoin records again; its first frame refines the media lost: from `from` to that
        /// frame, at least `lost`.
        var awaitingFirstFrame: (ordinal: Int, from: MonotonicTime, lost: Int64)?
        /// The failover this process began with (`failover`), until its first connection records.
        var failover: (ordinal: Int, lastMediaWallClock: Int64)?

        /// Ordinals continue after the previous segments' rows, which may have holes.
        var nextOrdinal: Int { (rows.map(\.ordinal).max() ?? 0) + 1 }

        mutating func update(ordinal: Int, _ change: (inout InterruptionRecord) -> Void) -> InterruptionRecord? {
            guard let index = rows.firstIndex(where: { $0.ordinal == ordinal }) else { return nil }
            change(&rows[index])
            return rows[index]
        }
    }

    private let book: Mutex<Book>
    private let sessionID: String
    private let writer: CatalogWriter
    private let logger: Logger

    private let segment: Int?

    /// `previous`: the outages earlier segments of the session stored (a failover); they count
    /// in the summary, and new ordinals follow theirs. `segment`: this process's, which its rows carry.
    init(sessionID: String, settings: RejoinSchedule.Settings, writer: CatalogWriter, logger: Logger, random: any RandomSource,
         previous: [InterruptionRecord] = [], segment: Int? = nil) {
        self.sessionID = sessionID
        self.writer = writer
        self.logger = logger
        self.segment = segment
        var book = Book(schedule: RejoinSchedule(settings: settings, random: { random.unitInterval() }))
        book.rows = previous.sorted { $0.ordinal < $1.ordinal }
        for row in previous {
            book.mediaLost += (row.mediaLostMs ?? 0) * 1_000_000
            if let ended = row.endedAt { book.endedNanoseconds += max(0, ended - row.startedAt) * 1_000_000 }
            if row.endedAt != nil, row.connectionID != nil { book.rejoins += 1 }
        }
        self.book = Mutex(book)
    }

    private func store(_ row: InterruptionRecord) { writer.submit(.interruption(row, segment: segment)) }

    /// This process continues a session whose previous process died (`join --continue-session`):
    /// an outage with cause `failover` began at that process's last media (Unix ms), and ends
    /// when this process's first connection records (`recovered`).
    func failover(lastMediaWallClock: Int64) {
        let row = book.withLock { book -> InterruptionRecord in
            var row = InterruptionRecord(sessionID: sessionID, ordinal: book.nextOrdinal, startedAt: lastMediaWallClock, cause: Self.failoverCause)
            row.attempts = 1
            book.rows.append(row)
            book.failover = (row.ordinal, lastMediaWallClock)
            return row
        }
        store(row)
    }

    static let failoverCause = "failover"

    /// The recording connection failed (a cause rejoining may cure): an outage begins, or the
    /// stall it ended becomes the rejoin's outage (it began when the connection went quiet).
    func begin(cause: String, connectedAt: MonotonicTime, lastMediaAt: MonotonicTime?, now: MonotonicTime, wallClock: Int64) -> RejoinSchedule.Decision {
        let (decision, row) = book.withLock { book -> (RejoinSchedule.Decision, InterruptionRecord?) in
            let decision = book.schedule.connectionFailed(cause: cause, connectedAt: connectedAt, lastMediaAt: lastMediaAt, now: now)
            if let open = book.stall {
                book.stall = nil
                book.rejoinOrdinal = open.ordinal
                return (decision, book.update(ordinal: open.ordinal) { $0.cause = "\(open.cause); then \(cause)" })
            }
            let row = InterruptionRecord(sessionID: sessionID, ordinal: book.nextOrdinal, startedAt: wallClock, cause: cause)
            book.rows.append(row)
            book.rejoinOrdinal = row.ordinal
            return (decision, row)
        }
        if let row { store(row) }
        return decision
    }

    /// The connection went quiet and is kept (`LivenessWatch`): an outage begins now.
    func stalled(cause: String, lastMediaAt: MonotonicTime?, now: MonotonicTime, wallClock: Int64) {
        let row = book.withLock { book -> InterruptionRecord? in
            guard book.stall == nil, book.schedule.outage == nil else { return nil }
            let row = InterruptionRecord(sessionID: sessionID, ordinal: book.nextOrdinal, startedAt: wallClock, cause: cause)
            book.rows.append(row)
            book.stall = Stall(ordinal: row.ordinal, startedAt: now, cause: cause, lastMediaAt: lastMediaAt)
            return row
        }
        if let row { store(row) }
    }

    /// The quiet connection came back by itself: the outage ends, no rejoin was needed.
    func resumed(now: MonotonicTime, wallClock: Int64) {
        let row = book.withLock { book -> InterruptionRecord? in
            guard let open = book.stall else { return nil }
            book.stall = nil
            book.endedNanoseconds += now.nanoseconds - open.startedAt.nanoseconds
            let from = min(open.lastMediaAt ?? open.startedAt, open.startedAt)
            // To the connection's return: media follows within a round trip and a keyframe.
            let lost = now.nanoseconds - from.nanoseconds
            book.mediaLost += lost
            return book.update(ordinal: open.ordinal) {
                $0.endedAt = wallClock
                $0.mediaLostMs = lost / 1_000_000
            }
        }
        guard let row else { return }
        store(row)
        logger.notice("the connection came back by itself: recording again, no rejoin needed", metadata: [
            "interruption": "\(row.ordinal)", "cause": "\(row.cause)", "outage_ms": "\(row.endedAt.map { $0 - row.startedAt } ?? 0)",
        ])
    }

    func attemptStarted() {
        let row = book.withLock { book -> InterruptionRecord? in
            book.schedule.attemptStarted()
            guard let ordinal = book.rejoinOrdinal else { return nil }
            let attempts = book.schedule.outage?.attempts
            return book.update(ordinal: ordinal) { $0.attempts = attempts ?? $0.attempts }
        }
        if let row { store(row) }
    }

    func attemptFailed(now: MonotonicTime) -> RejoinSchedule.Decision {
        book.withLock { $0.schedule.attemptFailed(now: now) }
    }

    /// The rejoined connection records (DTLS is up): the outage ends now.
    func recovered(connectionID: String?, now: MonotonicTime, wallClock: Int64) {
        if endFailover(connectionID: connectionID, now: now, wallClock: wallClock) { return }
        let row = book.withLock { book -> InterruptionRecord? in
            guard let recovery = book.schedule.recovered(now: now), let ordinal = book.rejoinOrdinal else { return nil }
            book.rejoinOrdinal = nil
            book.rejoins += 1
            // A stall that became this outage began before the schedule's: counted from its row.
            let began = book.rows.first { $0.ordinal == ordinal }.map { wallClock - $0.startedAt }.map { $0 * 1_000_000 } ?? 0
            book.endedNanoseconds += max(recovery.endedAt.nanoseconds - recovery.outage.startedAt.nanoseconds, began)
            book.mediaLost += recovery.mediaLostNanoseconds
            let from = min(recovery.outage.lastMediaAt ?? recovery.outage.startedAt, recovery.outage.startedAt)
            book.awaitingFirstFrame = (ordinal, from, recovery.mediaLostNanoseconds)
            return book.update(ordinal: ordinal) {
                $0.endedAt = wallClock
                $0.connectionID = connectionID
                $0.mediaLostMs = recovery.mediaLostNanoseconds / 1_000_000
            }
        }
        guard let row else { return }
        store(row)
        logger.notice("rejoined: recording again", metadata: [
            "interruption": "\(row.ordinal)", "attempts": "\(row.attempts)", "cause": "\(row.cause)",
            "outage_ms": "\(row.endedAt.map { $0 - row.startedAt } ?? 0)", "connection_id": "\(connectionID ?? "-")",
        ])
    }

    /// The failover ends as this process records: lost from the previous process's last media
    /// to now, refined by the first frame. False when no failover is open.
    private func endFailover(connectionID: String?, now: MonotonicTime, wallClock: Int64) -> Bool {
        let row = book.withLock { book -> InterruptionRecord? in
            guard let (ordinal, lastMedia) = book.failover else { return nil }
            book.failover = nil
            book.rejoins += 1
            let lost = max(0, wallClock - lastMedia) * 1_000_000
            book.endedNanoseconds += lost
            book.mediaLost += lost
            book.awaitingFirstFrame = (ordinal, MonotonicTime(nanoseconds: now.nanoseconds - lost), lost)
            return book.update(ordinal: ordinal) {
                $0.endedAt = wallClock
                $0.connectionID = connectionID
                $0.mediaLostMs = lost / 1_000_000
            }
        }
        guard let row else { return false }
        store(row)
        logger.notice("recording again after a failover", metadata: [
            "interruption": "\(row.ordinal)", "media_lost_ms": "\(row.mediaLostMs ?? 0)", "connection_id": "\(connectionID ?? "-")",
        ])
        return true
    }

    /// The first frame after an outage ended: media was lost up to it, not just up to the
    /// reconnect (or the connection's return).
    func firstFrame(at time: MonotonicTime) {
        let row = book.withLock { book -> InterruptionRecord? in
            guard let (ordinal, from, counted) = book.awaitingFirstFrame else { return nil }
            book.awaitingFirstFrame = nil
            let lost = max(counted, time.nanoseconds - from.nanoseconds)
            book.mediaLost += lost - counted
            return book.update(ordinal: ordinal) { $0.mediaLostMs = lost / 1_000_000 }
        }
        if let row { store(row) }
    }

    /// A connection ended: a first frame that never came refines nothing later.
    func connectionEnded() { book.withLock { $0.awaitingFirstFrame = nil } }

    /// The outage that was never ended when the session ends: it counts as lost to the end.
    func summary(now: MonotonicTime) -> Summary {
        book.withLock { book in
            var summary = Summary(count: book.rows.count, rejoins: book.rejoins, mediaLostNanoseconds: book.mediaLost,
                                  interruptedNanoseconds: book.endedNanoseconds,
                                  current: book.schedule.outage?.cause ?? book.stall?.cause ?? book.failover.map { _ in Self.failoverCause },
                                  currentIsStall: book.schedule.outage == nil && book.stall != nil, rows: book.rows)
            let open = book.schedule.outage.map { ($0.startedAt, $0.lastMediaAt) } ?? book.stall.map { ($0.startedAt, $0.lastMediaAt) }
            if let (startedAt, lastMediaAt) = open {
                let since = min(lastMediaAt ?? startedAt, startedAt)
                summary.interruptedNanoseconds += max(0, now.nanoseconds - startedAt.nanoseconds)
                summary.mediaLostNanoseconds += max(0, now.nanoseconds - since.nanoseconds)
            }
            return summary
        }
    }
}
