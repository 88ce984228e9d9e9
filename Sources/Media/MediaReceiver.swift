import RTP
import WireCoding

public struct MediaReceiverConfiguration: Sendable {
    /// Our SSRC in RTCP (a recvonly endpoint sends no RTP, only reports and feedback).
    public var localSSRC: UInt32
    public var cname: String
    public var recovery: RecoveryPolicy
    /// RFC 3550 report interval (randomised to 0.5–1.5 times this).
    public var reportIntervalNanoseconds: Int64
    /// `a=rtcp-rsize` was negotiated (RFC 5506): feedback may go out without a report.
    public var reducedSizeRTCP: Bool
    /// A stream silent this long is forgotten (no more reports or keyframe requests for it).
    public var streamTimeoutNanoseconds: Int64
    public var maximumStreams: Int
    /// Largest RTCP datagram we build (before SRTCP's trailer).
    public var maximumRTCPBytes: Int
    /// Bytes all streams together may hold for reordering and frame assembly.
    public var maximumBufferedBytes = 64 << 20
    /// What all streams together may ask senders to resend (NACKs, keyframe requests).
    public var feedbackBudget = FeedbackBudgetPolicy()
    /// How long a stream's first frames may wait for its sender's SRs, so that a file starts
    /// with audio and video already aligned (0: place them on arrival time at once).
    public var senderReportHoldNanoseconds: Int64 = 2_000_000_000

    public init(localSSRC: UInt32, cname: String, recovery: RecoveryPolicy = RecoveryPolicy(), reportIntervalNanoseconds: Int64 = 1_000_000_000,
                reducedSizeRTCP: Bool = false, streamTimeoutNanoseconds: Int64 = 5_000_000_000, maximumStreams: Int = 4_096,
                maximumRTCPBytes: Int = 1_200) {
        self.localSSRC = localSSRC
        self.cname = cname
        self.recovery = recovery
        self.reportIntervalNanoseconds = reportIntervalNanoseconds
        self.reducedSizeRTCP = reducedSizeRTCP
        self.streamTimeoutNanoseconds = streamTimeoutNanoseconds
        self.maximumStreams = maximumStreams
        self.maximumRTCPBytes = maximumRTCPBytes
    }
}

/// A whole frame for the recorder, with its time on the local monotonic clock.
public struct ReceivedFrame: Sendable, Equatable {
    public var ssrc: UInt32
    public var sender: String
    public var kind: MediaKind
    /// Codec name of the payload type the frame came in (VP8, H264, OPUS…).
    public var codec: String
    public var frame: EncodedFrame
    /// When it was captured, on the local clock: the sender's NTP clock (from SRs) mapped to
    /// ours once known, arrival before that.
    public var mediaTime: MonotonicTime
    /// When it became complete here (the core's clock: what the recorder's waits count from).
    public var completedAt: MonotonicTime
    /// When it reached recbot: when the socket read the packet that completed it (for a frame
    /// a timer completed, the same lag applied). Earlier than `completedAt` when packets wait
    /// behind others (an overloaded core). The sender's clock is judged against it, so a
    /// backlog of seconds does not read as the sender's clock jumping.
    public var receivedAt: MonotonicTime

    public init(ssrc: UInt32, sender: String, kind: MediaKind, codec: String, frame: EncodedFrame, mediaTime: MonotonicTime,
                completedAt: MonotonicTime, receivedAt: MonotonicTime? = nil) {
        (self.ssrc, self.sender, self.kind, self.codec, self.frame) = (ssrc, sender, kind, codec, frame)
        (self.mediaTime, self.completedAt, self.receivedAt) = (mediaTime, completedAt, receivedAt ?? completedAt)
    }
}

public struct MediaOutput: Sendable {
    public var frames: [ReceivedFrame] = []
    /// Serialised RTCP datagrams (compound, or reduced-size feedback), to protect and send.
    public var rtcp: [[UInt8]] = []

    public init() {}
}

