import Archive
import DTLS
import Foundation
import Logging
import Media
import NIOCore
import NIOPosix
import Recorder
import RTP
import SDP
import SoraSignaling
import STUN
import Transport
import WireCoding

/// One `recbot join`: signaling, transport, recording and catalog from start to finalize.
public final class JoinSession: @unchecked Sendable {
    private enum Event {
        case signaling(String)
        case dataChannelMessage(label: String, isBinary: Bool, data: [UInt8])
        case signalingClosed(Int?)
        /// The `signaling` data channel closed, or the whole association ended.
        case signalingChannelLost(String)
        case transportFailed(String)
        case localCandidate(ICECandidate)
        case stop(String)
    }

    public let options: JoinOptions
    private let logger: Logger
    private let stateLock = NSLock()
    private var live: (recordings: RecordingSet, core: PeerConnectionCore, loop: EventLoop)?
    private var phase = "starting"
    private let started = Date()
    private let events: AsyncStream<Event>
    private let emit: AsyncStream<Event>.Continuation

    public init(options: JoinOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        var continuation: AsyncStream<Event>.Continuation!
        events = AsyncStream(bufferingPolicy: .bufferingOldest(8_192)) { continuation = $0 }
        emit = continuation
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

    private func setPhase(_ text: String) { stateLock.withLock { phase = text } }

    /// Ends the session from outside (signals); `reason` goes into the catalog.
    public func stop(reason: String) {
        stopRequest.request(reason)
        emit.yield(.stop(reason))
    }
    private let stopRequest = StopRequest()

    public func run() async -> JoinOutcome {
        let catalog: Catalog
        do { catalog = try Catalog(path: options.catalogPath, logger: logger) } catch {
            logger.error("catalog unusable", metadata: ["error": "\(error)"])
            return JoinOutcome(result: .storage, endReason: "storage: \(error)", sessionID: nil)
        }
        let writer = CatalogWriter(catalog: catalog, logger: logger)
        let startedAt = Self.nowMilliseconds()
        let startTime = Self.monotonicNow()
        let sessionID = ULID.generate(now: UInt64(startedAt)).string
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

        let (result, reason, recordings) = await runConnected(sessionID: sessionID, startedAt: startedAt, startTime: startTime,
                                                             writer: writer, logger: logger)
        stopRequest.close()
        writer.drain()
        var finalResult = result
        var finalReason = reason
        if let error = writer.error, finalResult == .success {
            finalResult = .storage
            finalReason = "storage: \(error)"
        }
        do {
            try catalog.endSession(id: sessionID, endedAt: Self.nowMilliseconds(), endReason: finalReason,
                                   exitStatus: Int(JoinSession.exitCode(finalResult)))
        } catch {
            logger.error("cannot end the session in the catalog", metadata: ["error": "\(error)"])
            finalResult = .storage
        }
        logger.notice("session ended", metadata: ["reason": "\(finalReason)", "recordings": "\(recordings.count)"])
        return JoinOutcome(result: finalResult, endReason: finalReason, sessionID: sessionID)
    }

    /// sysexits-style codes, also stored in the catalog.
    public static func exitCode(_ result: JoinResult) -> Int32 {
        switch result {
        case .success: 0
        case .configuration: 78
        case .rejected: 77
        case .network: 69
        case .protocolError: 76
        case .storage: 74
        }
    }

    // MARK: - Connected phase

    private func runConnected(sessionID: String, startedAt: Int64, startTime: MonotonicTime, writer: CatalogWriter,
                              logger: Logger) async -> (JoinResult, String, [FinishedRecording]) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }

