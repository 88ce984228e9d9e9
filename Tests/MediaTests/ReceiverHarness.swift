import CodecBindings
import RTP
import WireCoding
@testable import Media

/// Seeded, so every simulated network run is repeatable.
typealias SeededRandom = SplitMix64

enum Fixtures {
    static let sender = "SENDER0000000000000000000A"
    static var nackAndPLI: FeedbackSupport { FeedbackSupport(nack: true, pictureLossIndication: true, fullIntraRequest: true) }

    static func videoTrack(codec: String = "VP8", payloadType: UInt8 = 96, rtx: UInt8? = 97, feedback: FeedbackSupport = nackAndPLI,
                           ssrcs: [UInt32] = [1], rtxSSRCs: [UInt32: UInt32] = [1: 2], mid: String = "0") -> ReceiveTrack {
        ReceiveTrack(mid: mid, kind: .video, sender: sender,
                     codecs: [ReceiveCodec(payloadType: payloadType, name: codec, clockRate: 90_000, rtxPayloadType: rtx, feedback: feedback)],
                     ssrcs: ssrcs + rtxSSRCs.values, rtxSSRCs: rtxSSRCs, midExtensionID: 1)
    }

    static func audioTrack(ssrc: UInt32 = 3, feedback: FeedbackSupport = FeedbackSupport(nack: true), mid: String = "1") -> ReceiveTrack {
        ReceiveTrack(mid: mid, kind: .audio, sender: sender,
                     codecs: [ReceiveCodec(payloadType: 111, name: "OPUS", clockRate: 48_000, channels: 2, feedback: feedback)],
                     ssrcs: [ssrc], midExtensionID: 1)
    }

    /// Frames come out as they complete unless `senderReportHold` is set (then a stream's first
    /// frames wait for SRs, as in a real session).
    static func receiver(_ tracks: [ReceiveTrack], recovery: RecoveryPolicy = RecoveryPolicy(), reducedSize: Bool = false,
                         maximumStreams: Int = 512, senderReportHold: Int64 = 0) -> MediaReceiver {
        var random = SeededRandom(seed: 99)
        var configuration = MediaReceiverConfiguration(localSSRC: 0xABCD, cname: "recbot-test", recovery: recovery,
                                                       reducedSizeRTCP: reducedSize, maximumStreams: maximumStreams)
        configuration.senderReportHoldNanoseconds = senderReportHold
        let receiver = MediaReceiver(configuration: configuration, random: { random.next() })
        _ = receiver.update(tracks: tracks)
        return receiver
    }
}

/// Drives a receiver by hand: packets at given times, timers run up to a time, outputs kept.
final class Harness {
    let receiver: MediaReceiver
    private(set) var frames: [ReceivedFrame] = []
    private(set) var feedback: [RTCPPacket] = []
    private(set) var datagrams: [[UInt8]] = []
    private(set) var now = MonotonicTime.milliseconds(1_000)

    init(_ receiver: MediaReceiver) { self.receiver = receiver }

    @discardableResult
    func receive(_ packet: RTPPacket, at time: MonotonicTime? = nil) -> [ReceivedFrame] {
        if let time { advance(to: time) }
        return absorb(receiver.handle(rtp: packet, now: now))
    }

    func receive(rtcp: [RTCPPacket], at time: MonotonicTime? = nil) {
        if let time { advance(to: time) }
        absorb(receiver.handle(rtcp: rtcp, now: now))
    }

    /// Runs every timer due up to `time`.
    func advance(to time: MonotonicTime) {
        while let due = receiver.nextTimeout, due <= time {
            now = max(now, due)
            absorb(receiver.handleTimeout(now: now))
        }
        now = max(now, time)
    }

    @discardableResult
    private func absorb(_ output: MediaOutput) -> [ReceivedFrame] {
        frames += output.frames
        datagrams += output.rtcp
        for datagram in output.rtcp { feedback += (try? RTCPPacket.parseCompound(datagram)) ?? [] }
        return output.frames
    }

    var nacked: [UInt16] {
        feedback.flatMap { packet -> [UInt16] in
            guard case .nack(_, _, let lost) = packet else { return [] }
            return lost
        }
    }
    var pictureLossIndications: Int {
        feedback.filter { packet in
            guard case .pictureLossIndication = packet else { return false }
            return true
        }.count
    }
    var fullIntraRequests: Int {
        feedback.filter { packet in
            guard case .fullIntraRequest = packet else { return false }
            return true
        }.count
    }
    var receiverReports: [RTCPReportBlock] {
        feedback.flatMap { packet -> [RTCPReportBlock] in
            guard case .receiverReport(_, let blocks) = packet else { return [] }
            return blocks
        }
    }
}

/// A publisher with a live VP8 encoder and an RTP history: it answers NACK with RTX on its own
/// SSRC (RFC 4588) and PLI/FIR with a keyframe, as browsers and aiortc do.
final class SimulatedPublisher {
    let encoder: VPXEncoder
    let width: Int, height: Int
    let ssrc: UInt32, rtxSSRC: UInt32?
    let maximumPayload: Int
    private(set) var frameIndex = 0
    private(set) var sequence: UInt16
    private var rtxSequence: UInt16 = 500
    private var history: [UInt16: [UInt8]] = [:]
    private var forceKeyframe = false
    private(set) var keyframeRequests = 0
    private(set) var retransmissions = 0
    var midExtension: String?
    /// Video orientation bytes (extension id 4) on the last packet of these frames, as libwebrtc tags them.
    var orientation: [Int: UInt8] = [:]

