// libFuzzer target for the VP9 depacketizer (RFC 9628): the input is split into payloads (a
// length byte before each), which are parsed as descriptors and assembled as one picture; the
// result's superframe index and uncompressed header are read back. No crash, and a superframe
// we build always unpacks to the layer frames it was made of.
import Bitstreams
import FuzzSupport
import Media

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVP9(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    let payloads = splitPayloads(bytes)
    for payload in payloads { _ = try? VP9PayloadDescriptor.parse(payload) }
    let depacketizer = VP9Depacketizer()
    _ = payloads.first.map { (depacketizer.isFrameStart($0), depacketizer.isKeyframeStart($0)) }
    if let frame = try? depacketizer.assemble(payloads, timestamp: 0) {
        _ = VP9FrameHeader(frame.data)
        // Several layer frames (E flags) mean we built the superframe: its index must give them back.
        let layers = payloads.compactMap { try? VP9PayloadDescriptor.parse($0) }.filter(\.endOfFrame).count
        if layers > 1 {
            let unpacked = VP9Superframe.unpack(frame.data)
            precondition(unpacked?.count == layers, "a superframe we built does not unpack")
            precondition(unpacked.map(VP9Superframe.pack) == frame.data, "a superframe we built does not round-trip")
        }
    }
    _ = VP9Superframe.unpack(bytes)
    _ = VP9FrameHeader(bytes)
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzVP9) }
}
