import Archive
import Foundation
import PostgresTestSupport
import Testing

/// The jobs table (issue 43), held to one contract by both catalogs: claims, leases that run
/// out, fences that grow, stops, expiries.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct JobContractTests {
    func job(_ id: String, channel: String = "lobby", sora: String? = nil, at time: Int64 = 1_000, expires: Int64? = nil) -> JobRecord {
        JobRecord(id: id, channelID: channel, soraSessionID: sora, origin: sora == nil ? .api : .webhook, options: "{}", createdAt: time,
                  expiresAt: expires)
    }

    func claim(_ catalog: any CatalogStore, _ owner: String, at now: Int64 = 2_000, limit: Int = 8) throws -> [JobRecord] {
        try catalog.claimJobs(JobClaim(owner: owner, host: "host-\(owner)", now: now, leaseUntil: now + 10_000, limit: limit))
    }

    func lease(_ job: JobRecord) -> JobLease { JobLease(jobID: job.id, owner: job.leaseOwner ?? "", fence: job.fence) }

    @Test(arguments: CatalogBackend.allCases) func aWebhookSentTwiceMakesOneJob(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        #expect(try catalog.insertJob(job("J1", sora: "S1")))
        #expect(try !catalog.insertJob(job("J2", sora: "S1")), "the same Sora session")
        #expect(try catalog.insertJob(job("J3")) && catalog.insertJob(job("J4")), "API jobs have no Sora session: no conflict")
        #expect(try catalog.jobs(JobFilter()).map(\.id) == ["J4", "J3", "J1"])
        #expect(try catalog.job(id: "J1")?.state == .queued)
    }

    @Test(arguments: CatalogBackend.allCases) func claimsTakeTheOldestUpToTheLimitAndRaiseTheFence(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        for (index, id) in ["J1", "J2", "J3"].enumerated() { _ = try catalog.insertJob(job(id, at: 1_000 + Int64(index))) }
        let first = try claim(catalog, "A", limit: 2)
        #expect(first.map(\.id) == ["J1", "J2"])
        #expect(first.allSatisfy { $0.state == .running && $0.fence == 1 && $0.leaseOwner == "A" && $0.workerHost == "host-A" && $0.startedAt == 2_000 })
        #expect(try claim(catalog, "B").map(\.id) == ["J3"], "A's leases hold")
        #expect(try claim(catalog, "C").isEmpty)
        #expect(try claim(catalog, "C", limit: 0).isEmpty)
    }

    @Test(arguments: CatalogBackend.allCases) func aLeaseThatRunsOutFailsOverAndTheOldOwnerIsFencedOff(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        _ = try catalog.insertJob(job("J1"))
        let held = try #require(try claim(catalog, "A").first)
        #expect(try catalog.renewJob(lease(held), until: 15_000) == .held(stopRequested: false))
        #expect(try claim(catalog, "B", at: 14_999).isEmpty, "renewed until 15 s")
        let taken = try #require(try claim(catalog, "B", at: 15_000).first, "the lease ran out: B takes the job over")
        #expect(taken.fence == 2 && taken.leaseOwner == "B" && taken.startedAt == 2_000, "the same job, its first start kept")
        #expect(try catalog.renewJob(lease(held), until: 30_000) == .lost)
        #expect(try !catalog.holdsJob(lease(held)) && catalog.holdsJob(lease(taken)))
        #expect(try !catalog.finishJob(lease(held), result: JobResult(endedAt: 16_000, exitStatus: 0, endReason: "signal")), "A's late write is refused")
        #expect(try catalog.finishJob(lease(taken), result: JobResult(endedAt: 20_000, exitStatus: 0, endReason: "duration-elapsed")))
        let ended = try #require(try catalog.job(id: "J1"))
        #expect(ended.state == .ended && ended.exitStatus == 0 && ended.endReason == "duration-elapsed" && ended.leaseOwner == nil)
        #expect(try catalog.renewJob(lease(taken), until: 40_000) == .lost, "an ended job holds no lease")
        #expect(try claim(catalog, "C", at: 50_000).isEmpty, "an ended job is never claimed again")
    }

    @Test(arguments: CatalogBackend.allCases) func stopsCancelQueuedJobsAndReachRunningOnesAtTheirHeartbeat(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        _ = try catalog.insertJob(job("J1", sora: "S1"))
        _ = try catalog.insertJob(job("J2", sora: "S2"))
        let running = try #require(try claim(catalog, "A", limit: 1).first)
        #expect(running.id == "J1")
        #expect(try catalog.requestJobStop(id: nil, soraSessionID: "S1", at: 3_000, reason: "session.destroyed").map(\.id) == ["J1"])
        #expect(try catalog.requestJobStop(id: nil, soraSessionID: "S1", at: 3_100, reason: "session.destroyed").isEmpty, "asked once")
        #expect(try catalog.renewJob(lease(running), until: 20_000) == .held(stopRequested: true))
        let cancelled = try catalog.requestJobStop(id: "J2", soraSessionID: nil, at: 3_200, reason: "api")
        #expect(cancelled.map(\.state) == [.cancelled] && cancelled.first?.endReason == "api" && cancelled.first?.endedAt == 3_200)
        #expect(try claim(catalog, "B", at: 30_000).isEmpty, "neither a stopping job nor a cancelled one is claimed")
        #expect(try catalog.expireJobs(now: 30_000) == 1, "J1's worker died while stopping: nobody will store its end")
        let lost = try #require(try catalog.job(id: "J1"))
        #expect(lost.state == .ended && lost.endReason == "worker-lost")
        #expect(try catalog.requestJobStop(id: nil, soraSessionID: nil, at: 1, reason: "x").isEmpty)
    }

    @Test(arguments: CatalogBackend.allCases) func expiredJobsAreNotClaimedAndEnd(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        _ = try catalog.insertJob(job("J1", expires: 5_000))
        _ = try catalog.insertJob(job("J2", at: 1_001, expires: 60_000))
        #expect(try claim(catalog, "A", at: 5_000).map(\.id) == ["J2"], "J1 expired before anyone had room for it")
        #expect(try catalog.expireJobs(now: 5_000) == 1)
        #expect(try catalog.job(id: "J1")?.state == .cancelled && catalog.job(id: "J1")?.endReason == "expired")
        #expect(try catalog.expireJobs(now: 70_000) == 1, "J2's lease ran out after its expiry: its worker is gone")
        #expect(try catalog.jobs(JobFilter(states: [.ended])).map(\.id) == ["J2"])
        #expect(try catalog.jobs(JobFilter(states: [.queued, .running])).isEmpty)
        #expect(try catalog.jobs(JobFilter(channelID: "other")).isEmpty && catalog.jobs(JobFilter(limit: 1)).map(\.id) == ["J2"])
    }

    /// Workers claiming at the same moment never take one job twice (SQLite's write lock;
    /// PostgreSQL's SKIP LOCKED).
    @Test(arguments: CatalogBackend.allCases) func concurrentClaimsTakeEachJobOnce(backend: CatalogBackend) async throws {
        let catalog = try backend.makeCatalog()
        for index in 0..<40 { _ = try catalog.insertJob(job(String(format: "J%02d", index), at: Int64(index))) }
        let taken = try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var mine: [String] = []
                    for _ in 0..<10 { mine += try self.claim(catalog, "W\(worker)", limit: 2).map(\.id) }
                    return mine
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(taken.count == 40 && Set(taken).count == 40)
    }

    @Test(arguments: CatalogBackend.allCases) func aDeferredJobIsClaimedAgainAfterItsDelayAndEndsWithItsLastOutcome(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        _ = try catalog.insertJob(job("J1"))
        let first = try #require(try claim(catalog, "A").first)
        let failed = JobResult(endedAt: 2_500, exitStatus: 69, endReason: "signaling: cannot reach")
        #expect(try catalog.deferJob(lease(first), until: 4_000, result: failed))
        #expect(try !catalog.deferJob(lease(first), until: 4_000, result: failed), "the lease is given up: once")
        let waiting = try #require(try catalog.job(id: "J1"))
        #expect(waiting.state == .running && waiting.leaseOwner == nil && waiting.endReason == "signaling: cannot reach" && waiting.exitStatus == 69)
        #expect(try claim(catalog, "B", at: 3_999).isEmpty, "not before its delay")
        let again = try #require(try claim(catalog, "B", at: 4_000).first)
        #expect(again.fence == 2 && again.leaseOwner == "B" && again.endReason == nil && again.exitStatus == nil, "its last failure cleared")
        #expect(try catalog.deferJob(lease(again), until: 6_000, result: failed))
        _ = try catalog.requestJobStop(id: "J1", soraSessionID: nil, at: 5_000, reason: "session.destroyed")
        #expect(try claim(catalog, "C", at: 7_000).isEmpty, "a stop ends the retries")
        #expect(try catalog.expireJobs(now: 7_000) == 1)
        let ended = try #require(try catalog.job(id: "J1"))
        #expect(ended.state == .ended && ended.endReason == "signaling: cannot reach" && ended.exitStatus == 69, "its last attempt's outcome, not worker-lost")
    }
}
