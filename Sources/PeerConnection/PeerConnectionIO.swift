import ICE
import SDP
import STUN
import WireCoding

/// Everything a driver tells the core, each with the time it happened (`handle(_:now:)`).
public enum PeerConnectionInput: Sendable {
    /// Starts ICE (and the UDP TURN relays).
    case start
    /// A datagram read from the host socket `to`; `readAt`, when the socket read it, if that was
    /// before `now` (it waited behind others): media is placed by when it came, not by when
    /// the core reached it.
    case datagram([UInt8], from: TransportAddress, to: TransportAddress, readAt: MonotonicTime? = nil)
    /// `nextTimeout` has come.
    case timeout
    /// The oldest media datagram of the batch just handled waited this long between the
    /// socket and the core: how far behind the core is (it sheds video when too far).
    case receiveWait(nanoseconds: Int64)
    /// A remote candidate trickled after the offer.
    case remoteCandidate(ICECandidate)
    /// Ask these STUN servers (the offer's `iceServers`) for our server-reflexive address, from
    /// every host socket of the same family; found candidates come out as `.localCandidate`.
    case gatherServerReflexive(servers: [TransportAddress])
    /// A re-negotiation's media sections (sections that went away end their streams).
    case renegotiated([NegotiatedMedia])
    /// The recorder dropped a frame of `ssrc`: its stream waits for (and asks for) a keyframe.
    case frameLostDownstream(ssrc: UInt32, rtpTimestamp: UInt32)
    /// A keyframe is wanted on `ssrc` (a split boundary): see `MediaReceiver.requestKeyframe`.
    case keyframeWanted(ssrc: UInt32)
    /// DTLS application data to send on the selected pair (SCTP, when no data-channel endpoint is attached).
    case applicationData([UInt8])
    /// A message for a data channel (by label).
    case dataChannelMessage([UInt8], label: String, binary: Bool)
    /// Close a data channel from our side (stream reset); `.closed` follows when the peer resets its side.
    case closeDataChannel(label: String)
    /// The TCP/TLS connection of relay `link` (one of `relayStreams`) is up.
    case relayConnected(link: Int)
    /// The TCP/TLS connection of relay `link` could not be made, or broke.
    case relayConnectionFailed(link: Int, reason: String)
    /// Bytes read from the stream connection of relay `link`.
    case relayStream([UInt8], link: Int)
    /// Send close_notify (through the relay when the pair is relayed), stop ICE and delete the
    /// TURN allocations.
    case close
}

/// One thing the core wants done, in the order it arose.
public enum PeerConnectionOutput: Equatable, Sendable {
    public typealias Datagram = ICEOutput.Datagram

    case transmit(Datagram)
    /// Bytes for a TURN server reached over TCP or TLS (by `RelayServer.id`).
    case streamWrite(StreamWrite)
    /// Close the stream connection of relay `link` (its server broke the framing, or the allocation ended).
    case closeStream(link: Int)
    case event(TransportEvent)
}

/// The str0m-like surface: one input with its time, then poll until nil, then wait for
/// `nextTimeout` (read once per batch of inputs: it asks every stream). Whatever the driver
/// feeds while polling (feedback for an event, say) is queued behind what is left, so one poll
/// loop drains both.
extension PeerConnectionCore {
    /// Consuming: a datagram's bytes are then held only here, and SRTP decrypts them in place
    /// instead of copying them first.
    public func handle(_ input: consuming PeerConnectionInput, now: MonotonicTime) {
        var produced = output(for: input, now: now)
        enqueue(produced)
        produced.clearForReuse()
        spareOutput = produced
    }

    /// The next thing to do; nil when nothing is queued.
    public func poll() -> PeerConnectionOutput? {
        guard queueHead < queue.count else { return nil }
        let item = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            // Keeps the storage: the next packet's output reuses it.
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        }
        return item
    }

    private func output(for input: consuming PeerConnectionInput, now: MonotonicTime) -> TransportOutput {
        switch consume input {
        case .start: start(now: now)
        case .datagram(let bytes, let from, let to, let readAt): handle(datagram: bytes, from: from, to: to, readAt: readAt ?? now, now: now)
        case .timeout: handleTimeout(now: now)
        case .receiveWait(let wait): observeReceiveWait(wait, now: now)
        case .remoteCandidate(let candidate): handle(remoteCandidate: candidate, now: now)
        case .gatherServerReflexive(let servers): gatherServerReflexive(servers: servers, now: now)
        case .renegotiated(let media): updateMedia(media, now: now)
        case .frameLostDownstream(let ssrc, let rtpTimestamp): frameLostDownstream(ssrc: ssrc, rtpTimestamp: rtpTimestamp, now: now)
        case .keyframeWanted(let ssrc): requestKeyframe(ssrc: ssrc, now: now)
        case .applicationData(let data): sendApplicationData(data, now: now)
        case .dataChannelMessage(let data, let label, let binary): sendOnDataChannel(data, label: label, binary: binary, now: now)
        case .closeDataChannel(let label): closeDataChannel(label: label, now: now)
        case .relayConnected(let link): relayConnected(link: link, now: now)
        case .relayConnectionFailed(let link, let reason): relayConnectionFailed(link: link, reason: reason, now: now)
        case .relayStream(let bytes, let link): handle(stream: bytes, link: link, now: now)
        case .close: close(now: now)
        }
    }

    /// Sends before writes before closes before events, as each step produced them.
    private func enqueue(_ output: TransportOutput) {
        guard !output.isEmpty else { return }
        for datagram in output.datagrams { queue.append(.transmit(datagram)) }
        for write in output.streamWrites { queue.append(.streamWrite(write)) }
        for link in output.streamsToClose { queue.append(.closeStream(link: link)) }
        for event in output.events { queue.append(.event(event)) }
    }
}
