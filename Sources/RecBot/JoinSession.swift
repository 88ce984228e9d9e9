import Archive
import DTLS
import Foundation
import Logging
import Media
import NIOCore
import NIOPosix
import ArchivePostgres
import Recorder
import SDP
import SoraSignaling
import Transport
import WireCoding

/// One `recbot join`: signaling, transport, recording and catalog from start to finalize.
/// The decisions live in sans-IO cores (`SignalingSession`, the peer connection and media
/// cores, `RecordingSet`); this type wires them to sockets, timers, files and the catalog.
public final class JoinSession: @unchecked Sendable {
    public let options: JoinOptions
    private let logger: Logger
    private let stateLock = NSLock()
    private var live: (recordings: RecordingSet, core: PeerConnectionCore, loop: EventLoop)?
    private var phase = "starting"
    private var writer: CatalogWriter?
    private var finalTotals: SessionTotals?
    private let started = Date()
    private let stopRequest = StopRequest()
    /// Everything that reaches the session while it records; a stop jumps the queue.
    let inbox: SessionInbox

    public init(options: JoinOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        inbox = SessionInbox { logger.error("signaling messages dropped: more arrive than can be handled (counted; summary at the end)") }
    }

    /// Current senders and counters (safe from any thread).
    public func snapshot() async -> JoinStatus {
        let (live, phase) = stateLock.withLock { (self.live, self.phase) }
        var senders: [JoinStatus.Sender] = []
        if let (recordings, core, loop) = live {
            senders = (try? await loop.submit {
                recordings.recorders.sorted { $0.key < $1.key }.map { sender, recorder in
                    let counts = core.media?.counters(sender: sender) ?? ReceiveCounters()
                    return JoinStatus.Sender(connectionID: sender, codecs: recorder.codecSummary, bytes: recorder.bytesProduced,
                                             mediaBytes: recorder.mediaBytesReceived, packets: counts.packets, lost: counts.lost,
                                             recovered: counts.recovered, keyframeRequests: counts.keyframeRequests,
                                             jitterMilliseconds: counts.jitterMilliseconds,
                                             framesDropped: counts.framesDropped.total + recorder.statistics.framesDropped)
                }
            }.get()) ?? []
        }
        return JoinStatus(elapsedSeconds: Date().timeIntervalSince(started), phase: phase, senders: senders)
    }

    /// Totals for metrics (safe from any thread; the counters are read on the transport's loop).
    public func totals() async -> SessionTotals {
        let (live, phase, writer, final) = stateLock.withLock { (self.live, self.phase, self.writer, self.finalTotals) }
        if let final { return final }
        var totals = SessionTotals(phase: phase, startedAtUnixSeconds: started.timeIntervalSince1970, uptimeSeconds: Date().timeIntervalSince(started))
        if let (recordings, core, loop) = live {
            let sample = try? await loop.submit { () -> SessionTotals in
                var sample = totals
                sample.iceState = "\(core.ice.state)"
                sample.dtlsState = "\(core.dtls.state)"
                sample.sendersRecording = recordings.recorders.count
                sample.transport = core.counters
                sample.received = core.media?.totalCounters ?? ReceiveCounters()
                sample.receiver = core.media?.counters ?? MediaReceiverCounters()
                sample.recording = recordings.totals
                return sample
            }.get()
            if let sample { totals = sample }
        }
        totals.inboxDepth = inbox.depth
        totals.signalingMessagesDropped = inbox.dropped.messages
        if let writer { Self.sampleCatalog(writer, into: &totals) }
        totals.writeQueueBytes = WriteBudget.shared.reservedBytes
        return totals
    }

    private static func sampleCatalog(_ writer: CatalogWriter, into totals: inout SessionTotals) {
        (totals.catalogQueue, totals.catalogQueueBytes) = writer.queued
        (totals.catalogSpoolDepth, totals.catalogSpoolBytes, totals.catalogWritesSpooled) = writer.spoolStats
        totals.catalogWritesDropped = writer.dropped
    }

    func setPhase(_ text: String) { stateLock.withLock { phase = text } }

    /// Ends the session from outside (signals); `reason` goes into the catalog. It travels on
    /// the control path: never dropped, never behind queued messages.
    public func stop(reason: String) {
        stopRequest.request(reason)
        inbox.post(control: .stop(reason: reason))
    }

