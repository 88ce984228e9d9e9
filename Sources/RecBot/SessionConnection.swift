import Foundation
import Logging
import Outcomes
import SoraSignaling
import SoraSignalingCore
import WireCoding

/// One connection to Sora within a session: signaling up to the offer, the answer and the
/// transport, the conversation until it ends, then the goodbye and this connection's files
/// handed to the finisher. A session runs one, and one more after each failure a rejoin may
/// cure; what they share (recorders, event log, outages) lives in `SessionMedia`.
struct SessionConnection {
    let session: JoinSession.SessionStart
    let options: JoinOptions
    let media: SessionMedia
    let stopRequest: StopRequest
    let inbox: SessionInbox
    let host: JoinSession
    /// A rejoin waits less for Sora's offer than the first join: a server that is back answers
    /// at once, and an attempt stuck in a dark network should give way to the next.
    var rejoin = false

    /// How the connection ended, and what the session makes of it.
    struct Outcome {
        /// The session's end if this connection is its last.
        var ending: SessionEnding
        /// Joining again may cure what ended it (see `ConnectionEndKind`).
        var rejoinable: Bool
        /// Signaling never reached a server (the network may be dark): worth probing for its return.
        var unreachable = false
        /// When it started recording (DTLS up); nil when it never did.
        var recordingSince: MonotonicTime?
        var lastFrame: MonotonicTime?
        var inboxDropped = SessionInbox.Dropped()

        init(ending: SessionEnding, rejoinable: Bool, unreachable: Bool = false) {
            (self.ending, self.rejoinable, self.unreachable) = (ending, rejoinable, unreachable)
        }
    }

    /// `onRecording`: DTLS is up (with recbot's connection id); `onFirstFrame`: its first frame.
    func run(onRecording: @escaping @Sendable (String?, MonotonicTime) -> Void,
             onFirstFrame: @escaping @Sendable (MonotonicTime) -> Void) async -> Outcome {
        let logger = session.logger
        // 1. Signaling up to the offer.
        host.setPhase(.signaling)
        let start: SignalingStart
        var options = self.options
        if rejoin { options.connectTimeoutSeconds = min(options.connectTimeoutSeconds, Self.rejoinConnectTimeoutSeconds) }
        switch await SignalingStartRace.run(options: options, stopRequest: stopRequest, group: media.signalingLoop, clock: session.clock, logger: logger) {
        case .stopped(let why):
            logger.notice("stopped before the offer arrived", metadata: ["reason": "\(why)"])
            return Outcome(ending: SessionEnding(.completed, why), rejoinable: false)
        case .started(let started):
            start = started
        case .failed(let error):
            logger.error("signaling failed", metadata: ["error": "\(error)"])
            return ConnectionEndKind.outcome(of: error)
        }
        let offer = start.offer
        logger.info("offer received", metadata: ["url": "\(start.connection.url)", "connection_id": "\(offer.connectionID ?? "-")"])
        session.writer.submit(.updateSession(id: session.id, soraSessionID: offer.sessionID, connectionID: offer.connectionID,
                                             clientID: offer.clientID, bundleID: offer.bundleID, signalingURL: start.connection.url))
        let eventLog = media.eventLog
        for message in start.earlier { eventLog.record(message) }

        // 2. Transport and answer.
        let layers = LayerPreference(simulcastRID: options.connect.simulcastRID, spotlightFocusRID: options.connect.spotlightFocusRID,
                                     spotlightUnfocusRID: options.connect.spotlightUnfocusRID)
        var signaling = SignalingSession(offer: offer, layers: layers)
        let reader = Task { [inbox, clock = session.clock] in
            for await text in start.connection.messages { inbox.post(message: .webSocketMessage(text)) }
            try? await clock.sleep(nanoseconds: 20_000_000)
            inbox.post(message: .webSocketClosed(code: start.connection.closeCode), essential: true)
        }
        let path: MediaPath
        var actions: [SignalingSession.Action]
        switch await MediaPath.answer(start, options: options, session: session, media: media) {
        case .answered(let answered):
            path = answered
            actions = signaling.handle(path.answered, now: session.clock.now())
        case .nothingToReceive(let emptyAnswer):
            switch await waitForFirstSender(&signaling, start: start, emptyAnswer: emptyAnswer) {
            case .media(let answered, let carried):
                (path, actions) = (answered, carried)
            case .ended(let end):
                return await endWithoutMedia(end, signaling: signaling, connection: start.connection, reader: reader)
            case .failed(let ending):
                reader.cancel()
                return ConnectionEndKind.outcome(ofAnswerFailure: ending)
            }
        case .failed(let ending):
            reader.cancel()
            return ConnectionEndKind.outcome(ofAnswerFailure: ending)
        }
        host.setLive(path)
        // The answer goes out as the session's action, before media starts; the rest of what
        // came with it is the conversation's.
        while let action = actions.first, case .send(let text, let route) = action {
            path.send(text, via: route, connection: start.connection)
            actions.removeFirst()
        }

        // 3. Media flows on the transport's loop; signaling and control come through the inbox.
        host.setPhase(.ice(.checking))
        let botConnectionID = offer.connectionID
        path.start(inbox: inbox, observers: MediaPath.Observers(
            phase: { [weak host] in host?.setPhase($0) },
            recording: { onRecording(botConnectionID, $0) },
            firstFrame: onFirstFrame))
        // Progress lines and the liveness watch live exactly as long as the conversation.
        let end = await withDiscardingTaskGroup(returning: SignalingSessionEnd.self) { group in
            group.addTask { await path.reportProgress(every: 5) }
            group.addTask { [media, inbox, clock = session.clock, logger] in
                await ConnectionWatch(clock: clock, logger: logger, interruptions: media.interruptions, inbox: inbox)
                    .run(path: path, connection: start.connection, loop: media.loop)
            }
            defer { group.cancelAll() }
            return await converse(&signaling, path: path, connection: start.connection, pending: actions)
        }

        // 4. Leave politely; this connection's files go to the finisher.
        let rejoinable = ConnectionEndKind.isRejoinable(end, transportFailure: path.transportFailure.withLockedValue { $0 })
            && options.rejoin.maximumAttempts != 0 && stopRequest.requested == nil
        host.setPhase(rejoinable ? .connectionLost : .finalizing)
        let shutdown = ConnectionShutdown(session: session, media: path)
        await shutdown.leave(signaling, connection: start.connection)
        reader.cancel()
        inbox.close()  // nothing more is queued; what is there is stored below
        // Messages that came in behind the end are still stored (nothing is acted on).
        for input in inbox.drainMessages() {
            for action in signaling.handle(input, now: session.clock.now()) {
                if case .store(let record) = action { eventLog.store(record, receivedAt: input.receivedAt) }
            }
        }
        await shutdown.logSummary(signaling: signaling.counters, inboxDropped: inbox.dropped)
        // Not live before its counters join the ended connections' (metrics must never count them twice).
        host.setLive(nil)
        let cause = await shutdown.close(end, interrupted: rejoinable)
        var outcome = Outcome(ending: SessionEnding(cause, end.reason), rejoinable: rejoinable)
        let times = path.times.withLockedValue { $0 }
        (outcome.recordingSince, outcome.lastFrame) = (times.recordingSince, times.lastFrame)
        outcome.inboxDropped = inbox.dropped
        outcome.inboxDropped.messages += start.connection.droppedMessages
        return outcome
    }

