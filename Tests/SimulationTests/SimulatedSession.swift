import CodecBindings
import DiskLayout
import DTLS
import Foundation
import Archive
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
/// The server can cut recbot's connection (`Options.recorderDrops`, as Sora losing the
/// WebSocket): recbot's side then does what `JoinSession` does — ends the connection's parts as
/// interrupted, asks the session's `InterruptionLog` (its rejoin schedule) when to join again,
/// waits on the manual clock, and joins again into the same recordings. The catalog is a real
/// SQLite one, so the outage rows are what `join` writes.
///
/// What stays on real time: the recorders' file writes (their own queues; `finish` waits for
/// them), the catalog writer's thread, and OpenSSL's DTLS retransmission timer, so the
/// handshake is never lossy here (the plan's impairments apply to RTP only).
final class SimulatedSession {
    struct Options {
        var plan = LoadPlan()
        var oneWayDelayMilliseconds: Int64 = 20
        /// Audio RTP (not its sender reports) takes this much longer to reach recbot than video,
        /// as on a path that queues the two apart.
        var audioDelayMilliseconds: Int64 = 0
        /// Video RTP (not RTX, not sender reports) takes this much longer: libwebrtc's pacer
        /// queues video, never audio, for up to 2 s when the uplink is congested.
        var videoDelayMilliseconds: Int64 = 0
        /// …from this many seconds into the run (congestion that comes mid-session).
        var videoDelayFromSeconds: Double = 0
        var split: SplitPolicy?
        /// Seeds recbot's own randomness (ICE credentials, RTCP SSRCs, report jitter, segment UIDs, backoff).
        var seed: UInt64 = 7
        /// When (seconds into the run) the server cuts recbot's connection, and for how long after
        /// it refuses to take a new one (a restart); recbot joins again as its schedule says.
        var recorderDrops: [(at: Double, downSeconds: Double)] = []
        var rejoin = RejoinSchedule.Settings()
        /// How long media waited before the core took it (the transport's overload signal), from
        /// the seconds into the run and how many video streams are paused: a model of a host
        /// that can carry only so many streams. Nil: the core is never behind.
        var receiveWait: ((_ seconds: Double, _ pausedStreams: Int) -> Int64)?
    }

    static let start = (monotonic: MonotonicTime.milliseconds(1_000), wallClockMilliseconds: Int64(1_800_000_000_000))
    static let serverAddress = TransportAddress(ip: .v4(10, 0, 0, 2), port: 3_478)
    static let sessionID = "01JSIMSESSION0000000000000"

    let clock = ManualTimeSource(monotonic: start.monotonic, wallClockMilliseconds: start.wallClockMilliseconds)
    let layout: ArchiveLayout
    let server: LoadGenerator<Int>
    let recordings: Recordings
    let catalog: Catalog
    let interruptions: InterruptionLog
    private let writer: CatalogWriter
    private(set) var finished: [FinishedRecording] = []
    /// The connection recording now (nil while rejoining).
    private(set) var connection: SimulatedConnection?
    private(set) var connectionsMade = 0
    /// How each connection ended, in order.
    private(set) var endings: [SignalingSessionEnd] = []
    private let options: Options
    private let logger = Logger(label: "simulated-session") { _ in SwiftLogNoOpLogHandler() }
    private var context: SidecarContext
    /// Datagrams on the wire: when each arrives and to which connection (recbot's side: its
    /// ordinal; the server's: nil), in order of sending among equal times.
    private var inFlight: [(at: MonotonicTime, order: Int, to: Int?, from: Int, bytes: [UInt8])] = []
    private var sent = 0
    private var drops: [(at: MonotonicTime, down: Int64)] = []
    private var serverDownUntil: MonotonicTime?
    private var joinAt: MonotonicTime?

