import Archive
import DTLS
import Foundation
import Logging
import Media
import NIOCore
import NIOPosix
import Outcomes
import PeerConnection
import Recorder
import SDP
import SoraSignalingCore
import Synchronization
import Transport
import WireCoding

/// One `recbot join`: signaling, transport, recording and catalog from start to finalize.
/// The decisions live in sans-IO cores (`SignalingSession`, the peer connection and media
/// cores, `Recordings`); this type wires them to sockets, timers, files and the catalog.
public final class JoinSession: Sendable {
    public let options: JoinOptions
    private let logger: Logger
    /// What the status, the metrics and a stop read from other threads.
    private struct State {
        /// The connection recording now (nil while signaling, or rejoining).
        var live: MediaPath?
        /// What the session's connections share; set once the catalog row exists.
        var media: SessionMedia?
        var phase = SessionPhase.starting
        var writer: CatalogWriter?
        var finalTotals: SessionTotals?
        /// The session's webhooks, while it has them (for the metrics).
        var webhooks: SessionWebhooks?
        /// Everything that reaches the current connection while it records; a stop jumps the
        /// queue. Each connection has its own, so nothing of an old one leaks into the next.
        var inbox: SessionInbox
        /// Messages the inboxes of ended connections dropped.
        var inboxDroppedBefore = SessionInbox.Dropped()
        /// The session's event loops still take work, and how many samples (status, metrics)
        /// wait on them now (`closeLoops`).
        var loopsOpen = true
        var samplesOnLoops = 0

        /// Counts a sample that may submit to the loops; false once they are closing.
        mutating func admitSample() -> Bool {
            guard loopsOpen else { return false }
            samplesOnLoops += 1
            return true
        }
    }

    private let state: Mutex<State>
    private let clock: any TimeSource
    /// When the process began the session, on both clocks (status and metrics).
    private let started: (time: MonotonicTime, wallClockMilliseconds: Int64)
    private let stopRequest = StopRequest()

    public init(options: JoinOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        clock = options.clock
        started = (clock.now(), clock.wallClockMilliseconds())
        state = Mutex(State(inbox: Self.makeInbox(logger: logger)))
    }

    private var uptimeSeconds: Double { Double(clock.now().nanoseconds - started.time.nanoseconds) / 1e9 }

    private static func makeInbox(logger: Logger) -> SessionInbox {
        SessionInbox { logger.error("signaling messages dropped: more arrive than can be handled (counted; summary at the end)") }
    }

    /// Current senders and counters (safe from any thread).
    public func snapshot() async -> JoinStatus {
        let (live, phase, media, admitted) = state.withLock { state in
            let admitted = state.admitSample()
            return (admitted ? state.live : nil, state.phase, state.media, admitted)
        }
        defer { if admitted { state.withLock { $0.samplesOnLoops -= 1 } } }
        var senders: [JoinStatus.Sender] = []
        if let live {
            let (recordings, core) = (live.media.recordings, live.core)
            senders = (try? await live.transport.eventLoop.submit(confined: (recordings, core)) { confined in
                let (recordings, core) = confined
                return recordings.recorders.sorted { $0.key < $1.key }.map { sender, recorder in
                    let counts = core.media?.counters(sender: sender) ?? ReceiveCounters()
                    return JoinStatus.Sender(connectionID: sender, codecs: recorder.codecSummary, bytes: recorder.bytesProduced,
                                             mediaBytes: recorder.mediaBytesReceived, packets: counts.packets, lost: counts.lost,
                                             recovered: counts.recovered, keyframeRequests: counts.keyframeRequests,
                                             jitterMilliseconds: counts.jitterMilliseconds,
                                             framesDropped: counts.framesDropped.total + recorder.statistics.framesDropped)
                }
            }.get()) ?? []
        }
        var status = JoinStatus(elapsedSeconds: uptimeSeconds, phase: phase, senders: senders)
        if let summary = media?.interruptions.summary(now: clock.now()) {
            status.interruptions = summary.count
            status.mediaLostSeconds = Double(summary.mediaLostNanoseconds) / 1e9
        }
        return status
    }

