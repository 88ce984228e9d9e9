// libFuzzer target for recbot's own SRTP unprotect (AES-GCM): raw bytes as SRTP and SRTCP,
// and packets libsrtp protected from fuzzer-chosen headers, replayed, reordered and altered,
// so the paths behind authentication (rollover estimate, replay window, stream limit) run too.
import FuzzSupport
import Keying
import SRTP

private let keys = SRTPKeyingMaterial(profile: .aeadAES128GCM, clientKey: Array(0..<16), clientSalt: Array(16..<28),
                                      serverKey: Array(32..<48), serverSalt: Array(48..<60))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSRTP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, let receiver = try? SRTPSession(keys: keys), let sender = try? SRTPSession(peerOf: keys) else { return 0 }
    var input = UnsafeBufferPointer(start: data, count: size)[...]
    var sent: [[UInt8]] = []
    while let operation = input.popFirst() {
        switch operation % 5 {
        case 0:
            // Raw bytes, both ways.
            let length = Int(input.popFirst() ?? 0)
            var raw = Array(input.prefix(length))
            input = input.dropFirst(length)
            var rtcp = raw
            _ = try? receiver.unprotectRTP(&raw)
            _ = try? receiver.unprotectRTCP(&rtcp)
        case 1, 2:
            // A packet libsrtp protects from the next bytes; it must open to what was sent.
            let header = Array(input.prefix(6))
            input = input.dropFirst(6)
            guard header.count == 6 else { return 0 }
            var plain: [UInt8] = [0x80 | header[0] & 0x13, 96, header[1], header[2], 0, 0, 0, 1, 0, 0, 0, header[3] % 8]
            plain += [UInt8](repeating: 0xAA, count: 4 * Int(header[0] & 0x03))
            if header[0] & 0x10 != 0 { plain += [0xBE, 0xDE, 0, 1, 0x10, 1, 0, 0] }
            plain += [UInt8](repeating: header[4], count: Int(header[5]))
            guard let protected = try? sender.protectRTP(plain) else { continue }
            sent.append(protected)
            if sent.count > 64 { sent.removeFirst() }
            var packet = protected
            if (try? receiver.unprotectRTP(&packet)) != nil && packet != plain { fatalError("opened to other bytes than were sent") }
        case 3:
            // An earlier packet again (a replay), or altered at a chosen byte.
            guard !sent.isEmpty, let pick = input.popFirst(), let change = input.popFirst() else { return 0 }
            var packet = sent[Int(pick) % sent.count]
            if change != 0 { packet[Int(change) % packet.count] ^= change }
            _ = try? receiver.unprotectRTP(&packet)
        default:
            // SRTCP from the publisher, opened by recbot.
            let length = Int(input.popFirst() ?? 0) % 64
            let report: [UInt8] = [0x80, 200, 0, UInt8(length / 4 + 1), 0, 0, 0, 7] + [UInt8](repeating: 1, count: length / 4 * 4)
            guard var packet = try? sender.protectRTCP(report) else { continue }
            if let change = input.popFirst(), change != 0 { packet[Int(change) % packet.count] ^= change }
            _ = try? receiver.unprotectRTCP(&packet)
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSRTP) }
}
