import DTLS
import Foundation
import SDP
import STUN
import WireCoding

/// A Sora-compatible server with synthetic publishers, for one recorder, without I/O. The
/// recorder's signaling messages and datagrams go in, with the time; signaling messages to
/// send, datagrams for the recorder and the next deadline come out. The caller owns the
/// WebSocket, the UDP socket and the clock.
public final class LoadGenerator<Address: Hashable> {
    public enum Phase: Equatable, Sendable { case awaitingConnect, awaitingAnswer, running, ended(String) }

    public struct Output {
        public var messages: [String] = []
        public var datagrams: [[UInt8]] = []
        /// The session is over: close the WebSocket once `messages` are sent.
        public var close = false
    }

    public private(set) var phase: Phase = .awaitingConnect
    public let plan: LoadPlan
    /// The recorder's connection: replaced when the recorder joins again after `dropRecorder`.
    public private(set) var peer: PublisherPeer<Address>
    /// Recorder connections cut so far (the recorder may join again each time).
    public private(set) var recorderDrops = 0
    public private(set) var publishers: [SyntheticPublisher] = []
    public private(set) var joinedAtUnixMilliseconds: [String: Int64] = [:]
    public private(set) var leftAtUnixMilliseconds: [String: Int64] = [:]
    public private(set) var vanished: Set<String> = []
    public private(set) var reOffersSent = 0
    public private(set) var reAnswersReceived = 0
    public private(set) var channelID = ""
    public private(set) var botConnectionID = ""
    public private(set) var startedAt: MonotonicTime?

    private let clip: MediaClip
    private let transport: OfferTransport
    private var random: SplitMix64
    private var sections: [OfferBuilder.Section] = []
    private var bySSRC: [UInt32: SyntheticPublisher] = [:]
    private var pendingJoins: [(at: MonotonicTime, index: Int)] = []
    private var nextIndex = 0
    private var nextChurn: MonotonicTime?
    private var nextVanish: MonotonicTime?
    private var nextBurst: MonotonicTime?
    private var burstTurn = 0
    private var nextPing: MonotonicTime?
    private var endAt: MonotonicTime?
    /// Set when the duration is reached: media has stopped, NACKs are answered until then.
    private var closeAt: MonotonicTime?
    private var sessionVersion = 1
    private var rtp: [[UInt8]] = []
    /// Publishers waiting to start, with their offset from the start (the ramp): the first ones
    /// wait for the transport, arrivals for the re-answer that makes them routable.
    private var waiting: [(publisher: SyntheticPublisher, offsetNanoseconds: Int64)] = []
    private var transportUp = false
    private var rtcp: [[UInt8]] = []
    /// The NTP time of a schedule instant, for the sender reports: the wall clock's by default; a
    /// simulation passes its manual clock's, so every publisher's reports share one timeline.
    private let ntp: (MonotonicTime) -> UInt64
    private let certificate: DTLSCertificate
    private let transportAddress: (Address) -> TransportAddress?
    /// Sora's session id for the channel: one for the recorder's first connection and its rejoins.
    private var soraSessionID: String?
    /// Each publisher keeps a log of the frames it sent (for tests that judge timing from the file).
    public var logsSentFrames = false

    public init(plan: LoadPlan, clip: MediaClip, certificate: DTLSCertificate, candidateAddress: String, candidatePort: UInt16,
                transportAddress: @escaping (Address) -> TransportAddress? = { _ in nil },
                ntp: @escaping (MonotonicTime) -> UInt64 = LoadClock.ntp(at:)) throws {
        self.plan = plan
        self.clip = clip
        self.ntp = ntp
        self.certificate = certificate
        self.transportAddress = transportAddress
        random = SplitMix64(seed: plan.seed)
        let ufrag = SoraIDs.random(using: &random).prefix(8), password = SoraIDs.random(using: &random)
        guard let fingerprint = certificate.fingerprint() else { throw LoadGenError.badAnswer("no certificate fingerprint") }
        transport = OfferTransport(iceUfrag: String(ufrag), icePwd: password, fingerprint: fingerprint.sdp,
                                   candidateAddress: candidateAddress, candidatePort: candidatePort)
        peer = PublisherPeer(localUfrag: String(ufrag), localPassword: password, certificate: certificate, transportAddress: transportAddress)
    }

    // MARK: - Signaling

