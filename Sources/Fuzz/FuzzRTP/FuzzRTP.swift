// libFuzzer target for the RTP header/extension parser and the compound RTCP parser.
import FuzzSupport
import RTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRTP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let packet = try? RTPPacket(parsing: bytes) {
        _ = packet.payload.count
        for element in packet.extensions { _ = packet.headerExtension(element.id) }
    }
    if let packets = try? RTCPPacket.parseCompound(bytes) {
        _ = try? RTCPPacket.parseCompound(packets.flatMap(\.serialized))
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzRTP) }
}
