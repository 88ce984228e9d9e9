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
    /// Where the delivery loop runs (nil: Swift's shared pool, as everything else).
    private let executor: (any TaskExecutor)?
    private struct State {
        /// The delivery task and its stop, from `start` until `finish` ends it.
        var loop: (task: Task<Void, Never>, stop: DispatchStop)?
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
         clock: any TimeSource, logger: Logger, executor: (any TaskExecutor)? = nil) {
        (self.settings, self.writer, self.catalog, self.clock, self.logger) = (settings, writer, catalog, clock, logger)
        self.executor = executor
        events = SoraEvents(nodeName: host, version: version)
        dispatcher = WebhookDispatcher(settings: settings, clock: clock, logger: logger)
    }

    /// Delivers what comes due, beside the session, until `finish`.
    func start() {
        let (dispatcher, catalog, clock, stop) = (dispatcher, catalog, clock, DispatchStop())
        // An unstructured task does not inherit its caller's executor preference: `finish` waits
        // for this loop, so a test that runs away from the suite's busy shared pool passes its
        // executor here too (a full suite once held this loop, and so the finish, 64 s).
        let task = Task(executorPreference: executor, priority: .utility) { [weak self] in
            let session = self
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    _ = await dispatcher.run(catalog, until: nil, untilIdle: false, stop: stop) { report in session?.count(report, queued: nil) }
                }
                group.addTask {  // the queue's depth, for the metrics
                    while !Task.isCancelled {
                        let queued = await dispatcher.pendingCount(catalog)
                        session?.count(WebhookDispatcher.Report(), queued: queued)
                        try? await clock.sleep(nanoseconds: 2_000_000_000)
                    }
                }
                _ = await group.next()  // the run: it ends only when stopped or cancelled
                group.cancelAll()
            }
        }
        state.withLock { $0.loop = (task, stop) }
    }

    /// Ends the delivery loop by `deadline`: it claims nothing more, and a request under way
    /// is answered and stored rather than cut off (its lease given back, the final drain would
    /// send it again to a receiver that already has it). Past the deadline it is cut off.
    private func end(_ loop: (task: Task<Void, Never>, stop: DispatchStop)?, by deadline: MonotonicTime) async {
        guard let loop else { return }
        if loop.stop.request() { loop.task.cancel() }  // idle: nothing to wait for
        let clock = clock
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await loop.task.value; return true }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return false
            }
            if await group.next() == false { loop.task.cancel() }
            group.cancelAll()
        }
    }

    /// After the session's last catalog write: a last delivery of what is due, for at most
    /// `seconds`; what is left stays queued for the next join, repair or `webhooks retry`.
    func finish(seconds: Double) async {
        let deadline = clock.now().adding(milliseconds: Int64(seconds * 1000))
        let loop = state.withLock { state in
            defer { state.loop = nil }
            return state.loop
        }
        // The loop ends beside the final drain, not before it: its requests under way (a hung
        // receiver's, up to the deadline) must not take the drain's time from the other
        // receivers. The two never send one row twice: a claim skips rows under any lease.
        async let ended: Void = end(loop, by: deadline)
        let report = await dispatcher.drain(catalog, until: deadline)
        await ended
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
