import Archive
import Foundation
import PostgresTestSupport
import Testing

/// `recbot compose`'s files in both catalogs (issue 44): a row per output path of a session,
/// replaced when the same path is composed again, filtered by session and channel.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct CompositionContractTests {
    func composition(_ session: String, path: String, from: Int64 = 0, duration: Int64 = 60_000, at time: Int64) -> CompositionRecord {
        CompositionRecord(sessionID: session, path: path, captionsPath: nil, layout: "grid", fromMs: from, durationMs: duration, width: 1280,
                          height: 720, fps: 30, videoCodec: "VP8", audioCodec: "OPUS", senders: 4, bytes: 12_345_678_901, host: "host-a",
                          composedAt: time)
    }

    @Test(arguments: CatalogBackend.allCases) func compositionsAreFoundBySessionAndChannelAndReplacedByPath(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        let (first, second) = ("01JD00000000000000000000C1", "01JD00000000000000000000C2")
        try catalog.insertSession(SessionRecord(id: first, channelID: "lobby", startedAt: 1_000))
        try catalog.insertSession(SessionRecord(id: second, channelID: "hall", startedAt: 2_000))
        let whole = composition(first, path: "recordings/\(first)/composed-\(first).webm", at: 5_000)
        try catalog.saveComposition(whole)
        try catalog.saveComposition(composition(second, path: "/tmp/elsewhere.webm", at: 6_000))
        var excerpt = composition(first, path: "/tmp/excerpt.webm", from: 2_000, duration: 2_000, at: 7_000)
        excerpt.captionsPath = "/tmp/excerpt.vtt"
        try catalog.saveComposition(excerpt)
        #expect(try catalog.compositions(CompositionFilter()).map(\.path) == [whole.path, "/tmp/elsewhere.webm", excerpt.path])
        #expect(try catalog.compositions(CompositionFilter(sessionID: first)) == [whole, excerpt])
        #expect(try catalog.compositions(CompositionFilter(channelID: "hall")).map(\.sessionID) == [second])
        #expect(try catalog.compositions(CompositionFilter(limit: 1)) == [whole])

        // Composed again to the same path: one row, the new one.
        var again = composition(first, path: whole.path, duration: 61_000, at: 8_000)
        again.layout = "grid"
        try catalog.saveComposition(again)
        #expect(try catalog.compositions(CompositionFilter(sessionID: first)) == [excerpt, again])
    }
}
