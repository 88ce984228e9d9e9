import DTLS
import Foundation
import Logging
import Media
import PeerConnection
@testable import RecBot
import Recorder
import SDP
import SoraSignalingCore
import STUN
import WireCoding

/// recbot's side of one connection to the simulated Sora, as `SessionConnection` and
/// `MediaPath` compose it: the answer to the offer, the peer connection core, the loop-owned
/// pipeline into the session's `Recordings`, and the signaling session. A rejoin is a new one
/// of these on the same recordings.
final class SimulatedConnection {
    /// Its index on the virtual network (the load generator's address for it).
    let ordinal: Int
    let address: TransportAddress
    let core: PeerConnectionCore
    let pipeline: ConnectionPipeline
    private(set) var signaling: SignalingSession
    private let negotiation: RecvOnlyNegotiation
    var context: SidecarContext
    /// DTLS is up: the connection records (nil until then).
    var recordingSince: MonotonicTime?
    var firstFrame: MonotonicTime?
    var lastFrame: MonotonicTime?
    /// What the core said about shedding, with when.
    var overloadEvents: [(at: MonotonicTime, event: OverloadEvent)] = []

    init(ordinal: Int, offer: OfferMessage, recordings: Recordings, context: SidecarContext, seed: UInt64,
         finish: @escaping (SenderRecorder, ReceiveCounters, SidecarContext, Bool) -> Void, logger: Logger) throws {
        self.ordinal = ordinal
        address = TransportAddress(ip: .v4(10, 0, 0, 1), port: UInt16(50_000 + ordinal))
        let random = SeededRandom(seed: seed &+ UInt64(ordinal))
        var capabilities = ReceiverCapabilities()
        capabilities.rtcpFeedback = ["nack", "nack pli", "ccm fir"]
        negotiation = try RecvOnlyNegotiation(offer: try SessionDescription(parsing: offer.sdp), hosts: [address],
                                              certificate: try DTLSCertificate(), capabilities: capabilities,
                                              random: { random.next() })
        core = negotiation.core
        self.context = context
        pipeline = ConnectionPipeline(core: core, recordings: recordings, sinks: ConnectionPipeline.Sinks(finish: finish, recorderStarted: { _ in }),
                                      logger: logger)
        signaling = SignalingSession(offer: offer)
    }

    /// The senders the offer lists, then the answer as the signaling session's action.
    func answer(now: MonotonicTime) -> [SignalingSession.Action] {
        pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: now)
        return signaling.handle(.answered(sdp: negotiation.answer.sdp.serialized, candidates: []), now: now)
    }

    func handle(_ input: SignalingSession.Input, now: MonotonicTime) -> [SignalingSession.Action] {
        signaling.handle(input, now: now)
    }

    /// A re-offer answered as `MediaPath.renegotiate` does: the core learns the sections, the
    /// pipeline the senders (those gone are finished).
    func reanswer(_ sdp: String, now: MonotonicTime) -> String? {
        guard let offer = try? SessionDescription(parsing: sdp),
              let answer = try? RecvOnlyAnswerBuilder.answer(to: offer, local: negotiation.local, capabilities: negotiation.capabilities)
        else { return nil }
        core.handle(.renegotiated(answer.media), now: now)
        pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: now)
        return answer.sdp.serialized
    }

    /// The core's output as `MediaPath` and the transport take it: DTLS up starts the
    /// recording, frames go through the pipeline (whose feedback joins the core's queue and goes
    /// out in the same step). Returns what to send.
    func poll(now: MonotonicTime, onRecording: (MonotonicTime) -> Void, onFirstFrame: (MonotonicTime) -> Void) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        while let output = core.poll() {
            switch output {
            case .transmit(let datagram):
                datagrams.append(datagram.bytes)
            case .event(.dtlsConnected):
                if recordingSince == nil {
                    recordingSince = now
                    onRecording(now)
                }
            case .event(.frames(let frames)):
                if let last = frames.last?.completedAt {
                    if firstFrame == nil {
                        firstFrame = frames.first?.completedAt ?? last
                        onFirstFrame(firstFrame ?? last)
                    }
                    lastFrame = last
                }
                pipeline.record(frames, context: context)
            case .event(.overload(let event)):
                overloadEvents.append((now, event))
                pipeline.overload(event)
            default:
                break
            }
        }
        return datagrams
    }
}