    init(directory: String, clip: MediaClip, options: Options) throws {
        self.options = options
        let recordingID = "01JSIM0000000000000000000\(options.seed % 10)"
        layout = ArchiveLayout(recordingsRoot: directory, recordingID: recordingID)
        server = try LoadGenerator(plan: options.plan, clip: clip, certificate: try DTLSCertificate(),
                                   candidateAddress: "10.0.0.2", candidatePort: Self.serverAddress.port,
                                   transportAddress: { TransportAddress(ip: .v4(10, 0, 0, 1), port: UInt16(50_000 + $0)) }, ntp: Self.ntp(at:))
        server.logsSentFrames = true
        recordings = Recordings(archive: layout, recordingStartMilliseconds: clock.wallClockMilliseconds(), recordingStartTime: clock.now(),
                                interleaveNanoseconds: RecoveryPolicy().maximumRecoveryDelayNanoseconds + 400_000_000,
                                split: options.split, clock: clock, random: SeededRandom(seed: options.seed &+ 1))
        context = SidecarContext(recordingID: recordingID, channelID: options.plan.channelID ?? "sim", soraSessionID: nil,
                                 botConnectionID: nil, recbotVersion: "simulated")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        catalog = try Catalog(path: directory + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: Self.sessionID, channelID: context.channelID, startedAt: clock.wallClockMilliseconds(),
                                                recbotVersion: "simulated"))
        writer = CatalogWriter(catalog: catalog, clock: clock, logger: logger)
        interruptions = InterruptionLog(sessionID: Self.sessionID, settings: options.rejoin, writer: writer, logger: logger,
                                        random: SeededRandom(seed: options.seed &+ 2))
        drops = options.recorderDrops.map { (clock.now().adding(nanoseconds: Int64($0.at * 1e9)), Int64($0.downSeconds * 1e9)) }
    }

    /// Connects, records until `seconds` of simulated time have passed, then ends every file
    /// and waits for the catalog's writes.
    func run(seconds: Double) throws {
        let end = clock.now().adding(nanoseconds: Int64(seconds * 1e9))
        try join()
        while clock.now() < end {
            let deadlines = [inFlight.first?.at, connection?.core.nextTimeout, server.nextDeadline, drops.first?.at, joinAt, end]
            let next = deadlines.compactMap { $0 }.min() ?? end
            if next > clock.now() { clock.advance(milliseconds: max(1, (next.nanoseconds - clock.now().nanoseconds + 999_999) / 1_000_000)) }
            try step()
        }
        finishAll()
    }

    // MARK: - Joining (the WebSocket is a function call)

    /// One join attempt: the connect message, the offer, the answer. False when the server is down.
    @discardableResult
    private func join() throws -> Bool {
        if let down = serverDownUntil, clock.now() < down { return false }
        let connect = try ConnectOptions(channelID: options.plan.channelID ?? "sim", soraClient: "recbot simulated", environment: "test")
            .connectMessage()
        let reply = server.handle(message: connect, now: clock.now())
        guard let text = reply.messages.first, case .offer(let offer) = try IncomingMessage(parsing: text) else { throw SimulationError.noOffer }
        context = SidecarContext(recordingID: context.recordingID, channelID: context.channelID, soraSessionID: offer.sessionID,
                                 botConnectionID: offer.connectionID, recbotVersion: context.recbotVersion)
        connectionsMade += 1
        let connection = try SimulatedConnection(ordinal: connectionsMade, offer: offer, recordings: recordings, context: context, seed: options.seed,
                                                 finish: { [unowned self] recorder, counts, context, _ in finish(recorder, counts: counts, context: context) },
                                                 logger: logger)
        self.connection = connection
        let actions = connection.answer(now: clock.now())
        pollConnection()
        perform(actions)
        connection.core.handle(.start, now: clock.now())
        pollConnection()
        return true
    }

    /// The server cut the connection: its WebSocket closes without a close frame.
    private func dropRecorder(downNanoseconds: Int64) {
        server.dropRecorder()
        if downNanoseconds > 0 { serverDownUntil = clock.now().adding(nanoseconds: downNanoseconds) }
        guard let connection else { return }
        perform(connection.handle(.webSocketClosed(code: nil), now: clock.now()))
    }

    /// As `SessionConnection` and `JoinSession.rejoin` end a connection: its parts end
    /// (interrupted when joining again may cure the cause), and the outage asks the rejoin
    /// schedule when to try.
    private func connectionEnded(_ end: SignalingSessionEnd) {
        guard let connection else { return }
        self.connection = nil
        endings.append(end)
        let now = clock.now()
        let rejoinable = ConnectionEndKind.isRejoinable(end, transportFailure: nil) && options.rejoin.maximumAttempts != 0
        var ending = connection.context
        ending.endReason = end.reason
        connection.pipeline.end(interrupted: rejoinable, boundary: connection.lastFrame ?? now, context: ending, now: now)
        interruptions.connectionEnded()
        guard rejoinable, let since = connection.recordingSince else { return }
        schedule(interruptions.begin(cause: end.reason, connectedAt: since, lastMediaAt: connection.lastFrame, now: now,
                                     wallClock: clock.wallClockMilliseconds()))
    }

    private func schedule(_ decision: RejoinSchedule.Decision) {
        if case .retry(let at) = decision { joinAt = at }
    }

    /// The backoff's time came: one attempt; a refused one asks the schedule again.
    private func attemptRejoin() throws {
        joinAt = nil
        interruptions.attemptStarted()
        if try !join() { schedule(interruptions.attemptFailed(now: clock.now())) }
    }

    private func deliverToServer(_ output: LoadGenerator<Int>.Output) {
        for message in output.messages { handleSignaling(message) }
        // The server sends where the last authenticated binding came from (nowhere before one).
        guard let remote = server.peer.remote else { return }
        for datagram in output.datagrams { send(datagram, to: remote, from: 0) }
    }

    private func handleSignaling(_ text: String) {
        guard let connection else { return }
        perform(connection.handle(.webSocketMessage(text), now: clock.now()))
    }

    private func perform(_ actions: [SignalingSession.Action]) {
        for action in actions {
            guard let connection else { return }
            switch action {
            case .send(let text, _):
                deliverToServer(server.handle(message: text, now: clock.now()))
            case .renegotiate(let renegotiation):
                let answer = connection.reanswer(renegotiation.sdp, now: clock.now())
                pollConnection()
                perform(connection.handle(.renegotiated(renegotiation, answerSDP: answer), now: clock.now()))
            case .end(let end):
                connectionEnded(end)
            default:
                break  // stored records, stats and candidates: not what this harness checks
            }
        }
    }

    // MARK: - The network and the clock

    /// NTP time (RFC 3550 §4) of an instant on the manual clock: the publishers' sender reports
    /// share the simulation's one timeline, as capture clocks synced by NTP do.
    static func ntp(at instant: MonotonicTime) -> UInt64 {
        let unixNanoseconds = start.wallClockMilliseconds * 1_000_000 + (instant.nanoseconds - start.monotonic.nanoseconds)
        let seconds = UInt64(unixNanoseconds / 1_000_000_000) + 2_208_988_800
        return seconds << 32 | (UInt64(unixNanoseconds % 1_000_000_000) << 32) / 1_000_000_000
    }

    /// RTP of one payload type from the load generator: version 2 (RTCP's types, 200–204, read
    /// as 72–76 there; STUN and DTLS start below 0x80).
    private static func isRTP(_ bytes: [UInt8], payloadType: UInt8) -> Bool {
        bytes.count >= 12 && bytes[0] & 0xC0 == 0x80 && bytes[1] & 0x7F == payloadType
    }

    private var videoDelayed: Bool {
        clock.now().nanoseconds - Self.start.monotonic.nanoseconds >= Int64(options.videoDelayFromSeconds * 1e9)
    }

    /// `to`: recbot's connection (its ordinal), or nil for the server; `from`: the sender's.
    private func send(_ bytes: [UInt8], to: Int?, from: Int) {
        sent += 1
        let extra = to == nil ? 0 : Self.isRTP(bytes, payloadType: SyntheticPublisher.opusPayloadType) ? options.audioDelayMilliseconds
            : Self.isRTP(bytes, payloadType: SyntheticPublisher.vp8PayloadType) && videoDelayed ? options.videoDelayMilliseconds : 0
        let at = clock.now().adding(milliseconds: options.oneWayDelayMilliseconds + extra)
        let index = inFlight.firstIndex { $0.at > at } ?? inFlight.count
        inFlight.insert((at, sent, to, from, bytes), at: index)
    }

    /// Everything due now: faults, arrivals, then the timers (the cores', the server's, the backoff's).
    private func step() throws {
        let now = clock.now()
        while let drop = drops.first, drop.at <= now {
            drops.removeFirst()
            dropRecorder(downNanoseconds: drop.down)
        }
        if let wait = options.receiveWait, let connection, inFlight.first.map({ $0.at <= now && $0.to == connection.ordinal }) == true {
            let seconds = Double(now.nanoseconds - Self.start.monotonic.nanoseconds) / 1e9
            connection.core.handle(.receiveWait(nanoseconds: wait(seconds, connection.core.counters.pausedVideoStreams)), now: now)
            pollConnection()
        }
        while let first = inFlight.first, first.at <= now {
            inFlight.removeFirst()
            if let to = first.to {
                // A connection that ended has no socket: what was on its way is lost.
                guard let connection, connection.ordinal == to else { continue }
                connection.core.handle(.datagram(first.bytes, from: Self.serverAddress, to: connection.address), now: now)
                pollConnection()
            } else {
                deliverToServer(server.handle(datagram: first.bytes, from: first.from, now: now))
            }
        }
        if let connection, let due = connection.core.nextTimeout, due <= now {
            connection.core.handle(.timeout, now: now)
            pollConnection()
        }
        if let due = server.nextDeadline, due <= now { deliverToServer(server.tick(now: now)) }
        if let due = joinAt, due <= now { try attemptRejoin() }
    }

    /// What the core did: datagrams onto the wire, frames through the pipeline (whose feedback,
    /// a keyframe request say, goes out in the same step, as on the transport's loop).
    private func pollConnection() {
        guard let connection else { return }
        let now = clock.now()
        let interruptions = interruptions, wallClock = clock.wallClockMilliseconds(), botConnectionID = context.botConnectionID
        let datagrams = connection.poll(now: now,
                                         onRecording: { interruptions.recovered(connectionID: botConnectionID, now: $0, wallClock: wallClock) },
                                         onFirstFrame: { interruptions.firstFrame(at: $0) })
        for datagram in datagrams { send(datagram, to: nil, from: connection.ordinal) }
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
        connection?.pipeline.end(interrupted: false, boundary: clock.now(), context: context, now: clock.now())
        finished.sort { ($0.connectionID, $0.part) < ($1.connectionID, $1.part) }
        _ = writer.finish(timeoutSeconds: 10)
    }

    enum SimulationError: Error { case noOffer }
}

extension SimulatedSession {
    /// `options` recorded for `seconds` with the suites' clip, into a fresh directory under `root`.
    static func recorded(_ options: Options, seconds: Double, under root: String) throws -> SimulatedSession {
        let session = try SimulatedSession(directory: root + "/\(UUID())", clip: SimulatedSessionTests.clip, options: options)
        try session.run(seconds: seconds)
        return session
    }
}
