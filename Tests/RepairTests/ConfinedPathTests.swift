import Archive
import DiskLayout
import Foundation
import Recorder
import Testing
import WebM
@testable import Repair
import WireCoding

/// A shared catalog names the files repair rewrites, renames and deletes: a row naming anything
/// but its own sender's file in its own session's directory is refused, and nothing is touched
/// (issue 28, finding 10).
struct ConfinedPathTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-confined-\(UUID())").path
    let session = "01JD0000000000000000000042"

    @Test(arguments: [
        "../outside.webm", "/etc/archive-S1.webm", "recordings/01JD0000000000000000000042/../../outside.webm",
        "recordings/01JD0000000000000000000042/archive-OTHER.webm", "recordings/01JD0000000000000000000099/archive-S1.webm",
        "recordings/01JD0000000000000000000042/report-01JD0000000000000000000042.json",
    ])
    func aRowNamingAnotherFileIsRefused(_ path: String) {
        let directory = DataDirectory(path: root)
        #expect(directory.recordingFile(catalogPath: path, sessionID: session, connectionID: "S1") == nil)
    }

    @Test func theRowsOwnFileIsItsPath() {
        let directory = DataDirectory(path: root)
        let expected = root + "/recordings/\(session)/archive-S1.webm"
        #expect(directory.recordingFile(catalogPath: "recordings/\(session)/archive-S1.webm", sessionID: session, connectionID: "S1") == expected)
        #expect(directory.recordingFile(catalogPath: expected, sessionID: session, connectionID: "S1") == expected, "the oldest rows are absolute")
        #expect(directory.recordingFile(catalogPath: "recordings/\(session)/split-archive-S1_0002.webm", sessionID: session, connectionID: "S1") != nil)
        #expect(directory.recordingFile(catalogPath: "recordings/../x/archive-S1.webm", sessionID: "../x", connectionID: "S1") == nil)
        #expect(directory.recordingFile(catalogPath: "recordings/\(session)/archive-..webm", sessionID: session, connectionID: ".") == nil)
    }

    @Test func repairTouchesNoFileOutsideTheSessionsOwn() throws {
        try FileManager.default.createDirectory(atPath: root + "/recordings/\(session)", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outside = root + "/precious.webm"
        let precious = Data("not a recording".utf8)
        try precious.write(to: URL(fileURLWithPath: outside))
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: session, channelID: "c", startedAt: 1_000, hostname: "here"))
        try catalog.insertRecording(RecordingRecord(sessionID: session, connectionID: "S1", path: "recordings/\(session)/../../precious.webm",
                                                    videoCodec: "VP8", audioCodec: nil, startedAt: 1_000))
        let repair = SessionRepair(catalog: catalog, dataDirectory: DataDirectory(path: root), random: SeededRandom(seed: 1), hostname: "here")
        let outcome = try repair.repair(try #require(try catalog.session(id: session)), force: true)
        #expect(outcome.files.first?.error?.contains("names no file recbot writes") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == precious, "untouched")
        #expect(try catalog.recordings().first?.status == .interrupted)

        try catalog.insertSession(SessionRecord(id: "../../x", channelID: "c", startedAt: 1_000, hostname: "here"))
        #expect(try repair.repair(try #require(try catalog.session(id: "../../x")), force: true).action == .refused)
    }
}

