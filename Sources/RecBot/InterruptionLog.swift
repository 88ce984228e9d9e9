import Archive
import Foundation
import Logging
import WireCoding

/// The session's outages as they happen: the rejoin schedule (sans-IO, `RejoinSchedule`) and
/// the catalog rows, kept together behind a lock because the rejoin driver and the transport's
/// event loop (which sees the rejoined connection record) both report to it. An outage begins
/// either as a stall (the connection went quiet and is kept: `stalled`), which ends in place
/// (`resumed`) or becomes the rejoin's outage (`begin`), or at once as a lost connection.
final class InterruptionLog: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
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

    private let lock = NSLock()
    private var schedule: RejoinSchedule
    private var rows: [InterruptionRecord] = []
    private var endedNanoseconds: Int64 = 0
    private var mediaLost: Int64 = 0
    private var rejoins = 0
    /// The row of the outage the rejoin schedule is riding out.
    private var rejoinOrdinal: Int?
    private var stall: Stall?
    /// A rejoin records again; its first frame refines the media lost: from `from` to that
    /// frame, at least `lost`.
    private var awaitingFirstFrame: (ordinal: Int, from: MonotonicTime, lost: Int64)?
    private let sessionID: String
    private let writer: CatalogWriter
    private let logger: Logger

    init(sessionID: String, settings: RejoinSchedule.Settings, writer: CatalogWriter, logger: Logger,
         random: @escaping () -> Double = { Double.random(in: 0..<1) }) {
        self.sessionID = sessionID
        self.writer = writer
        self.logger = logger
        schedule = RejoinSchedule(settings: settings, random: random)
    }

    /// The recording connection failed (a cause rejoining may cure): an outage begins, or the
    /// stall it ended becomes the rejoin's outage (it began when the connection went quiet).
    func begin(cause: String, connectedAt: MonotonicTime, lastMediaAt: MonotonicTime?, now: MonotonicTime, wallClock: Int64) -> RejoinSchedule.Decision {
        let (decision, row) = lock.withLock { () -> (RejoinSchedule.Decision, InterruptionRecord?) in
            let decision = schedule.connectionFailed(cause: cause, connectedAt: connectedAt, lastMediaAt: lastMediaAt, now: now)
            if let open = stall {
                stall = nil
                rejoinOrdinal = open.ordinal
                return (decision, update(ordinal: open.ordinal) { $0.cause = "\(open.cause); then \(cause)" })
            }
            let row = InterruptionRecord(sessionID: sessionID, ordinal: rows.count + 1, startedAt: wallClock, cause: cause)
            rows.append(row)
            rejoinOrdinal = row.ordinal
            return (decision, row)
        }
        if let row { writer.submit(.interruption(row)) }
        return decision
    }

    /// The connection went quiet and is kept (`LivenessWatch`): an outage begins now.
    func stalled(cause: String, lastMediaAt: MonotonicTime?, now: MonotonicTime, wallClock: Int64) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard stall == nil, schedule.outage == nil else { return nil }
            let row = InterruptionRecord(sessionID: sessionID, ordinal: rows.count + 1, startedAt: wallClock, cause: cause)
            rows.append(row)
            stall = Stall(ordinal: row.ordinal, startedAt: now, cause: cause, lastMediaAt: lastMediaAt)
            return row
        }
        if let row { writer.submit(.interruption(row)) }
    }

    /// The quiet connection came back by itself: the outage ends, no rejoin was needed.
    func resumed(now: MonotonicTime, wallClock: Int64) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard let open = stall else { return nil }
            stall = nil
            endedNanoseconds += now.nanoseconds - open.startedAt.nanoseconds
            let from = min(open.lastMediaAt ?? open.startedAt, open.startedAt)
            // To the connection's return: media follows within a round trip and a keyframe.
            let lost = now.nanoseconds - from.nanoseconds
            mediaLost += lost
            return update(ordinal: open.ordinal) {
                $0.endedAt = wallClock
                $0.mediaLostMs = lost / 1_000_000
            }
        }
        guard let row else { return }
        writer.submit(.interruption(row))
        logger.notice("the connection came back by itself: recording again, no rejoin needed", metadata: [
            "interruption": "\(row.ordinal)", "cause": "\(row.cause)", "outage_ms": "\(row.endedAt.map { $0 - row.startedAt } ?? 0)",
        ])
    }

    func attemptStarted() {
        let row = lock.withLock { () -> InterruptionRecord? in
            schedule.attemptStarted()
            return rejoinOrdinal.flatMap { ordinal in update(ordinal: ordinal) { $0.attempts = schedule.outage?.attempts ?? $0.attempts } }
        }
        if let row { writer.submit(.interruption(row)) }
    }

    func attemptFailed(now: MonotonicTime) -> RejoinSchedule.Decision {
        lock.withLock { schedule.attemptFailed(now: now) }
    }

    /// The rejoined connection records (DTLS is up): the outage ends now.
    func recovered(connectionID: String?, now: MonotonicTime, wallClock: Int64) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard let recovery = schedule.recovered(now: now), let ordinal = rejoinOrdinal else { return nil }
            rejoinOrdinal = nil
            rejoins += 1
            // A stall that became this outage began before the schedule's: counted from its row.
            let began = rows.first { $0.ordinal == ordinal }.map { wallClock - $0.startedAt }.map { $0 * 1_000_000 } ?? 0
            endedNanoseconds += max(recovery.endedAt.nanoseconds - recovery.outage.startedAt.nanoseconds, began)
            mediaLost += recovery.mediaLostNanoseconds
            let from = min(recovery.outage.lastMediaAt ?? recovery.outage.startedAt, recovery.outage.startedAt)
            awaitingFirstFrame = (ordinal, from, recovery.mediaLostNanoseconds)
            return update(ordinal: ordinal) {
                $0.endedAt = wallClock
                $0.connectionID = connectionID
                $0.mediaLostMs = recovery.mediaLostNanoseconds / 1_000_000
            }
        }
        guard let row else { return }
        writer.submit(.interruption(row))
        logger.notice("rejoined: recording again", metadata: [
            "interruption": "\(row.ordinal)", "attempts": "\(row.attempts)", "cause": "\(row.cause)",
            "outage_ms": "\(row.endedAt.map { $0 - row.startedAt } ?? 0)", "connection_id": "\(connectionID ?? "-")",
        ])
    }

    /// The first frame after an outage ended: media was lost up to it, not just up to the
    /// reconnect (or the connection's return).
    func firstFrame(at time: MonotonicTime) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard let (ordinal, from, counted) = awaitingFirstFrame else { return nil }
            awaitingFirstFrame = nil
            let lost = max(counted, time.nanoseconds - from.nanoseconds)
            mediaLost += lost - counted
            return update(ordinal: ordinal) { $0.mediaLostMs = lost / 1_000_000 }
        }
        if let row { writer.submit(.interruption(row)) }
    }

    /// A connection ended: a first frame that never came refines nothing later.
    func connectionEnded() { lock.withLock { awaitingFirstFrame = nil } }

    /// The outage that was never ended when the session ends: it counts as lost to the end.
    func summary(now: MonotonicTime) -> Summary {
        lock.withLock {
            var summary = Summary(count: rows.count, rejoins: rejoins, mediaLostNanoseconds: mediaLost,
                                  interruptedNanoseconds: endedNanoseconds, current: schedule.outage?.cause ?? stall?.cause,
                                  currentIsStall: schedule.outage == nil && stall != nil, rows: rows)
            let open = schedule.outage.map { ($0.startedAt, $0.lastMediaAt) } ?? stall.map { ($0.startedAt, $0.lastMediaAt) }
            if let (startedAt, lastMediaAt) = open {
                let since = min(lastMediaAt ?? startedAt, startedAt)
                summary.interruptedNanoseconds += max(0, now.nanoseconds - startedAt.nanoseconds)
                summary.mediaLostNanoseconds += max(0, now.nanoseconds - since.nanoseconds)
            }
            return summary
        }
    }

    /// Locked.
    private func update(ordinal: Int, _ change: (inout InterruptionRecord) -> Void) -> InterruptionRecord? {
        guard let index = rows.firstIndex(where: { $0.ordinal == ordinal }) else { return nil }
        change(&rows[index])
        return rows[index]
    }
}