    /// Totals for metrics (safe from any thread; the counters are read on the transport's loop).
    /// Counters of connections that ended are added in, so they only grow across rejoins.
    public func totals() async -> SessionTotals {
        let (live, phase, writer, final, media, admitted) = state.withLock { state in
            let admitted = state.finalTotals == nil && state.admitSample()
            return (admitted ? state.live : nil, state.phase, state.writer, state.finalTotals, admitted ? state.media : nil, admitted)
        }
        if let final { return final }
        defer { if admitted { state.withLock { $0.samplesOnLoops -= 1 } } }
        var totals = SessionTotals(phase: phase, startedAtUnixSeconds: Double(started.wallClockMilliseconds) / 1_000, uptimeSeconds: uptimeSeconds)
        if let media {
            let ended = media.endedConnections
            (totals.transport, totals.received, totals.receiver) = (ended.transport, ended.received, ended.receiver)
            let recordings = media.recordings
            if let sample = try? await media.loop.submit(confined: recordings, { ($0.totals, $0.recorders.count) }).get() {
                (totals.recording, totals.sendersRecording) = sample
            }
            let summary = media.interruptions.summary(now: clock.now())
            totals.interruptions = summary.count
            totals.rejoins = summary.rejoins
            totals.interruptedSeconds = Double(summary.interruptedNanoseconds) / 1e9
            totals.mediaLostSeconds = Double(summary.mediaLostNanoseconds) / 1e9
            totals.rejoining = summary.current != nil
        }
        if let live {
            let (core, base, backlog) = (live.core, totals, live.transport.backlog)
            let kernelDrops = live.transport.kernelDrops()
            let sample = try? await live.transport.eventLoop.submit(confined: core) { core -> SessionTotals in
                var sample = base
                sample.iceState = "\(core.ice.state)"
                sample.dtlsState = "\(core.dtls.state)"
                sample.transport = base.transport + core.counters.including(backlog.counters, kernelDrops: kernelDrops)
                sample.received = base.received + (core.media?.totalCounters ?? ReceiveCounters())
                sample.receiver = base.receiver + (core.media?.counters ?? MediaReceiverCounters())
                return sample
            }.get()
            if let sample { totals = sample }
        }
        let (inbox, droppedBefore) = state.withLock { ($0.inbox, $0.inboxDroppedBefore) }
        totals.inboxDepth = inbox.depth
        totals.signalingMessagesDropped = droppedBefore.messages + inbox.dropped.messages
        if let writer { Self.sampleCatalog(writer, into: &totals) }
        if let webhooks = state.withLock({ $0.webhooks }) { totals.webhooks = webhooks.totals }
        totals.writeQueueBytes = WriteBudget.shared.reservedBytes
        return totals
    }

    private static func sampleCatalog(_ writer: CatalogWriter, into totals: inout SessionTotals) {
        (totals.catalogQueue, totals.catalogQueueBytes) = writer.queued
        (totals.catalogSpoolDepth, totals.catalogSpoolBytes, totals.catalogWritesSpooled) = writer.spoolStats
        totals.catalogWritesDropped = writer.dropped
    }

    func setPhase(_ phase: SessionPhase) { state.withLock { $0.phase = phase } }

    func setLive(_ path: MediaPath?) { state.withLock { $0.live = path } }

    /// Ends the session from outside (signals); `reason` goes into the catalog. It travels on
    /// the control path: never dropped, never behind queued messages.
    public func stop(reason: String) {
        stopRequest.request(reason)
        state.withLock { $0.inbox }.post(control: .stop(reason: reason))
    }

