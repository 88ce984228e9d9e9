import Archive
import ArchivePostgres
import Foundation
import PostgresTestSupport
import TestSupport
import Testing

/// `recbot join` writing a fleet's PostgreSQL catalog (issue 14): the same rows and the same
/// query output as the SQLite catalog, a server that goes away mid-session, and one still
/// down at the end (its writes applied by `recbot repair`).
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct PostgresCatalogScenarioTests {
    static func catalog(_ url: String) throws -> any CatalogStore { try CatalogLocation.parse(url).open() }

    /// Waits (at most 20 s) until the session's directory holds `count` WebM files.
    static func waitForRecordings(_ count: Int, in scenario: Scenario) -> Bool {
        let recordings = scenario.dataDirectory + "/recordings"
        for _ in 0..<200 {
            let sessions = (try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? []
            let files = sessions.flatMap { (try? FileManager.default.contentsOfDirectory(atPath: recordings + "/" + $0)) ?? [] }
            if files.filter({ $0.hasSuffix(".webm") }).count >= count { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    @Test func aRecordingIsCatalogedInPostgresAndQueriedFromThere() async throws {
        try await blocking {
            let server = try PostgresServer.shared.get()
            let url = try server.makeDatabase()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let environment = ["RECBOT_CATALOG_URL": url]
            let result = try scenario.join(["--duration", "4s"], environment: environment)
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            #expect(!result.stderr.contains(server.password), "the password never reaches the log")
            #expect(!FileManager.default.fileExists(atPath: scenario.dataDirectory + "/catalog.sqlite"), "no SQLite catalog beside it")

            let catalog = try Self.catalog(url)
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason != nil && session.exitStatus == 0 && session.signalingURL != nil)
            let recording = try #require(try catalog.recordings(RecordingFilter(sessionID: session.id)).first)
            #expect(recording.status == .complete && recording.videoFrames > 50 && recording.bytes > 0)
            let probe = try Scenario.probe(scenario.dataDirectory + "/" + recording.path)
            #expect(probe.streams.contains { $0.codec == "vp8" && $0.frames == Int(recording.videoFrames) })
            #expect(try catalog.eventCounts(sessionID: session.id).contains { $0.kind == .notify && $0.count >= 1 })

            // The query commands read the same catalog and print the same JSON shape as from SQLite.
            let listed = try scenario.recbot(["sessions", "show", session.id, "--json"], environment: environment)
            #expect(listed.status == 0, "\(listed.stderr)")
            let shown = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any])
            #expect(shown["id"] as? String == session.id)
            #expect((shown["recordings"] as? [[String: Any]])?.first?["video_frames"] as? Int == Int(recording.videoFrames))
            let events = try scenario.recbot(["events", "list", "--session", session.id, "--json"], environment: environment)
            #expect(events.status == 0 && events.stdout.contains("\"notify\""), "\(events.stderr)")
        }
    }

    /// The database host goes away for a few seconds mid-recording: the join keeps recording,
    /// spools the catalog writes, applies them when the server is back, and ends cleanly.
    @Test func anOutageMidSessionLosesNoCatalogRow() async throws {
        try await blocking {
            let server = try PostgresServer()
            defer { server.remove() }
            let url = try server.makeDatabase()
            // The second publisher joins 3 s in (a re-offer): its recording's row is a catalog write
            // that falls inside the outage whatever the machine's load.
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--late-publishers", "1", "--late-after", "3"])
            defer { scenario.stop() }
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: Scenario.Result?
            let textfile = scenario.directory.appendingPathComponent("recbot.prom").path
            DispatchQueue.global().async {
                result = try? scenario.join(["--duration", "10s", "--metrics-textfile", textfile], environment: ["RECBOT_CATALOG_URL": url])
                done.signal()
            }
            // Down once the first sender records, up again once the late one does (plus a moment).
            #expect(Self.waitForRecordings(1, in: scenario), "the first sender never started recording")
            server.stop()
            #expect(Self.waitForRecordings(2, in: scenario), "the late sender never started recording")
            Thread.sleep(forTimeInterval: 1)
            try server.start()
            #expect(done.wait(timeout: .now() + 60) == .success)
            let joined = try #require(result)
            #expect(joined.status == 0, "recbot: \(joined.stderr.suffix(3_000))")
            #expect(joined.stderr.contains("they go to the local spool"), "the outage was seen: \(joined.stderr.suffix(2_000))")
            #expect(joined.stderr.contains("spooled writes applied"))

            let catalog = try Self.catalog(url)
            let session = try #require(try catalog.sessions().first)
            #expect(session.exitStatus == 0 && session.endedAt != nil)
            let recordings = try catalog.recordings(RecordingFilter(sessionID: session.id))
            #expect(recordings.count == 2 && recordings.allSatisfy { $0.status == .complete && $0.videoFrames > 100 })
            #expect(try FileManager.default.contentsOfDirectory(atPath: scenario.dataDirectory + "/spool").isEmpty)
            // The metrics saw the spool fill; at the end it is empty.
            let samples = try MetricsScenarioTests.scrape(["--file", textfile]).samples
            #expect((samples[#"recbot_catalog_writes_spooled_total{channel="sora"}"#] ?? 0) > 0, "\(samples.keys.filter { $0.contains("catalog") })")
            #expect(samples[#"recbot_queue_depth{channel="sora",queue="catalog_spool"}"#] == 0)
        }
    }

    /// Still down when the join ends: exit 82, the writes stay in the spool, and `recbot repair`
    /// applies them once the server answers.
    @Test func aServerStillDownAtTheEndLeavesTheSpoolForRepair() async throws {
        try await blocking {
            let server = try PostgresServer()
            defer { server.remove() }
            let url = try server.makeDatabase()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: Scenario.Result?
            let textfile = scenario.directory.appendingPathComponent("recbot.prom").path
            DispatchQueue.global().async {
                result = try? scenario.join(["--duration", "5s", "--finalize-timeout", "20s", "--metrics-textfile", textfile],
                                            environment: ["RECBOT_CATALOG_URL": url])
                done.signal()
            }
            Thread.sleep(forTimeInterval: 2)
            server.stop()
            #expect(done.wait(timeout: .now() + 90) == .success)
            let joined = try #require(result)
            #expect(joined.status == 82, "recbot: \(joined.stderr.suffix(3_000))")
            let spools = try FileManager.default.contentsOfDirectory(atPath: scenario.dataDirectory + "/spool").filter { $0.hasSuffix(".sqlite") }
            #expect(spools.count == 1)
            // The last metrics say what waits in the spool for repair.
            let samples = try MetricsScenarioTests.scrape(["--file", textfile]).samples
            let depth = samples[#"recbot_queue_depth{channel="sora",queue="catalog_spool"}"#] ?? 0
            #expect(depth > 0 && depth <= samples[#"recbot_catalog_writes_spooled_total{channel="sora"}"#] ?? 0, "\(samples.keys.filter { $0.contains("catalog") })")
            #expect((samples[#"recbot_queue_bytes{channel="sora",queue="catalog_spool"}"#] ?? 0) > 0)

            let stillDown = try scenario.recbot(["repair", "--all", "--data-dir", scenario.dataDirectory], environment: ["RECBOT_CATALOG_URL": url])
            #expect(stillDown.status == 82, "\(stillDown.stderr)")
            try server.start()
            let repaired = try scenario.recbot(["repair", "--all", "--data-dir", scenario.dataDirectory], environment: ["RECBOT_CATALOG_URL": url])
            #expect(repaired.status == 0, "\(repaired.stderr)")
            #expect(repaired.stderr.contains("applied"), "\(repaired.stderr)")
            let catalog = try Self.catalog(url)
            let session = try #require(try catalog.sessions().first)
            #expect(session.endedAt != nil && session.endReason != nil, "the session's end came from the spool")
            let recording = try #require(try catalog.recordings(RecordingFilter(sessionID: session.id)).first)
            #expect(recording.status == .complete && recording.videoFrames > 50)
            #expect(try FileManager.default.contentsOfDirectory(atPath: scenario.dataDirectory + "/spool").filter { $0.hasSuffix(".sqlite") }.isEmpty)
        }
    }
}
