import Archive
import DiskLayout
import DTLS
import Foundation
import ICE
import Logging
import Media
import NIOConcurrencyHelpers
import NIOCore
import Outcomes
import PeerConnection
import Recorder
import SDP
import SoraSignaling
import SoraSignalingCore
import STUN
import Transport
import TURN
import WireCoding

/// The session's media side once the offer is answered: the UDP transport with its peer
/// connection core (ICE, DTLS-SRTP, SCTP, the media core) on one event loop, and the recording
/// set that turns the core's frames into files. Signaling reaches it through the methods here.
final class MediaPath: @unchecked Sendable {
    // @unchecked: `negotiation` and `refusals` are only touched by the session's conversation
    // (one task); the recordings and the core only on the transport's event loop.
    let transport: UDPTransport
    let core: PeerConnectionCore
    let media: SessionMedia
    /// The core and the session's recordings, applied together (on the loop only).
    let pipeline: ConnectionPipeline
    var layout: ArchiveLayout { media.layout }
    let context: SidecarContext
    let offer: OfferMessage
    private var negotiation: RecvOnlyNegotiation
    /// The answer to the offer and its candidates, for the signaling session to send.
    var answered: SignalingSession.Input {
        .answered(sdp: negotiation.answer.sdp.serialized,
                  candidates: negotiation.answer.sdp.media.flatMap { $0.attributes(named: "candidate") }.map { "candidate:" + ($0.value ?? "") })
    }
    private var refusals = VideoRefusals()
    private let relayTrust: RelayTrust
    /// Why the transport failed, once it has: the exit code depends on it (a relay's own codes).
    let transportFailure = NIOLockedValueBox<TransportFailure?>(nil)
    /// When this connection started recording (DTLS up), and its first and last frames: a
    /// rejoin's outage is measured by them.
    let times = NIOLockedValueBox(ConnectionTimes())
    private let session: JoinSession.SessionStart
    private var logger: Logger { session.logger }

    struct ConnectionTimes: Sendable {
        var recordingSince: MonotonicTime?
        var firstFrame: MonotonicTime?
        var lastFrame: MonotonicTime?
    }

    private init(transport: UDPTransport, negotiation: RecvOnlyNegotiation, offer: OfferMessage, options: JoinOptions,
                 session: JoinSession.SessionStart, media: SessionMedia) {
        self.transport = transport
        relayTrust = RelayTrust(caFile: options.relay.caFile)
        self.negotiation = negotiation
        self.offer = offer
        self.session = session
        self.media = media
        core = negotiation.core
        pipeline = ConnectionPipeline(core: negotiation.core, media: media, logger: session.logger)
        context = SidecarContext(session: session.id, options: options, soraSessionID: offer.sessionID, botConnectionID: offer.connectionID)
    }

    /// What answering an offer came to.
    enum AnswerOutcome {
        /// The transport is bound; the signaling session sends the answer (`answered`).
        case answered(MediaPath)
        /// The offer has no section yet (an empty room): this answer says so, and the media
        /// path waits for a re-offer with sections (`SessionConnection.waitForFirstSender`).
        case nothingToReceive(answerSDP: String)
        /// The session's end.
        case failed(SessionEnding)
    }