    public func run() async -> JoinOutcome {
        let catalog: any CatalogStore
        let path = options.dataDirectory.catalogPath
        let open: CatalogOpener = options.openCatalog ?? { logger in try Catalog(path: path, logger: logger) }
        do { catalog = try open(logger) } catch {
            logger.error("catalog unusable", metadata: ["error": "\(error)"])
            return JoinOutcome(cause: (error as? CatalogError)?.endCause ?? .storageFailed, endReason: "storage: \(error)", sessionID: nil)
        }
        let startedAt = clock.wallClockMilliseconds()
        let sessionID = options.sessionID ?? ULID.generate(now: UInt64(startedAt)).string
        let writer = CatalogWriter(catalog: catalog, spoolPath: options.dataDirectory.spoolPath(session: sessionID), clock: clock, logger: logger)
        state.withLock { $0.writer = writer }
        let opening: SessionOpening
        do {
            opening = try SessionOpening.open(catalog: catalog, options: options, id: sessionID, now: startedAt)
        } catch {
            logger.error("cannot open the session", metadata: ["session": "\(sessionID)", "reason": "\(error.reason)"])
            return JoinOutcome(cause: error.cause, endReason: error.reason, sessionID: nil)
        }
        var logger = self.logger
        logger[metadataKey: "session"] = "\(sessionID)"
        logger[metadataKey: "channel"] = "\(options.connect.channelID)"
        if opening.prior != nil { logger[metadataKey: "segment"] = "\(opening.segment)" }
        logger.notice(opening.prior == nil ? "joining" : "joining to continue the session another process recorded",
                      metadata: ["urls": "\(options.urls.joined(separator: ","))"])

        let webhooks = options.webhooks.map {
            SessionWebhooks(settings: $0, host: options.host, version: options.recbotVersion, writer: writer, catalog: catalog, clock: clock, logger: logger)
        }
        webhooks?.start()
        state.withLock { $0.webhooks = webhooks }
        // A continued session keeps its start: its split grid, file offsets and report go on
        // from there (a monotonic time before this process began is fine: it is a number).
        let joinedAt = clock.now()
        let sessionStart = joinedAt.adding(milliseconds: -(startedAt - opening.record.startedAt))
        let start = SessionStart(id: sessionID, startedAt: opening.record.startedAt, startTime: sessionStart, joinedAt: joinedAt,
                                 segment: opening.segment, prior: opening.prior, writer: writer, logger: logger, clock: clock, webhooks: webhooks)
        var ending = await record(start)
        stopRequest.close()
        state.withLock { $0.inbox }.close()
        if !writer.drain(timeoutSeconds: options.finalizeTimeoutSeconds) {
            logger.error("catalog writes did not finish in time; the session stays open for `recbot repair`",
                         metadata: ["seconds": "\(options.finalizeTimeoutSeconds)"])
            return JoinOutcome(cause: .storageFailed, endReason: "storage: catalog writes timed out", sessionID: sessionID)
        }
        if let error = writer.error, ending.result == .success {
            (ending.cause, ending.reason) = (.storageFailed, "storage: \(error)")
        }
        if writer.dropped > 0 {
            logger.error("catalog writes dropped: the catalog could not keep up", metadata: ["dropped": "\(writer.dropped)"])
        }
        ending.counters.catalogWritesDropped = Int64(writer.dropped)
        // Through the writer, so an unreachable catalog gets them from the spool later.
        writer.submit(.sessionCounters(id: sessionID, ending.counters, segment: opening.segment))
        writer.submit(.endSegment(id: sessionID, segment: opening.segment, endedAt: clock.wallClockMilliseconds(), endReason: ending.reason,
                                  exitStatus: Int(ending.result.rawValue)))
        let drained = writer.finish(timeoutSeconds: options.finalizeTimeoutSeconds)
        await webhooks?.finish(seconds: JoinSession.webhookFlushSeconds)
        if let webhooks {
            let totals = webhooks.totals
            state.withLock { $0.finalTotals?.webhooks = totals }
        }
        // The last totals were taken before these last writes: the catalog's part of them is
        // what the writer holds now (what waits in the spool for `recbot repair`).
        state.withLock { state in
            if var final = state.finalTotals {
                Self.sampleCatalog(writer, into: &final)
                state.finalTotals = final
            }
        }
        if !drained || (writer.error != nil && ending.result == .success) {
            logger.error("cannot end the session in the catalog", metadata: ["error": "\(writer.error.map { "\($0)" } ?? "timed out")"])
            ending.cause = .storageFailed
        }
        let spooled = writer.spooled
        if let spool = spooled.path {
            // The recording is whole; the catalog will learn of it from the spool.
            logger.error("the catalog could not take every write by the end: the rest wait in the spool; `recbot repair` applies them",
                         metadata: ["writes": "\(spooled.writes)", "spool": "\(spool)"])
            if ending.result == .success { ending.cause = .catalogUnreachable }
        }
        logger.notice("session ended", metadata: ["reason": "\(ending.reason)", "recordings": "\(ending.recordings)"])
        return JoinOutcome(cause: ending.cause, endReason: ending.reason, sessionID: sessionID)
    }

    /// What every phase of one session needs to know about it.
    struct SessionStart {
        var id: String
        /// When the session started (Unix ms, and on this process's clock): its first
        /// segment's start, before this process began when it continues the session.
        var startedAt: Int64
        var startTime: MonotonicTime
        /// When this process began recording the session.
        var joinedAt: MonotonicTime
        /// This process's segment of the session, and what earlier ones left (a failover).
        var segment: Int
        var prior: SessionOpening.PriorSession?
        var writer: CatalogWriter
        var logger: Logger
        var clock: any TimeSource
        var webhooks: SessionWebhooks?
    }

