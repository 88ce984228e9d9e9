@testable import Archive
import ArchivePostgres
import Foundation
import GRDB
import PostgresTestSupport
import Testing

/// `recbot search` (issue 44) on both catalogs: the same substrings found, Japanese included,
/// in text, UTF-8 binary messages and escaped JSON, newest first, with the same filters.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct SearchContractTests {
    let lobby = "01JD0000000000000000000001", studio = "01JD0000000000000000000002"

    /// Events at 1 s steps from 10 s, in this order.
    func seeded(_ backend: CatalogBackend) throws -> any CatalogStore {
        let catalog = try backend.makeCatalog()
        try catalog.insertSession(SessionRecord(id: lobby, channelID: "lobby", startedAt: 1_000))
        try catalog.insertSession(SessionRecord(id: studio, channelID: "studio", startedAt: 2_000))
        let payloads: [(String, EventKind, String?, String?, EventPayload)] = [
            (lobby, .datachannel, "#chat", "A", .text("明日の契約書を確認します")),
            (lobby, .datachannel, "#chat", "B", .binary(Array("契約の件、了解です".utf8))),
            (lobby, .notify, nil, nil, .json(#"{"type":"connection.created","metadata":{"name":"\u7530\u4e2d\u592a\u90ce"}}"#)),
            (studio, .push, nil, nil, .json(#"{"message":"Hello World"}"#)),
            (studio, .signaling, nil, nil, .json(#"{"type":"offer","note":"契約"}"#)),
            (studio, .datachannel, "#bin", "C", .binary([0xFF, 0xFE, 0x00, 0x41, 0x42, 0x43])),
            (studio, .datachannel, "#chat", "C", .text("100% done_now \"quoted\"")),
        ]
        for (index, (session, kind, label, sender, payload)) in payloads.enumerated() {
            try catalog.insertEvent(EventRecord(sessionID: session, kind: kind, eventType: kind == .notify ? "connection.created" : nil,
                                                label: label, senderConnectionID: sender, receivedAt: 10_000 + Int64(index) * 1_000,
                                                payload: payload))
        }
        return catalog
    }

    func found(_ catalog: any CatalogStore, _ text: String, kinds: [EventKind] = [], channel: String? = nil,
               since: Int64? = nil, until: Int64? = nil, limit: Int = 50) throws -> [Int64] {
        try catalog.searchMessages(MessageSearch(text: text, channelID: channel, since: since, until: until, kinds: kinds, limit: limit))
            .map { $0.event.receivedAt / 1_000 - 10 }
    }

    @Test(arguments: CatalogBackend.allCases) func substringsAreFoundInEveryFormNewestFirst(backend: CatalogBackend) throws {
        let catalog = try seeded(backend)
        #expect(try found(catalog, "契約書") == [0], "three characters: the trigram index")
        #expect(try found(catalog, "契約") == [1, 0], "two characters: a scan; signaling is not searched by default")
        #expect(try found(catalog, "契約の件") == [1], "a binary message that is UTF-8 text")
        #expect(try found(catalog, "田中太郎") == [2], "JSON written with \\u escapes, unescaped")
        #expect(try found(catalog, "田中") == [2])
        #expect(try found(catalog, "hello world") == [3], "ASCII case is folded")
        #expect(try found(catalog, "契約", kinds: [.signaling]) == [4])
        #expect(try found(catalog, "ABC").isEmpty, "bytes that are not text are not searched")
        #expect(try found(catalog, "0% d") == [6] && (try found(catalog, "%")) == [6] && (try found(catalog, "e_n")) == [6])
        #expect(try found(catalog, "don_").isEmpty && (try found(catalog, "e%n")).isEmpty, "% and _ match only themselves")
        #expect(try found(catalog, "\"quoted\"") == [6], "quotes are not query syntax")
        #expect(try found(catalog, "NEAR(").isEmpty && (try found(catalog, "x AND y")).isEmpty, "nor is FTS5 syntax")
    }

    @Test(arguments: CatalogBackend.allCases) func filtersNarrowTheResults(backend: CatalogBackend) throws {
        let catalog = try seeded(backend)
        #expect(try found(catalog, "o", channel: "studio") == [6, 3])
        #expect(try found(catalog, "o", channel: "lobby") == [2])
        #expect(try found(catalog, "契約", since: 11_000) == [1] && (try found(catalog, "契約", until: 11_000)) == [0])
        #expect(try found(catalog, "o", limit: 1) == [6])
        let inSession = try catalog.searchMessages(MessageSearch(text: "契約", sessionID: studio, kinds: [.signaling, .datachannel]))
        #expect(inSession.map(\.channelID) == ["studio"] && inSession.first?.event.kind == .signaling)
    }

    @Test(arguments: CatalogBackend.allCases) func deletedEventsLeaveTheIndex(backend: CatalogBackend) throws {
        let catalog = try seeded(backend)
        try catalog.endSession(id: lobby, endedAt: 60_000, endReason: "duration-elapsed", exitStatus: 0)
        let mark = try catalog.markPruned(sessionID: lobby, host: nil, at: 70_000, deletingEvents: true)
        #expect(mark.eventsDeleted == 3)
        #expect(try found(catalog, "契約").isEmpty && (try found(catalog, "田中太郎")).isEmpty)
        try catalog.insertEvent(EventRecord(sessionID: studio, kind: .datachannel, label: "#chat", senderConnectionID: "C",
                                            receivedAt: 20_000, payload: .text("新しい契約書")))
        #expect(try found(catalog, "契約書") == [10])
        if let sqlite = catalog as? Catalog {
            // FTS5 checks its index against what the triggers gave it.
            try sqlite.write { db in try db.execute(sql: "INSERT INTO event_search (event_search) VALUES ('integrity-check')") }
        }
    }

    @Test(arguments: CatalogBackend.allCases) func aMatchIsPlacedInItsSendersRecording(backend: CatalogBackend) throws {
        let catalog = try seeded(backend)
        var first = RecordingRecord(sessionID: lobby, connectionID: "A", path: "recordings/\(lobby)/archive-A_0001.webm", videoCodec: "VP8",
                                    audioCodec: "OPUS", startedAt: 2_000, status: .complete)
        first.endedAt = 8_000
        first.durationMs = 6_000
        var second = first
        (second.part, second.path, second.startedAt, second.endedAt, second.durationMs) = (2, "recordings/\(lobby)/archive-A_0002.webm", 9_000, nil, nil)
        for row in [first, second] { try catalog.insertRecording(row) }
        let match = try #require(try catalog.searchMessages(MessageSearch(text: "契約書")).first)
        let placement = try #require(MessagePlacement.locate(match.event, in: try catalog.recordings(RecordingFilter(sessionID: lobby, connectionID: "A"))))
        #expect(placement.recording.part == 2 && placement.offsetMilliseconds == 1_000, "the part being written when it arrived")
        #expect(MessagePlacement.locate(match.event, in: [first]) == nil, "the first part had ended")
    }

    /// Events stored before migration 0017 (a UTF-8 binary message, escaped JSON, text) are
    /// searchable once the catalog is opened by this version.
    static let olderEvents: [(String, String?, Data?)] = [
        ("text", "旧い契約書", nil),
        ("binary", nil, Data("バイナリの契約書".utf8)),
        ("json", #"{"name":"\u7530\u4e2d\u592a\u90ce"}"#, nil),
    ]

    @Test func sqliteBackfillsEventsStoredBeforeTheIndex() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-search-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try Catalog.migrator(upTo: "0016_remote_deletion").migrate(queue)
            try queue.write { db in
                try db.execute(sql: "INSERT INTO sessions (id, channel_id, started_at) VALUES (?, 'old', 1000)", arguments: [lobby])
                for (index, (format, text, blob)) in Self.olderEvents.enumerated() {
                    try db.execute(sql: """
                        INSERT INTO events (session_id, kind, received_at, payload_format, payload_text, payload_blob)
                        VALUES (?, 'datachannel', ?, ?, ?, ?)
                        """, arguments: [lobby, 10_000 + index * 1_000, format, text, blob])
                }
            }
        }
        let catalog = try Catalog(path: path)
        #expect(try found(catalog, "契約書") == [1, 0] && (try found(catalog, "田中太郎")) == [2])
    }

    @Test func postgresBackfillsEventsStoredBeforeTheIndex() throws {
        let server = try PostgresServer.shared.get()
        let database = try server.makeDatabase(owner: "recbot")
        guard case .postgres(let url) = try CatalogLocation.parse(server.url(database: database)) else { throw CatalogBackendError.notPostgres }
        _ = try PostgresCatalog(url: url)
        // Back to the schema before 0017, with the events an older version stored.
        try server.psql("""
            ALTER TABLE events DROP COLUMN search_text; DROP INDEX events_by_time;
            DELETE FROM recbot_migrations WHERE identifier = '0017_message_search';
            INSERT INTO sessions (id, channel_id, started_at) VALUES ('\(lobby)', 'old', 1000);
            INSERT INTO events (session_id, kind, received_at, payload_format, payload_text, payload_blob) VALUES
              ('\(lobby)', 'datachannel', 10000, 'text', '旧い契約書', NULL),
              ('\(lobby)', 'datachannel', 11000, 'binary', NULL, convert_to('バイナリの契約書', 'UTF8')),
              ('\(lobby)', 'datachannel', 12000, 'json', '{"name":"\\u7530\\u4e2d\\u592a\\u90ce"}', NULL);
            """, database: database)
        let catalog = try PostgresCatalog(url: url)
        #expect(try found(catalog, "契約書") == [1, 0] && (try found(catalog, "田中太郎")) == [2])
        #expect(try catalog.appliedMigrations().last == CatalogMigrations.identifiers.last)
    }

    /// pg_trgm under LC_CTYPE C makes no trigrams of Japanese: search still finds it, by a scan,
    /// and says why it is slow; a UTF-8 database (the tests' cluster) and SQLite say nothing.
    @Test func aDatabaseWithoutAUTF8LocaleIsReportedAndStillSearched() throws {
        let server = try PostgresServer.shared.get()
        let name = "tc_\(UUID().uuidString.prefix(6).lowercased())"
        try server.psql("CREATE DATABASE \(name) OWNER recbot TEMPLATE template0 ENCODING 'UTF8' LC_CTYPE 'C' LC_COLLATE 'C'")
        guard case .postgres(let url) = try CatalogLocation.parse(server.url(database: name)) else { throw CatalogBackendError.notPostgres }
        let catalog = try PostgresCatalog(url: url)
        try catalog.insertSession(SessionRecord(id: lobby, channelID: "lobby", startedAt: 1_000))
        try catalog.insertEvent(EventRecord(sessionID: lobby, kind: .datachannel, label: "#chat", senderConnectionID: "A", receivedAt: 10_000,
                                            payload: .text("明日の契約書を確認します")))
        #expect(try catalog.searchIndexCaveat()?.contains("LC_CTYPE is C") == true)
        #expect(try found(catalog, "契約書") == [0])
        #expect(try CatalogBackend.postgres.makeCatalog().searchIndexCaveat() == nil)
        #expect(try CatalogBackend.sqlite.makeCatalog().searchIndexCaveat() == nil)
    }
}
