// libFuzzer target for the media receive core: the input is a script of RTP packets (media
// and RTX, any SSRC, sequence number, timestamp and payload), sender reports, BYEs, clock
// steps and downstream drops. Checked: no crash, every RTCP datagram fits the MTU and parses
// back, and no stream's media time runs backwards.
import FuzzSupport
import Media
import RTP
import WireCoding

struct Script {
    let bytes: [UInt8]
    var offset = 0
    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func uint16() -> UInt16? { guard let a = byte(), let b = byte() else { return nil }; return UInt16(a) << 8 | UInt16(b) }
    mutating func uint32() -> UInt32? { guard let a = uint16(), let b = uint16() else { return nil }; return UInt32(a) << 16 | UInt32(b) }
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

let sender = "FUZZSENDER0000000000000000"
let feedback = FeedbackSupport(nack: true, pictureLossIndication: true, fullIntraRequest: true)
let tracks = [
    ReceiveTrack(mid: "0", kind: .video, sender: sender,
                 codecs: [ReceiveCodec(payloadType: 96, name: "VP8", clockRate: 90_000, rtxPayloadType: 97, feedback: feedback),
                          ReceiveCodec(payloadType: 102, name: "H264", clockRate: 90_000, rtxPayloadType: 103, feedback: feedback)],
                 ssrcs: [1, 2], rtxSSRCs: [1: 2], midExtensionID: 1),
    ReceiveTrack(mid: "1", kind: .audio, sender: sender,
                 codecs: [ReceiveCodec(payloadType: 111, name: "OPUS", clockRate: 48_000, channels: 2, feedback: FeedbackSupport(nack: true))],
                 ssrcs: [3], midExtensionID: 1),
]
let ssrcs: [UInt32] = [1, 2, 3, 4, 5, 0xFFFF_FFFF]
let payloadTypes: [UInt8] = [96, 97, 102, 103, 111, 0]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMediaReceiver(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var script = Script(bytes: data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    var generator = SplitMix64(seed: 1)
    let receiver = MediaReceiver(configuration: MediaReceiverConfiguration(localSSRC: 9, cname: "fuzz", maximumStreams: 4),
                                 random: { generator.next() })
    _ = receiver.update(tracks: tracks)
    var now: Int64 = 1_000_000_000
    func check(_ output: MediaOutput) {
        for datagram in output.rtcp {
            precondition(datagram.count <= 1_200, "RTCP datagram of \(datagram.count) bytes")
            precondition((try? RTCPPacket.parseCompound(datagram)) != nil, "our RTCP does not parse back")
        }
        for frame in output.frames {
            // A stream keeps its sender's RTP clock, but never lands far from when it arrived.
            precondition((frame.mediaTime.nanoseconds &- frame.completedAt.nanoseconds).magnitude <= 10_000_000_000,
                         "media time \(frame.mediaTime) far from arrival \(frame.completedAt)")
        }
    }
    while let operation = script.byte() {
        switch operation % 6 {
        case 0, 1:
            guard let selector = script.byte(), let sequence = script.uint16(), let timestamp = script.uint32(), let length = script.byte() else { break }
            var builder = RTPPacketBuilder(payloadType: payloadTypes[Int(selector >> 4) % payloadTypes.count], sequenceNumber: sequence,
                                           timestamp: timestamp, ssrc: ssrcs[Int(selector & 0x0F) % ssrcs.count])
            builder.marker = operation & 0x80 != 0
            if operation & 0x40 != 0 { builder.extensions = [(1, [0x30 + (selector & 1)])] }  // MID "0" or "1"
            guard let packet = try? RTPPacket(parsing: builder.build(payload: script.take(Int(length % 64)))) else { break }
            check(receiver.handle(rtp: packet, now: MonotonicTime(nanoseconds: now)))
        case 2:
            guard let step = script.uint16() else { break }
            now += Int64(step) * 1_000_000
            var rounds = 0
            while let due = receiver.nextTimeout, due.nanoseconds <= now {
                check(receiver.handleTimeout(now: MonotonicTime(nanoseconds: now)))
                rounds += 1
                precondition(rounds < 1_000, "a deadline that handling does not move: timer livelock")
            }
        case 3:
            guard let selector = script.byte(), let high = script.uint32(), let low = script.uint32(), let rtp = script.uint32() else { break }
            let report = RTCPPacket.senderReport(ssrc: ssrcs[Int(selector) % ssrcs.count], ntpTimestamp: UInt64(high) << 32 | UInt64(low),
                                                 rtpTimestamp: rtp, packetCount: 0, octetCount: 0, reports: [])
            check(receiver.handle(rtcp: [report], now: MonotonicTime(nanoseconds: now)))
        case 4:
            guard let selector = script.byte() else { break }
            check(receiver.handle(rtcp: [.goodbye(ssrcs: [ssrcs[Int(selector) % ssrcs.count]])], now: MonotonicTime(nanoseconds: now)))
        default:
            guard let selector = script.byte(), let rtp = script.uint32() else { break }
            check(receiver.frameLostDownstream(ssrc: ssrcs[Int(selector) % ssrcs.count], rtpTimestamp: rtp, now: MonotonicTime(nanoseconds: now)))
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzMediaReceiver) }
}