        // 1. Signaling up to the offer.
        setPhase("signaling")
        let start: SignalingStart
        switch await SignalingStartRace.run(options: options, stopRequest: stopRequest, group: group, logger: logger) {
        case .stopped(let why):
            logger.notice("stopped before the offer arrived", metadata: ["reason": "\(why)"])
            return (.success, why, [])
        case .started(let started):
            start = started
        case .failed(let error):
            logger.error("signaling failed", metadata: ["error": "\(error)"])
            switch error {
            case .rejected(let code, _): return (.rejected, "rejected: close \(code)", [])
            case .invalidURL, .invalidJSON: return (.configuration, "configuration: \(error)", [])
            case .malformedMessage: return (.protocolError, "protocol: \(error)", [])
            default: return (.network, "signaling: \(error)", [])
            }
        }
        let connection = start.connection
        let offer = start.offer
        logger.info("offer received", metadata: ["url": "\(connection.url)", "connection_id": "\(offer.connectionID ?? "-")"])
        writer.submit("session") { catalog throws(CatalogError) in
            try catalog.updateSession(id: sessionID, soraSessionID: offer.sessionID, connectionID: offer.connectionID,
                                      clientID: offer.clientID, bundleID: offer.bundleID, signalingURL: connection.url)
        }
        let eventLog = SignalingEventLog(sessionID: sessionID, writer: writer, logger: logger, limits: options.eventLimits)
        for message in start.earlier { eventLog.record(message) }

        // 2. Transport and answer.
        let hosts: [IPAddress]
        do { hosts = try options.hostPolicy.hostAddresses() } catch {
            return (.network, "network: cannot list local addresses: \(error)", [])
        }
        guard !hosts.isEmpty else {
            await connection.close()
            return (.network, "network: no usable local address for ICE (see the address allow/deny lists)", [])
        }
        let transport: UDPTransport
        let negotiation: RecvOnlyNegotiation
        do {
            transport = try await UDPTransport.bind(addresses: hosts, on: group.next(), logger: logger)
            let sdp = try SessionDescription(parsing: offer.sdp)
            var generator = SystemRandomNumberGenerator()
            // The media core NACKs gaps (RTX or plain retransmission) and asks for keyframes
            // with PLI, or FIR where only that is offered.
            var capabilities = ReceiverCapabilities()
            capabilities.rtcpFeedback = ["nack", "nack pli", "ccm fir"]
            capabilities.acceptsDataChannels = true  // whatever data channels Sora offers are received and logged
            negotiation = try RecvOnlyNegotiation(offer: sdp, hosts: transport.localAddresses, certificate: try DTLSCertificate(),
                                                  capabilities: capabilities, recovery: options.recovery,
                                                  random: { UInt64.random(in: .min ... .max, using: &generator) })
        } catch {
            logger.error("cannot answer the offer", metadata: ["error": "\(error)"])
            connection.send(OutgoingMessage.disconnect(reason: "INTERNAL-ERROR"))
            await connection.close()
            return (.protocolError, "offer: \(error)", [])
        }
        for media in negotiation.answer.media where !media.accepted {
            logger.info("section not received", metadata: ["mid": "\(media.mid ?? "-")", "reason": "\(media.rejectionReason ?? "-")"])
        }
        connection.send(OutgoingMessage.answer(sdp: negotiation.answer.sdp.serialized))
        for candidate in negotiation.answer.sdp.media.flatMap({ $0.attributes(named: "candidate") }) {
            connection.send(OutgoingMessage.candidate("candidate:" + (candidate.value ?? "")))
        }

