import DTLS
import ICE
import Keying
import Media
import RTP
import SCTP
import SDP
import SRTP
import STUN
import TURN
import WireCoding

public enum TransportFailure: Error, Equatable, Sendable, CustomStringConvertible {
    case ice(String)
    case dtls(DTLSError)
    case srtp(SRTPError)
    /// No consent check answered for this long (RFC 7675; recbot's window is shorter than 30 s).
    case consentLost(afterMilliseconds: Int64)
    /// The relay the session depends on (relay-only, or the selected pair's) failed.
    case relay(TURNFailure)

    public var description: String {
        switch self {
        case .relay(let failure): "\(failure)"
        case .ice(let reason): "ICE failed: \(reason)"
        case .dtls(let error): "\(error)"
        case .srtp(let error): "\(error)"
        case .consentLost(let window): "ICE consent lost: no answer from the peer for \(Self.seconds(window)) s"
        }
    }

    /// Whole seconds, or one decimal when the window is not a whole number of seconds.
    private static func seconds(_ milliseconds: Int64) -> String {
        milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000)" : "\(Double(milliseconds) / 1_000)"
    }
}

public enum TransportEvent: Equatable, Sendable {
    case iceStateChanged(ICEState)
    case selectedPair(local: TransportAddress, remote: TransportAddress)
    case localCandidate(ICECandidate)
    case dtlsConnected(SRTPProtectionProfile)
    /// Whole frames from the media core, with their media time.
    case frames([ReceivedFrame])
    /// Video shed or taken back for overload.
    case overload(OverloadEvent)
    /// Decrypted RTP and RTCP, when no media core is attached (transport-level tests).
    case rtp(RTPPacketBox)
    case rtcp([RTCPPacket])
    /// Decrypted DTLS application data, when no data-channel endpoint is attached.
    case applicationData([UInt8])
    /// Data channels (SCTP over DTLS): opened, closed, failed.
    case dataChannel(DataChannelEvent)
    /// A message on a data channel, with when the sockets' thread read the datagram that
    /// completed it: its time in the archive, as a frame's is (not when the core got to it).
    case dataChannelMessage(channel: DataChannel, isBinary: Bool, data: [UInt8], readAt: MonotonicTime)
    case relay(RelayEvent)
    case closed
    case failed(TransportFailure)
}

/// `RTPPacket` holds its datagram; boxed so events stay cheap to compare and move.
public struct RTPPacketBox: Equatable, Sendable {
    public let packet: RTPPacket
    public static func == (lhs: RTPPacketBox, rhs: RTPPacketBox) -> Bool { lhs.packet.bytes == rhs.packet.bytes }
}

/// What one step of the core produced, gathered by its parts before `enqueue` turns it into
/// `PeerConnectionOutput`s.
struct TransportOutput: Equatable, Sendable {
    var datagrams: [ICEOutput.Datagram] = []
    /// For TURN servers reached over TCP or TLS (by `RelayServer.id`).
    var streamWrites: [StreamWrite] = []
    /// Stream connections to close (their server broke the framing or the allocation ended).
    var streamsToClose: [Int] = []
    var events: [TransportEvent] = []

    init() {}

    /// Nothing to send, write, close or report.
    var isEmpty: Bool { datagrams.isEmpty && streamWrites.isEmpty && streamsToClose.isEmpty && events.isEmpty }

    /// Empty again with its arrays' storage kept (small ones only: one burst of events must
    /// not pin its memory for the whole session).
    mutating func clearForReuse() {
        let keep = datagrams.capacity <= 64 && streamWrites.capacity <= 64 && streamsToClose.capacity <= 64 && events.capacity <= 64
        guard keep else {
            self = TransportOutput()
            return
        }
        datagrams.removeAll(keepingCapacity: true)
        streamWrites.removeAll(keepingCapacity: true)
        streamsToClose.removeAll(keepingCapacity: true)
        events.removeAll(keepingCapacity: true)
    }

    /// `other`'s datagrams, writes and events after these.
    mutating func append(_ other: TransportOutput) {
        datagrams += other.datagrams
        streamWrites += other.streamWrites
        streamsToClose += other.streamsToClose
        events += other.events
    }
}