    /// How long the end of a session spends delivering its last webhooks (the rest stay queued).
    static let webhookFlushSeconds = 5.0

    // MARK: - Phases

    /// Connects, records, and after a failure a rejoin may cure joins again (with backoff)
    /// until the session's window ends; then finishes the files and the report.
    private func record(_ session: SessionStart) async -> SessionEnding {
        // Two threads: media, and signaling (see SessionMedia for why they are not one).
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var loops = group.makeIterator()
        guard let mediaLoop = loops.next(), let signalingLoop = loops.next() else { preconditionFailure("a group of two loops") }
        let media = SessionMedia(session: session, options: options, loop: mediaLoop, signalingLoop: signalingLoop)
        state.withLock { $0.media = media }
        let clock = session.clock
        let timer = options.durationMilliseconds.map { duration in
            Task { [weak self] in
                // Saturating: `--duration 9999999999d` is a very long wait, not an overflow trap.
                let (nanoseconds, overflow) = max(0, duration).multipliedReportingOverflow(by: 1_000_000)
                try? await clock.sleep(nanoseconds: overflow ? .max : nanoseconds)
                if !Task.isCancelled { self?.stop(reason: "duration-elapsed") }
            }
        }
        defer { timer?.cancel() }
        // Cancelled (below) when the session ends, so holding the session is no cycle.
        let presenceWatch = media.presence.isActive ? Task { [self] in
            await PresenceWatch.run(presence: { media.presence }, clock: clock) { self.emptyRoomEnds($0) }
        } : nil
        defer { presenceWatch?.cancel() }
        var outcome = await connect(session, media: media)
        var dropped = outcome.inboxDropped
        // A first join that never recorded fails at once: that is a wrong URL, a firewall or
        // credentials far more often than a blip, and the operator should hear of it now.
        if outcome.recordingSince != nil {
            while outcome.rejoinable, let recordingSince = outcome.recordingSince {
                guard let next = await rejoin(after: outcome, recordingSince: recordingSince, session: session, media: media) else {
                    // Stopped (the window ended, a signal) while waiting to join again.
                    outcome = SessionConnection.Outcome(ending: SessionEnding(.connectionLost, stopRequest.requested ?? "stopped"), rejoinable: false)
                    break
                }
                outcome = next
                dropped.messages += next.inboxDropped.messages
                dropped.bytes += next.inboxDropped.bytes
            }
        }
        // Only when that stop was the one obeyed (a duration or a signal at the same moment wins as it came first).
        if stopRequest.requested == SenderPresence.Verdict.nobodyCame.reason, outcome.ending.cause == .completed {
            outcome.ending.cause = .noSenders
        }
        let ending = Self.sessionEnding(outcome.ending, interruptions: media.interruptions.summary(now: clock.now()),
                                        failOnInterruption: options.failOnInterruption)
        setPhase(.finalizing)
        var final = await SessionFinish(session: session, options: options, media: media).finish(ending, inboxDropped: dropped)
        final.counters.messagesDropped = Int64(dropped.messages)
        // The last totals, while the loop still runs: metrics read them after the end.
        let totals = await totals()
        state.withLock { $0.finalTotals = totals }
        await closeLoops(group)
        return final
    }

    /// `--stop-when-idle` or `--wait-for-senders` decided: the session stops as a signal would stop it.
    private func emptyRoomEnds(_ verdict: SenderPresence.Verdict) {
        switch verdict {
        case .idle: logger.notice("no sender for --stop-when-idle; stopping")
        case .nobodyCame: logger.notice("no sender came within --wait-for-senders; stopping")
        }
        stop(reason: verdict.reason)
    }

    /// Shuts the session's loops down once no sample waits on them. NIO drops a task submitted
    /// to a loop that has shut down (it prints an error), so the sample's future would never
    /// complete: a metrics sample caught at the end hung the metrics and, waiting for them, the
    /// process, after the session had ended and its files were done.
    private func closeLoops(_ group: MultiThreadedEventLoopGroup) async {
        state.withLock { $0.loopsOpen = false }
        while state.withLock({ $0.samplesOnLoops }) > 0 { try? await clock.sleep(nanoseconds: 5_000_000) }
        group.shutdownGracefully { _ in }
    }

