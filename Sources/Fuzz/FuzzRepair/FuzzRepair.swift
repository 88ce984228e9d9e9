// libFuzzer target for `recbot repair` on damaged files: the input is written to a file and
// repaired (libwebm reads it, recbot's muxer rewrites it). No crash; a repaired file is a
// complete WebM that libwebm reads to its end.
import FuzzSupport
import Foundation
import Repair
import WebMReader
import WireCoding

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-repair-\(getpid())").path

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRepair(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/input.webm"
    try? FileManager.default.removeItem(atPath: path)
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    guard FileManager.default.createFile(atPath: path, contents: bytes) else { return 0 }
    if let repaired = try? FileRepair.repair(path: path, random: SeededRandom(seed: 1)), !repaired.wasComplete {
        precondition(WebMReader.parse(path: path).isComplete, "a repaired file does not read to its end")
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzRepair) }
}
