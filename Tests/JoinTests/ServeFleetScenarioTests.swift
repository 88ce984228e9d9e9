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
            print("serve fleet: ended \(stoppedAfter) s after session.destroyed reached the worker not recording")
            #expect(try catalog.recordings(RecordingFilter(sessionID: job.id)).count == 1)
        }
    }

    /// SIGKILL of the worker that records: its recording ends by itself (`--exit-with-parent`:
    /// files finished, nobody left to renew its lease), and after the lease another worker
    /// claims the job with a higher fence. Continuing in the same session is not built yet:
    /// the new worker's join refuses to write over the session, and the job says so.
    @Test func aKilledWorkersRecordingEndsAndAnotherWorkerClaimsTheJob() async throws {
        try await blocking {
            let url = try PostgresServer.shared.get().makeDatabase()
            let catalog = try CatalogLocation.parse(url).open()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let environment = ["RECBOT_CATALOG_URL": url]
            let first = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment, name: "first",
                                         dataDirectory: scenario.directory.appendingPathComponent("data-first").path)
            defer { first.stop() }
            #expect(try first.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            var running: JobRecord?
            for _ in 0..<100 where running == nil {
                running = try catalog.jobs(JobFilter(states: [.running])).first
                Thread.sleep(forTimeInterval: 0.1)
            }
            let job = try #require(running)
            Thread.sleep(forTimeInterval: 3)
            kill(first.process.processIdentifier, SIGKILL)
            let killed = Date()
            let second = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment, name: "second",
                                          dataDirectory: scenario.directory.appendingPathComponent("data-second").path)
            defer { second.stop() }

            var orphanEnded: SessionRecord?
            for _ in 0..<100 where orphanEnded == nil {
                orphanEnded = try catalog.session(id: job.id).flatMap { $0.endedAt == nil ? nil : $0 }
                Thread.sleep(forTimeInterval: 0.1)
            }
            let session = try #require(orphanEnded, "the killed worker's recording ended by itself")
            #expect(session.endReason?.hasPrefix("worker-lost") == true, "\(session.endReason ?? "")")
            #expect(Double(try #require(session.endedAt)) / 1000 - killed.timeIntervalSince1970 < 3)
            let recordings = try catalog.recordings(RecordingFilter(sessionID: job.id))
            #expect(!recordings.isEmpty && recordings.allSatisfy { $0.status == .complete }, "\(recordings.map(\.status))")

            var takenOver: JobRecord?
            for _ in 0..<150 where takenOver == nil {
                takenOver = try catalog.job(id: job.id).flatMap { $0.fence >= 2 ? $0 : nil }
                Thread.sleep(forTimeInterval: 0.1)
            }
            let claimed = try #require(takenOver, "\(second.log.suffix(2_000))")
            let claimedAfter = Date().timeIntervalSince(killed)
            #expect(claimedAfter < 3 + 2 + 1, "claimed \(claimedAfter) s after the kill (lease 3 s)")
            let orphanAfter = Double(try #require(session.endedAt)) / 1000 - killed.timeIntervalSince1970
            print("serve fleet: the killed worker's recording ended \(orphanAfter) s after the kill; the job was claimed again \(claimedAfter) s after it")
            #expect(claimed.workerHost != nil)
            var ended: JobRecord?
            for _ in 0..<100 where ended == nil {
                ended = try catalog.job(id: job.id).flatMap { $0.state == .ended ? $0 : nil }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(ended?.endReason?.contains("exists already") == true, "\(String(describing: ended?.endReason))")
            #expect(try catalog.recordings(RecordingFilter(sessionID: job.id)).count == recordings.count, "nothing written over")
        }
    }
}
