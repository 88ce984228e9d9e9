import Archive
import Foundation
import Logging
@testable import RecBot
import TestSupport
import Testing
import WireCoding

/// The outages of a session another process began (a failover, issue 43): the earlier rows
/// count, the failover is the next ordinal, and it ends, with its media lost, as this process
/// records.
@Suite struct FailoverBookkeepingTests {
    static let id = "01JD0000000000000000000078"

    func at(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: Int64(seconds * 1e9)) }

    @Test func aFailoverIsTheNextOutageAndEndsAtTheFirstFrame() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-failover-\(UUID())").path
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        var session = SessionRecord(id: Self.id, channelID: "c", startedAt: 0)
        session.segment = 2  // as a reopen leaves it
        try catalog.insertSession(session)
        let writer = CatalogWriter(catalog: catalog, clock: ManualTimeSource(wallClockMilliseconds: 0), logger: Logger(label: "test"))
        var earlier = InterruptionRecord(sessionID: Self.id, ordinal: 2, startedAt: 10_000, cause: "transport: lost")
        (earlier.endedAt, earlier.mediaLostMs, earlier.connectionID, earlier.attempts) = (12_000, 2_500, "BOT1", 1)
        let log = InterruptionLog(sessionID: Self.id, settings: .init(), writer: writer, logger: Logger(label: "test"), random: Zero(),
                                  previous: [earlier], segment: 2)
        #expect(log.summary(now: at(0)).count == 1 && log.summary(now: at(0)).mediaLostNanoseconds == 2_500_000_000)

        log.failover(lastMediaWallClock: 30_000)
        #expect(log.summary(now: at(1)).current == "failover")
        log.recovered(connectionID: "BOT2", now: at(34), wallClock: 34_000)
        log.firstFrame(at: at(34.5))
        let summary = log.summary(now: at(60))
        #expect(summary.count == 2 && summary.rejoins == 2 && summary.current == nil, "\(summary)")
        let failover = try #require(summary.rows.last)
        #expect(failover.ordinal == 3 && failover.cause == "failover" && failover.startedAt == 30_000 && failover.endedAt == 34_000)
        #expect(failover.connectionID == "BOT2" && failover.mediaLostMs == 4_500, "to the first frame")
        #expect(summary.mediaLostNanoseconds == 7_000_000_000)

        // A later outage of this process takes the next ordinal.
        _ = log.begin(cause: "transport: lost", connectedAt: at(34), lastMediaAt: at(40), now: at(41), wallClock: 41_000)
        #expect(log.summary(now: at(42)).rows.last?.ordinal == 4)
        #expect(writer.drain(timeoutSeconds: 10))
        #expect(try catalog.interruptions(sessionID: Self.id).map(\.ordinal) == [3, 4], "this process's rows, under its segment")
    }
}

/// Randomness that is always 0: backoffs without jitter.
private struct Zero: RandomSource {
    func next() -> UInt64 { 0 }
}