/// The media receive path as a sans-IO core: decrypted RTP and RTCP in, with their arrival time;
/// whole frames with their media time out, plus the RTCP to send (receiver reports, NACK,
/// PLI/FIR). Timers are deadlines (`nextTimeout` / `handleTimeout`), never threads.
public final class MediaReceiver {
    public let configuration: MediaReceiverConfiguration
    public var counters: MediaReceiverCounters {
        var result = ownCounters
        result.feedback = budget.counters
        result.sync = timelines.counters(adding: ownCounters.sync)
        return result
    }
    private var ownCounters = MediaReceiverCounters()
    public private(set) var tracks: [ReceiveTrack] = []

    private var router = StreamRouter()
    var streams: [UInt32: ReceiveStream] = [:]
    /// Each sender's clock, and the first frames of its streams waiting for its SRs (their bytes
    /// bounded by half the buffer budget).
    var timelines: SenderTimelines
    /// One stream's output for each packet, reused so its frame array is not allocated per packet.
    private var streamOutput = StreamOutput()
    /// Counters of streams that ended (expired, BYE, section gone), by sender.
    private var retired: [String: ReceiveCounters] = [:]
    /// Senders the last negotiation dropped: their counters stay until the next one (their
    /// recordings are finished in between), then they are forgotten, their totals kept here, so
    /// a long session of senders coming and going holds state only for those present.
    private var departing: Set<String> = []
    private var departedCounters = ReceiveCounters()
    /// Packets taken in on streams that ended, by SSRC (bounded, for diagnostics and tests).
    private var retiredPackets: [UInt32: Int] = [:]
    private var smoothedRoundTrip: Int64?
    /// Bytes all streams hold for reordering and frame assembly (bounded by the budget).
    private var bufferedBytes = 0
    /// How long the latest packet waited between the socket and here (0 when nobody said).
    /// Sender timelines run on read time (`ReceivedFrame.receivedAt`): frames completed by a
    /// timer, SRs and the timelines' deadlines are moved onto it by this much.
    private var receiveLag: Int64 = 0
    private var nextReport: MonotonicTime?
    private var deadline: MonotonicTime?
    private var budget: FeedbackBudget
    /// Where handleTimeout starts among the streams, so a short budget is shared in turn.
    private var timeoutRotation = 0
    private let random: () -> UInt64
    /// Each m-section's own RTCP sender SSRC (`rtcpSender(forMedia:)`).
    private var rtcpSenders: [String: UInt32] = [:]

    public init(configuration: MediaReceiverConfiguration, random: @escaping () -> UInt64) {
        self.configuration = configuration
        self.random = random
        budget = FeedbackBudget(policy: configuration.feedbackBudget)
        timelines = SenderTimelines(maximumHold: configuration.senderReportHoldNanoseconds)
    }

    // MARK: - Negotiation

    /// Applies a (re-)negotiation: streams of sections that went away end here.
    public func update(tracks: [ReceiveTrack]) -> MediaOutput {
        var output = MediaOutput()
        self.tracks = tracks
        router.update(tracks)
        let mids = Set(tracks.map(\.mid))
        for (ssrc, stream) in streams where !mids.contains(stream.mid) { end(ssrc, now: stream.lastArrival, &output) }
        let present = Set(tracks.map(\.senderKey))
        for sender in departing where !present.contains(sender) { forget(sender) }
        departing = Set(retired.keys).union(timelines.senders).subtracting(present)
        return output
    }

    private func forget(_ sender: String) {
        guard !streams.values.contains(where: { $0.sender == sender }) else { return }
        if let counters = retired.removeValue(forKey: sender) { departedCounters = departedCounters + counters }
        timelines.forget(sender)
    }

    /// Senders the receiver keeps state for (present ones, and those that just left).
    var senderStateCount: Int { Set(retired.keys).union(timelines.senders).count }

