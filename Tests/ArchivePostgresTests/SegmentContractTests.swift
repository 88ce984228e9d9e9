import Archive
import Foundation
import PostgresTestSupport
import Testing

/// Sessions that more than one process records (a failover, issue 43), held to one contract by
/// both catalogs: the reopen is fenced by the job's token, and a stale segment's writes about
/// the session (its end, its counters, its outages) do not land on the session another
/// process continues.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct SegmentContractTests {
    static let id = "01JD00000000000000000000SG"

    func session(split: Int64? = nil) -> SessionRecord {
        var session = SessionRecord(id: Self.id, channelID: "lobby", startedAt: 1_000, recbotVersion: "1", hostname: "host-a", pid: 10)
        session.splitDuration = split
        return session
    }

    func reopen(fence: Int64?, channel: String = "lobby", split: Int64? = nil, now: Int64 = 9_000) -> SessionReopen {
        SessionReopen(sessionID: Self.id, channelID: channel, splitDuration: split, splitOnly: nil, hostname: "host-b", pid: 20,
                      recbotVersion: "2", now: now, jobFence: fence)
    }

    func counters(_ events: Int64) -> SessionCounters {
        var counters = SessionCounters()
        counters.eventsStored = events
        return counters
    }

    /// A running job for the session, claimed `claims` times (its fence).
    func job(_ catalog: any CatalogStore, claims: Int) throws {
        _ = try catalog.insertJob(JobRecord(id: Self.id, channelID: "lobby", origin: .api, options: "{}", createdAt: 500))
        for claim in 0..<claims {
            let now = 600 + Int64(claim) * 100_000
            _ = try catalog.claimJobs(JobClaim(owner: "w\(claim)", host: "h", now: now, leaseUntil: now + 10, limit: 1))
        }
    }

    @Test(arguments: CatalogBackend.allCases) func aReopenStartsTheNextSegmentAndTheOldOnesEndNoLongerEndsTheSession(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.insertSession(session())
        try job(catalog, claims: 2)
        #expect(try catalog.segments(sessionID: Self.id).map(\.segment) == [1])

        let reopened = try catalog.reopenSession(reopen(fence: 2))
        #expect(reopened.segment == 2 && reopened.hostname == "host-b" && reopened.pid == 20 && reopened.startedAt == 1_000 && reopened.endedAt == nil)
        #expect(try catalog.session(id: Self.id) == reopened)
        // The dead worker's late end (a spool replayed, an orphan that outlived its lease): its own row only.
        try catalog.apply(.endSegment(id: Self.id, segment: 1, endedAt: 8_000, endReason: "worker-lost", exitStatus: 0))
        try catalog.apply(.sessionCounters(id: Self.id, counters(99), segment: 1))
        try catalog.apply(.interruption(InterruptionRecord(sessionID: Self.id, ordinal: 1, startedAt: 7_000, cause: "late"), segment: 1))
        let open = try #require(try catalog.session(id: Self.id))
        #expect(open.endedAt == nil && open.eventsStored == nil && open.segment == 2)
        #expect(try catalog.interruptions(sessionID: Self.id).isEmpty)

        try catalog.apply(.interruption(InterruptionRecord(sessionID: Self.id, ordinal: 1, startedAt: 8_500, cause: "failover"), segment: 2))
        try catalog.apply(.sessionCounters(id: Self.id, counters(5), segment: 2))
        try catalog.apply(.endSegment(id: Self.id, segment: 2, endedAt: 20_000, endReason: "duration-elapsed", exitStatus: 0))
        let ended = try #require(try catalog.session(id: Self.id))
        #expect(ended.endedAt == 20_000 && ended.endReason == "duration-elapsed" && ended.eventsStored == 5)
        #expect(try catalog.interruptions(sessionID: Self.id).map(\.cause) == ["failover"])
        let segments = try catalog.segments(sessionID: Self.id)
        #expect(segments.map(\.segment) == [1, 2] && segments.map(\.hostname) == ["host-a", "host-b"] && segments.map(\.jobFence) == [nil, 2])
        #expect(segments.map(\.endReason) == ["worker-lost", "duration-elapsed"] && segments.map(\.endedAt) == [8_000, 20_000])
        #expect(throws: CatalogError.self) {
            try catalog.endSegment(id: "01JD00000000000000000000XX", segment: 1, endedAt: 1, endReason: "x", exitStatus: nil)
        }
    }

    @Test(arguments: CatalogBackend.allCases) func aReopenIsRefusedForAnotherChannelOtherPartsOrAStaleFence(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.insertSession(session())
        try job(catalog, claims: 3)
        for (request, why) in [(reopen(fence: 3, channel: "other"), "channel"), (reopen(fence: 3, split: 10), "split"),
                               (reopen(fence: 2), "fence 2 is superseded by 3"), (reopen(fence: nil), "the session is open")] {
            #expect(throws: CatalogError.self, "\(why)") { try catalog.reopenSession(request) }
        }
        #expect(try catalog.session(id: Self.id)?.segment == nil, "nothing changed")
        #expect(try catalog.segments(sessionID: Self.id).count == 1)
        do {
            _ = try catalog.reopenSession(reopen(fence: 2))
            Issue.record("a stale fence was taken")
        } catch {
            #expect(error.reason == .superseded("job \(Self.id) is no longer running under fence 2: another worker took it over, or it ended"))
            #expect(error.endCause == .invalidConfiguration)
        }
        #expect(try catalog.reopenSession(reopen(fence: 3)).segment == 2)
        #expect(throws: CatalogError.self, "one reopen per claim: the second worker with fence 3 would not find the session ended") {
            try catalog.reopenSession(reopen(fence: nil))
        }
    }

    @Test(arguments: CatalogBackend.allCases) func anEndedSessionCanBeContinuedByHandAndRowsKeepTheirSegments(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.insertSession(session())
        var first = RecordingRecord(sessionID: Self.id, connectionID: "A", part: 0, path: "recordings/x/archive-A.webm", videoCodec: "VP8",
                                    audioCodec: nil, startedAt: 1_000)
        first = try catalog.insertRecording(first)
        try catalog.endSession(id: Self.id, endedAt: 5_000, endReason: "crashed", exitStatus: nil)
        let reopened = try catalog.reopenSession(reopen(fence: nil))
        #expect(reopened.segment == 2)
        var second = RecordingRecord(sessionID: Self.id, connectionID: "A", part: 2, path: "recordings/x/split-archive-A_0002.webm",
                                     videoCodec: "VP8", audioCodec: nil, startedAt: 9_000)
        second.segment = 2
        _ = try catalog.insertRecording(second)
        #expect(try catalog.recordings(RecordingFilter(sessionID: Self.id)).map(\.segment) == [nil, 2])
        #expect(try catalog.segments(sessionID: Self.id).first?.endReason == "crashed", "the previous segment closed with the session's end")
        try catalog.endSession(id: Self.id, endedAt: 12_000, endReason: "crashed", exitStatus: nil)
        #expect(try catalog.segments(sessionID: Self.id).last?.endedAt == 12_000, "repair's end closes the current segment")
    }
}
