import CodecBindings
import DiskLayout
import DTLS
import Foundation
import LoadGen
import Logging
import Media
import PeerConnection
@testable import RecBot
import Recorder
import SDP
import SoraSignalingCore
import STUN
import TestSupport
import WireCoding

/// A whole recording session in one process on a manual clock, in the spirit of str0m's
/// `TestRtc`: the load generator's Sora-compatible server and publishers (sans-IO), recbot's
/// signaling session, peer connection core, connection pipeline and recordings, joined by a
/// virtual network. The load generator's plan puts the seeded loss, bursts, jitter, reordering
/// and duplicates on the media; the network adds a fixed one-way delay. Nothing waits on real
/// time: the clock jumps to the next deadline, so a minute of media takes seconds.
///
/// What stays on real time: the recorders' file writes (their own queues; `finish` waits for
/// them) and OpenSSL's DTLS retransmission timer, so the handshake is never lossy here (the
/// plan's impairments apply to RTP only).
final class SimulatedSession {
    struct Options {
        var plan = LoadPlan()
        var oneWayDelayMilliseconds: Int64 = 20
        /// Audio RTP (not its sender reports) takes this much longer to reach recbot than video,
        /// as on a path that queues the two apart.
        var audioDelayMilliseconds: Int64 = 0
        var split: SplitPolicy?
        /// Seeds recbot's own randomness (ICE credentials, RTCP SSRCs, report jitter, segment UIDs).
        var seed: UInt64 = 7
    }

    static let start = (monotonic: MonotonicTime.milliseconds(1_000), wallClockMilliseconds: Int64(1_800_000_000_000))
    let clock = ManualTimeSource(monotonic: start.monotonic, wallClockMilliseconds: start.wallClockMilliseconds)
    let layout: ArchiveLayout
    let server: LoadGenerator<Int>
    let recordings: Recordings
    private(set) var finished: [FinishedRecording] = []
    private(set) var core: PeerConnectionCore?
    private var pipeline: ConnectionPipeline?
    private var signaling: SignalingSession?
    private var negotiation: RecvOnlyNegotiation?
    private let options: Options
    private var random: SplitMix64
    private let logger = Logger(label: "simulated-session") { _ in SwiftLogNoOpLogHandler() }
    private var context: SidecarContext
    /// Datagrams on the wire: when each arrives, in order of sending among equal times.
    private var inFlight: [(at: MonotonicTime, order: Int, toRecbot: Bool, bytes: [UInt8])] = []
    private var sent = 0

    static let recbotAddress = TransportAddress(ip: .v4(10, 0, 0, 1), port: 50_000)
    static let serverAddress = TransportAddress(ip: .v4(10, 0, 0, 2), port: 3_478)
    static let recbotPeer = 1

    init(directory: String, clip: MediaClip, options: Options) throws {
        self.options = options
        random = SplitMix64(seed: options.seed)
        let recordingID = "01JSIM0000000000000000000\(options.seed % 10)"
        layout = ArchiveLayout(recordingsRoot: directory, recordingID: recordingID)
        server = try LoadGenerator(plan: options.plan, clip: clip, certificate: try DTLSCertificate(),
                                   candidateAddress: "10.0.0.2", candidatePort: Self.serverAddress.port,
                                   transportAddress: { $0 == Self.recbotPeer ? Self.recbotAddress : nil }, ntp: Self.ntp(at:))
        server.logsSentFrames = true
        recordings = Recordings(archive: layout, recordingStartMilliseconds: clock.wallClockMilliseconds(), recordingStartTime: clock.now(),
                                interleaveNanoseconds: RecoveryPolicy().maximumRecoveryDelayNanoseconds + 400_000_000,
                                split: options.split, clock: clock, random: SeededRandom(seed: options.seed &+ 1))
        context = SidecarContext(recordingID: recordingID, channelID: options.plan.channelID ?? "sim", soraSessionID: nil,
                                 botConnectionID: nil, recbotVersion: "simulated")
    }

    /// Connects, records until `seconds` of simulated time have passed, then ends every file.
    func run(seconds: Double) throws {
        let end = clock.now().adding(nanoseconds: Int64(seconds * 1e9))
        try connect()
        while clock.now() < end {
            let next = [inFlight.first?.at, core?.nextTimeout, server.nextDeadline, end].compactMap { $0 }.min() ?? end
            if next > clock.now() { clock.advance(milliseconds: max(1, (next.nanoseconds - clock.now().nanoseconds + 999_999) / 1_000_000)) }
            try step()
        }
        finishAll()
    }

    // MARK: - Signaling (the WebSocket is a function call)