    /// The senders the negotiation names, with what their recordings hold.
    public var senders: [String: SenderLayout] {
        var result: [String: SenderLayout] = [:]
        for sender in Set(tracks.map(\.senderKey)) { result[sender] = SenderLayout.of(sender, in: tracks) }
        return result
    }

    // MARK: - Input

    /// `readAt`: when the socket read the packet, if it waited before reaching the core.
    public func handle(rtp packet: RTPPacket, readAt: MonotonicTime? = nil, now arrival: MonotonicTime) -> MediaOutput {
        receiveLag = readAt.map { max(0, arrival.nanoseconds - $0.nanoseconds) } ?? 0
        var output = MediaOutput()
        ownCounters.rtpPackets += 1
        if nextReport == nil { scheduleReport(after: arrival) }
        // The common case: a packet of a stream already running, in its codec. Routing would
        // find the same stream by way of its section (a string key and a copy of the track).
        if let stream = streams[packet.ssrc], stream.codec.payloadType == packet.payloadType, !router.isRetransmission(packet.ssrc) {
            budget.received()
            receive(packet, on: stream, isRetransmission: false, arrival: arrival, &output)
            return output
        }
        switch router.route(packet) {
        case .media(let track, let codec):
            guard let stream = stream(for: packet.ssrc, track: track, codec: codec, now: arrival, &output) else { return output }
            budget.received()
            receive(packet, on: stream, isRetransmission: false, arrival: arrival, &output)
        case .retransmission(let primary, _, let codec):
            guard let stream = streams[primary] else {
                ownCounters.unknownRetransmission += 1
                return output
            }
            guard let restored = RetransmissionPacket.restore(packet, payloadType: codec.payloadType, ssrc: primary) else {
                ownCounters.paddingOnlyRetransmissions += 1
                return output
            }
            receive(restored, on: stream, isRetransmission: true, arrival: arrival, &output)
        case .unrouted(let reason):
            switch reason {
            case .unknownStream: ownCounters.unknownStream += 1
            case .unknownPayloadType: ownCounters.unknownPayloadType += 1
            case .unknownRetransmission: ownCounters.unknownRetransmission += 1
            case .tooManyStreams: ownCounters.tooManyStreams += 1
            case .unannouncedStream: ownCounters.unannouncedStream += 1
            }
        }
        return output
    }

