// libFuzzer target for the SCTP packet/chunk parser and DCEP.
import FuzzSupport
import SCTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSCTP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = try? DCEPMessage(parsing: bytes)
    // Fix the checksum up so the fuzzer reaches the chunk parser, not only the CRC check.
    var packet = bytes
    if packet.count >= 12 {
        packet[8] = 0; packet[9] = 0; packet[10] = 0; packet[11] = 0
        let crc = CRC32c.checksum(packet)
        packet[8] = UInt8(crc & 0xFF); packet[9] = UInt8(crc >> 8 & 0xFF); packet[10] = UInt8(crc >> 16 & 0xFF); packet[11] = UInt8(crc >> 24)
    }
    if let parsed = try? SCTPPacket(parsing: packet) {
        // The oracle: what parses re-serialises into something that parses to the same.
        if (try? SCTPPacket(parsing: parsed.serialized)) != parsed {
            preconditionFailure("SCTP packet does not survive a round trip: \(parsed)")
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSCTP) }
}