    init(width: Int = 160, height: Int = 120, ssrc: UInt32 = 1, rtxSSRC: UInt32? = 2, firstSequence: UInt16 = 65_000,
         maximumPayload: Int = 120, keyframeInterval: Int = 3_000) throws {
        encoder = try VPXEncoder(codec: .vp8, width: width, height: height, framesPerSecond: 30, bitrateKbps: 300, keyframeInterval: keyframeInterval)
        self.width = width
        self.height = height
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.sequence = firstSequence
        self.maximumPayload = maximumPayload
    }

    /// The next frame's packets (30 fps), and whether it is a keyframe.
    func nextFrame() throws -> (packets: [[UInt8]], isKeyframe: Bool) {
        let encoded = try encoder.encode(.testPattern(width: width, height: height, frame: frameIndex), pts: Int64(frameIndex), forceKeyframe: forceKeyframe)
        forceKeyframe = false
        defer { frameIndex += 1 }
        var packets: [[UInt8]] = []
        var isKeyframe = false
        for frame in encoded {
            isKeyframe = isKeyframe || frame.isKeyframe
            var offset = 0
            while offset < frame.data.count {
                let chunk = Array(frame.data[offset..<min(frame.data.count, offset + maximumPayload)])
                let descriptor: [UInt8] = [0x80 | (offset == 0 ? 0x10 : 0), 0x80, 0x80 | UInt8(frameIndex >> 8 & 0x7F), UInt8(frameIndex & 0xFF)]
                var builder = RTPPacketBuilder(payloadType: 96, sequenceNumber: sequence, timestamp: UInt32(truncatingIfNeeded: 1_000 + frameIndex * 3_000), ssrc: ssrc)
                if let midExtension { builder.extensions = [(1, Array(midExtension.utf8))] }
                offset += chunk.count
                builder.marker = offset >= frame.data.count
                if builder.marker, let tag = orientation[frameIndex] { builder.extensions.append((4, [tag])) }
                let bytes = builder.build(payload: descriptor + chunk)
                history[sequence] = bytes
                history[sequence &- 1_024] = nil
                packets.append(bytes)
                sequence &+= 1
            }
        }
        return (packets, isKeyframe)
    }

    /// Uses up a sequence number (another packet, e.g. padding, was sent under it).
    func skipSequenceNumber() throws -> UInt16 {
        defer { sequence &+= 1 }
        return sequence
    }

    /// Retransmissions for NACKs; PLI/FIR makes the next frame a keyframe.
    func answer(_ packets: [RTCPPacket]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for packet in packets {
            switch packet {
            case .nack(_, let media, let lost) where media == ssrc:
                for missing in lost {
                    guard let original = history[missing], let parsed = try? RTPPacket(parsing: original) else { continue }
                    retransmissions += 1
                    guard let rtxSSRC else { out.append(original); continue }
                    var builder = RTPPacketBuilder(payloadType: 97, sequenceNumber: rtxSequence, timestamp: parsed.timestamp, ssrc: rtxSSRC)
                    if let midExtension { builder.extensions = [(1, Array(midExtension.utf8))] }
                    builder.marker = parsed.marker
                    rtxSequence &+= 1
                    out.append(builder.build(payload: [UInt8(missing >> 8), UInt8(missing & 0xFF)] + Array(parsed.payload)))
                }
            case .pictureLossIndication(_, let media) where media == ssrc, .fullIntraRequest(_, let media, _) where media == ssrc:
                keyframeRequests += 1
                forceKeyframe = true
            default:
                break
            }
        }
        return out
    }
}

/// A lossy path with a fixed one-way delay between a simulated publisher and a receiver.
struct LossyNetwork {
    var loss: Double
    var oneWayDelay: Int64 = 20_000_000
    /// Each packet (and each answer) is late by a further 0 up to this, so the path reorders.
    var jitter: Int64 = 0
    var random: SeededRandom

    struct Result {
        var framesSent = 0
        var frames: [ReceivedFrame] = []
        var harness: Harness
        var publisher: SimulatedPublisher
    }

    /// `seconds` of 30 fps video through the path; NACKs travel back over the same loss.
    mutating func run(seconds: Int, receiver: MediaReceiver, publisher: SimulatedPublisher) throws -> Result {
        let harness = Harness(receiver)
        var inFlight: [(at: Int64, bytes: [UInt8])] = []  // towards the receiver
        var feedbackSeen = 0
        var framesSent = 0
        let start = harness.now.nanoseconds
        let frameCount = seconds * 30
        var step: Int64 = 0
        while step < Int64(frameCount) * 33_333_333 + 2_000_000_000 {
            let now = start + step
            if step % 33_333_333 < 1_000_000, framesSent < frameCount {
                for bytes in try publisher.nextFrame().packets where !random.chance(loss) { inFlight.append((now + oneWayDelay + lateness(), bytes)) }
                framesSent += 1
            }
            // Deliver what has arrived, in arrival order.
            inFlight.sort { $0.at < $1.at }
            while let first = inFlight.first, first.at <= now {
                inFlight.removeFirst()
                harness.receive(try RTPPacket(parsing: first.bytes), at: MonotonicTime(nanoseconds: first.at))
            }
            harness.advance(to: MonotonicTime(nanoseconds: now))
            // Feedback goes back (it may be lost too), and the answers come forward.
            let newDatagrams = harness.datagrams.dropFirst(feedbackSeen)
            feedbackSeen = harness.datagrams.count
            for datagram in newDatagrams where !random.chance(loss) {
                for bytes in publisher.answer((try? RTCPPacket.parseCompound(datagram)) ?? []) where !random.chance(loss) {
                    inFlight.append((now + 2 * oneWayDelay + lateness(), bytes))
                }
            }
            step += 1_000_000
        }
        return Result(framesSent: framesSent, frames: harness.frames, harness: harness, publisher: publisher)
    }

    private mutating func lateness() -> Int64 { jitter > 0 ? Int64(random.next() % UInt64(jitter)) : 0 }
}
