// libFuzzer target for `recbot verify` on damaged files: libwebm's parser, recbot's reader-rule
// checks and every decoder (libvpx, dav1d, OpenH264, libopus) behind them. No crash, and a
// report always comes back; one that says "ok" has decoded every frame it counted.
import FuzzSupport
import Verification

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVerify(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let report = RecordingVerifier.verify(bytes: bytes, label: "fuzz")
    if report.ok { precondition(report.tracks.allSatisfy { $0.decodeErrors == 0 }, "an ok report with decode errors") }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzVerify) }
}