    /// `readAt`: when the socket read the compound (RTCP waits behind no media, so about now).
    public func handle(rtcp packets: [RTCPPacket], readAt: MonotonicTime? = nil, now arrival: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        ownCounters.rtcpPackets += 1
        for packet in packets {
            switch packet {
            case .senderReport(let ssrc, let ntp, let rtp, _, _, _):
                ownCounters.sync.senderReports += 1
                guard let stream = streams[ssrc] else { continue }
                // LSR/DLSR echo every SR, believed or not: the sender's round-trip estimate needs them.
                let firstReport = !stream.statistics.hasSenderReport
                stream.senderReport(ntpTimestamp: ntp, arrival: arrival)
                if firstReport { reportSoon(after: arrival) }
                let plausible = timelines.with(stream.sender) {
                    $0.senderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, arrival: readAt ?? arrival, into: &output.frames)
                }
                if !plausible { ownCounters.sync.implausibleSenderReports += 1 }
            case .goodbye(let ssrcs):
                ownCounters.goodbyes += 1
                for ssrc in ssrcs { end(ssrc, now: arrival, &output) }
            default:
                break  // reports about our (non-existent) RTP, feedback for senders: nothing to do
            }
        }
        return output
    }

    /// A frame of `ssrc` was dropped downstream (the recorder's order or backpressure): the
    /// stream waits for a keyframe and asks for one.
    public func frameLostDownstream(ssrc: UInt32, rtpTimestamp: UInt32, now: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        guard let stream = streams[ssrc] else { return output }
        let assembled = stream.frameLostDownstream(rtpTimestamp: rtpTimestamp)
        if assembled.keyframeNeeded, let request = stream.keyframeRequest(localSSRC: rtcpSender(forMedia: stream.ssrc), now: now, budget: &budget) {
            output.rtcp += compounds(feedback: [request], reports: [], now: now)
        }
        return output
    }

    /// A keyframe is wanted on `ssrc` though nothing was lost (the next split part starts at
    /// one): asked for under the same rate limit and feedback budget as any request, and the
    /// stream goes on delivering its frames meanwhile.
    public func requestKeyframe(ssrc: UInt32, now: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        guard let stream = streams[ssrc],
              let request = stream.keyframeRequest(localSSRC: rtcpSender(forMedia: stream.ssrc), now: now, budget: &budget, wanted: true) else { return output }
        output.rtcp += compounds(feedback: [request], reports: [], now: now)
        return output
    }

    // MARK: - Timers

    public var nextTimeout: MonotonicTime? {
        .earliest(.earliest(deadline, nextReport), timelines.nextDeadline.map { MonotonicTime(nanoseconds: $0.nanoseconds &+ receiveLag) })
    }

    /// Places every frame still held for SRs (on arrival time where no SR came): the session
    /// is ending, and nothing received may be lost.
    public func releaseHeldFrames(now: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        timelines.withEachHolding { $0.releaseAll(now: now, into: &output.frames) }
        return output
    }

    public func handleTimeout(now: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        var feedback: [RTCPPacket] = []
        let retry = retryInterval
        deadline = nil
        let readTime = self.readTime(now)
        timelines.withEachHolding { $0.release(now: readTime, into: &output.frames) }
        for (ssrc, stream) in streamsInTurn() {
            // A paused stream's packets are dropped before they get here: it is not judged
            // silent until it has resumed (then its sender has the usual time to be heard).
            if !stream.paused && now.nanoseconds - stream.lastArrival.nanoseconds >= configuration.streamTimeoutNanoseconds {
                ownCounters.streamsExpired += 1
                end(ssrc, now: now, &output)
                continue
            }
            let before = stream.bufferedBytes
            let result = stream.handleTimeout(now: now)
            bufferedBytes += stream.bufferedBytes - before
            collect(result.assembled, from: stream, now: now, &output, feedback: &feedback)
            let lost = stream.dueNacks(now: now, retryInterval: retry, budget: &budget)
            if !lost.isEmpty { feedback += nackPackets(media: stream.ssrc, lost: lost) }
            // NACK goes on; the keyframe is there in case the sender kept no copy.
            if stream.gapOutlastsNacks(now: now), let request = stream.keyframeRequest(localSSRC: rtcpSender(forMedia: stream.ssrc), now: now, budget: &budget) {
                feedback.append(request)
            }
            consider(stream.nextDeadline(retryInterval: retry))
        }
        var reports: [RTCPReportBlock] = []
        if let due = nextReport, now >= due {
            reports = streams.keys.sorted().compactMap { streams[$0]?.reportBlock(now: now) }
            scheduleReport(after: now)
        }
        if !feedback.isEmpty || !reports.isEmpty { output.rtcp += compounds(feedback: feedback, reports: reports, now: now) }
        return output
    }

    // MARK: - Counters

    /// Everything received for `sender`, including streams that already ended.
    public func counters(sender: String) -> ReceiveCounters {
        streams.values.filter { $0.sender == sender }.reduce(retired[sender] ?? ReceiveCounters()) { $0 + $1.currentCounters }
    }

    /// Everything received in the session, by every sender, ended streams included: it only grows.
    public var totalCounters: ReceiveCounters {
        let ended = retired.values.reduce(departedCounters, +)
        return streams.values.reduce(ended) { $0 + $1.currentCounters }
    }

    public var activeStreamCount: Int { streams.count }

    /// Distinct media packets taken in per active SSRC (recovered ones included).
    public var packetsBySSRC: [UInt32: Int] {
        retiredPackets.merging(streams.mapValues { $0.counters.packets }) { $0 + $1 }
    }

    // MARK: - Internals

    private func stream(for ssrc: UInt32, track: ReceiveTrack, codec: ReceiveCodec, now: MonotonicTime,
                        _ output: inout MediaOutput) -> ReceiveStream? {
        if let existing = streams[ssrc] {
            if existing.codec.payloadType != codec.payloadType, !switchCodec(existing, to: codec, now: now, &output) { return nil }
            return existing
        }
        // A learned SSRC that cannot become a stream is not kept, or it would fill the router.
        guard streams.count < configuration.maximumStreams else {
            ownCounters.tooManyStreams += 1
            router.forget(ssrc: ssrc)
            return nil
        }
        guard let depacketizer = Depacketizers.depacketizer(for: codec.name) else {
            ownCounters.unsupportedCodec += 1
            router.forget(ssrc: ssrc)
            return nil
        }
        let stream = ReceiveStream(ssrc: ssrc, track: track, codec: codec, depacketizer: depacketizer, policy: configuration.recovery, now: now)
        streams[ssrc] = stream
        timelines.with(stream.sender) { $0.addStream(ssrc: ssrc, clockRate: codec.clockRate) }
        return stream
    }

    /// A payload-type change on an SSRC: the same codec under another number goes on as it
    /// is; another codec restarts frame assembly (video waits for a keyframe).
    private func switchCodec(_ stream: ReceiveStream, to codec: ReceiveCodec, now: MonotonicTime, _ output: inout MediaOutput) -> Bool {
        guard codec.name != stream.codec.name else {
            stream.renumber(codec)
            return true
        }
        guard let depacketizer = Depacketizers.depacketizer(for: codec.name) else {
            ownCounters.unsupportedCodec += 1
            return false
        }
        var feedback: [RTCPPacket] = []
        let before = stream.bufferedBytes
        let switched = stream.switchCodec(to: codec, depacketizer: depacketizer)
        bufferedBytes += stream.bufferedBytes - before
        collect(switched, from: stream, now: now, &output, feedback: &feedback)
        if !feedback.isEmpty { output.rtcp += compounds(feedback: feedback, reports: [], now: now) }
        return true
    }

    private func receive(_ packet: RTPPacket, on stream: ReceiveStream, isRetransmission: Bool, arrival: MonotonicTime, _ output: inout MediaOutput) {
        let bufferedBefore = stream.bufferedBytes
        // The reused output is moved out while this runs and given back with its storage.
        var result = streamOutput
        streamOutput = StreamOutput()
        defer {
            result.clear()
            streamOutput = result
        }
        stream.receive(packet, isRetransmission: isRetransmission, arrival: arrival, into: &result)
        bufferedBytes += stream.bufferedBytes - bufferedBefore
        if bufferedBytes > configuration.maximumBufferedBytes {
            // Over the receiver-wide budget: this stream lets go of its oldest gap (or its frame).
            let before = stream.bufferedBytes
            stream.shed(&result)
            bufferedBytes += stream.bufferedBytes - before
            ownCounters.budgetSheds += 1
        }
        if let sample = result.roundTripSample { updateRoundTrip(sample) }
        var feedback: [RTCPPacket] = []
        collect(result.assembled, from: stream, now: arrival, &output, feedback: &feedback)
        if result.newlyMissing {
            // NACK a gap as soon as it is seen (RFC 4585 early feedback).
            let lost = stream.dueNacks(now: arrival, retryInterval: retryInterval, budget: &budget)
            if !lost.isEmpty { feedback += nackPackets(media: stream.ssrc, lost: lost) }
        }
        if stream.needsTimer { consider(stream.nextDeadline(retryInterval: retryInterval)) }
        if !feedback.isEmpty { output.rtcp += compounds(feedback: feedback, reports: [], now: arrival) }
    }

    /// Frames get their media time; a keyframe need becomes a (rate-limited) request.
    private func collect(_ assembled: AssemblerOutput, from stream: ReceiveStream, now: MonotonicTime, _ output: inout MediaOutput,
                         feedback: inout [RTCPPacket]) {
        if assembled.keyframeNeeded, let request = stream.keyframeRequest(localSSRC: rtcpSender(forMedia: stream.ssrc), now: now, budget: &budget) {
            feedback.append(request)
        }
        guard !assembled.frames.isEmpty else { return }
        timelines.with(stream.sender) { timeline in
            for frame in assembled.frames {
                // The media time is set as the timeline places the frame (now, or once its sender's SRs can).
                timeline.take(ReceivedFrame(ssrc: stream.ssrc, sender: stream.sender, kind: stream.kind, codec: stream.codec.name,
                                            frame: frame, mediaTime: now, completedAt: now, receivedAt: readTime(now)), into: &output.frames)
            }
        }
        if timelines.heldBytes > configuration.maximumBufferedBytes / 2 {
            timelines.with(stream.sender) { $0.releaseAll(now: now, into: &output.frames) }
        }
    }

    /// `now` on the read-time clock the sender timelines run on (see `receiveLag`).
    private func readTime(_ now: MonotonicTime) -> MonotonicTime { MonotonicTime(nanoseconds: now.nanoseconds - receiveLag) }

    /// The stream ends: what it holds is released first (gaps given up), then it is forgotten.
    private func end(_ ssrc: UInt32, now: MonotonicTime, _ output: inout MediaOutput) {
        guard let stream = streams[ssrc] else { return }
        var feedback: [RTCPPacket] = []  // nobody to ask for a keyframe: the stream is ending
        let before = stream.bufferedBytes
        collect(stream.drainForEnd(), from: stream, now: now, &output, feedback: &feedback)
        bufferedBytes -= before
        streams[ssrc] = nil
        retired[stream.sender] = (retired[stream.sender] ?? ReceiveCounters()) + stream.currentCounters
        if retiredPackets.count < configuration.maximumStreams * 2 { retiredPackets[ssrc, default: 0] += stream.counters.packets }
        router.forget(ssrc: ssrc)
        timelines.with(stream.sender) { $0.removeStream(ssrc: ssrc, now: now, into: &output.frames) }
    }

    private func nackPackets(media: UInt32, lost: [UInt16]) -> [RTCPPacket] {
        // One NACK packet per 200 sequence numbers keeps each well inside the MTU.
        stride(from: 0, to: lost.count, by: 200).map { start in
            .nack(sender: rtcpSender(forMedia: media), media: media, lost: Array(lost[start..<min(lost.count, start + 200)]))
        }
    }

    /// Feedback and report blocks as datagrams (see `FeedbackPacking`).
    func compounds(feedback: [RTCPPacket], reports: [RTCPReportBlock], now: MonotonicTime) -> [[UInt8]] {
        let packing = FeedbackPacking(cname: configuration.cname, reducedSize: configuration.reducedSizeRTCP,
                                      maximumBytes: configuration.maximumRTCPBytes)
        let datagrams = packing.datagrams(feedback: feedback, reports: reports,
                                          block: { self.streams[$0]?.feedbackReportBlock(now: now) },
                                          sender: { self.rtcpSender(forMedia: $0) })
        ownCounters.rtcpDatagramsSent += datagrams.count
        return datagrams
    }

    /// The SSRC a stream's RTCP goes out from: one per m-section, drawn at random the first
    /// time (the answer names none), `localSSRC` for a stream no longer known.
    func rtcpSender(forMedia ssrc: UInt32) -> UInt32 {
        guard let mid = streams[ssrc]?.mid else { return configuration.localSSRC }
        if let known = rtcpSenders[mid] { return known }
        if rtcpSenders.count >= configuration.maximumStreams { rtcpSenders.removeAll() }  // bounded: hostile offers churn mids
        var candidate: UInt32
        repeat { candidate = UInt32(truncatingIfNeeded: random()) } while candidate == 0 || candidate == configuration.localSSRC
            || rtcpSenders.values.contains(candidate)
        rtcpSenders[mid] = candidate
        return candidate
    }

    private var retryInterval: Int64 {
        guard let rtt = smoothedRoundTrip else { return configuration.recovery.defaultRetryIntervalNanoseconds }
        return min(max(rtt * 3 / 2 + 10_000_000, 20_000_000), 250_000_000)
    }

    private func updateRoundTrip(_ sample: Int64) {
        guard sample > 0, sample < 5_000_000_000 else { return }
        smoothedRoundTrip = smoothedRoundTrip.map { ($0 * 7 + sample) / 8 } ?? sample
    }

    private func scheduleReport(after now: MonotonicTime) {
        // RFC 3550 §6.3.5: randomise to 0.5–1.5 times the interval, so receivers do not synchronise.
        let interval = configuration.reportIntervalNanoseconds
        let jitter = Int64(random() % UInt64(max(1, interval)))
        nextReport = now.adding(nanoseconds: interval / 2 + jitter)
    }

    /// A stream's first SR is answered within a few milliseconds, not at the next regular
    /// report: an SFU learns its round-trip time from that echo, and Janus keeps no packets for
    /// retransmission until it knows one (its NACK queue is sized from the RTT), so every loss
    /// before the echo is beyond repair.
    private func reportSoon(after now: MonotonicTime) {
        let soon = now.adding(nanoseconds: Self.firstReportEchoDelayNanoseconds)
        if nextReport.map({ soon < $0 }) ?? true { nextReport = soon }
    }

    static let firstReportEchoDelayNanoseconds: Int64 = 5_000_000

    private func consider(_ candidate: MonotonicTime?) {
        // NACKs held back by the budget are due already: look again at the recheck time, not at once.
        guard let candidate = candidate.map(budget.clamp) else { return }
        if deadline.map({ candidate < $0 }) ?? true { deadline = candidate }
    }

    /// The streams, starting one further each time: when the budget runs short, the streams
    /// first in line get it, and the line moves on.
    private func streamsInTurn() -> [(key: UInt32, value: ReceiveStream)] {
        // A snapshot (ending a stream removes it from the dictionary), made in turn order at
        // once: this runs at every timer.
        let count = streams.count
        guard count > 1 else { return Array(streams) }
        timeoutRotation = (timeoutRotation + 1) % count
        var ordered: [(key: UInt32, value: ReceiveStream)] = []
        ordered.reserveCapacity(count)
        var index = streams.index(streams.startIndex, offsetBy: timeoutRotation)
        for _ in 0..<count {
            ordered.append(streams[index])
            streams.formIndex(after: &index)
            if index == streams.endIndex { index = streams.startIndex }
        }
        return ordered
    }
}

/// RFC 4588 §4: an RTX payload is the original sequence number (OSN) then the original payload.
enum RetransmissionPacket {
    /// The original packet, or nil for a padding-only (probe) packet.
    static func restore(_ packet: RTPPacket, payloadType: UInt8, ssrc: UInt32) -> RTPPacket? {
        let range = packet.payloadRange
        guard range.count > 2 else { return nil }
        var restored = packet
        restored.sequenceNumber = UInt16(packet.bytes[range.lowerBound]) << 8 | UInt16(packet.bytes[range.lowerBound + 1])
        restored.payloadRange = (range.lowerBound + 2)..<range.upperBound
        restored.payloadType = payloadType
        restored.ssrc = ssrc
        return restored
    }
}

/// Which depacketizer handles a codec.
public enum Depacketizers {
    public static func depacketizer(for codecName: String) -> (any Depacketizer)? {
        switch codecName.uppercased() {
        case "VP8": VP8Depacketizer()
        case "VP9": VP9Depacketizer()
        case "AV1": AV1Depacketizer()
        case "H264": H264Depacketizer()
        case "OPUS": OpusDepacketizer()
        default: nil
        }
    }
}

