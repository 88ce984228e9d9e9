// libFuzzer target for AV1 from the network: the RTP depacketizer (the input split into
// payloads, a length byte before each), sequence and frame headers, and the av1C builder.
// No crash, and whatever the depacketizer emits is a well-formed low-overhead temporal unit.
import Bitstreams
import FuzzSupport
import Media
import WebM

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAV1(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    fuzzDepacketizer(splitPayloads(bytes))
    if let configuration = try? AV1CodecConfiguration(temporalUnit: bytes) {
        _ = configuration.codecPrivate
        // The same bytes read as a frame header under the sequence header they might carry.
        _ = try? AV1FrameHeader(payload: bytes[...], obu: AV1OBUHeader(type: 6, hasSizeField: false), sequence: configuration.sequence)
    }
    _ = try? AV1CodecConfiguration(sequenceHeaderPayload: bytes)
    return 0
}

func fuzzDepacketizer(_ payloads: [ArraySlice<UInt8>]) {
    let depacketizer = AV1Depacketizer()
    _ = payloads.first.map { (depacketizer.isFrameStart($0), depacketizer.isKeyframeStart($0)) }
    guard let frame = try? depacketizer.assemble(payloads, timestamp: 0) else { return }
    guard let obus = try? AV1OBU.split(frame.data[...]) else { preconditionFailure("an emitted temporal unit does not parse") }
    precondition(!obus.isEmpty && obus.allSatisfy(\.header.hasSizeField), "an emitted OBU lacks its size field")
    precondition(!obus.contains { [2, 8, 15].contains($0.header.type) }, "a dropped OBU type was emitted")
    if frame.isKeyframe { precondition((try? AV1CodecConfiguration(temporalUnit: frame.data)) != nil, "a keyframe without a usable sequence header") }
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzAV1) }
}
