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
    /// claims the job with a higher fence and goes on in the same session: a second segment,
    /// its parts numbered on from the first's, the gap an interruption with cause `failover`,
    /// the first worker's files untouched, and the report covering both.
    @Test func aKilledWorkersRecordingIsContinuedByAnotherWorkerInTheSameSession() async throws {
        try await blocking {
            let url = try PostgresServer.shared.get().makeDatabase()
            let catalog = try CatalogLocation.parse(url).open()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--channel-outlives-clients"])
            defer { scenario.stop() }
            let environment = ["RECBOT_CATALOG_URL": url]
            let (firstData, secondData) = (scenario.directory.appendingPathComponent("data-first").path, scenario.directory.appendingPathComponent("data-second").path)
            // Two machines, as the catalog sees them: each worker's files are cataloged under its host.
            let first = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment.merging(["RECBOT_HOST": "worker-first"]) { $1 },
                                         name: "first", dataDirectory: firstData)
            defer { first.stop() }
            #expect(try first.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            let job = try #require(try Self.poll(100) { try catalog.jobs(JobFilter(states: [.running])).first })
            _ = try #require(try Self.poll(100) { try catalog.recordings(RecordingFilter(sessionID: job.id)).first }, "\(first.log.suffix(2_000))")
            Thread.sleep(forTimeInterval: 3)
            kill(first.process.processIdentifier, SIGKILL)
            let killed = Date()
            let second = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment.merging(["RECBOT_HOST": "worker-second"]) { $1 },
                                          name: "second", dataDirectory: secondData)
            defer { second.stop() }

            let orphaned = try #require(try Self.poll(100) { try catalog.session(id: job.id).flatMap { $0.endedAt == nil ? nil : $0 } },
                                        "the killed worker's recording ended by itself")
            #expect(orphaned.endReason?.hasPrefix("worker-lost") == true, "\(orphaned.endReason ?? "")")
            let orphanAfter = Double(try #require(orphaned.endedAt)) / 1000 - killed.timeIntervalSince1970
            #expect(orphanAfter < 3)
            let firstRows = try catalog.recordings(RecordingFilter(sessionID: job.id))
            #expect(!firstRows.isEmpty && firstRows.allSatisfy { $0.status == .complete && ($0.segment ?? 1) == 1 }, "\(firstRows.map(\.status))")
            let firstFiles = try Self.snapshot(firstData)

            let claimed = try #require(try Self.poll(150) { try catalog.job(id: job.id).flatMap { $0.fence >= 2 ? $0 : nil } }, "\(second.log.suffix(2_000))")
            let claimedAfter = Date().timeIntervalSince(killed)
            #expect(claimedAfter < 3 + 2 + 1, "claimed \(claimedAfter) s after the kill (lease 3 s)")
            #expect(claimed.workerHost != nil)
            let continued = try #require(try Self.poll(150) { try catalog.session(id: job.id).flatMap { $0.segment == 2 && $0.endedAt == nil ? $0 : nil } },
                                         "\(second.log.suffix(3_000))")
            #expect(continued.startedAt == orphaned.startedAt, "the session keeps its start")
            let failover = try #require(try Self.poll(150) {
                try catalog.interruptions(sessionID: job.id).last.flatMap { $0.cause == "failover" && $0.endedAt != nil ? $0 : nil }
            }, "\(second.log.suffix(3_000))")
            Thread.sleep(forTimeInterval: 5)
            #expect(try second.api("DELETE", "/recordings/\(job.id)").status == 202)
            let ended = try #require(try Self.poll(200) { try catalog.job(id: job.id).flatMap { $0.state == .ended ? $0 : nil } })
            #expect(ended.exitStatus == 0 && ended.fence == 2, "\(String(describing: ended.endReason))")

            let session = try #require(try catalog.session(id: job.id))
            #expect(session.endedAt != nil && session.segment == 2 && session.endReason?.contains("1 interruption") == true, "\(session.endReason ?? "")")
            let segments = try catalog.segments(sessionID: job.id)
            #expect(segments.map(\.segment) == [1, 2] && segments.allSatisfy { $0.endedAt != nil } && segments[1].jobFence == 2)
            #expect(segments.first?.endReason?.hasPrefix("worker-lost") == true)
            let rows = try catalog.recordings(RecordingFilter(sessionID: job.id))
            let secondRows = rows.filter { $0.segment == 2 }
            #expect(!secondRows.isEmpty && secondRows.allSatisfy { $0.status == .complete && $0.part >= 2 }, "\(rows.map { ($0.part, $0.segment, $0.path) })")
            let sender = try #require(firstRows.first?.connectionID)
            let secondFiles = try FileManager.default.contentsOfDirectory(atPath: secondData + "/recordings/\(job.id)")
            #expect(secondFiles.contains("split-archive-\(sender)_0002.webm") && !secondFiles.contains("archive-\(sender).webm"), "\(secondFiles)")
            #expect(try Self.snapshot(firstData) == firstFiles, "the first worker's files are untouched")

            #expect(failover.ordinal == 1 && failover.connectionID != nil && failover.attempts == 1)
            let lost = Double(try #require(failover.mediaLostMs)) / 1000
            #expect(lost >= 3 && lost <= 15, "\(lost) s of media lost in the failover")
            print("serve failover: orphan ended \(orphanAfter) s after the kill, job claimed again after \(claimedAfter) s, \(lost) s of media lost")

            let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: secondData + "/recordings/\(job.id)/report-\(job.id).json"))) as? [String: Any])
            let archives = report["archives"] as? [[String: Any]] ?? []
            #expect(archives.count == 1 && archives.first?["filename"] as? String == "split-archive-\(sender)_0001.webm", "\(archives)")
            #expect(archives.first?["split_last_index"] as? String == "0002")
            #expect((report["interruptions"] as? [[String: Any]])?.last?["cause"] as? String == "failover")
            for (directory, host) in [(firstData, "worker-first"), (secondData, "worker-second")] {
                let verify = try scenario.recbot(["verify", job.id, "--data-dir", directory, "--host", host], environment: environment)
                #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            }
        }
    }

    /// Polls `body` every 0.1 s, up to `times` times, for a value.
    static func poll<T>(_ times: Int, _ body: () throws -> T?) throws -> T? {
        for _ in 0..<times {
            if let value = try body() { return value }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    /// Every file under `directory` (but the catalog's spool), with its size and modification time.
    static func snapshot(_ directory: String) throws -> [String: String] {
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            guard attributes[.type] as? FileAttributeType == .typeRegular, !name.hasPrefix("spool") else { continue }
            files[name] = "\(attributes[.size] ?? 0) \(attributes[.modificationDate] ?? 0)"
        }
        return files
    }
}
