import Archive
import Foundation
import Logging
import WireCoding

/// The session's outages as they happen: the rejoin schedule (sans-IO, `RejoinSchedule`) and
/// the catalog rows, kept together behind a lock because the rejoin driver and the transport's
/// event loop (which sees the rejoined connection record) both report to it.
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
        var rows: [InterruptionRecord] = []
    }

    private let lock = NSLock()
    private var schedule: RejoinSchedule
    private var rows: [InterruptionRecord] = []
    private var endedNanoseconds: Int64 = 0
    private var mediaLost: Int64 = 0
    private var rejoins = 0
    /// The rejoined connection is recording; its first frame refines the media lost.
    private var awaitingFirstFrame: (ordinal: Int, recovery: RejoinSchedule.Recovery)?
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

    /// The recording connection failed (a cause rejoining may cure): an outage begins.
    func begin(cause: String, connectedAt: MonotonicTime, lastMediaAt: MonotonicTime?, now: MonotonicTime, wallClock: Int64) -> RejoinSchedule.Decision {
        let (decision, row) = lock.withLock { () -> (RejoinSchedule.Decision, InterruptionRecord) in
            let decision = schedule.connectionFailed(cause: cause, connectedAt: connectedAt, lastMediaAt: lastMediaAt, now: now)
            let row = InterruptionRecord(sessionID: sessionID, ordinal: schedule.outages, startedAt: wallClock, cause: cause)
            rows.append(row)
            return (decision, row)
        }
        writer.submit(.interruption(row))
        return decision
    }

    func attemptStarted() {
        let row = lock.withLock { () -> InterruptionRecord? in
            schedule.attemptStarted()
            return updateCurrentRow { $0.attempts = schedule.outage?.attempts ?? $0.attempts }
        }
        if let row { writer.submit(.interruption(row)) }
    }

    func attemptFailed(now: MonotonicTime) -> RejoinSchedule.Decision {
        lock.withLock { schedule.attemptFailed(now: now) }
    }

    /// The rejoined connection records (DTLS is up): the outage ends now.
    func recovered(connectionID: String?, now: MonotonicTime, wallClock: Int64) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard let recovery = schedule.recovered(now: now) else { return nil }
            rejoins += 1
            endedNanoseconds += recovery.endedAt.nanoseconds - recovery.outage.startedAt.nanoseconds
            mediaLost += recovery.mediaLostNanoseconds
            awaitingFirstFrame = (recovery.outage.ordinal, recovery)
            return update(ordinal: recovery.outage.ordinal) {
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

    /// The first frame after a rejoin: media was lost up to it, not just up to the reconnect.
    func firstFrame(at time: MonotonicTime) {
        let row = lock.withLock { () -> InterruptionRecord? in
            guard let (ordinal, recovery) = awaitingFirstFrame else { return nil }
            awaitingFirstFrame = nil
            let from = min(recovery.outage.lastMediaAt ?? recovery.outage.startedAt, recovery.outage.startedAt)
            let lost = max(recovery.mediaLostNanoseconds, time.nanoseconds - from.nanoseconds)
            mediaLost += lost - recovery.mediaLostNanoseconds
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
                                  interruptedNanoseconds: endedNanoseconds, current: schedule.outage?.cause, rows: rows)
            if let outage = schedule.outage {
                let since = min(outage.lastMediaAt ?? outage.startedAt, outage.startedAt)
                summary.interruptedNanoseconds += max(0, now.nanoseconds - outage.startedAt.nanoseconds)
                summary.mediaLostNanoseconds += max(0, now.nanoseconds - since.nanoseconds)
            }
            return summary
        }
    }

    /// Locked: rewrites the current outage's row.
    private func updateCurrentRow(_ change: (inout InterruptionRecord) -> Void) -> InterruptionRecord? {
        guard let ordinal = schedule.outage?.ordinal else { return nil }
        return update(ordinal: ordinal, change)
    }

    /// Locked.
    private func update(ordinal: Int, _ change: (inout InterruptionRecord) -> Void) -> InterruptionRecord? {
        guard let index = rows.firstIndex(where: { $0.ordinal == ordinal }) else { return nil }
        change(&rows[index])
        return rows[index]
    }
}