    /// Binds the transport and answers the offer.
    static func answer(_ start: SignalingStart, options: JoinOptions, session: JoinSession.SessionStart,
                       media: SessionMedia) async -> AnswerOutcome {
        let eventLog = media.eventLog
        let logger = session.logger
        let connection = start.connection
        let hosts: [IPAddress]
        do { hosts = try options.hostPolicy.hostAddresses() } catch {
            await connection.close()
            return .failed(SessionEnding(.connectionLost, "network: cannot list local addresses: \(error)"))
        }
        guard !hosts.isEmpty else {
            await connection.close()
            return .failed(SessionEnding(.connectionLost, "network: no usable local address for ICE (see the address allow/deny lists)"))
        }
        let plan = await RelayPlan.make(offer: start.offer, settings: options.relay, logger: logger)
        for reason in plan.skipped { logger.warning("ICE server not used", metadata: ["reason": "\(reason)"]) }
        if plan.relayOnly && plan.servers.isEmpty {
            logger.error("relay-only, but no TURN server with credentials to use")
            connection.send(OutgoingMessage.disconnect(reason: "INTERNAL-ERROR"))
            await connection.close()
            return .failed(SessionEnding(.relayUnavailable, "TURN: relay-only, but no usable TURN server (see --ice-servers)"))
        }
        if !plan.servers.isEmpty {
            logger.info("TURN relays", metadata: ["servers": "\(plan.servers.map(\.name).joined(separator: " "))",
                                                  "policy": "\(plan.relayOnly ? "relay" : "all")"])
        }
        let transport: UDPTransport
        let negotiation: RecvOnlyNegotiation
        var bound: UDPTransport?  // closed if the offer cannot be answered: its reader threads block until then
        do {
            transport = try await UDPTransport.bind(addresses: hosts, on: media.loop, clock: session.clock, logger: logger)
            bound = transport
            let sdp = try SessionDescription(parsing: start.offer.sdp)
            // The media core NACKs gaps (RTX or plain retransmission) and asks for keyframes
            // with PLI, or FIR where only that is offered.
            var capabilities = ReceiverCapabilities()
            capabilities.rtcpFeedback = ["nack", "nack pli", "ccm fir"]
            capabilities.acceptsDataChannels = true  // whatever data channels Sora offers are received and logged
            negotiation = try RecvOnlyNegotiation(offer: sdp, hosts: transport.localAddresses, certificate: try DTLSCertificate(),
                                                  capabilities: capabilities, recovery: options.recovery,
                                                  relays: plan.servers, relayOnly: plan.relayOnly, overload: options.overload,
                                                  random: { [random = options.random] in random.next() })
        } catch {
            await bound?.close()
            if case .nothingToReceive(let answer) = error as? NegotiationError {
                logger.info("the offer has no section yet (nobody sends): waiting for a re-offer")
                media.sendersChanged(to: 0, now: session.clock.now())
                return .nothingToReceive(answerSDP: answer)
            }
            logger.error("cannot answer the offer", metadata: ["error": "\(error)"])
            connection.send(OutgoingMessage.disconnect(reason: "INTERNAL-ERROR"))
            await connection.close()
            return .failed(SessionEnding(.protocolViolation, "offer: \(error)"))
        }
        for media in negotiation.answer.media where !media.accepted {
            logger.info("section not received", metadata: ["mid": "\(media.mid ?? "-")", "reason": "\(media.rejectionReason ?? "-")"])
        }
        let path = MediaPath(transport: transport, negotiation: negotiation, offer: start.offer, options: options, session: session, media: media)
        if let capture = media.capture {
            capture.recordOffer(start.offer.sdp, at: session.clock.now())
            path.core.onDecrypted = capture.record  // before `start`: the loop does not use the core yet
        }
        path.refusals.note(negotiation.answer.media, eventLog: eventLog, logger: logger)
        let (pipeline, refused, context, now) = (path.pipeline, path.refusals.bySender, path.context, session.clock.now())
        // The recordings live on the session's loop (the transport's): their senders change there.
        // The core has not started, so there is nothing to send yet.
        try? await media.loop.submit(confined: pipeline) { [media] pipeline in
            let senders = pipeline.core.media?.senders ?? [:]
            pipeline.update(senders: senders, refusedVideo: refused, context: context, now: now)
            media.sendersChanged(to: senders.count, now: now)
        }.get()
        media.connectionStarted(context: path.context)
        return .answered(path)
    }

    /// Starts receiving: frames go to the recordings on the loop; data-channel messages and
    /// local candidates queue in the inbox; a transport failure takes the control path.
    /// What the session hears of a connection's progress (called on the transport's loop).
    struct Observers {
        var phase: @Sendable (SessionPhase) -> Void
        /// DTLS is up: the connection records from now on.
        var recording: @Sendable (MonotonicTime) -> Void
        /// The connection's first frame.
        var firstFrame: @Sendable (MonotonicTime) -> Void
    }

