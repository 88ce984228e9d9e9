import MessageAuthentication
import WireCoding

/// An SCTP association over DTLS (RFC 8261, RFC 9260), sans-IO: packets and time in, packets
/// and events out. Built for a data-channel receiver: full receive side (reassembly,
/// ordering, SACK with gap reports, FORWARD-TSN, stream reset) and a simple reliable send
/// side for its own small messages (DCEP acks, stats, signaling).
public final class SCTPAssociation {
    public enum State: Equatable, Sendable { case closed, cookieWait, cookieEchoed, established, shutdownReceived, aborted }

    public private(set) var state: State = .closed
    public private(set) var counters = SCTPCounters()
    public let port: UInt16
    /// The largest message we accept (what our SDP advertised).
    public let maximumMessageSize: Int
    /// The largest message the peer accepts (its `a=max-message-size`; 0 there means no limit).
    public let peerMaximumMessageSize: Int

    private var localTag: UInt32
    private var peerTag: UInt32 = 0
    private var nextOutgoingTSN: UInt32
    private let cookies: SCTPStateCookie
    private let random: () -> UInt64

    // Receive side.
    private var received = ReceivedTSNs(cumulative: 0)
    private var cumulativeTSN: UInt32 { received.cumulative }  // highest TSN received in sequence
    private var duplicates: [UInt32] = []
    private var reassembly: SCTPReassembly
    private static let maximumOutOfOrderTSNs = 4_096
    /// Held fragments and waiting messages, at most (a peer that respects our window never gets near).
    private static let maximumBufferedChunks = 4_096
    private static let receiveWindow: UInt32 = 1 << 20

    // Send side.
    private struct Outstanding { var chunk: SCTPData; var sentAt: MonotonicTime; var transmissions: Int }
    private var outstanding: [UInt32: Outstanding] = [:]
    private var outgoingSequence: [UInt16: UInt16] = [:]
    private var retransmitDeadline: MonotonicTime?
    private var rto: Int64 = 1_000
    private var initPacket: [UInt8]?
    private var initDeadline: MonotonicTime?
    private var initAttempts = 0
    private var resets: StreamResets
    /// Once ended (ABORT, shutdown), an association is not brought back by a replayed cookie.
    private var hasEnded = false
    private var heldForReset: [SCTPData] = []
    private var heldForResetBytes = 0

    public init(port: UInt16 = 5000, maximumMessageSize: Int = 262_144, peerMaximumMessageSize: Int = 65_536, random: @escaping () -> UInt64) {
        self.port = port
        self.maximumMessageSize = maximumMessageSize
        self.peerMaximumMessageSize = peerMaximumMessageSize == 0 ? Int.max : peerMaximumMessageSize
        reassembly = SCTPReassembly(limits: .init(maximumMessageSize: maximumMessageSize,
                                                  maximumBufferedBytes: max(Int(SCTPAssociation.receiveWindow), 2 * maximumMessageSize),
                                                  maximumBufferedChunks: SCTPAssociation.maximumBufferedChunks))
        self.random = random
        localTag = UInt32(truncatingIfNeeded: random()) | 1
        nextOutgoingTSN = UInt32(truncatingIfNeeded: random())
        resets = StreamResets(initialTSN: nextOutgoingTSN)
        cookies = SCTPStateCookie(secret: (0..<4).flatMap { _ in withUnsafeBytes(of: random()) { Array($0) } })
    }

    // MARK: - Inputs

