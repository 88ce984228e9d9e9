// libFuzzer target for the AV1 sequence header parser (its bytes come from the network).
import FuzzSupport
import WebM

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAV1(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let configuration = try? AV1CodecConfiguration(temporalUnit: bytes) { _ = configuration.codecPrivate }
    _ = try? AV1CodecConfiguration(sequenceHeaderPayload: bytes)
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzAV1) }
}