/// One session that cannot be finished (its report cannot be written) is reported as failed;
/// it does not stop the repair of the others (issue 28, finding 5).
struct RepairResilienceTests {
    @Test func aSessionWhoseReportCannotBeWrittenIsReportedNotFatal() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-resilient-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (bad, good) = ("01JD0000000000000000000051", "01JD0000000000000000000052")
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        let corpus = FileRepairTests.corpus.appendingPathComponent("recbot-cut.webm")
        for session in [bad, good] {
            try FileManager.default.createDirectory(atPath: root + "/recordings/\(session)", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: corpus.path, toPath: root + "/recordings/\(session)/archive-S1.webm")
            try catalog.insertSession(SessionRecord(id: session, channelID: "c", startedAt: 1_000, hostname: "here"))
            try catalog.insertRecording(RecordingRecord(sessionID: session, connectionID: "S1", path: "recordings/\(session)/archive-S1.webm",
                                                        videoCodec: "VP8", audioCodec: "OPUS", startedAt: 1_000))
        }
        // A directory where the report goes: its rename fails.
        try FileManager.default.createDirectory(atPath: root + "/recordings/\(bad)/report-\(bad).json/x", withIntermediateDirectories: true)
        let repair = SessionRepair(catalog: catalog, dataDirectory: DataDirectory(path: root), random: SeededRandom(seed: 1), hostname: "here")
        let failed = try repair.repair(try #require(try catalog.session(id: bad)), force: true)
        #expect(failed.action == .failed && failed.detail?.contains("not written") == true, "\(failed)")
        let repaired = try repair.repair(try #require(try catalog.session(id: good)), force: true)
        #expect(repaired.action == .repaired && repaired.files.allSatisfy { $0.error == nil })
        #expect(FileManager.default.fileExists(atPath: root + "/recordings/\(good)/report-\(good).json"))
    }
}

/// Issue 39 item 3: a join killed while a split part waits for the keyframe after a boundary
/// leaves that part holding video past the next part's start. Repaired, it stops where the next
/// part starts (hisui drops a part that overlaps the next), in its sidecar and the report.
struct RepairedPartsTileTests {
    /// Opus-track blocks every 20 ms and no Cues, Duration or segment size: a killed join's file.
    static func writeUnfinishedAudio(seconds: Int, to path: String) throws {
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(video: nil, audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 1)),
                                                                        segmentUID: [UInt8](repeating: 7, count: 16)))
        let writer = try WebMFileWriter(creatingAt: path)
        for index in 0..<(seconds * 50) {
            try writer.apply(try muxer.write(WebMFrame(track: .audio, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: true,
                                                       data: [0xF8, 0xFF, 0xFE])))
        }
        try writer.apply(muxer.flush())
        try writer.close()
    }

    @Test func aRepairedPartStopsWhereTheNextStarts() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-tile-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = "01JD0000000000000000000061"
        let directory = root + "/recordings/\(session)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: session, channelID: "c", startedAt: 1_000, hostname: "here"))
        // Two parts of 5 s each, left unfinished as a kill leaves them; the second starts 4 s in.
        for (part, start) in [(1, Int64(1_000)), (2, 5_000)] {
            let name = "split-archive-S1_000\(part).webm"
            try Self.writeUnfinishedAudio(seconds: 5, to: directory + "/" + name)
            try catalog.insertRecording(RecordingRecord(sessionID: session, connectionID: "S1", part: part, path: "recordings/\(session)/\(name)",
                                                        videoCodec: "VP8", audioCodec: "OPUS", startedAt: start))
        }
        let repair = SessionRepair(catalog: catalog, dataDirectory: DataDirectory(path: root), random: SeededRandom(seed: 1), hostname: "here")
        let outcome = try repair.repair(try #require(try catalog.session(id: session)), force: true)
        #expect(outcome.action == .repaired && outcome.files.allSatisfy { $0.error == nil }, "\(outcome)")
        func json(_ name: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) as? [String: Any])
        }
        let first = try json("split-archive-S1_0001.json"), second = try json("split-archive-S1_0002.json")
        #expect(try catalog.recordings().first { $0.part == 1 }.map { ($0.durationMs ?? 0) > 4_000 } == true, "the media runs past 4 s")
        #expect(first["start_time_offset"] as? Int == 0 && first["stop_time_offset"] as? Int == 4, "\(first)")
        #expect(second["start_time_offset"] as? Int == 4 && (second["stop_time_offset"] as? Int ?? 0) > 4)
        let entry = try #require((try json("report-\(session).json")["archives"] as? [[String: Any]])?.first)
        #expect(entry["start_time_offset"] as? Int == 0 && entry["stop_time_offset"] as? Int == second["stop_time_offset"] as? Int)
    }
}