    /// Starts the association from our side (INIT). The peer may start too; both work.
    public func start(now: MonotonicTime) -> SCTPOutput {
        var output = SCTPOutput()
        guard state == .closed else { return output }
        let initiation = SCTPInit(initiateTag: localTag, advertisedReceiverWindow: SCTPAssociation.receiveWindow, outboundStreams: 65_535,
                                  inboundStreams: 65_535, initialTSN: nextOutgoingTSN, parameters: [
                                      SCTPParameter(type: SCTPParameter.supportedExtensions, value: [SCTPChunkType.forwardTSN, SCTPChunkType.reconfig]),
                                      SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: []),
                                  ])
        let packet = SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: 0, chunks: [.initiation(initiation)]).serialized
        initPacket = packet
        initAttempts = 1
        initDeadline = now.adding(milliseconds: 1_000)
        state = .cookieWait
        output.packets.append(packet)
        return output
    }

    public func handle(packet bytes: [UInt8], now: MonotonicTime) -> SCTPOutput {
        var output = SCTPOutput()
        counters.packetsReceived += 1
        guard let packet = try? SCTPPacket(parsing: bytes) else {
            counters.droppedPackets += 1
            return output
        }
        // Verification tag rules (RFC 9260 §8.5): INIT carries 0; everything else our tag
        // (ABORT/SHUTDOWN-COMPLETE may reflect theirs).
        let isInit = packet.chunks.contains { if case .initiation = $0 { true } else { false } }
        let reflected = packet.chunks.contains {
            if case .abort(true, _) = $0 { return true }
            if case .shutdownComplete(true) = $0 { return true }
            return false
        }
        guard isInit || packet.verificationTag == localTag || (reflected && packet.verificationTag == peerTag),
              !isInit || packet.chunks.count == 1  // INIT travels alone (RFC 9260 §6.10)
        else {
            counters.droppedPackets += 1
            return output
        }
        var replies: [SCTPChunk] = []
        var sawData = false
        // Several FORWARD-TSNs in one packet act as the one that goes furthest: each costs a
        // pass over what is held, so a packet full of them must not cost thousands of passes.
        var forwardTSN = CombinedForwardTSN(packet.chunks)
        var resetRequests = 0
        chunks: for chunk in packet.chunks {
            switch chunk {
            case .initiation(let initiation):
                // Nothing changes until our cookie comes back (RFC 9260 §5.2): a late or
                // forged INIT must not rewind an established association.
                output.packets.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: initiation.initiateTag,
                                                 chunks: [.initiationAck(initAck(for: initiation, now: now))]).serialized)
            case .initiationAck(let ack):
                guard state == .cookieWait, let cookie = ack.stateCookie else { continue }
                peerTag = ack.initiateTag
                received = ReceivedTSNs(cumulative: ack.initialTSN &- 1)
                resets.peerStarted(initialTSN: ack.initialTSN)
                let echo = SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag, chunks: [.cookieEcho(cookie: cookie)]).serialized
                initPacket = echo
                initDeadline = now.adding(milliseconds: 1_000)
                state = .cookieEchoed
                output.packets.append(echo)
            case .cookieEcho(let cookie):
                // Only fresh cookies, and never to bring back an association that ended.
                guard !hasEnded, let peer = cookies.verify(cookie, now: now) else {
                    counters.droppedPackets += 1
                    continue
                }
                if state != .established {
                    peerTag = peer.tag
                    received = ReceivedTSNs(cumulative: peer.initialTSN &- 1)
                    resets.peerStarted(initialTSN: peer.initialTSN)
                    state = .established
                    initDeadline = nil
                    output.events.append(.established)
                }
                replies.append(.cookieAck)
            case .cookieAck:
                if state == .cookieEchoed {
                    state = .established
                    initDeadline = nil
                    output.events.append(.established)
                }
            case .data(let data):
                guard state == .established || state == .shutdownReceived else { continue }
                sawData = true
                receive(data, &output)
            case .selectiveAck(let sack):
                acknowledge(sack)
            case .forwardTSN:
                counters.forwardTSNChunks += 1
                sawData = true
                if let combined = forwardTSN, !combined.applied {
                    forwardTSN?.applied = true
                    forward(to: combined.tsn, streams: combined.streams, &output)
                }
            case .reconfig(let parameters):
                replies += reconfigure(parameters, now: now, requestsSoFar: &resetRequests, &output)
            case .heartbeat(let info):
                replies.append(.heartbeatAck(info: info))
            case .abort:
                state = .aborted
                hasEnded = true
                output.events.append(.aborted("peer sent ABORT"))
                return output
            case .shutdown:
                state = .shutdownReceived
                replies.append(.shutdownAck)
            case .shutdownComplete:
                state = .closed
                hasEnded = true
                output.events.append(.closed)
            case .shutdownAck:
                replies.append(.shutdownComplete(reflected: false))
                state = .closed
                hasEnded = true
                output.events.append(.closed)
            case .unknown(let type, _, _):
                // Top bits 00/01: stop processing this packet (01 would also report); 10/11: skip the chunk.
                if type & 0x80 == 0 { break chunks }
            case .heartbeatAck, .error:
                break
            }
        }
        performReadyResets(&output)
        if sawData { replies.insert(.selectiveAck(selectiveAck()), at: 0) }
        if !replies.isEmpty {
            output.packets.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag, chunks: replies).serialized)
        }
        sendQueuedReset(now: now, &output)
        return output
    }

    /// Sends one message reliably and in order (DCEP ACK, signaling, stats). Large ones are fragmented.
    public func send(_ data: [UInt8], streamID: UInt16, payloadProtocol: UInt32, now: MonotonicTime) -> SCTPOutput {
        var output = SCTPOutput()
        guard state == .established else { return output }
        guard data.count <= peerMaximumMessageSize else {
            counters.oversizedSends += 1
            return output
        }
        let sequence = outgoingSequence[streamID, default: 0]
        outgoingSequence[streamID] = sequence &+ 1
        let fragmentSize = 1_100
        var offset = 0
        var chunks: [SCTPChunk] = []
        repeat {
            let end = min(data.count, offset + fragmentSize)
            let chunk = SCTPData(tsn: nextOutgoingTSN, streamID: streamID, streamSequence: sequence, payloadProtocol: payloadProtocol,
                                 beginning: offset == 0, ending: end == data.count, userData: data.isEmpty ? [0] : Array(data[offset..<end]))
            outstanding[nextOutgoingTSN] = Outstanding(chunk: chunk, sentAt: now, transmissions: 1)
            nextOutgoingTSN &+= 1
            chunks.append(.data(chunk))
            offset = end
        } while offset < data.count
        for chunk in chunks {
            output.packets.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag, chunks: [chunk]).serialized)
        }
        if retransmitDeadline == nil { retransmitDeadline = now.adding(milliseconds: rto) }
        return output
    }

    /// Resets our outgoing streams: closes data channels from our side (RFC 8831 §6.7). The
    /// peer answers by resetting its own, which arrives as `.streamsReset`.
    public func resetOutgoingStreams(_ streams: [UInt16], now: MonotonicTime) -> SCTPOutput {
        var output = SCTPOutput()
        guard state == .established, !streams.isEmpty else { return output }
        resets.initiate(streams)
        sendQueuedReset(now: now, &output)
        return output
    }

    public var nextTimeout: MonotonicTime? { [initDeadline, retransmitDeadline, resets.inFlight?.deadline].compactMap { $0 }.min() }

    public func handleTimeout(now: MonotonicTime) -> SCTPOutput {
        var output = SCTPOutput()
        if let deadline = initDeadline, now >= deadline, let packet = initPacket {
            if initAttempts >= 8 {
                state = .aborted
                initDeadline = nil
                output.events.append(.aborted("no answer to INIT/COOKIE-ECHO"))
                return output
            }
            initAttempts += 1
            initDeadline = now.adding(milliseconds: 1_000 << min(initAttempts, 5))
            output.packets.append(packet)
        }
        if let deadline = retransmitDeadline, now >= deadline {
            // T3-rtx: resend what is still unacknowledged, back off (RFC 9260 §6.3.3).
            for tsn in outstanding.keys.sorted() {
                guard var entry = outstanding[tsn] else { continue }
                entry.transmissions += 1
                outstanding[tsn] = entry
                counters.retransmissions += 1
                output.packets.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag, chunks: [.data(entry.chunk)]).serialized)
            }
            rto = min(rto * 2, 60_000)
            retransmitDeadline = outstanding.isEmpty ? nil : now.adding(milliseconds: rto)
        }
        if let deadline = resets.inFlight?.deadline, now >= deadline {
            if let request = resets.retransmit(now: now, timeoutMilliseconds: 1_000) {
                counters.retransmissions += 1
                output.packets.append(resetRequestPacket(request))
            } else {
                counters.streamResetsAbandoned += 1
                sendQueuedReset(now: now, &output)
            }
        }
        return output
    }

    /// Ends the association at once (ABORT), e.g. on shutdown after a failure.
    public func abort(reason: String) -> SCTPOutput {
        var output = SCTPOutput()
        guard state != .closed && state != .aborted else { return output }
        output.packets.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag,
                                         chunks: [.abort(reflected: false, causes: [])]).serialized)
        state = .aborted
        hasEnded = true
        output.events.append(.aborted(reason))
        return output
    }

    // MARK: - Receive side

    private func receive(_ data: SCTPData, _ output: inout SCTPOutput) {
        counters.dataChunks += 1
        let offset = received.offset(data.tsn)  // 1 = next expected
        if received.contains(data.tsn) {
            counters.duplicateChunks += 1
            if duplicates.count < 16 { duplicates.append(data.tsn) }
            return
        }
        // Bounded by distance, not by count: the TSN that fills the gap is always taken.
        guard offset <= UInt32(SCTPAssociation.maximumOutOfOrderTSNs) else {
            counters.droppedPackets += 1  // too far ahead; unacknowledged, so the peer sends it again
            return
        }
        // Data sent after a stream reset the peer asked for but we could not perform yet
        // waits for the reset (RFC 6525 §5.2.2): it belongs to the stream's new numbering.
        let heldBack = resets.isHeldBack(data)
        if heldBack && (heldForReset.count >= SCTPAssociation.maximumBufferedChunks
            || heldForResetBytes + data.userData.count > Int(SCTPAssociation.receiveWindow)) {
            counters.droppedPackets += 1  // no room: left unacknowledged, so it comes again
            return
        }
        received.insert(data.tsn)
        if heldBack {
            heldForReset.append(data)
            heldForResetBytes += data.userData.count
            return
        }
        absorb(reassembly.add(data, isReceived: isReceived), &output)
    }

    private func isReceived(_ tsn: UInt32) -> Bool { received.contains(tsn) }

    /// Deferred resets whose data has all arrived are performed, then what waited for them is replayed.
    private func performReadyResets(_ output: inout SCTPOutput) {
        for reset in resets.takeReady(cumulativeTSN: cumulativeTSN) { performPeerReset(reset.streams, request: reset.request, &output) }
        guard !heldForReset.isEmpty else { return }
        let waiting = heldForReset
        heldForReset = waiting.filter { resets.isHeldBack($0) }
        heldForResetBytes = heldForReset.reduce(0) { $0 + $1.userData.count }
        // Replayed in TSN order; a held TSN not replayed yet has not reached reassembly, so
        // it must not count as arrived (its neighbours would look incomplete for good).
        let base = cumulativeTSN
        let replay = waiting.filter { !resets.isHeldBack($0) }.sorted { ($0.tsn &- base) < ($1.tsn &- base) }
        var pending = Set(replay.map(\.tsn))
        for data in replay {
            pending.remove(data.tsn)
            let notYet = pending
            absorb(reassembly.add(data, isReceived: { [self] tsn in !notYet.contains(tsn) && isReceived(tsn) }), &output)
        }
    }

    private func absorb(_ result: SCTPReassembly.Result, _ output: inout SCTPOutput) {
        counters.oversizedMessages += result.dropped
        for message in result.messages { deliver(message, &output) }
    }

    private func deliver(_ message: SCTPMessage, _ output: inout SCTPOutput) {
        counters.messagesDelivered += 1
        output.events.append(.message(message))
    }

    /// FORWARD-TSN (RFC 3758): abandoned messages; move the cumulative TSN and skip sequences.
    private func forward(to tsn: UInt32, streams: [(stream: UInt16, sequence: UInt16)], _ output: inout SCTPOutput) {
        guard isAfter(tsn, cumulativeTSN) else { return }
        received.forward(to: tsn)
        absorb(reassembly.forward(cumulativeTSN: tsn, streams: streams), &output)
    }

    /// RE-CONFIG (RFC 6525). The peer resets its outgoing streams (a data channel closing):
    /// performed once every TSN it sent before the request has arrived, then our outgoing
    /// streams follow. Its answers to our own requests settle them.
    private func reconfigure(_ parameters: [SCTPReconfigParameter], now: MonotonicTime, requestsSoFar: inout Int,
                             _ output: inout SCTPOutput) -> [SCTPChunk] {
        var replies: [SCTPReconfigParameter] = []
        for parameter in parameters {
            switch parameter {
            case .outgoingReset(let request, _, let lastTSN, let requested):
                if let earlier = resets.answer(to: request) {  // a retransmission: same answer, nothing redone
                    replies.append(.response(responseSequence: request, result: earlier))
                    continue
                }
                // RFC 6525 §3.1 allows two requests per RE-CONFIG; each new one costs a pass
                // over what is held, so more than two in a packet are denied unread.
                requestsSoFar += 1
                guard requestsSoFar <= 2 else {
                    replies.append(.response(responseSequence: request, result: ReconfigResult.denied))
                    continue
                }
                let streams = requested.isEmpty ? knownStreams() : requested  // empty means all (§4.1)
                if isAfter(lastTSN, cumulativeTSN) {
                    let waiting = resets.deferReset(.init(request: request, lastTSN: lastTSN, streams: streams))
                    replies.append(.response(responseSequence: request, result: waiting ? ReconfigResult.inProgress : ReconfigResult.denied))
                } else {
                    performPeerReset(streams, request: request, &output)
                    replies.append(.response(responseSequence: request, result: ReconfigResult.performed))
                }
            case .incomingReset(let request, _):
                // WebRTC closes channels with outgoing resets only (RFC 8831 §6.7).
                resets.record(answer: ReconfigResult.denied, to: request)
                replies.append(.response(responseSequence: request, result: ReconfigResult.denied))
            case .response(let sequence, let result):
                if resets.received(response: sequence, result: result) { sendQueuedReset(now: now, &output) }
            case .other:
                break
            }
        }
        return replies.isEmpty ? [] : [.reconfig(replies)]
    }

    private func performPeerReset(_ streams: [UInt16], request: UInt32, _ output: inout SCTPOutput) {
        reassembly.reset(streams: streams)
        resets.record(answer: ReconfigResult.performed, to: request)
        counters.streamResetsReceived += 1
        output.events.append(.streamsReset(streams))
        resets.follow(streams)
    }

    /// Our own outgoing-stream reset, when one is waiting and none is in flight.
    private func sendQueuedReset(now: MonotonicTime, _ output: inout SCTPOutput) {
        guard state == .established, let request = resets.nextRequest(lastAssignedTSN: nextOutgoingTSN &- 1, now: now, timeoutMilliseconds: 1_000)
        else { return }
        for stream in request.streams { outgoingSequence[stream] = nil }  // the next message on it starts at SSN 0
        output.packets.append(resetRequestPacket(request))
    }

    private func resetRequestPacket(_ request: StreamResets.Request) -> [UInt8] {
        SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: peerTag, chunks: [
            .reconfig([.outgoingReset(requestSequence: request.sequence, responseSequence: resets.lastPeerRequest,
                                      lastTSN: request.lastTSN, streams: request.streams)]),
        ]).serialized
    }

    private func knownStreams() -> [UInt16] {
        Array(reassembly.knownStreams.union(outgoingSequence.keys)).sorted()
    }

    private func selectiveAck() -> SCTPSelectiveAck {
        let blocks = received.gapBlocks(limit: 64)  // runs of received TSNs above the cumulative one, as offsets
        defer { duplicates.removeAll() }
        // The window shrinks by what is held for reassembly, so a well-behaved peer slows down.
        let window = UInt32(max(0, Int(SCTPAssociation.receiveWindow) - reassembly.bufferedBytes - heldForResetBytes))
        return SCTPSelectiveAck(cumulativeTSN: cumulativeTSN, advertisedReceiverWindow: window,
                                gapBlocks: blocks, duplicateTSNs: duplicates)
    }

    // MARK: - Send side

    private func acknowledge(_ sack: SCTPSelectiveAck) {
        // Walk what we have outstanding (a few chunks), not the peer's gap blocks: those can
        // name millions of TSNs in one packet.
        for tsn in Array(outstanding.keys) {
            let offset = tsn &- sack.cumulativeTSN
            let acknowledged = offset == 0 || offset > UInt32.max / 2
                || sack.gapBlocks.contains { UInt32($0.start) <= offset && offset <= UInt32($0.end) }
            if acknowledged { outstanding[tsn] = nil }
        }
        if outstanding.isEmpty {
            retransmitDeadline = nil
            rto = 1_000
        }
    }

    // MARK: - Cookies

    /// INIT-ACK with a state cookie for the peer's tag and initial TSN.
    private func initAck(for initiation: SCTPInit, now: MonotonicTime) -> SCTPInit {
        let cookie = cookies.make(peerTag: initiation.initiateTag, peerInitialTSN: initiation.initialTSN, now: now)
        return SCTPInit(initiateTag: localTag, advertisedReceiverWindow: SCTPAssociation.receiveWindow, outboundStreams: 65_535,
                        inboundStreams: 65_535, initialTSN: nextOutgoingTSN, parameters: [
                            SCTPParameter(type: SCTPParameter.stateCookie, value: cookie),
                            SCTPParameter(type: SCTPParameter.supportedExtensions, value: [SCTPChunkType.forwardTSN, SCTPChunkType.reconfig]),
                            SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: []),
                        ])
    }
}