    public func run() async -> JoinOutcome {
        let catalog: any CatalogStore
        let location = options.catalog ?? .sqlite(path: options.dataDirectory.catalogPath)
        do { catalog = try location.open(logger: logger) } catch {
            logger.error("catalog unusable", metadata: ["error": "\(error)"])
            return JoinOutcome(result: ExitStatus(catalogError: error), endReason: "storage: \(error)", sessionID: nil)
        }
        let startedAt = Self.nowMilliseconds()
        let sessionID = ULID.generate(now: UInt64(startedAt)).string
        let writer = CatalogWriter(catalog: catalog, spoolPath: options.dataDirectory.spoolPath(session: sessionID), logger: logger)
        stateLock.withLock { self.writer = writer }
        do {
            try catalog.insertSession(SessionRecord(
                id: sessionID, channelID: options.connect.channelID, startedAt: startedAt, clientID: options.connect.clientID,
                bundleID: options.connect.bundleID, recbotVersion: options.recbotVersion, hostname: ProcessInfo.processInfo.hostName,
                pid: Int(getpid())))
        } catch {
            return JoinOutcome(result: .storage, endReason: "storage: \(error)", sessionID: nil)
        }
        var logger = self.logger
        logger[metadataKey: "session"] = "\(sessionID)"
        logger[metadataKey: "channel"] = "\(options.connect.channelID)"
        logger.notice("joining", metadata: ["urls": "\(options.urls.joined(separator: ","))"])

        let start = SessionStart(id: sessionID, startedAt: startedAt, startTime: Self.monotonicNow(), writer: writer, logger: logger)
        var ending = await record(start)
        stopRequest.close()
        inbox.close()
        if !writer.drain(timeoutSeconds: options.finalizeTimeoutSeconds) {
            logger.error("catalog writes did not finish in time; the session stays open for `recbot repair`",
                         metadata: ["seconds": "\(options.finalizeTimeoutSeconds)"])
            return JoinOutcome(result: .storage, endReason: "storage: catalog writes timed out", sessionID: sessionID)
        }
        if let error = writer.error, ending.result == .success {
            (ending.result, ending.reason) = (.storage, "storage: \(error)")
        }
        if writer.dropped > 0 {
            logger.error("catalog writes dropped: the catalog could not keep up", metadata: ["dropped": "\(writer.dropped)"])
        }
        ending.counters.catalogWritesDropped = Int64(writer.dropped)
        // Through the writer, so an unreachable catalog gets them from the spool later.
        writer.submit(.sessionCounters(id: sessionID, ending.counters))
        writer.submit(.endSession(id: sessionID, endedAt: Self.nowMilliseconds(), endReason: ending.reason, exitStatus: Int(ending.result.rawValue)))
        let drained = writer.finish(timeoutSeconds: options.finalizeTimeoutSeconds)
        // The last totals were taken before these last writes: the catalog's part of them is
        // what the writer holds now (what waits in the spool for `recbot repair`).
        stateLock.withLock {
            if var final = finalTotals { Self.sampleCatalog(writer, into: &final); finalTotals = final }
        }
        if !drained || (writer.error != nil && ending.result == .success) {
            logger.error("cannot end the session in the catalog", metadata: ["error": "\(writer.error.map { "\($0)" } ?? "timed out")"])
            ending.result = .storage
        }
        let spooled = writer.spooled
        if let spool = spooled.path {
            // The recording is whole; the catalog will learn of it from the spool.
            logger.error("catalog unreachable at the end: writes kept in the spool; `recbot repair` applies them when it answers",
                         metadata: ["writes": "\(spooled.writes)", "spool": "\(spool)"])
            if ending.result == .success { ending.result = .catalogUnavailable }
        }
        logger.notice("session ended", metadata: ["reason": "\(ending.reason)", "recordings": "\(ending.recordings)"])
        return JoinOutcome(result: ending.result, endReason: ending.reason, sessionID: sessionID)
    }

    /// What every phase of one session needs to know about it.
    struct SessionStart {
        var id: String
        var startedAt: Int64
        var startTime: MonotonicTime
        var writer: CatalogWriter
        var logger: Logger
    }

    // MARK: - Phases

    private func record(_ session: SessionStart) async -> SessionEnding {
        let logger = session.logger
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }

        // 1. Signaling up to the offer.
        setPhase("signaling")
        let start: SignalingStart
        switch await SignalingStartRace.run(options: options, stopRequest: stopRequest, group: group, logger: logger) {
        case .stopped(let why):
            logger.notice("stopped before the offer arrived", metadata: ["reason": "\(why)"])
            return SessionEnding(.success, why)
        case .started(let started):
            start = started
        case .failed(let error):
            logger.error("signaling failed", metadata: ["error": "\(error)"])
            switch error {
            case .rejected(let code, _): return SessionEnding(.rejected, "rejected: close \(code)")
            case .invalidURL, .invalidJSON: return SessionEnding(.configuration, "configuration: \(error)")
            case .malformedMessage: return SessionEnding(.protocolError, "protocol: \(error)")
            default: return SessionEnding(.network, "signaling: \(error)")
            }
        }
        let offer = start.offer
        logger.info("offer received", metadata: ["url": "\(start.connection.url)", "connection_id": "\(offer.connectionID ?? "-")"])
        session.writer.submit(.updateSession(id: session.id, soraSessionID: offer.sessionID, connectionID: offer.connectionID,
                                             clientID: offer.clientID, bundleID: offer.bundleID, signalingURL: start.connection.url))
        let eventLog = SignalingEventLog(sessionID: session.id, writer: session.writer, logger: logger, limits: options.eventLimits)
        for message in start.earlier { eventLog.record(message) }

