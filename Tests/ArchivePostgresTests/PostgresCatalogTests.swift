import Archive
import Foundation
import GRDB
import PostgresTestSupport
import Testing
@testable import ArchivePostgres

/// The PostgreSQL catalog against a real server: the schema it migrates to, many writers at
/// once, and the errors an operator sees.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct PostgresCatalogTests {
    let server: PostgresServer

    init() throws { server = try PostgresServer.shared.get() }

    func url(_ text: String) throws -> PostgresCatalogURL {
        guard case .postgres(let url) = try CatalogLocation.parse(text) else { throw CatalogBackendError.notPostgres }
        return url
    }

    /// Column names, nullability and kind of value match the SQLite schema, table by table.
    @Test func theMigratedSchemaMatchesSQLites() throws {
        let postgres = try PostgresCatalog(url: try url(try server.makeDatabase()))
        #expect(try postgres.appliedMigrations() == CatalogMigrations.identifiers)
        let sqlitePath = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-schema-\(UUID()).sqlite").path
        _ = try Catalog(path: sqlitePath)
        let sqlite = try DatabaseQueue(path: sqlitePath)
        let database = postgres.location.split(separator: "/").last.map(String.init) ?? ""
        for table in ["sessions", "connections", "recordings", "events"] {
            let expected = try sqlite.read { db in
                try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\" AS required, pk FROM pragma_table_info(?) ORDER BY name", arguments: [table])
                    .map { row -> String in
                        let type: String = row["type"]
                        let kind = ["INTEGER": "bigint", "TEXT": "text", "REAL": "double precision", "BLOB": "bytea"][type] ?? type
                        let required: Bool = row["required"] || (row["pk"] as Int) > 0
                        return "\(row["name"] as String) \(kind) \(required ? "NOT NULL" : "NULL")"
                    }
            }
            let actual = try server.psql("""
                SELECT column_name || ' ' || data_type || ' ' || CASE is_nullable WHEN 'NO' THEN 'NOT NULL' ELSE 'NULL' END
                FROM information_schema.columns WHERE table_name = '\(table)' ORDER BY column_name COLLATE "C"
                """, database: database).split(separator: "\n").map(String.init)
            #expect(actual == expected, "\(table)")
        }
        // The CHECK constraints came along too.
        #expect(throws: PostgresServer.Failure.self) {
            try server.psql("INSERT INTO sessions (id, channel_id, started_at) VALUES ('S', 'c', 1); INSERT INTO events (session_id, kind, received_at, payload_format, payload_text) VALUES ('S', 'notify', 1, 'binary', 'x')",
                            database: database)
        }
        // Times in milliseconds do not fit 32 bits.
        try postgres.insertSession(SessionRecord(id: "01JD0000000000000000000099", channelID: "big", startedAt: 1_795_000_000_000))
        #expect(try postgres.session(id: "01JD0000000000000000000099")?.startedAt == 1_795_000_000_000)
    }

    /// Twenty recbots starting together on a fresh database: the advisory lock lets one migrate,
    /// the others find the schema done; none fails.
    @Test func twentyOpenersOnAFreshDatabaseMigrateOnce() throws {
        let location = try url(try server.makeDatabase())
        try onThreads(20) { _ in
            let applied = try PostgresCatalog(url: location).appliedMigrations()
            if applied != CatalogMigrations.identifiers { throw CatalogError(path: "", reason: .olderSchema(missing: CatalogMigrations.identifiers)) }
        }
        #expect(try server.psql("SELECT count(*) FROM recbot_migrations", database: location.database) == "\(CatalogMigrations.identifiers.count)\n")
    }

    /// Twenty writers in one catalog at once (sessions, shared connection rows, recordings,
    /// event batches): every row arrives, none twice.
    @Test func twentyConcurrentWritersLoseNothing() throws {
        let location = try url(try server.makeDatabase())
        _ = try PostgresCatalog(url: location)
        let shared = "01JD00000000000000000SHARED"
        try PostgresCatalog(url: location).insertSession(SessionRecord(id: shared, channelID: "fleet", startedAt: 0))
        try onThreads(20) { writer in
            let catalog = try PostgresCatalog(url: location)
            let session = String(format: "01JD%022d", writer)
            try catalog.insertSession(SessionRecord(id: session, channelID: "fleet", startedAt: Int64(writer)))
            for part in 0..<5 {
                try catalog.upsertConnection(ConnectionRecord(sessionID: shared, connectionID: "C\(part)", firstSeenAt: Int64(writer), clientID: "w\(writer)"))
                try catalog.insertRecording(RecordingRecord(sessionID: session, connectionID: "S", part: part, path: "\(session)/\(part).webm",
                                                            videoCodec: "VP8", audioCodec: "OPUS", startedAt: Int64(part)))
                try catalog.insertEvents((0..<50).map { EventRecord(sessionID: session, kind: .notify, receivedAt: Int64($0), payload: .json("{\"n\":\($0)}")) })
            }
            try catalog.endSession(id: session, endedAt: 100, endReason: "done", exitStatus: 0)
            catalog.close()
        }
        let catalog = try #require(try PostgresCatalog.openForQuery(url: location))
        #expect(try catalog.sessions(SessionFilter(channelID: "fleet")).count == 21)
        #expect(try catalog.recordings().count == 100)
        // One row per connection however many writers raced to insert it (the order is who came first).
        #expect(try catalog.connections(sessionID: shared).map(\.connectionID).sorted() == ["C0", "C1", "C2", "C3", "C4"])
        for writer in 0..<20 {
            #expect(try catalog.eventCounts(sessionID: String(format: "01JD%022d", writer)) == [EventCount(kind: .notify, count: 250)])
        }
    }

    @Test func queriesNeverMigrateAndNameTheSchemaTheyFind() throws {
        let text = try server.makeDatabase()
        #expect(try PostgresCatalog.openForQuery(url: try url(text)) == nil, "nothing recorded there yet")
        _ = try PostgresCatalog(url: try url(text))
        let reader = try #require(try PostgresCatalog.openForQuery(url: try url(text)))
        #expect { try reader.insertSession(SessionRecord(id: "01JD0000000000000000000066", channelID: "c", startedAt: 1)) } throws: {
            "\($0)".contains("read-only")
        }
        let database = text.split(separator: "/").last?.split(separator: "?").first.map(String.init) ?? ""
        try server.psql("DELETE FROM recbot_migrations WHERE identifier = '0006_losses'", database: database)
        #expect { try PostgresCatalog.openForQuery(url: try url(text)) } throws: { ($0 as? CatalogError)?.reason == .olderSchema(missing: ["0006_losses"]) }
        try server.psql("INSERT INTO recbot_migrations VALUES ('0006_losses', 0), ('9999_future', 0)", database: database)
        #expect { try PostgresCatalog(url: try url(text)) } throws: { ($0 as? CatalogError)?.reason == .newerSchema(unknown: ["9999_future"]) }
        #expect { try PostgresCatalog.openForQuery(url: try url(text)) } throws: { ($0 as? CatalogError)?.reason == .newerSchema(unknown: ["9999_future"]) }
    }

    @Test func wrongPasswordAndNoServerAreTheirOwnErrors() throws {
        let text = try server.makeDatabase()
        let database = String(text.split(separator: "/").last?.split(separator: "?").first ?? "")
        #expect { try PostgresCatalog(url: try url(server.url(database: database, password: "wrong"))) } throws: { error in
            guard let error = error as? CatalogError, case .credentials = error.reason else { return false }
            return !"\(error)".contains(server.password) && !"\(error)".contains("wrong")
        }
        let nobody = try PostgresServer.freePort()
        #expect { try PostgresCatalog(url: try url("postgres://recbot:pw@127.0.0.1:\(nobody)/x?sslmode=disable")) } throws: { error in
            guard let error = error as? CatalogError, case .unreachable(let why) = error.reason else { return false }
            return why.contains("refused")
        }
    }

    /// sslmode as libpq reads it, against a server that speaks TLS with a certificate for
    /// `localhost` from a private CA, as a role pg_hba.conf admits over TLS only: require and
    /// prefer encrypt without checking the certificate; verify-full checks the chain and the name.
    @Test func sslModesEncryptAndVerifyAsLibpqDoes() throws {
        let database = try server.makeDatabase(owner: server.tlsUser)
        let authority = server.certificateAuthorityPath
        func location(_ host: String, _ query: String) -> String {
            "postgres://\(server.tlsUser):\(server.password)@\(host):\(server.port)/\(database)?\(query)"
        }
        for (host, query) in [("127.0.0.1", "sslmode=require"), ("127.0.0.1", "sslmode=prefer"),
                              ("localhost", "sslmode=verify-full&sslrootcert=\(authority)")] {
            let catalog = try PostgresCatalog(url: try url(location(host, query)))
            #expect(try catalog.sessions().isEmpty, "\(query)")
        }
        // Without TLS this role is refused: the modes above did encrypt.
        #expect { try PostgresCatalog(url: try url(location("127.0.0.1", "sslmode=disable"))) } throws: { error in
            guard let error = error as? CatalogError, case .credentials(let why) = error.reason else { return false }
            return why.contains("no encryption")
        }
        // The system's CAs do not vouch for the test CA; 127.0.0.1 is not the certificate's name.
        for (host, query, expected) in [("localhost", "sslmode=verify-full", "TLS: the certificate of localhost is not trusted"),
                                        ("127.0.0.1", "sslmode=verify-full&sslrootcert=\(authority)", "TLS: the server's certificate is not valid for 127.0.0.1")] {
            #expect { try PostgresCatalog(url: try url(location(host, query))) } throws: { error in
                guard let error = error as? CatalogError, case .unreachable(let why) = error.reason else { return false }
                return why.hasPrefix(expected) && !"\(error)".contains(server.password) && !"\(error)".contains("\n")
            }
        }
    }

    /// A connection the server drops (a restart, a failover, an idle timeout) is reopened by
    /// the next call.
    @Test func aDroppedConnectionIsReopened() throws {
        let text = try server.makeDatabase()
        let catalog = try PostgresCatalog(url: try url(text))
        try catalog.insertSession(SessionRecord(id: "01JD0000000000000000000077", channelID: "c", startedAt: 1))
        // Only this test's database: the server is shared with tests running beside it.
        let database = String(text.split(separator: "/").last?.split(separator: "?").first ?? "")
        try server.psql("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'recbot' AND datname = '\(database)'")
        // The first call after the drop may see it; the one after must work.
        _ = try? catalog.sessions()
        #expect(try catalog.sessions().map(\.id) == ["01JD0000000000000000000077"])
    }
}
