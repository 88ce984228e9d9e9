// libFuzzer target for `recbot verify` on damaged files: libwebm's parser, recbot's reader-rule
// checks and every decoder (libvpx, dav1d, OpenH264, libopus) behind them. No crash, and a
// report always comes back; one that says "ok" has decoded every frame it counted.
// The same bytes are read as a hisui layout for `recbot compose --layout-file` too (a
// layout is a file a user hands over): it is refused with an error or resolved into cells
// that lie on its canvas.
import Composition
import FuzzSupport
import Verification

/// Files a session might have: two senders, one with split parts, one joining late.
let sessionFiles = [
    HisuiSourceFile(name: "archive-A.json", connectionID: "A", start: 0, end: 20_000),
    HisuiSourceFile(name: "split-archive-A_0001.json", connectionID: "A", start: 0, end: 10_000),
    HisuiSourceFile(name: "archive-B.json", connectionID: "B", start: 12_000, end: 30_000),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVerify(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let report = RecordingVerifier.verify(bytes: bytes, label: "fuzz")
    if report.ok { precondition(report.tracks.allSatisfy { $0.decodeErrors == 0 }, "an ok report with decode errors") }
    if let layout = try? HisuiLayout(bytes: bytes), let plan = try? HisuiPlan(layout: layout, files: sessionFiles) {
        for region in plan.regions {
            let frame = region.frame
            precondition(frame.x >= 0 && frame.y >= 0 && frame.x + frame.width <= plan.width && frame.y + frame.height <= plan.height, "a region off the canvas")
            for cell in region.cells { precondition(cell.width >= 0 && cell.height >= 0 && cell.x >= frame.x && cell.y >= frame.y, "a cell outside its region") }
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzVerify) }
}