/// One recvonly WebRTC transport (BUNDLE, rtcp-mux) as a sans-IO core: ICE, then DTLS
/// (client) on the selected pair, then SRTP, with the media receive core (frames, NACK,
/// reports) and the data channels composed under it. A socket driver feeds it inputs
/// (`handle(_:now:)`) and does what `poll` hands out (PeerConnectionIO.swift).
public final class PeerConnectionCore {
    public let ice: ICEAgent
    public private(set) var dtls: DTLSEndpoint
    /// Present when the answer accepted the data-channel section.
    public let dataChannels: DataChannelEndpoint?
    /// Present when the answer accepted audio or video sections.
    public let media: MediaReceiver?
    public private(set) var srtp: SRTPSession?
    public internal(set) var counters = TransportCounters()
    public private(set) var failure: TransportFailure?
    /// Sees every RTP and RTCP packet after SRTP, with its arrival (`recbot join --capture-rtp`).
    public var onDecrypted: ((_ packet: [UInt8], _ now: MonotonicTime) -> Void)?
    private var dtlsStarted = false
    let relays: [RelayEndpoint]
    /// UDP TURN servers by address, and relayed addresses (allocated) by address: indexes into `relays`.
    var relayByServer: [TransportAddress: Int] = [:]
    var relayByRelayed: [TransportAddress: Int] = [:]
    var lastRelayFailure: TURNFailure?
    /// The latest time the core was given (the relays' and the media core's close use it).
    var lastNow = MonotonicTime(nanoseconds: 0)
    /// What `poll` hands out next (from `queueHead`).
    var queue: [PeerConnectionOutput] = []
    var queueHead = 0
    /// The last input's output, emptied with its storage kept for the next datagram's.
    var spareOutput = TransportOutput()
    /// Video paused for overload, and the policy that decides it (Overload/).
    var pausedVideo = PausedVideo()
    var governor: OverloadGovernor
    var overloadEpisode: (began: MonotonicTime, pausesBefore: Int)?

    public init(ice: ICEAgent, dtls: DTLSEndpoint, dataChannels: DataChannelEndpoint? = nil, media: MediaReceiver? = nil,
                relays: [RelayServer] = [], overload: OverloadPolicy = OverloadPolicy(), random: @escaping () -> UInt64) {
        self.ice = ice
        self.governor = OverloadGovernor(policy: overload)
        self.dtls = dtls
        self.dataChannels = dataChannels
        self.media = media
        self.relays = relays.map { RelayEndpoint(server: $0, random: random) }
    }

    func start(now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = now
        absorb(ice.start(now: now), now: now, &output)
        startDatagramRelays(now: now, &output)
        return routed(output, now: now)
    }

    /// A remote candidate trickled after the offer.
    func handle(remoteCandidate candidate: ICECandidate, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        absorb(ice.handle(remoteCandidate: candidate, now: now), now: now, &output)
        return routed(output, now: now)
    }

    /// Asks each STUN server (from the offer's `iceServers`) for our server-reflexive address,
    /// from every host socket of the same family; found candidates arrive as `.localCandidate`.
    func gatherServerReflexive(servers: [TransportAddress], now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        for server in servers {
            for host in ice.localCandidates where host.kind == .host && host.base.ip.isIPv4 == server.ip.isIPv4 {
                absorb(ice.gatherServerReflexive(server: server, from: host.base, now: now), now: now, &output)
            }
        }
        return routed(output, now: now)
    }

    func handle(datagram: consuming [UInt8], from remote: TransportAddress, to local: TransportAddress, readAt: MonotonicTime,
                now: MonotonicTime) -> TransportOutput {
        // The last output's arrays, emptied: a frame's event does not allocate them again.
        var output = spareOutput
        spareOutput = TransportOutput()
        guard failure == nil, !datagram.isEmpty else { return output }
        lastNow = now
        counters.datagramsReceived += 1
        if !relayByServer.isEmpty, let index = relayByServer[remote], relays[index].hostSocket == local {
            absorb(relay: index, relays[index].client.handle(datagram, now: now), now: now, &output)
            return routed(output, now: now)
        }
        guard !ice.configuration.relayOnly else {
            counters.droppedOutsideRelay += 1
            return output
        }
        receive(consume datagram, from: remote, to: local, readAt: min(readAt, now), now: now, &output)
        return relays.isEmpty ? output : routed(output, now: now)
    }

    /// The RFC 7983 demux, for datagrams straight from a socket or unwrapped from a relay.
    func receive(_ datagram: consuming [UInt8], from remote: TransportAddress, to local: TransportAddress, readAt: MonotonicTime? = nil,
                 now: MonotonicTime, _ output: inout TransportOutput) {
        guard let first = datagram.first else { return }
        switch first {
        case 0...3:
            absorb(ice.handle(datagram: datagram, from: remote, to: local, now: now), now: now, &output)
        case 20...63:
            guard ice.isValidated(remote: remote) else {
                counters.droppedUnvalidatedSource += 1
                return
            }
            absorb(dtls.handle(datagram: datagram, now: now), now: now, readAt: readAt ?? now, &output)
        case 128...191:
            guard ice.isValidated(remote: remote) else {
                counters.droppedUnvalidatedSource += 1
                return
            }
            // A paused video stream's new pictures are dropped before decryption (Overload/).
            if !pausedVideo.isEmpty && pausedVideo.sheds(datagram) { return }
            receiveSRTP(consume datagram, readAt: readAt ?? now, now: now, &output)
        default:
            counters.droppedUnknownProtocol += 1
        }
    }