        // 3. Media path on the transport's event loop: the core (under the peer connection)
        // turns packets into frames; the recording set turns frames into files.
        let layout = ArchiveLayout(recordingsRoot: options.recordingsRoot, recordingID: sessionID)
        let core = negotiation.core
        let recordings = RecordingSet(archive: layout, recordingStartMilliseconds: startedAt, recordingStartTime: startTime,
                                      interleaveNanoseconds: options.recovery.maximumRecoveryDelayNanoseconds + 400_000_000,
                                      logger: logger) { recorder in
            writer.submit("connection") { catalog throws(CatalogError) in
                try catalog.upsertConnection(ConnectionRecord(sessionID: sessionID, connectionID: recorder.connectionID,
                                                              firstSeenAt: Self.nowMilliseconds(), role: "sendonly"))
            }
        }
        // The catalog learns of each file when it is created, so a kill leaves a row to repair.
        recordings.onFileStarted = { recorder in
            let row = RecordingRecord(sessionID: sessionID, connectionID: recorder.connectionID, part: recorder.part,
                                      path: "recordings/\(sessionID)/\(recorder.filename)", videoCodec: recorder.tracks.videoCodec?.rawValue,
                                      audioCodec: recorder.tracks.audioChannels != nil ? "OPUS" : nil, startedAt: recorder.fileStartMilliseconds,
                                      status: .recording)
            writer.submit("recording") { catalog throws(CatalogError) in try catalog.insertRecording(row) }
        }
        var refusals = VideoRefusals()
        refusals.note(negotiation.answer.media, eventLog: eventLog, logger: logger)
        _ = recordings.update(senders: core.media?.senders ?? [:], refusedVideo: refusals.bySender)
        let context = SidecarContext(recordingID: sessionID, channelID: options.connect.channelID, soraSessionID: offer.sessionID,
                                     botConnectionID: offer.connectionID, recbotVersion: options.recbotVersion)
        let finisher = RecordingFinisher(sessionID: sessionID, writer: writer)
        stateLock.withLock { live = (recordings, core, transport.eventLoop) }
        setPhase("ICE checking")
        let emit = self.emit
        transport.run(core) { event in
            switch event {
            case .frames(let frames):
                // Times come from the transport's clock, as the core saw them (no second clock read).
                for frame in frames {
                    // A video frame the recorder had to drop: its stream must restart at a keyframe.
                    if let dropped = recordings.add(frame, now: frame.completedAt) {
                        transport.withCore { $0.frameLostDownstream(ssrc: dropped.ssrc, rtpTimestamp: dropped.rtpTimestamp, now: frame.completedAt) }
                    }
                }
                // Parts a codec change ended: finished off the loop; the sender goes on in its next part.
                for part in recordings.takeRetired() {
                    finisher.finish(part, counts: core.media?.counters(sender: part.connectionID) ?? ReceiveCounters(), context: context, isLastPart: false)
                }
            case .failed(let failure): emit.yield(.transportFailed("\(failure)"))
            case .localCandidate(let candidate): emit.yield(.localCandidate(candidate))
            case .iceStateChanged(let state):
                logger.info("ICE \(state)")
                self.setPhase("ICE \(state)")
            case .dtlsConnected(let profile):
                logger.info("DTLS connected", metadata: ["srtp": "\(profile)"])
                self.setPhase("recording")
            case .dataChannel(.message(let channel, let isBinary, let data)):
                emit.yield(.dataChannelMessage(label: channel.label, isBinary: isBinary, data: data))
            case .dataChannel(.opened(let channel)):
                logger.info("data channel open", metadata: ["label": "\(channel.label)", "ordered": "\(channel.ordered)"])
            case .dataChannel(.closed(let channel)):
                logger.info("data channel closed", metadata: ["label": "\(channel.label)"])
                if channel.label == "signaling" { emit.yield(.signalingChannelLost("closed")) }
            case .dataChannel(.failed(let reason)):
                logger.warning("data channels failed", metadata: ["reason": "\(reason)"])
                emit.yield(.signalingChannelLost(reason))
            default: break
            }
        }
        let servers = Self.stunServers(offer.iceServers)
        if !servers.isEmpty { transport.withCore { $0.gatherServerReflexive(servers: servers, now: Self.monotonicNow()) } }

        // 4. Feed signaling, the duration and signals into one event stream.
        let reader = Task {
            for await text in connection.messages { emit.yield(.signaling(text)) }
            try? await Task.sleep(nanoseconds: 20_000_000)
            emit.yield(.signalingClosed(connection.closeCode))
        }
        var timer: Task<Void, Never>?
        if let duration = options.durationMilliseconds {
            timer = Task {
                // Saturating: `--duration 9999999999d` is a very long wait, not an overflow trap.
                let (nanoseconds, overflow) = UInt64(max(0, duration)).multipliedReportingOverflow(by: 1_000_000)
                try? await Task.sleep(nanoseconds: overflow ? .max : nanoseconds)
                if !Task.isCancelled { emit.yield(.stop("duration-elapsed")) }
            }
        }


