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
    func answer(now: MonotonicTime) -> (TransportOutput, [SignalingSession.Action]) {
        let output = pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: now)
        let actions = signaling.handle(.answered(sdp: negotiation.answer.sdp.serialized, candidates: []), now: now)
        return (output, actions)
    }

    func handle(_ input: SignalingSession.Input, now: MonotonicTime) -> [SignalingSession.Action] {
        signaling.handle(input, now: now)
    }

    /// A re-offer answered as `MediaPath.renegotiate` does: the core learns the sections, the
    /// pipeline the senders (those gone are finished).
    func reanswer(_ sdp: String, now: MonotonicTime) -> (TransportOutput, String?) {
        guard let offer = try? SessionDescription(parsing: sdp),
              let answer = try? RecvOnlyAnswerBuilder.answer(to: offer, local: negotiation.local, capabilities: negotiation.capabilities)
        else { return (TransportOutput(), nil) }
        var output = core.updateMedia(answer.media)
        output.append(pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: now))
        return (output, answer.sdp.serialized)
    }

    /// The core's events as `MediaPath` takes them: DTLS up starts the recording, frames go
    /// through the pipeline (whose answer goes out in the same step). Returns what to send.
    func apply(_ output: TransportOutput, now: MonotonicTime, onRecording: (MonotonicTime) -> Void,
               onFirstFrame: (MonotonicTime) -> Void) -> [[UInt8]] {
        var datagrams = output.datagrams.map(\.bytes)
        for event in output.events {
            switch event {
            case .dtlsConnected:
                if recordingSince == nil {
                    recordingSince = now
                    onRecording(now)
                }
            case .frames(let frames):
                if let last = frames.last?.completedAt {
                    if firstFrame == nil {
                        firstFrame = frames.first?.completedAt ?? last
                        onFirstFrame(firstFrame ?? last)
                    }
                    lastFrame = last
                }
                let more = pipeline.record(frames, context: context)
                datagrams += apply(more, now: now, onRecording: onRecording, onFirstFrame: onFirstFrame)
            default:
                break
            }
        }
        return datagrams
    }
}