    public func handle(message text: String, now: MonotonicTime) -> Output {
        var output = Output()
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any], let type = object["type"] as? String else {
            return output
        }
        switch (phase, type) {
        case (.awaitingConnect, "connect"):
            guard object["role"] as? String == "recvonly" else {
                end("the client is not recvonly", &output)
                return output
            }
            channelID = plan.channelID ?? (object["channel_id"] as? String ?? "loadgen")
            botConnectionID = SoraIDs.random(using: &random)
            // A rejoin finds the channel's publishers where they are; the first join starts them.
            if publishers.isEmpty { startPublishers(now: now) }
            let sessionID = soraSessionID ?? SoraIDs.random(using: &random)
            soraSessionID = sessionID
            output.messages.append(json([
                "type": "offer", "sdp": offer(), "connection_id": botConnectionID, "client_id": botConnectionID,
                "bundle_id": botConnectionID, "session_id": sessionID, "channel_id": channelID,
                "simulcast": false, "spotlight": false, "version": "recbot-loadgen",
                "config": ["iceServers": [Any](), "iceTransportPolicy": "all"],
            ]))
            phase = .awaitingAnswer
        case (.awaitingAnswer, "answer"):
            guard let sdp = object["sdp"] as? String, let answer = try? SessionDescription(parsing: sdp) else {
                end("the answer has no usable SDP", &output)
                return output
            }
            do {
                try peer.accept(answer: answer, now: now)
            } catch {
                end("\(error)", &output)
                return output
            }
            phase = .running
            nextPing = now.adding(nanoseconds: Int64(plan.pingIntervalSeconds * 1e9))
            guard startedAt == nil else { break }  // a rejoin: the plan's clock runs from the first answer
            startedAt = now
            endAt = plan.durationSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
            nextChurn = plan.churnIntervalSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
            nextVanish = plan.vanishIntervalSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
            nextBurst = plan.burstIntervalSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
        case (.running, "re-answer"):
            reAnswersReceived += 1
            if transportUp { startWaiting(now: now) }
        case (.running, "disconnect"):
            end("the client disconnected", &output)
        default:
            break  // candidate (a lite agent needs none), pong, stats
        }
        return output
    }

    /// The floor benchmark's run: no signaling, no ICE, no DTLS. The publishers start now and
    /// send to `remote` with `FloorKeys`, until the duration is reached.
    public func startWithoutSignaling(remote: Address, now: MonotonicTime) throws {
        guard case .awaitingConnect = phase else { return }
        try peer.useFixedKeys(FloorKeys.material, remote: remote)
        channelID = plan.channelID ?? "floor"
        startPublishers(now: now)
        phase = .running
        startedAt = now
        endAt = plan.durationSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
        nextBurst = plan.burstIntervalSeconds.map { now.adding(nanoseconds: Int64($0 * 1e9)) }
    }

    /// The recorder's connection is cut, as when Sora loses a subscriber's WebSocket: its
    /// transport goes, the publishers go on sending to nobody, and the recorder's next `connect`
    /// gets an offer with the same publishers, in the same Sora session, forwarding from the
    /// present on (nothing of the outage is queued for it).
    public func dropRecorder() {
        guard case .running = phase else { return }
        phase = .awaitingConnect
        recorderDrops += 1
        transportUp = false
        peer = PublisherPeer(localUfrag: peer.localUfrag, localPassword: peer.localPassword, certificate: certificate,
                             transportAddress: transportAddress)
    }

    /// Publishers join over the ramp: each one's first frame is scheduled at its join time.
    private func startPublishers(now: MonotonicTime) {
        let step = plan.publishers > 1 ? plan.rampSeconds / Double(plan.publishers) : 0
        for index in 0..<plan.publishers {
            let publisher = makePublisher(startingAt: now)
            add(publisher)
            waiting.append((publisher, Int64(step * Double(index) * 1e9)))
        }
    }

    private func startWaiting(now: MonotonicTime) {
        for (publisher, offset) in waiting {
            let start = now.adding(nanoseconds: offset)
            publisher.reschedule(startingAt: start, wallClockNTP: ntp(start))
            joinedAtUnixMilliseconds[publisher.connectionID] = LoadClock.unixMilliseconds(at: start)
        }
        waiting.removeAll()
    }

    private func makePublisher(startingAt start: MonotonicTime) -> SyntheticPublisher {
        let index = nextIndex
        nextIndex += 1
        let id = SoraIDs.publisher(index, using: &random)
        var ssrcs = SyntheticPublisher.SSRCs(audio: 0, video: 0, rtx: 0)
        for path in [\SyntheticPublisher.SSRCs.audio, \.video, \.rtx] {
            var ssrc: UInt32
            repeat { ssrc = UInt32(truncatingIfNeeded: random.next()) } while ssrc == 0 || bySSRC[ssrc] != nil
            ssrcs[keyPath: path] = ssrc
        }
        let publisher = SyntheticPublisher(connectionID: id, ssrcs: ssrcs, clip: clip, startedAt: start, wallClockNTP: ntp(start),
                                  faults: PacketFaults(lossPercent: plan.lossPercent, reorderPercent: plan.reorderPercent,
                                                       duplicatePercent: plan.duplicatePercent, burstLossPercent: plan.burstLossPercent,
                                                       burstLength: plan.burstLength, jitterNanoseconds: Int64(plan.jitterMilliseconds * 1e6)),
                                  seed: plan.seed &+ UInt64(index) &* 0x9E37_79B9)
        if logsSentFrames { publisher.sentFrames = [] }
        publisher.sendsVideo = !plan.audioOnly
        return publisher
    }

    private func add(_ publisher: SyntheticPublisher) {
        publishers.append(publisher)
        for ssrc in [publisher.ssrcs.audio, publisher.ssrcs.video, publisher.ssrcs.rtx] { bySSRC[ssrc] = publisher }
        for kind in [OfferBuilder.Section.Kind.audio, .video] {
            sections.append(.init(mid: sections.count, kind: kind, connectionID: publisher.connectionID, ssrcs: publisher.ssrcs, active: true))
        }
    }

    private func offer() -> String {
        sessionVersion += 1
        return OfferBuilder.offer(sessionVersion: sessionVersion, transport: transport, sections: sections)
    }

    private func notify(_ event: String, _ publisher: SyntheticPublisher) -> String {
        let sending = publishers.count { !$0.stopped }
        return json(["type": "notify", "event_type": event, "role": "sendonly", "channel_id": channelID,
              "connection_id": publisher.connectionID, "client_id": publisher.connectionID, "bundle_id": publisher.connectionID,
              "audio": true, "video": true, "channel_connections": sending + 1,
              "channel_sendonly_connections": sending, "channel_recvonly_connections": 1])
    }

    private func end(_ reason: String, _ output: inout Output) {
        guard case .running = phase else {
            phase = .ended(reason)
            output.close = true
            return
        }
        phase = .ended(reason)
        output.close = true
        stopPublishers()
    }

    /// Every publisher still sending stops now, and leaves at this time in the ground truth.
    private func stopPublishers() {
        let now = LoadClock.unixMilliseconds()
        for publisher in publishers where !publisher.stopped {
            publisher.stopped = true
            leftAtUnixMilliseconds[publisher.connectionID] = now
        }
    }

    // MARK: - Media and time

    public func handle(datagram: [UInt8], from address: Address, now: MonotonicTime) -> Output {
        var output = Output()
        let result = peer.handle(datagram: datagram, from: address, now: now)
        output.datagrams = result.datagrams
        if let failure = result.failure { end("transport: \(failure)", &output) }
        for feedback in result.feedback {
            switch feedback {
            case .keyframeRequest(let ssrc): bySSRC[ssrc]?.requestKeyframe()
            case .nack(let ssrc, let sequences):
                guard let publisher = bySSRC[ssrc] else { continue }
                rtp.removeAll(keepingCapacity: true)
                publisher.retransmit(sequences, now: now, into: &rtp)
                protect(into: &output)
            }
        }
        return output
    }

    /// Sends what is due, and runs churn, pings and the end.
    public func tick(now: MonotonicTime) -> Output {
        var output = Output()
        output.datagrams += peer.handleTimeout(now: now).datagrams
        guard case .running = phase else { return output }
        if let closeAt {
            if now >= closeAt { end("duration reached", &output) }
            return output
        }
        if let endAt, now >= endAt {
            stopMedia(now: now)
            return output
        }
        if let due = nextPing, now >= due {
            nextPing = now.adding(nanoseconds: Int64(plan.pingIntervalSeconds * 1e9))
            output.messages.append(json(["type": "ping", "stats": false]))
        }
        churn(now: now, &output)
        guard peer.srtp != nil else { return output }
        if !transportUp {
            transportUp = true
            if recorderDrops > 0 { for publisher in publishers where !publisher.stopped && !isWaiting(publisher) { publisher.skip(to: now) } }
            startWaiting(now: now)
        }
        rtp.removeAll(keepingCapacity: true)
        rtcp.removeAll(keepingCapacity: true)
        for publisher in publishers where !publisher.stopped && publisher.startedAt <= now && !isWaiting(publisher) {
            publisher.due(now: now, rtp: &rtp, rtcp: &rtcp)
        }
        protect(into: &output)
        return output
    }

    /// The duration is reached: every publisher stops, as a leaver does, and the session closes
    /// `drainSeconds` later.
    private func stopMedia(now: MonotonicTime) {
        closeAt = now.adding(nanoseconds: Int64(plan.drainSeconds * 1e9))
        stopPublishers()
    }

    private func isWaiting(_ publisher: SyntheticPublisher) -> Bool {
        !waiting.isEmpty && waiting.contains { $0.publisher === publisher }
    }

    /// The earliest instant something is due.
    public var nextDeadline: MonotonicTime? {
        guard case .running = phase else { return peer.nextTimeout }
        if let closeAt { return [closeAt, peer.nextTimeout].compactMap { $0 }.min() }
        var earliest = [endAt, nextPing, nextChurn, nextVanish, nextBurst, peer.nextTimeout].compactMap { $0 }.min()
        if !transportUp && peer.srtp != nil { return MonotonicTime(nanoseconds: 0) }
        // Nothing is sent before the transport is up (a rejoining recorder's publishers wait in `tick`).
        guard peer.srtp != nil else { return earliest }
        for publisher in publishers where !isWaiting(publisher) {
            guard let due = publisher.nextDeadline else { continue }
            if earliest == nil || due < earliest! { earliest = due }
        }
        return earliest
    }

    private func churn(now: MonotonicTime, _ output: inout Output) {
        if let due = nextChurn, now >= due, let interval = plan.churnIntervalSeconds {
            nextChurn = due.adding(nanoseconds: Int64(interval * 1e9))
            if let leaving = publishers.first(where: { !$0.stopped }) {
                leaving.stopped = true
                leftAtUnixMilliseconds[leaving.connectionID] = LoadClock.unixMilliseconds()
                for index in sections.indices where sections[index].connectionID == leaving.connectionID { sections[index].active = false }
                output.messages.append(notify("connection.destroyed", leaving))
            }
            let arriving = makePublisher(startingAt: now)
            add(arriving)
            waiting.append((arriving, 0))
            reOffersSent += 1
            output.messages.append(json(["type": "re-offer", "sdp": offer()]))
            output.messages.append(notify("connection.created", arriving))
        }
        if let due = nextVanish, now >= due, let interval = plan.vanishIntervalSeconds {
            nextVanish = due.adding(nanoseconds: Int64(interval * 1e9))
            if let vanishing = publishers.last(where: { !$0.stopped }) {
                vanishing.stopped = true  // no BYE, no re-offer, no notify: it just goes quiet
                vanished.insert(vanishing.connectionID)
                leftAtUnixMilliseconds[vanishing.connectionID] = LoadClock.unixMilliseconds()
            }
        }
        if let due = nextBurst, now >= due, let interval = plan.burstIntervalSeconds {
            nextBurst = due.adding(nanoseconds: Int64(interval * 1e9))
            let sending = publishers.filter { !$0.stopped && !isWaiting($0) }
            if !sending.isEmpty {
                sending[burstTurn % sending.count].startBurst(now: now, seconds: plan.burstSeconds)
                burstTurn += 1
            }
        }
    }

    private func protect(into output: inout Output) {
        guard let srtp = peer.srtp else { return }
        output.datagrams.reserveCapacity(output.datagrams.count + rtp.count + rtcp.count)
        for packet in rtp { if let sealed = try? srtp.protectRTP(packet) { output.datagrams.append(sealed) } }
        for packet in rtcp { if let sealed = try? srtp.protectRTCP(packet) { output.datagrams.append(sealed) } }
        rtcp.removeAll(keepingCapacity: true)
    }

    private func json(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