    private func connect() throws {
        let connect = try ConnectOptions(channelID: options.plan.channelID ?? "sim", soraClient: "recbot simulated", environment: "test")
            .connectMessage()
        let reply = server.handle(message: connect, now: clock.now())
        guard let text = reply.messages.first else { throw SimulationError.noOffer }
        guard case .offer(let offer) = try IncomingMessage(parsing: text) else { throw SimulationError.noOffer }
        context = SidecarContext(recordingID: context.recordingID, channelID: context.channelID, soraSessionID: offer.sessionID,
                                 botConnectionID: offer.connectionID, recbotVersion: context.recbotVersion)
        var capabilities = ReceiverCapabilities()
        capabilities.rtcpFeedback = ["nack", "nack pli", "ccm fir"]
        let negotiation = try RecvOnlyNegotiation(offer: try SessionDescription(parsing: offer.sdp), hosts: [Self.recbotAddress],
                                                  certificate: try DTLSCertificate(), capabilities: capabilities,
                                                  random: { [unowned self] in random.next() })
        self.negotiation = negotiation
        let core = negotiation.core
        self.core = core
        let pipeline = ConnectionPipeline(core: core, recordings: recordings, sinks: ConnectionPipeline.Sinks(
            finish: { [unowned self] recorder, counts, context, _ in finish(recorder, counts: counts, context: context) },
            recorderStarted: { _ in }), logger: logger)
        self.pipeline = pipeline
        _ = pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: clock.now())
        var session = SignalingSession(offer: offer)
        let answer = session.handle(.answered(sdp: negotiation.answer.sdp.serialized, candidates: []), now: clock.now())
        signaling = session
        perform(answer)
        apply(core.start(now: clock.now()))
    }

    private func deliverToServer(_ output: LoadGenerator<Int>.Output) {
        for message in output.messages { handleSignaling(message) }
        for datagram in output.datagrams { send(datagram, toRecbot: true) }
    }

    private func handleSignaling(_ text: String) {
        guard var session = signaling else { return }
        let actions = session.handle(.webSocketMessage(text), now: clock.now())
        signaling = session
        perform(actions)
    }

    private func perform(_ actions: [SignalingSession.Action]) {
        for action in actions {
            switch action {
            case .send(let text, _):
                deliverToServer(server.handle(message: text, now: clock.now()))
            case .renegotiate(let renegotiation):
                let answer = reanswer(renegotiation.sdp)
                guard var session = signaling else { continue }
                let more = session.handle(.renegotiated(renegotiation, answerSDP: answer), now: clock.now())
                signaling = session
                perform(more)
            default:
                break  // stored records, stats and candidates: not what this harness checks
            }
        }
    }

    /// A re-offer answered as `MediaPath.renegotiate` does: the core learns the sections, the
    /// pipeline the senders (those gone are finished).
    private func reanswer(_ sdp: String) -> String? {
        guard let negotiation, let core, let pipeline,
              let offer = try? SessionDescription(parsing: sdp),
              let answer = try? RecvOnlyAnswerBuilder.answer(to: offer, local: negotiation.local, capabilities: negotiation.capabilities)
        else { return nil }
        var output = core.updateMedia(answer.media)
        output.append(pipeline.update(senders: core.media?.senders ?? [:], refusedVideo: [:], context: context, now: clock.now()))
        apply(output)
        return answer.sdp.serialized
    }

    // MARK: - The network and the clock

    /// NTP time (RFC 3550 §4) of an instant on the manual clock: the publishers' sender reports
    /// share the simulation's one timeline, as capture clocks synced by NTP do.
    static func ntp(at instant: MonotonicTime) -> UInt64 {
        let unixNanoseconds = start.wallClockMilliseconds * 1_000_000 + (instant.nanoseconds - start.monotonic.nanoseconds)
        let seconds = UInt64(unixNanoseconds / 1_000_000_000) + 2_208_988_800
        return seconds << 32 | (UInt64(unixNanoseconds % 1_000_000_000) << 32) / 1_000_000_000
    }

    /// Opus RTP from the load generator: version 2 and payload type 111 (RTCP's types, 200–204,
    /// read as 72–76 there; STUN and DTLS start below 0x80).
    private static func isAudioRTP(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 12 && bytes[0] & 0xC0 == 0x80 && bytes[1] & 0x7F == SyntheticPublisher.opusPayloadType
    }

    private func send(_ bytes: [UInt8], toRecbot: Bool) {
        sent += 1
        let extra = toRecbot && Self.isAudioRTP(bytes) ? options.audioDelayMilliseconds : 0
        let at = clock.now().adding(milliseconds: options.oneWayDelayMilliseconds + extra)
        let index = inFlight.firstIndex { $0.at > at } ?? inFlight.count
        inFlight.insert((at, sent, toRecbot, bytes), at: index)
    }

    /// Everything due now: arrivals, then the core's and the server's timers.
    private func step() throws {
        let now = clock.now()
        while let first = inFlight.first, first.at <= now {
            inFlight.removeFirst()
            if first.toRecbot {
                if let core { apply(core.handle(datagram: first.bytes, from: Self.serverAddress, to: Self.recbotAddress, now: now)) }
            } else {
                deliverToServer(server.handle(datagram: first.bytes, from: Self.recbotPeer, now: now))
            }
        }
        if let core, let due = core.nextTimeout, due <= now { apply(core.handleTimeout(now: now)) }
        if let due = server.nextDeadline, due <= now { deliverToServer(server.tick(now: now)) }
    }

    /// What the core did: datagrams onto the wire, frames through the pipeline (whose answer,
    /// a keyframe request say, goes out in the same step, as on the transport's loop).
    private func apply(_ output: TransportOutput) {
        for datagram in output.datagrams { send(datagram.bytes, toRecbot: false) }
        for event in output.events {
            guard case .frames(let frames) = event, let pipeline else { continue }
            apply(pipeline.record(frames, context: context))
        }
    }

    // MARK: - Files

    private func finish(_ recorder: SenderRecorder, counts: ReceiveCounters, context: SidecarContext) {
        // Blocking is fine here: the test is the only thread that waits.
        if let done = recorder.finish(stoppedAtMilliseconds: clock.wallClockMilliseconds(), now: clock.now(), context: context, reception: counts) {
            finished.append(done)
        }
        recordings.finished(ObjectIdentifier(recorder), totals: RecordingTotals(recorder))
    }

    private func finishAll() {
        pipeline?.end(interrupted: false, boundary: clock.now(), context: context, now: clock.now())
        finished.sort { ($0.connectionID, $0.part) < ($1.connectionID, $1.part) }
    }

    enum SimulationError: Error { case noOffer }
}