        // 2. Transport and answer.
        let media: MediaPath
        switch await MediaPath.answer(start, options: options, session: session, eventLog: eventLog, group: group) {
        case .success(let path): media = path
        case .failure(let ending): return ending
        }
        stateLock.withLock { live = (media.recordings, media.core, media.transport.eventLoop) }

        // 3. Media flows on the transport's loop; signaling and control come through the inbox.
        setPhase("ICE checking")
        media.start(inbox: inbox, onPhase: { [weak self] in self?.setPhase($0) })
        let reader = Task { [inbox] in
            for await text in start.connection.messages { inbox.post(message: .webSocketMessage(text)) }
            try? await Task.sleep(nanoseconds: 20_000_000)
            inbox.post(message: .webSocketClosed(code: start.connection.closeCode), essential: true)
        }
        let timer = options.durationMilliseconds.map { duration in
            Task { [inbox] in
                // Saturating: `--duration 9999999999d` is a very long wait, not an overflow trap.
                let (nanoseconds, overflow) = UInt64(max(0, duration)).multipliedReportingOverflow(by: 1_000_000)
                try? await Task.sleep(nanoseconds: overflow ? .max : nanoseconds)
                if !Task.isCancelled { inbox.post(control: .stop(reason: "duration-elapsed")) }
            }
        }
        let progress = Task { await media.reportProgress(every: 5) }
        var signaling = SignalingSession(offer: offer, logger: logger)
        let end = await converse(&signaling, media: media, connection: start.connection, eventLog: eventLog)
        timer?.cancel()
        progress.cancel()

        // 4. Leave politely, then finalize everything.
        setPhase("finalizing")
        let shutdown = SessionShutdown(session: session, options: options, media: media, eventLog: eventLog)
        await shutdown.leave(signaling, connection: start.connection)
        reader.cancel()
        inbox.close()  // nothing more is queued; what is there is stored below
        // Messages that came in behind the end are still stored (nothing is acted on).
        for input in inbox.drainMessages() { for action in signaling.handle(input) { if case .store(let record) = action { eventLog.store(record) } } }
        await shutdown.logSummary(signaling: signaling.counters, inboxDropped: inbox.dropped)
        var dropped = inbox.dropped
        dropped.messages += start.connection.droppedMessages
        let ending = await shutdown.finish(end, inboxDropped: dropped)
        // The last totals, while the transport's loop still runs: metrics read them after the end.
        let final = await totals()
        stateLock.withLock { finalTotals = final }
        return ending
    }

    /// Runs signaling until the session ends: inputs from the inbox go through the sans-IO
    /// session, whose actions are carried out here.
    private func converse(_ signaling: inout SignalingSession, media: MediaPath, connection: SignalingConnection,
                          eventLog: SignalingEventLog) async -> SignalingSessionEnd {
        var pending: [SignalingSession.Action] = []
        while true {
            if pending.isEmpty {
                guard let input = await inbox.next() else { return SignalingSessionEnd(cause: .requested, reason: "ended") }
                pending = signaling.handle(input)
                continue
            }
            let action = pending.removeFirst()
            switch action {
            case .end(let end):
                return end
            case .send(let text, let route):
                media.send(text, via: route, connection: connection)
            case .store(let record):
                eventLog.store(record)
            case .addRemoteCandidate(let text):
                media.addRemoteCandidate(text)
            case .renegotiate(let request):
                let answer = await media.renegotiate(sdp: request.sdp, eventLog: eventLog)
                pending.insert(contentsOf: signaling.handle(.renegotiated(request, answerSDP: answer)), at: 0)
            case .collectStats(let request):
                let packets = await media.packetsReceived()
                pending.insert(contentsOf: signaling.handle(.stats(request, packetsReceived: packets, timestamp: Self.nowMilliseconds())), at: 0)
            }
        }
    }

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    static func monotonicNow() -> MonotonicTime { MonotonicTime(nanoseconds: Int64(NIODeadline.now().uptimeNanoseconds)) }
}

/// How a session ended: the exit status, the reason for the catalog, and how many files it left.
struct SessionEnding: Error {
    var result: ExitStatus
    var reason: String
    var recordings: Int
    var counters = SessionCounters()

    init(_ result: ExitStatus, _ reason: String, recordings: Int = 0) {
        self.result = result
        self.reason = reason
        self.recordings = recordings
    }
}