    static let rejoinConnectTimeoutSeconds = 5.0

    /// Runs signaling until the connection ends: inputs from the inbox go through the sans-IO
    /// session, whose actions are carried out here.
    private func converse(_ signaling: inout SignalingSession, path: MediaPath, connection: SignalingConnection,
                          pending carried: [SignalingSession.Action]) async -> SignalingSessionEnd {
        var pending = carried
        // What an input stores keeps the input's read time (a data-channel message's).
        var receivedAt: Int64?
        while true {
            if pending.isEmpty {
                guard let input = await inbox.next() else { return SignalingSessionEnd(cause: .requested, reason: stopRequest.requested ?? "ended") }
                pending = signaling.handle(input, now: session.clock.now())
                receivedAt = input.receivedAt
                continue
            }
            let action = pending.removeFirst()
            switch action {
            case .end(let end):
                return end
            case .send(let text, let route):
                path.send(text, via: route, connection: connection)
            case .store(let record):
                media.eventLog.store(record, receivedAt: receivedAt)
            case .log(let line):
                Self.log(line, session.logger)
            case .addRemoteCandidate(let text):
                path.addRemoteCandidate(text)
            case .renegotiate(let request):
                let answer = await path.renegotiate(sdp: request.sdp)
                pending.insert(contentsOf: signaling.handle(.renegotiated(request, answerSDP: answer), now: session.clock.now()), at: 0)
            case .collectStats(let request):
                let packets = await path.packetsReceived()
                let stats = SignalingSession.Input.stats(request, packetsReceived: packets, timestamp: session.clock.wallClockMilliseconds())
                pending.insert(contentsOf: signaling.handle(stats, now: session.clock.now()), at: 0)
            }
        }
    }

    /// The conversation ended while the room was still empty: the goodbye, and what came in
    /// behind the end stored. Nothing was recorded.
    private func endWithoutMedia(_ end: SignalingSessionEnd, signaling: SignalingSession, connection: SignalingConnection,
                                 reader: Task<Void, Never>) async -> Outcome {
        var signaling = signaling
        for case .send(let text, _) in signaling.leave() { connection.send(text) }
        if !connection.isClosed { await connection.close() }
        reader.cancel()
        inbox.close()
        for input in inbox.drainMessages() {
            for action in signaling.handle(input, now: session.clock.now()) {
                if case .store(let record) = action { media.eventLog.store(record, receivedAt: input.receivedAt) }
            }
        }
        let rejoinable = ConnectionEndKind.isRejoinable(end, transportFailure: nil) && options.rejoin.maximumAttempts != 0 && stopRequest.requested == nil
        var outcome = Outcome(ending: SessionEnding(end.isFailure ? .connectionLost : .completed, end.reason), rejoinable: rejoinable)
        outcome.inboxDropped = inbox.dropped
        outcome.inboxDropped.messages += connection.droppedMessages
        return outcome
    }

    /// A line the signaling session noted, in the session's log.
    static func log(_ line: SignalingLog, _ logger: Logger) {
        let metadata = line.metadata.mapValues { Logger.MetadataValue.string($0) }
        switch line.level {
        case .info: logger.info("\(line.message)", metadata: metadata)
        case .warning: logger.warning("\(line.message)", metadata: metadata)
        }
    }
}
