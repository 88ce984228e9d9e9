import Archive
import Foundation
import Testing

/// `recbot prune` and `recbot sessions hold` as an operator runs them (issue 43): the dry run
/// lists exactly what the prune then removes; held, running and unverified sessions stay.
@Suite struct PruneCommandTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-prune-cli-\(UUID().uuidString)").path
    static let day: Int64 = 86_400_000

    /// A session `daysAgo` old with a 2,000-byte file (verified unless told), ended unless `open`.
    func session(_ catalog: Catalog, _ id: String, daysAgo: Int64, open: Bool = false, verified: Bool = true) throws {
        let started = Int64(Date().timeIntervalSince1970 * 1000) - daysAgo * Self.day
        try catalog.insertSession(SessionRecord(id: id, channelID: "room", startedAt: started))
        let folder = directory + "/recordings/\(id)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(count: 2_000).write(to: URL(fileURLWithPath: folder + "/archive-S.webm"))
        var row = RecordingRecord(sessionID: id, connectionID: "S", path: "recordings/\(id)/archive-S.webm", videoCodec: "VP8", audioCodec: nil,
                                  startedAt: started, status: .complete)
        row.host = "box"
        row = try catalog.insertRecording(row)
        if verified { try catalog.recordVerification(recordingID: try #require(row.id), status: .verified, at: started, report: "{}") }
        if !open { try catalog.endSession(id: id, endedAt: started + 1_000, endReason: "duration-elapsed", exitStatus: 0) }
    }

    func run(_ arguments: [String]) throws -> RecBotBinary.Result {
        try RecBotBinary.run(arguments + ["--data-dir", directory], environment: ["RECBOT_HOST": "box"])
    }

    func entries(_ arguments: [String]) throws -> [String: String] {
        let result = try run(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        let array = try #require(try result.json() as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: array.map { ($0["session_id"] as? String ?? "", $0["action"] as? String ?? "") })
    }

    @Test func theDryRunListsWhatThePruneRemoves() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = try Catalog(path: directory + "/catalog.sqlite")
        let (old, held, open, unverified, recent) = ("01JD3A0000AAAAAAAAAAAAAAAA", "01JD3B0000BBBBBBBBBBBBBBBB", "01JD3C0000CCCCCCCCCCCCCCCC",
                                                     "01JD3D0000DDDDDDDDDDDDDDDD", "01JD3E0000EEEEEEEEEEEEEEEE")
        try session(catalog, old, daysAgo: 40)
        try session(catalog, held, daysAgo: 40)
        try session(catalog, open, daysAgo: 40, open: true)
        try session(catalog, unverified, daysAgo: 40, verified: false)
        try session(catalog, recent, daysAgo: 2)
        #expect(try run(["sessions", "hold", held, "--reason", "legal hold"]).status == 0)
        #expect(try run(["sessions", "hold", "01JD3F0000FFFFFFFFFFFFFFFF"]).status == 66, "no such session")

        let planned = try entries(["prune", "--older-than", "30d", "--dry-run"])
        #expect(planned == [old: "would prune", held: "kept", open: "kept", unverified: "kept"], "\(planned)")
        let table = try run(["prune", "--older-than", "30d", "--dry-run"])
        #expect(table.stdout.contains("kept: on hold: legal hold") && table.stdout.contains("1 session would be pruned, 2.0 KiB would be freed"),
                "\(table.stdout)")
        #expect(FileManager.default.fileExists(atPath: directory + "/recordings/\(old)/archive-S.webm"), "a dry run removes nothing")

        let done = try entries(["prune", "--older-than", "30d"])
        #expect(done.filter { $0.value == "pruned" }.keys.sorted() == planned.filter { $0.value == "would prune" }.keys.sorted())
        #expect(!FileManager.default.fileExists(atPath: directory + "/recordings/\(old)"))
        for kept in [held, open, unverified, recent] {
            #expect(FileManager.default.fileExists(atPath: directory + "/recordings/\(kept)/archive-S.webm"))
        }
        let shown = try #require(try run(["sessions", "show", old, "--json"]).json() as? [String: Any])
        #expect(shown["pruned_at"] is String && (shown["recordings"] as? [Any])?.count == 1, "the rows stay, marked")

        #expect(try run(["sessions", "unhold", held]).status == 0)
        let textfile = directory + "/prune.prom"
        #expect(try entries(["prune", "--older-than", "30d", "--metrics-textfile", textfile]) == [held: "pruned", open: "kept", unverified: "kept"])
        let metrics = try String(contentsOfFile: textfile, encoding: .utf8)
        for line in ["recbot_prune_sessions{dry_run=\"0\"} 1", "recbot_prune_bytes{dry_run=\"0\"} 2000", "recbot_prune_kept{reason=\"recording\"} 1",
                     "recbot_prune_kept{reason=\"unverified\"} 1", "recbot_prune_kept{reason=\"held\"} 0", "recbot_prune_failures 0"] {
            #expect(metrics.contains(line + "\n"), "\(line) in \(metrics)")
        }
    }
}
