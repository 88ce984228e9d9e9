import Archive
import DiskLayout
import Foundation
import Testing
@testable import Repair
import WireCoding

/// A session another process continues after a failover (issue 43): repair on the dead
/// process's host finishes that process's files and renames its part 0 to the part 1 it is,
/// without touching the live process's rows, ending the session or writing its report.
struct SegmentRepairTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-segments-\(UUID())").path
    let session = "01JD0000000000000000000062"
    var directory: String { root + "/recordings/\(session)" }

    /// Segment 1 (pid 10, on `here`) left `archive-S1.webm` unfinished; segment 2 (pid 20) records
    /// `split-archive-S1_0002.webm` on `there`.
    func catalogWithASecondSegment() throws -> Catalog {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: session, channelID: "c", startedAt: 1_000, hostname: "here", pid: 10))
        try RepairedPartsTileTests.writeUnfinishedAudio(seconds: 3, to: directory + "/archive-S1.webm")
        var first = RecordingRecord(sessionID: session, connectionID: "S1", part: 0, path: "recordings/\(session)/archive-S1.webm",
                                    videoCodec: nil, audioCodec: "OPUS", startedAt: 1_000)
        first.host = "here"
        try catalog.insertRecording(first)
        _ = try catalog.reopenSession(SessionReopen(sessionID: session, channelID: "c", splitDuration: nil, splitOnly: nil, hostname: "here",
                                                    pid: 20, recbotVersion: nil, now: 9_000, jobFence: nil).forcing(catalog))
        var second = RecordingRecord(sessionID: session, connectionID: "S1", part: 2, path: "recordings/\(session)/split-archive-S1_0002.webm",
                                     videoCodec: nil, audioCodec: "OPUS", startedAt: 10_000)
        (second.host, second.segment) = ("there", 2)
        try catalog.insertRecording(second)
        return catalog
    }

    @Test func whileTheNextSegmentRecordsOnlyTheDeadOnesFilesAreFinished() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try catalogWithASecondSegment()
        let repair = SessionRepair(catalog: catalog, dataDirectory: DataDirectory(path: root), random: SeededRandom(seed: 1), hostname: "here",
                                   isProcessAlive: { $0 == 20 })
        #expect(try repair.unfinishedSessions().map(\.id) == [session])
        let outcome = try repair.repair(try #require(try catalog.session(id: session)))
        #expect(outcome.action == .repaired && outcome.detail?.contains("segment 2 records it now") == true, "\(outcome)")
        #expect(outcome.files.map { ($0.path as NSString).lastPathComponent } == ["archive-S1.webm", "split-archive-S1_0001.webm"])
        #expect(outcome.files.last?.renamedFrom == "archive-S1.webm" && outcome.files.allSatisfy { $0.error == nil })
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files == ["split-archive-S1_0001.json", "split-archive-S1_0001.webm"], "no report while segment 2 records: \(files)")
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/split-archive-S1_0001.json"))) as? [String: Any])
        #expect(sidecar["split_index"] as? String == "0001" && sidecar["filename"] as? String == "split-archive-S1_0001.webm")
        let rows = try catalog.recordings(RecordingFilter(sessionID: session))
        #expect(rows.map(\.part) == [1, 2] && rows.map(\.status) == [.repaired, .recording], "segment 2's row untouched")
        let open = try #require(try catalog.session(id: session))
        #expect(open.endedAt == nil && open.segment == 2)
        let again = try repair.repair(open)
        #expect(again.files.isEmpty && again.action == .stillRecording, "\(again)")
    }

    @Test func aLostHostsUnfinishedFilesAreFlaggedAndNothingElse() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try catalogWithASecondSegment()
        #expect(try LostHost.flag("there", catalog: catalog, at: 50_000).map(\.part) == [2])
        let rows = try catalog.recordings(RecordingFilter(sessionID: session))
        #expect(rows.map(\.status) == [.recording, .interrupted], "only the lost host's file")
        #expect(rows[1].error == LostHost.reason && rows[1].missingAt == 50_000)
        #expect(try LostHost.flag("there", catalog: catalog, at: 60_000).isEmpty, "once")
        #expect(try catalog.session(id: session)?.endedAt == nil, "the session is left to `repair --force`")
    }

    @Test func aSplitSessionsWholeFileIsNeverRenamed() {
        var rows = [0, 1, 2, 3].map { part in
            RecordingRecord(sessionID: session, connectionID: "S1", part: part, path: "p\(part)", videoCodec: nil, audioCodec: "OPUS", startedAt: 0,
                            status: .complete)
        }
        rows[3].segment = 2
        #expect(PartZeroRenumbering.candidates(rows, storageHost: "here").isEmpty, "part 1 exists: part 0 is the whole file beside split parts")
        #expect(PartZeroRenumbering.candidates([rows[0], rows[3]], storageHost: "here") == [0])
        #expect(PartZeroRenumbering.candidates([rows[0], rows[3]], storageHost: "elsewhere").isEmpty == false, "a row without a host is anyone's")
        var hosted = rows[0]
        hosted.host = "there"
        #expect(PartZeroRenumbering.candidates([hosted, rows[3]], storageHost: "here").isEmpty, "another host's file")
    }
}

private extension SessionReopen {
    /// The test's first segment never ended: ended by hand, as if repaired, so a reopen without a fence is allowed.
    func forcing(_ catalog: Catalog) throws -> SessionReopen {
        try catalog.endSession(id: sessionID, endedAt: 8_000, endReason: "crashed", exitStatus: nil)
        return self
    }
}
