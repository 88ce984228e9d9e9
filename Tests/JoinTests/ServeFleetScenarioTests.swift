import Archive
import ArchivePostgres
import Foundation
import PostgresTestSupport
import TestSupport
import Testing

/// Two `recbot serve` workers sharing one PostgreSQL catalog (issue 43): a job queued through
/// one is recorded once, by whichever claims it, and a `session.destroyed` that reaches the
/// other worker still stops it within a heartbeat.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct ServeFleetScenarioTests {
    @Test func twoWorkersShareTheJobsAndAStopReachesTheWorkerThatRecords() async throws {
        try await blocking {
            let url = try PostgresServer.shared.get().makeDatabase()
            let catalog = try CatalogLocation.parse(url).open()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let rules = try ServeScenarioTests.rules(scenario, #"{"rules": [{"name": "all", "channel": {"exact": "sora"}}]}"#)
            let environment = ["RECBOT_CATALOG_URL": url]
            let workers = try ["a", "b"].map { name in
                try ServeProcess(scenario: scenario, arguments: ["--rules", rules, "--lease", "3s"], environment: environment, name: name,
                                 dataDirectory: scenario.directory.appendingPathComponent("data-\(name)").path)
            }
            defer { workers.forEach { $0.stop() } }

            #expect(try workers[0].webhook(ServeScenarioTests.sessionWebhook("session.created", channel: "sora", session: "FLEET1")).status == 200)
            #expect(try workers[1].webhook(ServeScenarioTests.sessionWebhook("session.created", channel: "sora", session: "FLEET1")).status == 200,
                    "the same webhook reaching the other worker (a retry through a load balancer) adds nothing")
            var running: JobRecord?
            for _ in 0..<100 where running == nil {
                running = try catalog.jobs(JobFilter(states: [.running])).first
                Thread.sleep(forTimeInterval: 0.1)
            }
            let job = try #require(running)
            #expect(try catalog.jobs(JobFilter()).count == 1 && job.fence == 1, "claimed once")
            #expect(Double(try #require(job.startedAt) - job.createdAt) / 1000 <= 2)
            let holder = try #require(job.leaseOwner)
            // The stop goes to the worker that does not record: it learns at its next heartbeat.
            let other = workers.first { !holder.contains("/\($0.process.processIdentifier)/") } ?? workers[1]
            Thread.sleep(forTimeInterval: 4)
            let destroyed = Date()
            #expect(try other.webhook(ServeScenarioTests.sessionWebhook("session.destroyed", channel: "sora", session: "FLEET1")).status == 200)
            var ended: JobRecord?
            for _ in 0..<200 where ended == nil {
                ended = try catalog.job(id: job.id).flatMap { $0.state == .ended ? $0 : nil }
                Thread.sleep(forTimeInterval: 0.1)
            }
            let result = try #require(ended, "\(workers.map { $0.log.suffix(1_500) })")
            #expect(result.exitStatus == 0 && result.stopReason == "session.destroyed" && result.fence == 1)
            let session = try #require(try catalog.session(id: job.id))
            let stoppedAfter = Double(try #require(session.endedAt)) / 1000 - destroyed.timeIntervalSince1970
            #expect(stoppedAfter <= 2, "stopped \(stoppedAfter) s after session.destroyed reached the other worker")
            #expect(try catalog.recordings(RecordingFilter(sessionID: job.id)).count == 1)
        }
    }
}
