import Archive
import Foundation
@testable import RecBot
import Recorder
import SoraSignalingCore
import Testing

/// Rejoins on the manual clock (issue 27's cases that need no real network): the server cuts
/// recbot's connection, recbot's rejoin schedule waits on the simulated clock and joins again
/// into the same session and recordings. What the catalog, the parts and the timeline show.
@Suite final class RejoinSimulationTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-rejoin-sim-\(UUID())").path

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func record(_ options: SimulatedSession.Options, seconds: Double) throws -> SimulatedSession {
        let session = try SimulatedSession.recorded(options, seconds: seconds, under: root)
        #expect(session.finished.allSatisfy { $0.error == nil }, "\(session.finished.map(\.filename))")
        return session
    }

    static func plan(publishers: Int) -> SimulatedSession.Options {
        var options = SimulatedSession.Options()
        options.plan.publishers = publishers
        options.plan.seed = 5
        return options
    }

    /// One drop 6 s in: one outage in the catalog, ended by the first attempt (the backoff's first
    /// delay is under a second); each sender's file before it is part 1 and after it part 2; and
    /// on the session's timeline both parts keep the one lag of a clean session, so the gap in
    /// the archive is exactly the media that did not come.
    @Test func aCutConnectionIsRejoinedInTheSameSessionAndTheGapIsAsLongAsTheOutage() throws {
        var options = Self.plan(publishers: 2)
        options.recorderDrops = [(at: 6, downSeconds: 0)]
        let session = try record(options, seconds: 16)
        #expect(session.connectionsMade == 2 && session.endings.map(\.cause) == [.connectionLost], "\(session.endings)")

        let summary = session.interruptions.summary(now: session.clock.now())
        #expect(summary.count == 1 && summary.rejoins == 1 && summary.current == nil, "\(summary)")
        #expect(summary.mediaLostNanoseconds > 0 && summary.mediaLostNanoseconds < 2_000_000_000, "\(summary)")
        let rows = try session.catalog.interruptions(sessionID: SimulatedSession.sessionID)
        #expect(rows.count == 1 && rows.first?.endedAt != nil && rows.first?.attempts == 1, "\(rows)")

        let bySender = Dictionary(grouping: session.finished, by: \.connectionID)
        #expect(bySender.count == 2)
        for (sender, files) in bySender {
            #expect(files.map(\.part).sorted() == [1, 2], "\(sender): parts \(files.map(\.part))")
            let sidecars = try files.sorted { $0.part < $1.part }.map { file in
                try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: session.layout.path(of: file.sidecarFilename))))
                             as? [String: Any])
            }
            let (stop, start) = (sidecars[0]["stop_time_offset"] as? Int ?? .max, sidecars[1]["start_time_offset"] as? Int ?? -1)
            #expect(stop <= start, "\(sender): part 2 starts at \(start) s, before part 1 stops (\(stop) s)")
        }
        let lags = try ArchiveTiming.trackLags(session)
        #expect(lags.count == 8, "\(lags)")
        let spread = ArchiveTiming.spread(lags)
        #expect(spread <= 2, "every track of every part on one timeline (lags in ms): \(lags)")
    }

    /// The server is gone for 5 s after the cut (a restart): attempts into it fail, each waiting
    /// longer (the schedule doubles from under a second, with jitter), and the one after its
    /// return records. The outage ends within the backoff's delay of the server's return.
    @Test func aServerThatIsDownIsWaitedForWithBackoff() throws {
        var options = Self.plan(publishers: 1)
        options.recorderDrops = [(at: 4, downSeconds: 5)]
        let session = try record(options, seconds: 20)
        let rows = try session.catalog.interruptions(sessionID: SimulatedSession.sessionID)
        let row = try #require(rows.first)
        #expect(rows.count == 1, "\(rows)")
        // Delays of at most 1, 2 and 4 s: at least three attempts span 5 s of downtime.
        #expect(row.attempts >= 3 && session.connectionsMade == 2, "\(row)")
        let outage = Double(try #require(row.endedAt) - row.startedAt) / 1_000
        #expect(outage >= 5 && outage <= 5 + 4 + 0.5, "the outage lasted \(outage) s for 5 s of downtime")
        #expect(session.finished.map(\.part).sorted() == [1, 2])
        let lags = try ArchiveTiming.trackLags(session)
        let spread = ArchiveTiming.spread(lags)
        #expect(spread <= 2, "lags in ms: \(lags)")
    }

    /// The same seed gives the same files, byte for byte, through a rejoin.
    @Test func aRejoinIsDeterministic() throws {
        var options = Self.plan(publishers: 1)
        options.recorderDrops = [(at: 3, downSeconds: 0)]
        let first = try record(options, seconds: 8), second = try record(options, seconds: 8)
        let bytes = { (session: SimulatedSession) in try session.finished.map { try Data(contentsOf: URL(fileURLWithPath: session.layout.path(of: $0.filename))) } }
        #expect(first.finished.count == 2)
        #expect(try bytes(first) == bytes(second))
    }
}
