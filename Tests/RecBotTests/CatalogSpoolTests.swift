import Archive
import ArchivePostgres
import Foundation
import Logging
import PostgresTestSupport
import SystemClock
import Testing
import WireCoding
@testable import RecBot

/// A PostgreSQL catalog that goes away mid-session: the writer keeps the writes in its local
/// spool, in order, and applies them when the server is back; nothing is lost, nothing doubled.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct CatalogSpoolTests {
    let session = "01JD00000000000000000SPOOL1"

    func start(_ server: PostgresServer) throws -> (PostgresCatalog, String) {
        let text = try server.makeDatabase()
        guard case .postgres(let url) = try CatalogLocation.parse(text) else { throw CatalogBackendMismatch() }
        let catalog = try PostgresCatalog(url: url)
        try catalog.insertSession(SessionRecord(id: session, channelID: "outage", startedAt: 0))
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-spool-\(UUID())/\(session).sqlite").path
        return (catalog, spool)
    }

    func writes(_ range: Range<Int>) -> [CatalogWrite] {
        range.flatMap { index -> [CatalogWrite] in
            let path = "recordings/\(session)/archive-S\(index).webm"
            var done = RecordingRecord(sessionID: session, connectionID: "S\(index)", path: path, videoCodec: "VP9", audioCodec: "OPUS", startedAt: Int64(index))
            done.status = .complete
            done.bytes = Int64(1_000 + index)
            return [
                .upsertConnection(ConnectionRecord(sessionID: session, connectionID: "S\(index)", firstSeenAt: Int64(index))),
                .startRecording(RecordingRecord(sessionID: session, connectionID: "S\(index)", path: path, videoCodec: "VP9", audioCodec: "OPUS", startedAt: Int64(index))),
                .events([EventRecord(sessionID: session, kind: .notify, eventType: "connection.created", receivedAt: Int64(index), payload: .json("{\"i\":\(index)}"))]),
                .completeRecording(done, createdPath: path),
            ]
        }
    }

    @Test func writesMadeWhileTheServerIsDownArriveWhenItIsBack() throws {
        let server = try PostgresServer()
        defer { server.remove() }
        let (catalog, spoolPath) = try start(server)
        let writer = CatalogWriter(catalog: catalog, spoolPath: spoolPath, replayIntervalSeconds: 0.2, clock: SystemTimeSource(), logger: Logger(label: "test"))
        for write in writes(0..<3) { writer.submit(write) }
        #expect(writer.drain(timeoutSeconds: 30))
        server.stop()
        for write in writes(3..<10) { writer.submit(write) }
        #expect(writer.drain(timeoutSeconds: 60))
        #expect(writer.spooled.writes == 28, "everything made while the server was down waits in the spool")
        #expect(FileManager.default.fileExists(atPath: spoolPath))
        try server.start()
        for write in writes(10..<12) { writer.submit(write) }
        #expect(writer.drain(timeoutSeconds: 60))
        #expect(writer.spooled.writes == 0 && !FileManager.default.fileExists(atPath: spoolPath), "replayed and removed")
        #expect(writer.error == nil && writer.dropped == 0)
        let recordings = try catalog.recordings(RecordingFilter(sessionID: session))
        #expect(recordings.map(\.connectionID) == (0..<12).map { "S\($0)" })
        #expect(recordings.allSatisfy { $0.status == .complete })
        #expect(try catalog.eventCounts(sessionID: session) == [EventCount(kind: .notify, count: 12)])
        #expect(try catalog.connections(sessionID: session).count == 12)
    }

    /// The join ended while the server was still down: the spool stays, and a later replay
    /// (what `recbot repair` does) applies it once the server answers.
    @Test func aSpoolLeftBehindIsAppliedLater() throws {
        let server = try PostgresServer()
        defer { server.remove() }
        let (catalog, spoolPath) = try start(server)
        server.stop()
        do {
            let writer = CatalogWriter(catalog: catalog, spoolPath: spoolPath, replayIntervalSeconds: 0.2, clock: SystemTimeSource(), logger: Logger(label: "test"))
            for write in writes(0..<4) { writer.submit(write) }
            writer.submit(.endSession(id: session, endedAt: 99, endReason: "duration", exitStatus: 0))
            #expect(writer.drain(timeoutSeconds: 60))
            #expect(writer.spooled.writes == 17 && writer.spooled.path == spoolPath)
            #expect(CatalogSpool.leftovers(in: (spoolPath as NSString).deletingLastPathComponent) == [spoolPath])
            #expect(try CatalogSpool(path: spoolPath) == nil, "locked while its writer lives")
            #expect(writer.finish(timeoutSeconds: 60))
            #expect(writer.spooled.writes == 17 && writer.spooled.path == spoolPath, "left for recbot repair")
        }
        try server.start()
        let spool = try #require(try CatalogSpool(path: spoolPath))
        let result = try spool.replay(into: catalog)
        #expect(result.applied == 17 && result.refused.isEmpty)
        #expect(try catalog.session(id: session)?.endReason == "duration")
        #expect(try catalog.recordings(RecordingFilter(sessionID: session)).count == 4)
    }

    /// A fresh database of the shared server with this test's session, its name, and a spool path.
    func sharedServerCatalog(channel: String) throws -> (PostgresServer, PostgresCatalog, database: String, spool: String) {
        let server = try PostgresServer.shared.get()
        let text = try server.makeDatabase()
        guard case .postgres(let url) = try CatalogLocation.parse(text) else { throw CatalogBackendMismatch() }
        let catalog = try PostgresCatalog(url: url)
        try catalog.insertSession(SessionRecord(id: session, channelID: channel, startedAt: 0))
        let database = String(text.split(separator: "/").last?.split(separator: "?").first ?? "")
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-spool-\(UUID())/\(session).sqlite").path
        return (server, catalog, database, spool)
    }

    /// A failover leaves the writer on a read-only standby (SQLSTATE 25006): the writes wait in
    /// the spool, none is refused, and they arrive once the server takes writes again.
    @Test func aReadOnlyServerKeepsEveryWriteInTheSpool() throws {
        let (server, catalog, database, spoolPath) = try sharedServerCatalog(channel: "failover")
        let writer = CatalogWriter(catalog: catalog, spoolPath: spoolPath, replayIntervalSeconds: 0.2, clock: SystemTimeSource(), logger: Logger(label: "test"))
        try server.psql("ALTER DATABASE \"\(database)\" SET default_transaction_read_only = on")
        try server.psql("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'recbot'")
        _ = try? catalog.sessions()  // the drop is seen here: the writes meet the read-only server itself
        for write in writes(0..<3) { writer.submit(write) }
        writer.submit(.endSession(id: session, endedAt: 99, endReason: "duration", exitStatus: 0))
        #expect(writer.drain(timeoutSeconds: 30))
        #expect(writer.spooled.writes == 13, "read-only: every write waits")
        #expect(writer.error == nil, "nothing was refused")
        try server.psql("ALTER DATABASE \"\(database)\" SET default_transaction_read_only = off")
        try server.psql("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'recbot'")
        // Longer than the catalog's 30 s statement timeout: when the writer's connection has not
        // yet seen its backend go, postgres-nio may leave the replay's first query unanswered,
        // and only that timeout ends it (a CI run replayed at 30.5 s, just past a 30 s finish).
        #expect(writer.finish(timeoutSeconds: 60))
        #expect(writer.spooled.writes == 0 && writer.error == nil)
        #expect(try catalog.recordings(RecordingFilter(sessionID: session)).map(\.status) == [.complete, .complete, .complete])
        #expect(try catalog.session(id: session)?.endReason == "duration")
    }

    /// A statement that outlives `statement_timeout` (SQLSTATE 57014) stops the replay and
    /// deletes nothing; the next replay applies every write.
    @Test func aStatementTimeoutStopsTheReplayAndKeepsTheRest() throws {
        let (server, catalog, database, spoolPath) = try sharedServerCatalog(channel: "slow")
        try server.psql("""
            CREATE FUNCTION slow_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$ LANGUAGE plpgsql;
            CREATE TRIGGER slow BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION slow_insert();
            ALTER DATABASE "\(database)" SET statement_timeout = '100ms';
            """, database: database)
        try server.psql("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'recbot'")
        _ = try? catalog.sessions()  // the first call after the drop may see it
        let spool = try #require(try CatalogSpool(path: spoolPath))
        for write in writes(0..<2) { try spool.append(write) }
        #expect(throws: CatalogError.self) { try spool.replay(into: catalog) }
        #expect(spool.count == 6, "the connection and the recording went in; the events and what follows wait")
        try server.psql("DROP TRIGGER slow ON events", database: database)
        let result = try spool.replay(into: catalog)
        #expect(result.applied == 6 && result.refused.isEmpty && result.heldAt == nil && spool.isEmpty)
        #expect(try catalog.eventCounts(sessionID: session) == [EventCount(kind: .notify, count: 2)])
    }

    /// A write the catalog refuses for good is dropped only when it may be (a connection's
    /// refresh); a session's end holds the replay, and it and the rest stay.
    @Test func anEssentialWriteRefusedForGoodHoldsTheSpool() throws {
        let (_, catalog, _, spoolPath) = try sharedServerCatalog(channel: "held")
        let unknown = "01JD00000000000000000SPOOL9"
        let spool = try #require(try CatalogSpool(path: spoolPath))
        try spool.append(.upsertConnection(ConnectionRecord(sessionID: unknown, connectionID: "S1", firstSeenAt: 1)))
        try spool.append(.endSession(id: unknown, endedAt: 9, endReason: "duration", exitStatus: 0))
        try spool.append(.endSession(id: session, endedAt: 9, endReason: "duration", exitStatus: 0))
        let result = try spool.replay(into: catalog)
        #expect(result.refused.count == 1 && result.refused.first?.hasPrefix("connection") == true)
        #expect(result.heldAt?.hasPrefix("session end") == true)
        #expect(spool.count == 2, "the refused end and the write after it stay")
        #expect(try catalog.session(id: session)?.endedAt == nil)
    }
}

struct CatalogBackendMismatch: Error {}
