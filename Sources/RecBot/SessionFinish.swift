import Archive
import DiskLayout
import Foundation
import Logging
import Outcomes
import Recorder
import Repair

/// The end of a recording session, after its last connection closed: every file finished
/// within a deadline (what is not done by then is left to `recbot repair`), the end markers
/// of senders whose last part a lost connection ended, then the report.
struct SessionFinish {
    let session: JoinSession.SessionStart
    let options: JoinOptions
    let media: SessionMedia
    private var logger: Logger { session.logger }

    /// `ending`: how the session ended as far as signaling and the network tell; files that
    /// failed or were cut short turn it into a storage failure.
    func finish(_ ending: SessionEnding, inboxDropped: SessionInbox.Dropped) async -> SessionEnding {
        var (cause, reason) = (ending.cause, ending.reason)
        let stoppedAt = session.clock.wallClockMilliseconds()
        let unfinished = await media.finisher.waitForAll(timeoutSeconds: options.finalizeTimeoutSeconds)
        media.capture?.close()
        if !unfinished.isEmpty {
            logger.error("finishing files took too long; run `recbot repair` to finalize the rest",
                         metadata: ["seconds": "\(options.finalizeTimeoutSeconds)", "senders": "\(unfinished.joined(separator: ","))"])
            (cause, reason) = (.storageFailed, "storage: finalize timed out after \(Int(options.finalizeTimeoutSeconds)) s for \(unfinished.joined(separator: ", "))")
        }
        var endContext = media.finisher.withParticipants(
            media.lastContext ?? SidecarContext(session: session.id, options: options, soraSessionID: nil, botConnectionID: nil))
        endContext.endReason = reason
        media.finisher.writeMissingSplitEnds(layout: media.layout, context: endContext)
        let all = media.finisher.all.sorted { ($0.connectionID, $0.part) < ($1.connectionID, $1.part) }
        let finished = all.filter { $0.error == nil }
        let failed = all.filter { $0.error != nil }
        for recording in failed {
            logger.error("recording failed", metadata: ["sender": "\(recording.connectionID)", "part": "\(recording.part)", "error": "\(recording.error ?? "")"])
        }
        let cutShort = finished.filter { $0.interruption != nil }
        for recording in cutShort {
            logger.error("recording cut short", metadata: ["sender": "\(recording.connectionID)", "part": "\(recording.part)",
                                                          "error": "\(recording.interruption ?? "")"])
        }
        var final = SessionEnding(cause, reason, recordings: finished.count)
        let eventLog = media.eventLog
        final.counters.eventsStored = Int64(eventLog.stored - session.writer.droppedAdmittedEvents)
        final.counters.eventsRefused = Int64(eventLog.refused)
        final.counters.eventsRefusedBytes = Int64(eventLog.refusedBytes)
        final.counters.messagesDropped = Int64(inboxDropped.messages)
        if !all.isEmpty || !unfinished.isEmpty || media.interruptions.summary(now: session.clock.now()).count > 0 {
            do {
                try writeReport(finished: finished, failed: failed.map(\.connectionID) + unfinished, context: endContext, stoppedAt: stoppedAt)
            } catch {
                final.cause = .storageFailed
                final.reason = "storage: report: \(error)"
                return final
            }
        }
        if !failed.isEmpty && final.result == .success {
            final.cause = .storageFailed
            final.reason = "storage: recording failed for \(failed.map(\.connectionID).joined(separator: ", "))"
        } else if !cutShort.isEmpty && final.result == .success {
            final.cause = .storageFailed
            final.reason = "storage: recording cut short by a write error for \(cutShort.map(\.connectionID).joined(separator: ", "))"
        }
        return final
    }

    private func writeReport(finished: [FinishedRecording], failed: [String], context: SidecarContext, stoppedAt: Int64) throws {
        let layout = media.layout
        try layout.createDirectory()
        let earlier = earlierSegments(besides: finished)
        var report = Sidecar.report(earlier.finished + finished, failed: earlier.failed + failed, context: context, layout: layout,
                                    startedAtMilliseconds: session.startedAt, stoppedAtMilliseconds: stoppedAt)
        let eventLog = media.eventLog
        report["events_stored"] = eventLog.stored - session.writer.droppedAdmittedEvents
        report["events_refused"] = eventLog.refused
        report["events_refused_bytes"] = eventLog.refusedBytes
        report["events_dropped"] = session.writer.droppedEvents  // the catalog could not keep up
        let interruptions = media.interruptions.summary(now: session.clock.now()).rows
        report["interruptions"] = interruptions.map(Self.reportEntry)
        try ArchiveLayout.writeJSON(report, to: layout.reportPath)
        session.webhooks?.recordingReport(report, context: context, layout: layout, interruptions: interruptions.count)
    }

    /// The files earlier segments of a continued session recorded (from the catalog, as the
    /// session was reopened), for the report that covers the whole session. Without split, a
    /// sender's part 0 that this process's parts follow is named as the part 1 it becomes.
    private func earlierSegments(besides finished: [FinishedRecording]) -> (finished: [FinishedRecording], failed: [String]) {
        guard let prior = session.prior else { return ([], []) }
        let continued = Set(finished.map(\.connectionID))
        let written = prior.recordings.filter { $0.status != .interrupted }
        let rows = options.split != nil ? written : written.map { row in
            let followed = continued.contains(row.connectionID) || written.contains { $0.connectionID == row.connectionID && $0.part > 0 }
            return followed ? CatalogRecordings.asPartOne(row, layout: media.layout) : row
        }
        let nextStarts = CatalogRecordings.nextPartStarts(rows)
        let recordings = rows.map {
            CatalogRecordings.finished($0, file: nil, sessionStartedAt: session.startedAt, layout: media.layout, nextPartStart: nextStarts[$0.path])
        }
        return (recordings, prior.recordings.filter { $0.status == .interrupted }.map(\.connectionID))
    }

    /// One outage in the report: times as Unix milliseconds and RFC 3339, like the archives'.
    static func reportEntry(_ row: InterruptionRecord) -> [String: Any] {
        var entry: [String: Any] = ["ordinal": row.ordinal, "started_at_ms": row.startedAt, "cause": row.cause, "attempts": row.attempts]
        if let ended = row.endedAt { entry["ended_at_ms"] = ended }
        if let lost = row.mediaLostMs { entry["media_lost_ms"] = lost }
        if let connection = row.connectionID { entry["connection_id"] = connection }
        return entry
    }
}