    /// One connection, with its own inbox.
    private func connect(_ session: SessionStart, media: SessionMedia, rejoin: Bool = false) async -> SessionConnection.Outcome {
        let inbox = Self.makeInbox(logger: session.logger)
        state.withLock { $0.inbox = inbox }
        if let reason = stopRequest.requested { inbox.post(control: .stop(reason: reason)) }  // a stop that came in between
        let (interruptions, clock) = (media.interruptions, clock)
        let outcome = await SessionConnection(session: session, options: options, media: media, stopRequest: stopRequest, inbox: inbox, host: self,
                                              rejoin: rejoin)
            .run(onRecording: { connectionID, now in interruptions.recovered(connectionID: connectionID, now: now, wallClock: clock.wallClockMilliseconds()) },
                 onFirstFrame: { interruptions.firstFrame(at: $0) })
        interruptions.connectionEnded()
        let dropped = inbox.dropped
        state.withLock { state in
            state.inboxDroppedBefore.messages += dropped.messages
            state.inboxDroppedBefore.bytes += dropped.bytes
        }
        return outcome
    }

    /// Rides out one outage: joins again with backoff until a connection records (returned),
    /// or the session must end (nil when a stop came; otherwise the failed attempt's outcome
    /// with `rejoinable` false).
    private func rejoin(after failed: SessionConnection.Outcome, recordingSince: MonotonicTime, session: SessionStart,
                        media: SessionMedia) async -> SessionConnection.Outcome? {
        let logger = session.logger
        let interruptions = media.interruptions
        var decision = interruptions.begin(cause: failed.ending.reason, connectedAt: recordingSince, lastMediaAt: failed.lastFrame,
                                           now: clock.now(), wallClock: clock.wallClockMilliseconds())
        var last = failed
        var attempt = 0
        while true {
            guard case .retry(let at) = decision else {
                if case .giveUp(let why) = decision {
                    logger.error("giving up rejoining", metadata: ["reason": "\(why)", "cause": "\(failed.ending.reason)"])
                }
                last.rejoinable = false
                return last
            }
            attempt += 1
            let delay = max(0, at.nanoseconds - clock.now().nanoseconds)
            logger.warning("connection to Sora lost; joining again", metadata: [
                "cause": "\(last.ending.reason)", "attempt": "\(attempt)", "in_ms": "\(delay / 1_000_000)",
            ])
            setPhase(.rejoining(attempt: attempt))
            guard await RejoinWait.wait(until: at, probing: last.unreachable ? options.urls : [], stopRequest: stopRequest,
                                        loop: media.loop, clock: clock) else { return nil }
            interruptions.attemptStarted()
            last = await connect(session, media: media, rejoin: true)
            if last.recordingSince != nil { return last }
            guard last.rejoinable, stopRequest.requested == nil else { last.rejoinable = false; return last }
            decision = interruptions.attemptFailed(now: clock.now())
        }
    }

    /// The session's end from its last connection's, told with its outages: recorded with
    /// interruptions is a success (unless `--fail-on-interruption`); ended while still
    /// rejoining is the network failure it was.
    static func sessionEnding(_ last: SessionEnding, interruptions: InterruptionLog.Summary, failOnInterruption: Bool) -> SessionEnding {
        guard interruptions.count > 0 else { return last }
        var ending = last
        let lost = String(format: "%.1f", Double(interruptions.mediaLostNanoseconds) / 1e9)
        let counted = "\(interruptions.count) interruption\(interruptions.count == 1 ? "" : "s"), \(lost) s lost"
        if let current = interruptions.current {
            // Told apart: a connection kept through a stall the window ended in (the network
            // was still down), and a rejoin still under way.
            let state = interruptions.currentIsStall ? "network still down at the end" : "still rejoining"
            ending.reason = "\(last.reason) (\(state) after \(current); \(counted))"
            if ending.result == .success { ending.cause = .connectionLost }
        } else {
            ending.reason = "\(last.reason) (\(counted))"
            if ending.cause == .completed { ending.cause = .recoveredAfterInterruptions(strict: failOnInterruption) }
        }
        return ending
    }

}

/// How a session ended: its cause, the reason for the catalog, and how many files it left.
struct SessionEnding: Error {
    var cause: EndCause
    var reason: String
    var recordings: Int
    var counters = SessionCounters()

    /// The exit status the cause gives.
    var result: ExitStatus { ExitStatus(cause) }

    init(_ cause: EndCause, _ reason: String, recordings: Int = 0) {
        self.cause = cause
        self.reason = reason
        self.recordings = recordings
    }
}