        var result = JoinResult.success
        var reason = "ended"
        var currentLocal = negotiation
        var ignoreDisconnectWebsocket = offer.ignoreDisconnectWebsocket ?? false
        var switched = false
        var serverClosed = false
        let channelSettings = Dictionary(offer.dataChannels.map { ($0.label, $0) }, uniquingKeysWith: { first, _ in first })
        var undecodableDataChannelMessages = 0
        var unknownLabelMessages = 0
        var unknownLabels: Set<String> = []
        /// Sends a signaling reply where the request came from: the WebSocket or a data channel.
        func reply(_ text: String, label: String?) {
            if let label {
                transport.withCore { $0.sendOnDataChannel(Array(text.utf8), label: label, binary: false, now: Self.monotonicNow()) }
            } else {
                connection.send(text)
            }
        }
        /// Answers a re-offer (or legacy update) where it came from; senders whose sections went
        /// away get their files finished now, so each file ends when its sender left.
        func applyReOffer(_ sdp: String, legacyUpdate: Bool, label: String?) async {
            guard let answer = renegotiate(sdp: sdp, current: &currentLocal, logger: logger) else { return }
            let media = answer.media
            refusals.note(media, eventLog: eventLog, logger: logger)
            let refused = refusals.bySender
            transport.withCore { $0.updateMedia(media) }  // runs on the loop before the submit below
            let gone = (try? await transport.eventLoop.submit {
                recordings.update(senders: core.media?.senders ?? [:], refusedVideo: refused).map { ($0, core.media?.counters(sender: $0.connectionID) ?? ReceiveCounters()) }
            }.get()) ?? []
            for (recorder, counts) in gone {
                logger.info("sender left; file finished", metadata: ["sender": "\(recorder.connectionID)"])
                finisher.finish(recorder, counts: counts, context: context)
            }
            let text = legacyUpdate ? OutgoingMessage.update(sdp: answer.sdp.serialized) : OutgoingMessage.reAnswer(sdp: answer.sdp.serialized)
            reply(text, label: label)
        }
        loop: for await event in events {
            switch event {
            case .stop(let why):
                reason = why
                break loop
            case .signalingClosed(let code):
                if switched && ignoreDisconnectWebsocket {
                    // Data-channel signaling took over and Sora said the WebSocket may go.
                    logger.info("WebSocket closed after the switch; signaling continues on data channels",
                                metadata: ["code": "\(code.map(String.init) ?? "-")"])
                    continue
                }
                if code == 1000 {
                    reason = "server-closed: 1000"  // Sora ended the session (API disconnect, lifetime)
                    serverClosed = true
                } else {
                    result = .network
                    reason = "signaling-closed: \(code.map(String.init) ?? "abruptly")"
                }
                break loop
            case .signalingChannelLost(let why):
                // Only fatal once the data channels carry signaling alone: Sora says `close`
                // before it closes them, so losing them without one is an abnormal end.
                guard switched && ignoreDisconnectWebsocket && connection.isClosed else { continue }
                result = .network
                reason = "signaling-closed: data channel \(why)"
                break loop
            case .transportFailed(let detail):
                result = .network
                reason = "transport: \(detail)"
                break loop
            case .localCandidate(let candidate):
                connection.send(OutgoingMessage.candidate(candidate.sdp))
            case .dataChannelMessage(let label, let isBinary, let raw):
                let decoded: SoraDataChannelMessage
                do {
                    decoded = try SoraDataChannelMessage(raw: raw, settings: channelSettings[label], maximumSize: 262_144)
                } catch {
                    undecodableDataChannelMessages += 1
                    logger.warning("data-channel message dropped", metadata: ["label": "\(label)", "error": "\(error)",
                                                                             "dropped": "\(undecodableDataChannelMessages)"])
                    continue
                }
                let role = DataChannelRole(label: label)
                if role.isLoggedVerbatim {
                    if role == .unknown {
                        unknownLabelMessages += 1
                        if unknownLabels.insert(label).inserted {
                            logger.warning("message on a data channel Sora does not define; stored, not interpreted", metadata: ["label": "\(label)"])
                        }
                    }
                    eventLog.recordDataChannelMessage(label: label, sender: decoded.senderConnectionID, isBinary: isBinary, data: decoded.data)
                    continue
                }
                guard let message = try? IncomingMessage(parsing: String(decoding: decoded.data, as: UTF8.self)) else {
                    eventLog.recordDataChannelMessage(label: label, sender: decoded.senderConnectionID, isBinary: isBinary, data: decoded.data)
                    continue
                }
                switch (role, message) {
                case (.signaling, .reOffer(let sdp, _)):
                    await applyReOffer(sdp, legacyUpdate: false, label: label)
                case (.signaling, .other("close", let raw)):
                    eventLog.record(message, label: label)
                    let object = (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) as? [String: Any]
                    reason = "server-closed: \(object?["code"] as? Int ?? 1000) \(object?["reason"] as? String ?? "")"
                    serverClosed = true
                    break loop
                case (.stats, .other("req-stats", _)):
                    let counters = try? await transport.eventLoop.submit { core.counters }.get()
                    reply(OutgoingMessage.stats(reports: [[
                        "type": "transport", "id": "T01", "timestamp": Double(Self.nowMilliseconds()), "packetsReceived": counters?.rtpPackets ?? 0,
                    ]]), label: label)
                case (.signaling, .ping(let wantsStats)):
                    reply(OutgoingMessage.pong(stats: wantsStats ? [] : nil), label: label)
                default:
                    eventLog.record(message, label: label)  // stored as what it is; acted on only where it belongs
                }
            case .signaling(let text):
                let message: IncomingMessage
                do { message = try IncomingMessage(parsing: text) } catch {
                    logger.warning("malformed signaling message ignored", metadata: ["error": "\(error)"])
                    writer.submit("event") { catalog throws(CatalogError) in
                        try catalog.insertEvent(EventRecord(sessionID: sessionID, kind: .signaling, eventType: "malformed",
                                                            receivedAt: Self.nowMilliseconds(), payload: .text(String(text.prefix(65_536)))))
                    }
                    continue
                }
                switch message {
                case .ping(let wantsStats):
                    let counters = try? await transport.eventLoop.submit { core.counters }.get()
                    connection.send(OutgoingMessage.pong(stats: wantsStats ? [[
                        "type": "transport", "id": "T01", "timestamp": Double(Self.nowMilliseconds()),
                        "packetsReceived": counters?.rtpPackets ?? 0,
                    ]] : nil))
                case .candidate(let text):
                    if let candidate = ICECandidate(sdp: text) {
                        transport.withCore { core in
                            core.addRemoteCandidate(candidate)
                            return TransportOutput()
                        }
                    } else {
                        logger.warning("unusable remote candidate ignored", metadata: ["candidate": "\(text.prefix(200))"])
                    }
                case .reOffer(let sdp, _):
                    await applyReOffer(sdp, legacyUpdate: false, label: nil)
                case .update(let sdp, _):
                    await applyReOffer(sdp, legacyUpdate: true, label: nil)
                case .switched(let ignore, _):
                    switched = true
                    if let ignore { ignoreDisconnectWebsocket = ignore }
                    logger.info("switched to data-channel signaling", metadata: ["ignore_disconnect_websocket": "\(ignoreDisconnectWebsocket)"])
                    eventLog.record(message)
                default:
                    eventLog.record(message)
                }
            }
        }
        timer?.cancel()

