import Archive
import Foundation
import Recorder
import Testing
@testable import Repair

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
        let repair = SessionRepair(catalog: catalog, dataDirectory: DataDirectory(path: root), hostname: "here")
        let outcome = try repair.repair(try #require(try catalog.session(id: session)), force: true)
        #expect(outcome.files.first?.error?.contains("names no file recbot writes") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == precious, "untouched")
        #expect(try catalog.recordings().first?.status == .interrupted)

        try catalog.insertSession(SessionRecord(id: "../../x", channelID: "c", startedAt: 1_000, hostname: "here"))
        #expect(try repair.repair(try #require(try catalog.session(id: "../../x")), force: true).action == .refused)
    }
}
