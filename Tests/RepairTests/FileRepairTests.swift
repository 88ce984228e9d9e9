import Foundation
import Testing
import WebMReader
@testable import Repair
import WireCoding

/// `recbot repair` on files whose numbers were crafted or corrupted (issue 28, finding 5): a
/// value no Int64 holds is reported and skipped, never a trap that stops every later repair.
struct FileRepairTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fuzz/corpus/repair").standardized

    /// A recording cut short (as a kill leaves it) whose first cluster's Timestamp is rewritten
    /// to 2^63-1 ms: its frames cannot be placed in nanoseconds; the later clusters can.
    static func fileWithHugeClusterTimestamp() throws -> Data {
        var bytes = [UInt8](try Data(contentsOf: corpus.appendingPathComponent("recbot-cut.webm")))
        let cluster = try #require(bytes.indices.first { bytes[$0...].starts(with: [0x1F, 0x43, 0xB6, 0x75]) })
        // Cluster ID, a 3-byte size (0x20 marker), then Timestamp (0xE7) with a 1-byte value.
        #expect(bytes[cluster + 4] == 0x20 && bytes[cluster + 7] == 0xE7 && bytes[cluster + 8] == 0x81)
        let size = (Int(bytes[cluster + 5]) << 8 | Int(bytes[cluster + 6])) + 7
        bytes[cluster + 5] = UInt8(size >> 8)
        bytes[cluster + 6] = UInt8(size & 0xFF)
        bytes.replaceSubrange((cluster + 7)...(cluster + 9), with: [0xE7, 0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        return Data(bytes)
    }

    @Test func aClusterTimestampBeyondNanosecondsIsSkippedNotATrap() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-repair-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("archive-HUGETIMESTAMP.webm").path
        try Self.fileWithHugeClusterTimestamp().write(to: URL(fileURLWithPath: path))
        let repaired = try FileRepair.repair(path: path, random: SeededRandom(seed: 1))
        #expect(repaired.framesOutOfRange > 0, "\(repaired)")
        #expect(WebMReader.parse(path: path).isComplete, "the repaired file reads to its end")
    }

    @Test func aFileTimeNoInt64HoldsIsNoTime() {
        #expect(SessionRepair.unixMilliseconds(Date(timeIntervalSince1970: 1_795_000_000.25)) == 1_795_000_000_250)
        #expect(SessionRepair.unixMilliseconds(Date(timeIntervalSince1970: 9_223_372_036_854_776)) == nil)
        #expect(SessionRepair.unixMilliseconds(Date(timeIntervalSince1970: -9_223_372_036_854_776)) == nil)
    }
}
