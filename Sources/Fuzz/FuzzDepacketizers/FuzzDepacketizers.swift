// libFuzzer target for the VP8, H.264 (with its SPS reader) and Opus depacketizers: the input
// is split into payloads (a length byte before each) and assembled as one frame by each.
// No crash; a frame that comes out is never empty, and an H.264 frame is Annex-B.
import Bitstreams
import FuzzSupport
import Media

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDepacketizers(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    let payloads = splitPayloads(bytes)
    let depacketizers: [any Depacketizer] = [VP8Depacketizer(), H264Depacketizer(), OpusDepacketizer()]
    for depacketizer in depacketizers {
        _ = payloads.first.map { (depacketizer.isFrameStart($0), depacketizer.isKeyframeStart($0)) }
        guard let frame = try? depacketizer.assemble(payloads, timestamp: 0) else { continue }
        precondition(!frame.data.isEmpty, "an empty frame came out")
        if depacketizer is H264Depacketizer { precondition(frame.data.starts(with: [0, 0, 0, 1]), "H.264 frame not Annex-B") }
    }
    _ = H264SPS.pictureSize(bytes)
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzDepacketizers) }
}
