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
            let firstData = scenario.directory.appendingPathComponent("data-first").path
            // Three machines, as the catalog sees them: each worker's files are cataloged under its host.
            let first = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment.merging(["RECBOT_HOST": "worker-first"]) { $1 },
                                         name: "first", dataDirectory: firstData)
            defer { first.stop() }
            #expect(try first.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            let job = try #require(try Self.poll(100) { try catalog.jobs(JobFilter(states: [.running])).first })
            _ = try #require(try Self.poll(100) { try catalog.recordings(RecordingFilter(sessionID: job.id)).first }, "\(first.log.suffix(2_000))")
            Thread.sleep(forTimeInterval: 3)
            kill(first.process.processIdentifier, SIGKILL)
            let killed = Date()
            // Two workers left: whichever claims the job first continues it.
            let survivors = try ["second", "third"].map { name in
                try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: environment.merging(["RECBOT_HOST": "worker-\(name)"]) { $1 },
                                 name: name, dataDirectory: scenario.directory.appendingPathComponent("data-\(name)").path)
            }
            defer { survivors.forEach { $0.stop() } }
            let second = survivors[0]

            let orphaned = try #require(try Self.poll(100) { try catalog.session(id: job.id).flatMap { $0.endedAt == nil ? nil : $0 } },
                                        "the killed worker's recording ended by itself")
            #expect(orphaned.endReason?.hasPrefix("worker-lost") == true, "\(orphaned.endReason ?? "")")
            let orphanAfter = Double(try #require(orphaned.endedAt)) / 1000 - killed.timeIntervalSince1970
            #expect(orphanAfter < 3)
            let firstRows = try catalog.recordings(RecordingFilter(sessionID: job.id))
            #expect(!firstRows.isEmpty && firstRows.allSatisfy { $0.status == .complete && ($0.segment ?? 1) == 1 }, "\(firstRows.map(\.status))")
            let firstFiles = try Self.snapshot(firstData)

            let claimed = try #require(try Self.poll(150) { try catalog.job(id: job.id).flatMap { $0.fence >= 2 ? $0 : nil } }, "\(survivors.map { $0.log.suffix(2_000) })")
            let claimedAfter = Date().timeIntervalSince(killed)
            #expect(claimedAfter < 3 + 2 + 1, "claimed \(claimedAfter) s after the kill (lease 3 s)")
            #expect(claimed.workerHost != nil)
            let continued = try #require(try Self.poll(150) { try catalog.session(id: job.id).flatMap { $0.segment == 2 && $0.endedAt == nil ? $0 : nil } },
                                         "\(survivors.map { $0.log.suffix(3_000) })")
            #expect(continued.startedAt == orphaned.startedAt, "the session keeps its start")
            let failover = try #require(try Self.poll(150) {
                try catalog.interruptions(sessionID: job.id).last.flatMap { $0.cause == "failover" && $0.endedAt != nil ? $0 : nil }
            }, "\(survivors.map { $0.log.suffix(3_000) })")
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
            let taker = try #require(secondRows.first?.host, "\(rows)")
            #expect(secondRows.allSatisfy { $0.host == taker } && ["worker-second", "worker-third"].contains(taker))
            let secondData = scenario.directory.appendingPathComponent("data-\(taker.dropFirst("worker-".count))").path
            #expect(!secondRows.isEmpty && secondRows.allSatisfy { $0.status == .complete && $0.part >= 2 }, "\(rows.map { ($0.part, $0.segment, $0.path) })")
            let sender = try #require(firstRows.first?.connectionID)
            let secondFiles = try FileManager.default.contentsOfDirectory(atPath: secondData + "/recordings/\(job.id)")
            #expect(secondFiles.contains("split-archive-\(sender)_0002.webm") && !secondFiles.contains("archive-\(sender).webm"), "\(secondFiles)")
            #expect(try Self.snapshot(firstData) == firstFiles, "the first worker's files are untouched")

            #expect(failover.ordinal == 1 && failover.connectionID != nil && failover.attempts == 1)
            let lost = Double(try #require(failover.mediaLostMs)) / 1000
            // At least the lease less a heartbeat (the last renewal came up to a heartbeat before the kill).
            #expect(lost >= 1.5 && lost <= 15, "\(lost) s of media lost in the failover")
            print("serve failover: orphan ended \(orphanAfter) s after the kill, job claimed again after \(claimedAfter) s, \(lost) s of media lost")

            let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: secondData + "/recordings/\(job.id)/report-\(job.id).json"))) as? [String: Any])
            let archives = report["archives"] as? [[String: Any]] ?? []
            #expect(archives.count == 1 && archives.first?["filename"] as? String == "split-archive-\(sender)_0001.webm", "\(archives)")
            #expect(archives.first?["split_last_index"] as? String == "0002")
            #expect((report["interruptions"] as? [[String: Any]])?.last?["cause"] as? String == "failover")

            // The first worker's host is back: its part 0 becomes the part 1 the report names.
            let repair = try scenario.recbot(["repair", "--all", "--data-dir", firstData, "--host", "worker-first", "--json"], environment: environment)
            #expect(repair.status == 0 && repair.stdout.contains("renamed_from"), "\(repair.stdout)\(repair.stderr)")
            let firstFolder = try FileManager.default.contentsOfDirectory(atPath: firstData + "/recordings/\(job.id)")
            #expect(firstFolder.contains("split-archive-\(sender)_0001.webm") && firstFolder.contains("split-archive-\(sender)_0001.json"))
            #expect(!firstFolder.contains("archive-\(sender).webm") && !firstFolder.contains("archive-\(sender).json"), "\(firstFolder)")
            let renamed = try catalog.recordings(RecordingFilter(sessionID: job.id))
            #expect(renamed.map(\.part).sorted() == [1] + secondRows.map(\.part).sorted())
            #expect(renamed.filter { $0.segment == 2 } == secondRows, "the second worker's rows untouched")
            #expect(try catalog.session(id: job.id) == session, "the session's end untouched")
            let again = try scenario.recbot(["repair", "--all", "--data-dir", firstData, "--host", "worker-first"], environment: environment)
            let elsewhere = try scenario.recbot(["repair", "--all", "--data-dir", secondData, "--host", taker], environment: environment)
            #expect(again.status == 0 && elsewhere.status == 0 && !again.stdout.contains("renamed") && !elsewhere.stdout.contains("renamed"),
                    "\(again.stdout)\(elsewhere.stdout)")
            for (directory, host) in [(firstData, "worker-first"), (secondData, taker)] {
                let verify = try scenario.recbot(["verify", job.id, "--data-dir", directory, "--host", host], environment: environment)
                #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            }
        }
    }

    /// A worker cut off from PostgreSQL (its connections hang, as in a partition) stops its
    /// recording before its lease runs out, so before another worker may take the job over;
    /// the other worker continues the session; and once the partition heals, the cut-off
    /// worker's late writes (its end, its counters) land on its own segment only.
    @Test func aWorkerCutOffFromTheCatalogStopsWithinItsLeaseAndItsLateWritesChangeNothing() async throws {
        try await blocking {
            let server = try PostgresServer.shared.get()
            let url = try server.makeDatabase()
            let relay = try TCPRelay(targetPort: server.port)
            defer { relay.close() }
            let relayed = url.replacingOccurrences(of: "127.0.0.1:\(server.port)/", with: "127.0.0.1:\(relay.port)/")
            let catalog = try CatalogLocation.parse(url).open()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--channel-outlives-clients"])
            defer { scenario.stop() }
            let (cutData, otherData) = (scenario.directory.appendingPathComponent("data-cut").path, scenario.directory.appendingPathComponent("data-other").path)
            let cut = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: ["RECBOT_CATALOG_URL": relayed, "RECBOT_HOST": "worker-cut"],
                                       name: "cut", dataDirectory: cutData)
            defer { cut.stop() }
            #expect(try cut.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            let job = try #require(try Self.poll(100) { try catalog.jobs(JobFilter(states: [.running])).first })
            _ = try #require(try Self.poll(100) { try catalog.recordings(RecordingFilter(sessionID: job.id)).first }, "\(cut.log.suffix(2_000))")
            let other = try ServeProcess(scenario: scenario, arguments: ["--lease", "3s"], environment: ["RECBOT_CATALOG_URL": url, "RECBOT_HOST": "worker-other"],
                                         name: "other", dataDirectory: otherData)
            defer { other.stop() }
            Thread.sleep(forTimeInterval: 2)

            relay.freeze()
            let frozen = Date()
            Thread.sleep(forTimeInterval: 0.3)
            let leaseEnd = try #require(try catalog.job(id: job.id)?.leaseUntil, "the cut-off worker's last renewal")
            let noticed = try Self.poll(60) { cut.log.contains("cannot renew the lease in time") ? Date() : nil }
            _ = try #require(noticed, "\(cut.log.suffix(2_000))")
            let stoppedAfter = Date().timeIntervalSince(frozen)
            let claimed = try #require(try Self.poll(100) { try catalog.job(id: job.id).flatMap { $0.fence >= 2 ? $0 : nil } }, "\(other.log.suffix(2_000))")
            #expect(claimed.leaseOwner != job.leaseOwner)
            _ = try #require(try Self.poll(150) {
                try catalog.interruptions(sessionID: job.id).last.flatMap { $0.cause == "failover" && $0.endedAt != nil ? $0 : nil }
            }, "\(other.log.suffix(3_000))")
            let media = try Self.snapshot(cutData).keys.filter { $0.hasSuffix(".webm") }
            let lastWrite = try media.map { name -> Int64 in
                let date = try #require(try FileManager.default.attributesOfItem(atPath: cutData + "/" + name)[.modificationDate] as? Date)
                return Int64(date.timeIntervalSince1970 * 1000)
            }.max() ?? 0
            #expect(!media.isEmpty && lastWrite < leaseEnd, "the cut-off worker's files were last written \(lastWrite - leaseEnd) ms after its lease ended")
            print("serve partition: the cut-off worker stopped \(stoppedAfter) s after the partition, its files last written \(leaseEnd - lastWrite) ms before its lease ended")

            relay.heal()  // its writes held up in the partition go through now
            let lateEnd = try #require(try Self.poll(100) { try catalog.segments(sessionID: job.id).first.flatMap { $0.endedAt == nil ? nil : $0 } },
                                       "the cut-off worker's own end reaches its segment: \(cut.log.suffix(3_000))")
            #expect(lateEnd.endReason?.hasPrefix("signal") == true, "\(lateEnd)")
            let open = try #require(try catalog.session(id: job.id))
            #expect(open.endedAt == nil && open.segment == 2, "the late end did not end the session the other worker records")
            #expect(try other.api("DELETE", "/recordings/\(job.id)").status == 202)
            let ended = try #require(try Self.poll(200) { try catalog.job(id: job.id).flatMap { $0.state == .ended ? $0 : nil } })
            #expect(ended.exitStatus == 0 && ended.fence == 2, "\(String(describing: ended.endReason))")
            // Whatever the cut-off worker spooled goes in now: still nothing of the session's changes.
            let repair = try scenario.recbot(["repair", "--all", "--data-dir", cutData, "--host", "worker-cut"], environment: ["RECBOT_CATALOG_URL": url])
            #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
            Thread.sleep(forTimeInterval: 1)
            let session = try #require(try catalog.session(id: job.id))
            #expect(session.segment == 2 && session.endedAt != nil && session.endReason == ended.endReason, "\(session.endReason ?? "")")
            #expect(try catalog.interruptions(sessionID: job.id).map(\.cause) == ["failover"])
            let segments = try catalog.segments(sessionID: job.id)
            #expect(segments.map(\.segment) == [1, 2] && segments.map(\.jobFence) == [nil, 2])
            let rows = try catalog.recordings(RecordingFilter(sessionID: job.id))
            #expect(rows.filter { $0.host == "worker-cut" }.allSatisfy { ($0.segment ?? 1) == 1 && $0.status != .recording }, "\(rows.map { ($0.host, $0.status) })")
            #expect(rows.contains { $0.host == "worker-other" && $0.segment == 2 && $0.part >= 2 })
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