    func start(inbox: SessionInbox, observers: Observers) {
        let (pipeline, context, logger, transport) = (pipeline, context, logger, transport)
        let (transportFailure, times, clock) = (self.transportFailure, self.times, session.clock)
        transport.run(core, relayTrust: relayTrust, onEvent: { event in
            switch event {
            case .frames(let frames):
                if let last = frames.last?.completedAt {
                    let first = times.withLockedValue { times -> Bool in
                        defer { times.firstFrame = times.firstFrame ?? last; times.lastFrame = last }
                        return times.firstFrame == nil
                    }
                    if first { observers.firstFrame(frames.first?.completedAt ?? last) }
                }
                // Times come from the transport's clock, as the core saw them (no second clock read).
                pipeline.record(frames, context: context)
            case .failed(let failure):
                transportFailure.withLockedValue { $0 = $0 ?? failure }
                inbox.post(control: .transportFailed("\(failure)"))
            case .relay(let event): Self.log(event, logger: logger)
            case .overload(let event):
                Self.log(event, logger: logger)
                pipeline.overload(event)
            case .localCandidate(let candidate): inbox.post(message: .localCandidate(candidate.sdp))
            case .iceStateChanged(let state):
                logger.info("ICE \(state)")
                observers.phase(.ice(state))
            case .dtlsConnected(let profile):
                logger.info("DTLS connected", metadata: ["srtp": "\(profile)"])
                let now = clock.now()
                times.withLockedValue { $0.recordingSince = $0.recordingSince ?? now }
                observers.phase(.recording)
                observers.recording(now)
            case .dataChannelMessage(let channel, let isBinary, let data, let readAt):
                // Stamped with its read time on the wall clock: it then waits in the inbox, and
                // under load the session may get to it late.
                let waited = max(0, clock.now().nanoseconds - readAt.nanoseconds) / 1_000_000
                inbox.post(message: .dataChannelMessage(label: channel.label, isBinary: isBinary, data: data,
                                                        receivedAt: clock.wallClockMilliseconds() - waited))
            case .dataChannel(.opened(let channel)):
                logger.info("data channel open", metadata: ["label": "\(channel.label)", "ordered": "\(channel.ordered)"])
            case .dataChannel(.closed(let channel)):
                logger.info("data channel closed", metadata: ["label": "\(channel.label)"])
                if channel.label == "signaling" { inbox.post(message: .signalingChannelLost("closed"), essential: true) }
            case .dataChannel(.failed(let reason)):
                logger.warning("data channels failed", metadata: ["reason": "\(reason)"])
                inbox.post(message: .signalingChannelLost(reason), essential: true)
            default: break
            }
        })
        let servers = Self.stunServers(offer.iceServers)
        if !servers.isEmpty { transport.handle(.gatherServerReflexive(servers: servers)) }
    }

    /// A signaling message where it belongs: the WebSocket, or a data channel.
    func send(_ text: String, via route: SignalingRoute, connection: SignalingConnection) {
        switch route {
        case .webSocket: connection.send(text)
        case .dataChannel(let label): sendOnDataChannel(text, label: label)
        }
    }

    func sendOnDataChannel(_ text: String, label: String) {
        transport.handle(.dataChannelMessage(Array(text.utf8), label: label, binary: false))
    }

    func addRemoteCandidate(_ text: String) {
        guard let candidate = ICECandidate(sdp: text) else {
            logger.warning("unusable remote candidate ignored", metadata: ["candidate": "\(text.prefix(200))"])
            return
        }
        transport.handle(.remoteCandidate(candidate))
    }

    /// When ICE consent was last granted on the selected pair (nil before one is selected).
    func consentGrantedAt() async -> MonotonicTime? {
        let core = self.core
        return (try? await transport.eventLoop.submit(confined: core) { $0.ice.consentGrantedAt }.get()) ?? nil
    }

    func packetsReceived() async -> Int {
        let core = self.core
        return (try? await transport.eventLoop.submit(confined: core) { $0.counters.rtpPackets }.get()) ?? 0
    }

