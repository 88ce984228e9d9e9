// libFuzzer target for SCTP reassembly and stream resets: fuzz bytes become a sequence of
// DATA, FORWARD-TSN and RE-CONFIG chunks (TSNs near the window, streams, sequences, B/E/U
// flags, reset requests and answers) and timer expiries, fed to an established association.
// It must never crash, and never deliver more messages than it got chunks.
import FuzzSupport
import SCTP
import WireCoding

private func establishedAssociation() -> (SCTPAssociation, UInt32, UInt32) {
    var generator = SplitMix64(seed: 11)
    let association = SCTPAssociation(maximumMessageSize: 4_096, random: { generator.next() })
    let initPacket = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiation(SCTPInit(
        initiateTag: 0xABCD, advertisedReceiverWindow: 65_536, outboundStreams: 16, inboundStreams: 16, initialTSN: 1_000))]).serialized
    guard let reply = association.handle(packet: initPacket, now: .milliseconds(0)).packets.first,
          let ack = try? SCTPPacket(parsing: reply), case .initiationAck(let initAck) = ack.chunks.first, let cookie = initAck.stateCookie
    else { preconditionFailure("association setup failed") }
    let echo = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: initAck.initiateTag, chunks: [.cookieEcho(cookie: cookie)])
    _ = association.handle(packet: echo.serialized, now: .milliseconds(1))
    return (association, initAck.initiateTag, 1_000)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSCTPReassembly(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let (association, tag, firstTSN) = establishedAssociation()
    var reader = ByteReader(bytes)
    var chunks = 0
    var delivered = 0
    var now = MonotonicTime.milliseconds(2)
    while let control = reader.readUInt8(), let tsnOffset = reader.readUInt8(), let stream = reader.readUInt8(),
          let sequence = reader.readUInt8(), let length = reader.readUInt8() {
        chunks += 1
        let chunk: SCTPChunk
        switch control & 0xC0 {
        case 0xC0:
            chunk = .forwardTSN(newCumulativeTSN: firstTSN &+ UInt32(tsnOffset) &- 8, streams: [(UInt16(stream & 3), UInt16(sequence & 15))])
        case 0x80:
            chunk = control & 0x20 == 0
                ? .reconfig([.outgoingReset(requestSequence: 1_000 &+ UInt32(sequence & 7), responseSequence: 0,
                                            lastTSN: firstTSN &+ UInt32(tsnOffset) &- 8, streams: stream & 4 == 0 ? [UInt16(stream & 3)] : [])])
                : .reconfig([.response(responseSequence: UInt32(truncatingIfNeeded: association.nextTimeout?.nanoseconds ?? 0) &+ UInt32(sequence),
                                       result: UInt32(length & 7))])
        case 0x40:
            now = now.adding(milliseconds: Int64(tsnOffset) * 100)
            delivered += association.handleTimeout(now: now).events.filter { if case .message = $0 { true } else { false } }.count
            continue
        default:
            let payload = reader.readBytes(min(Int(length), reader.remaining)) ?? []
            chunk = .data(SCTPData(tsn: firstTSN &+ UInt32(tsnOffset) &- 8, streamID: UInt16(stream & 3), streamSequence: UInt16(sequence & 15),
                                   payloadProtocol: 51, unordered: control & 4 != 0, beginning: control & 2 != 0, ending: control & 1 != 0,
                                   userData: payload.isEmpty ? [0] : payload))
        }
        let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: tag, chunks: [chunk]).serialized
        delivered += association.handle(packet: packet, now: now).events.filter { if case .message = $0 { true } else { false } }.count
    }
    if delivered > chunks { preconditionFailure("\(delivered) messages from \(chunks) chunks") }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSCTPReassembly) }
}
