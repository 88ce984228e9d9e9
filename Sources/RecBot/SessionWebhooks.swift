import Archive
import DiskLayout
import Foundation
import Logging
import Recorder
import RecordingEvents
import Synchronization
import Webhooks
import WireCoding

/// A session's webhooks: its events go into the outbox through the catalog writer (so a kill
/// loses none and an unreachable catalog spools them), and a dispatcher beside the session
/// delivers them; the recording never waits for a receiver.
final class SessionWebhooks: Sendable {
    private let settings: WebhookSettings
    private let events: SoraEvents
    private let writer: CatalogWriter
    private let catalog: any CatalogStore
    private let clock: any TimeSource
    private let dispatcher: WebhookDispatcher
    private let logger: Logger
    private struct State {
        /// The delivery task, from `start` until `finish` cancels it.
        var loop: Task<Void, Never>?
        var recordingStarted = false
        var counted = WebhookTotals()
    }

    private let state = Mutex(State())

    /// What the dispatcher did so far, and the queue it last saw.
    var totals: WebhookTotals { state.withLock { $0.counted } }

    private func count(_ report: WebhookDispatcher.Report, queued: Int?) {
        state.withLock { state in
            state.counted.delivered += report.delivered
            state.counted.failedAttempts += report.failedAttempts
            state.counted.givenUp += report.givenUp
            if let queued { state.counted.queued = queued }
        }
    }

    init(settings: WebhookSettings, host: String, version: String, writer: CatalogWriter, catalog: any CatalogStore,
         clock: any TimeSource, logger: Logger) {
        (self.settings, self.writer, self.catalog, self.clock, self.logger) = (settings, writer, catalog, clock, logger)
        events = SoraEvents(nodeName: host, version: version)
        dispatcher = WebhookDispatcher(settings: settings, clock: clock, logger: logger)
    }

    /// Delivers what comes due, beside the session, until `finish`.
    func start() {
        let (dispatcher, catalog, clock) = (dispatcher, catalog, clock)
        let task = Task.detached(priority: .utility) { [weak self] in
            let session = self
            await withTaskGroup(of: Void.self) { group in
                group.addTask { _ = await dispatcher.run(catalog, until: nil, untilIdle: false) { report in session?.count(report, queued: nil) } }
                group.addTask {  // the queue's depth, for the metrics
                    while !Task.isCancelled {
                        let queued = await dispatcher.pendingCount(catalog)
                        session?.count(WebhookDispatcher.Report(), queued: queued)
                        try? await clock.sleep(nanoseconds: 2_000_000_000)
                    }
                }
            }
        }
        state.withLock { $0.loop = task }
    }

    /// After the session's last catalog write: a last delivery of what is due, for at most
    /// `seconds`; what is left stays queued for the next join, repair or `webhooks retry`.
    func finish(seconds: Double) async {
        let task = state.withLock { state in
            defer { state.loop = nil }
            return state.loop
        }
        task?.cancel()
        _ = await task?.value
        let report = await dispatcher.drain(catalog, until: clock.now().adding(milliseconds: Int64(seconds * 1000)))
        let left = await dispatcher.pendingCount(catalog)
        count(report, queued: left)
        if let pending = left, pending > 0 {
            logger.notice("webhooks still queued; the next join, repair or `recbot webhooks retry` sends them",
                          metadata: ["pending": "\(pending)", "delivered": "\(report.delivered)"])
        }
        await dispatcher.shutdown()
    }

    private func emit(_ event: WebhookEvent) {
        writer.submit(.webhooks(event.rows(settings: settings, now: clock.wallClockMilliseconds())))
    }

    // MARK: The events

    /// Once per session, when its first connection is up.
    func connectionStarted(context: SidecarContext, sessionStartedAt: Int64) {
        guard state.withLock({ state in
            defer { state.recordingStarted = true }
            return !state.recordingStarted
        }) else { return }
        emit(events.recordingStarted(context: context, startedAt: sessionStartedAt, now: clock.wallClockMilliseconds()))
    }

    func archiveStarted(_ recorder: SenderRecorder, context: SidecarContext, sessionStartedAt: Int64) {
        emit(events.archiveStarted(context: context, connectionID: recorder.connectionID, tracks: recorder.tracks, filename: recorder.filename,
                                   fileStartMilliseconds: recorder.fileStartMilliseconds,
                                   startOffsetSeconds: max(0, recorder.fileStartMilliseconds - sessionStartedAt) / 1000,
                                   now: clock.wallClockMilliseconds()))
    }

    func archiveFinished(_ recording: FinishedRecording, context: SidecarContext, layout: ArchiveLayout) {
        emit(events.archiveFinished(recording, context: context, layout: layout, now: clock.wallClockMilliseconds()))
    }

    func splitArchiveEnd(_ last: FinishedRecording, context: SidecarContext, layout: ArchiveLayout) {
        emit(events.splitArchiveEnd(last, context: context, layout: layout, now: clock.wallClockMilliseconds()))
    }

    func recordingReport(_ report: [String: Any], context: SidecarContext, layout: ArchiveLayout, interruptions: Int) {
        emit(events.recordingReport(report, context: context, layout: layout, interruptions: interruptions, now: clock.wallClockMilliseconds()))
    }
}