    /// Answers a re-offer; senders whose sections went away get their files finished now, so
    /// each file ends when its sender left. Nil when the re-offer cannot be answered.
    func renegotiate(sdp: String) async -> String? {
        let eventLog = media.eventLog
        let answer: RecvOnlyAnswer
        do {
            let offer = try SessionDescription(parsing: sdp)
            answer = try RecvOnlyAnswerBuilder.answer(to: offer, local: negotiation.local, capabilities: negotiation.capabilities)
            logger.info("re-offer answered", metadata: ["sections": "\(answer.media.count)", "receiving": "\(answer.media.filter(\.accepted).count)"])
        } catch {
            logger.error("cannot answer the re-offer", metadata: ["error": "\(error)"])
            return nil
        }
        let media = answer.media
        self.media.capture?.recordOffer(sdp, at: session.clock.now())
        refusals.note(media, eventLog: eventLog, logger: logger)
        let (refused, pipeline, context) = (refusals.bySender, LoopConfined(pipeline, eventLoop: transport.eventLoop), context)
        let session = self.media
        await transport.perform { core, now in
            core.handle(.renegotiated(media), now: now)
            let senders = core.media?.senders ?? [:]
            pipeline.value.update(senders: senders, refusedVideo: refused, context: context, now: now)
            session.sendersChanged(to: senders.count, now: now)
        }
        return answer.sdp.serialized
    }

    /// Every `seconds`, each live file's catalog row learns its size, duration and frame counts,
    /// so what a kill leaves is close to the truth before any repair. Ends when cancelled.
    func reportProgress(every seconds: UInt64) async {
        let (recordings, writer, sessionID, layout) = (media.recordings, session.writer, session.id, layout)
        while !Task.isCancelled {
            try? await session.clock.sleep(nanoseconds: Int64(seconds) * 1_000_000_000)
            guard !Task.isCancelled else { return }
            let now = session.clock.now()
            let rows = (try? await transport.eventLoop.submit(confined: recordings) { recordings in
                recordings.recorders.values.compactMap { recorder in
                    recorder.progress(now: now).map { progress in
                        (layout.catalogPath(recorder.filename),
                         RecordingProgress(bytes: Int64(progress.bytes), durationMs: progress.durationMilliseconds,
                                           videoFrames: Int64(progress.statistics.videoFrames), audioFrames: Int64(progress.statistics.audioFrames),
                                           videoCodec: progress.statistics.videoFrames > 0 ? recorder.tracks.videoCodec?.rawValue : nil))
                    }
                }
            }.get()) ?? []
            for (path, progress) in rows {
                writer.submit(.recordingProgress(sessionID: sessionID, path: path, progress))
            }
        }
    }

    private static func log(_ event: RelayEvent, logger: Logger) {
        switch event {
        case .allocated(let server, let relayed, let mapped):
            logger.info("TURN allocation", metadata: ["server": "\(server)", "relayed": "\(relayed)", "mapped": "\(mapped.map { "\($0)" } ?? "-")"])
        case .channelBound(let server, let peer):
            logger.debug("TURN channel bound", metadata: ["server": "\(server)", "peer": "\(peer)"])
        case .failed(let server, let failure):
            logger.warning("TURN relay failed", metadata: ["server": "\(server)", "reason": "\(failure)"])
        }
    }

    static func stunServers(_ servers: [ICEServer]) -> [TransportAddress] {
        var result: [TransportAddress] = []
        for server in servers where server.username == nil {
            for url in server.urls where url.prefix(5).lowercased() == "stun:" {
                let rest = url.dropFirst("stun:".count).split(separator: "?").first.map(String.init) ?? ""
                let parts = rest.split(separator: ":")
                guard let host = parts.first, let ip = IPAddress(String(host)) else { continue }  // numeric only, no DNS yet
                let port = parts.count > 1 ? UInt16(parts[1]) ?? 3478 : 3478
                result.append(TransportAddress(ip: ip, port: port))
            }
        }
        return result
    }
}
