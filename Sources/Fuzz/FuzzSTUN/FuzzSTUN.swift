// libFuzzer target for the STUN codec (dev/fuzz.sh).
import FuzzSupport
import STUN

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSTUN(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let message = try? STUNMessage(parsing: bytes) else { return 0 }
    _ = message.hasValidFingerprint()
    _ = message.hasValidMessageIntegrity(key: Array("fuzz".utf8))
    _ = (message.username, message.priority, message.iceControlling, message.iceControlled, message.useCandidate)
    _ = (message.xorMappedAddress, message.errorCode, message.unknownComprehensionRequired, message.software)
    // Whatever parses must re-encode into something that parses.
    _ = try? STUNMessage(parsing: message.encoded(integrityKey: [1, 2, 3], fingerprint: true))
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSTUN) }
}