    public var nextTimeout: MonotonicTime? {
        guard failure == nil else { return nil }
        let relayDeadline = relays.isEmpty ? nil : relays.compactMap(\.client.nextTimeout).min()
        var next = MonotonicTime.earliest(ice.nextTimeout, dtls.nextTimeout)
        next = .earliest(next, dataChannels?.nextTimeout)
        next = .earliest(next, media?.nextTimeout)
        return .earliest(next, relayDeadline)
    }

    func handleTimeout(now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        guard failure == nil else { return output }
        lastNow = now
        relayTimeouts(now: now, &output)
        absorb(ice.handleTimeout(now: now), now: now, &output)
        if failure == nil { absorb(dtls.handleTimeout(now: now), now: now, &output) }
        if failure == nil, let dataChannels, let deadline = dataChannels.nextTimeout, now >= deadline {
            absorb(dataChannels.handleTimeout(now: now), now: now, &output)
        }
        if failure == nil, let media, let deadline = media.nextTimeout, now >= deadline {
            absorb(media.handleTimeout(now: now), &output)
        }
        return routed(output, now: now)
    }

    /// Applies a re-negotiation to the media core (sections that went away end their streams).
    func updateMedia(_ negotiated: [NegotiatedMedia], now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = now
        if let media { absorb(media.update(tracks: ReceiveTrack.tracks(from: negotiated)), &output) }
        return routed(output, now: now)
    }

    /// The recorder dropped a frame of `ssrc`: its stream waits for (and asks for) a keyframe.
    func frameLostDownstream(ssrc: UInt32, rtpTimestamp: UInt32, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        if let media { absorb(media.frameLostDownstream(ssrc: ssrc, rtpTimestamp: rtpTimestamp, now: now), &output) }
        return routed(output, now: now)
    }

    /// A keyframe is wanted on `ssrc` (a split boundary): see `MediaReceiver.requestKeyframe`.
    func requestKeyframe(ssrc: UInt32, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        if let media { absorb(media.requestKeyframe(ssrc: ssrc, now: now), &output) }
        return routed(output, now: now)
    }

    /// Sends DTLS application data (SCTP) on the selected pair.
    func sendApplicationData(_ data: [UInt8], now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        absorb(dtls.send(data), now: now, &output)
        return routed(output, now: now)
    }

    /// Sends a message on a data channel (by label).
    func sendOnDataChannel(_ data: [UInt8], label: String, binary: Bool, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        if let dataChannels { absorb(dataChannels.send(data, label: label, binary: binary, now: now), now: now, &output) }
        return routed(output, now: now)
    }

    /// Closes a data channel from our side (stream reset); `.closed` follows when the peer resets its side.
    func closeDataChannel(label: String, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        if let dataChannels { absorb(dataChannels.close(label: label, now: now), now: now, &output) }
        return routed(output, now: now)
    }

    /// Sends close_notify (through the relay when the pair is relayed), stops ICE and deletes
    /// the TURN allocations.
    func close(now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = max(lastNow, now)
        counters.pausedVideoStreams = 0  // a closed connection pauses nothing (its counters are summed)
        (counters.shedVideoFrames, counters.shedVideoPackets) = (pausedVideo.shedFrames, pausedVideo.shedPackets)
        // Frames still waiting for their sender's SRs go to the recorder before the end.
        if let media { absorb(media.releaseHeldFrames(now: lastNow), &output) }
        absorb(dtls.close(), now: MonotonicTime(nanoseconds: 0), &output)
        absorb(ice.close(now: lastNow), now: lastNow, &output)
        output = routed(output, now: lastNow)
        closeRelays(&output)
        return output
    }

    // MARK: - Internals