        // 5. Leave politely, then finalize everything.
        setPhase("finalizing")
        let goodbye = OutgoingMessage.disconnect(reason: result == .success ? "NO-ERROR" : "INTERNAL-ERROR")
        if switched && !serverClosed { reply(goodbye, label: "signaling") }  // after Sora's own close, nobody listens
        if !connection.isClosed {
            connection.send(goodbye)
            await connection.close()
        }
        reader.cancel()
        let stoppedAt = Self.nowMilliseconds()
        await logDataChannelSummary(core, transport: transport, undecodable: undecodableDataChannelMessages, unknownLabel: unknownLabelMessages,
                                    logger: logger)
        await transport.close()
        let remaining = (try? await transport.eventLoop.submit {
            recordings.recorders.map { ($0.value, core.media?.counters(sender: $0.key) ?? ReceiveCounters()) }
        }.get()) ?? []
        var endContext = context
        endContext.endReason = reason
        for (recorder, counts) in remaining.sorted(by: { $0.0.connectionID < $1.0.connectionID }) {
            finisher.finish(recorder, counts: counts, context: endContext)
        }
        await finisher.waitForAll()
        let all = finisher.all.sorted { $0.connectionID < $1.connectionID }
        let finished = all.filter { $0.error == nil }
        let failed = all.filter { $0.error != nil }.map(\.connectionID)
        endContext.endReason = reason
        if eventLog.refused > 0 {
            logger.warning("events not stored: the session's event limit was reached",
                           metadata: ["refused": "\(eventLog.refused)", "refused_bytes": "\(eventLog.refusedBytes)", "stored": "\(eventLog.stored)"])
        }
        if !finished.isEmpty || !failed.isEmpty {
            do {
                try layout.createDirectory()
                var report = Sidecar.report(finished, failed: failed, context: endContext, layout: layout,
                                            startedAtMilliseconds: startedAt, stoppedAtMilliseconds: stoppedAt)
                report["events_stored"] = eventLog.stored
                report["events_refused"] = eventLog.refused
                report["events_refused_bytes"] = eventLog.refusedBytes
                try ArchiveLayout.writeJSON(report, to: layout.reportPath)
            } catch {
                return (.storage, "storage: report: \(error)", finished)
            }
        }
        if !failed.isEmpty && result == .success {
            return (.storage, "storage: recording failed for \(failed.joined(separator: ", "))", finished)
        }
        return (result, reason, finished)
    }

    /// What the data channels received and what they refused (hostile or broken input is
    /// dropped and counted as it arrives; this is the one place it is reported).
    private func logDataChannelSummary(_ core: PeerConnectionCore, transport: UDPTransport, undecodable: Int, unknownLabel: Int,
                                       logger: Logger) async {
        guard let (channels, sctp) = try? await transport.eventLoop.submit({ core.dataChannels.map { ($0.counters, $0.association.counters) } }).get()
        else { return }
        let metadata: Logger.Metadata = [
            "messages": "\(channels.messagesReceived)", "undecodable": "\(undecodable)", "unknown_label": "\(unknownLabel)",
            "unknown_stream": "\(channels.messagesOnUnknownStreams)", "reopened": "\(channels.reopenedChannels)",
            "malformed_dcep": "\(channels.malformedControlMessages)", "unknown_ppid": "\(channels.unknownPayloadProtocols)",
            "reset_unknown_stream": "\(channels.resetsOfUnknownStreams)",
            "sctp_dropped": "\(sctp.droppedPackets)", "oversized": "\(sctp.oversizedMessages)",
            "retransmissions": "\(sctp.retransmissions)", "stream_resets": "\(sctp.streamResetsReceived)",
        ]
        let refused = undecodable + unknownLabel + channels.messagesOnUnknownStreams + channels.reopenedChannels + channels.malformedControlMessages
            + channels.unknownPayloadProtocols + sctp.droppedPackets + sctp.oversizedMessages
        if refused > 0 {
            logger.warning("data channels: some input was refused", metadata: metadata)
        } else {
            logger.info("data channels", metadata: metadata)
        }
    }

    private func renegotiate(sdp: String, current: inout RecvOnlyNegotiation, logger: Logger) -> RecvOnlyAnswer? {
        do {
            let offer = try SessionDescription(parsing: sdp)
            let answer = try RecvOnlyAnswerBuilder.answer(to: offer, local: current.local, capabilities: current.capabilities)
            logger.info("re-offer answered", metadata: ["sections": "\(answer.media.count)", "receiving": "\(answer.media.filter(\.accepted).count)"])
            return answer
        } catch {
            logger.error("cannot answer the re-offer", metadata: ["error": "\(error)"])
            return nil
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

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    static func monotonicNow() -> MonotonicTime { MonotonicTime(nanoseconds: Int64(NIODeadline.now().uptimeNanoseconds)) }
}