    private func receiveSRTP(_ datagram: consuming [UInt8], readAt: MonotonicTime, now: MonotonicTime, _ output: inout TransportOutput) {
        guard let srtp else {
            counters.droppedBeforeKeys += 1
            return
        }
        var bytes = consume datagram  // the only reference left: decrypted in place
        if RTPPacket.isRTCP(bytes) {
            guard (try? srtp.unprotectRTCP(&bytes)) != nil else { return }  // counted by the session
            onDecrypted?(bytes, now)
            guard let packets = try? RTCPPacket.parseCompound(bytes) else {
                counters.droppedMalformedRTCP += 1
                return
            }
            counters.rtcpPackets += 1
            if let media {
                absorb(media.handle(rtcp: packets, readAt: readAt, now: now), &output)
            } else {
                output.events.append(.rtcp(packets))
            }
        } else {
            guard (try? srtp.unprotectRTP(&bytes)) != nil else { return }
            onDecrypted?(bytes, now)
            guard let packet = try? RTPPacket(parsing: bytes) else {
                counters.droppedMalformedRTP += 1
                return
            }
            counters.rtpPackets += 1
            if let media {
                absorb(media.handle(rtp: packet, readAt: readAt, now: now), &output)
            } else {
                output.events.append(.rtp(RTPPacketBox(packet: packet)))
            }
        }
    }

    /// Frames go up as one event; RTCP goes out protected on the selected pair.
    func absorb(_ mediaOutput: MediaOutput, _ output: inout TransportOutput) {
        if !mediaOutput.frames.isEmpty { output.events.append(.frames(mediaOutput.frames)) }
        guard !mediaOutput.rtcp.isEmpty, let srtp, let pair = ice.selected else { return }
        for datagram in mediaOutput.rtcp {
            // A protect failure is counted by the SRTP session; there is nothing to send then.
            guard let protected = try? srtp.protectRTCP(datagram) else { continue }
            output.datagrams.append(.init(bytes: protected, from: pair.local, to: pair.remote))
        }
    }

    func absorb(_ iceOutput: ICEOutput, now: MonotonicTime, _ output: inout TransportOutput) {
        output.datagrams += iceOutput.datagrams
        for event in iceOutput.events {
            switch event {
            case .stateChanged(let state):
                output.events.append(.iceStateChanged(state))
                if state == .failed && failure == nil { fail(relayExplanation().map { .relay($0) } ?? .ice("no candidate pair succeeded"), &output) }
            case .selectedPair(let local, let remote):
                output.events.append(.selectedPair(local: local, remote: remote))
                bindChannelIfRelayed(local: local, remote: remote, now: now, &output)
                if !dtlsStarted {
                    dtlsStarted = true
                    absorb(dtls.start(now: now), now: now, &output)
                }
            case .localCandidate(let candidate):
                output.events.append(.localCandidate(candidate))
            case .consentLost:
                fail(.consentLost(afterMilliseconds: ice.configuration.consentTimeoutMilliseconds), &output)
            case .roleChanged:
                break
            }
        }
    }

    /// `readAt`: when the datagram that produced this output was read (`now` for a timer's).
    private func absorb(_ channelOutput: DataChannelOutput, now: MonotonicTime, readAt: MonotonicTime? = nil, _ output: inout TransportOutput) {
        for packet in channelOutput.packets { absorb(dtls.send(packet), now: now, &output) }
        for event in channelOutput.events {
            if case .message(let channel, let isBinary, let data) = event {
                output.events.append(.dataChannelMessage(channel: channel, isBinary: isBinary, data: data, readAt: readAt ?? now))
            } else {
                output.events.append(.dataChannel(event))
            }
        }
    }

    private func absorb(_ dtlsOutput: DTLSOutput, now: MonotonicTime, readAt: MonotonicTime? = nil, _ output: inout TransportOutput) {
        if let pair = ice.selected {
            output.datagrams += dtlsOutput.datagrams.map { .init(bytes: $0, from: pair.local, to: pair.remote) }
        }
        for event in dtlsOutput.events {
            switch event {
            case .connected(let keys):
                do {
                    srtp = try SRTPSession(keys: keys)
                    output.events.append(.dtlsConnected(keys.profile))
                } catch {
                    fail(.srtp(error), &output)
                }
                // As the DTLS client we start SCTP (the peer may start too; either works).
                if let dataChannels { absorb(dataChannels.start(now: now), now: now, &output) }
            case .applicationData(let data):
                if let dataChannels {
                    absorb(dataChannels.handle(packet: data, now: now), now: now, readAt: readAt, &output)
                } else {
                    output.events.append(.applicationData(data))
                }
            case .closed:
                output.events.append(.closed)
            case .failed(let error):
                fail(.dtls(error), &output)
            }
        }
    }

    func fail(_ reason: TransportFailure, _ output: inout TransportOutput) {
        guard failure == nil else { return }
        failure = reason
        output.events.append(.failed(reason))
    }
}
