import Foundation
import GRDB
import Testing
@testable import Archive

func temporaryCatalogPath() throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-catalog-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("catalog.sqlite").path
}

/// Bytes and sibling files of a path, to prove a refused catalog was left untouched.
func snapshot(_ path: String) throws -> (bytes: Data, siblings: [String]) {
    let directory = (path as NSString).deletingLastPathComponent
    return (try Data(contentsOf: URL(fileURLWithPath: path)),
            try FileManager.default.contentsOfDirectory(atPath: directory).sorted())
}

@Suite struct CatalogMigrationTests {
    @Test func embeddedMigrationsAreTheFilesInMigrationsDirectory() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = root.appendingPathComponent("migrations")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count >= 2)
        #expect(EmbeddedMigrations.all.map(\.identifier) == files.map { String($0.dropLast(4)) })
        for (migration, file) in zip(EmbeddedMigrations.all, files) {
            #expect(migration.sql == (try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)))
        }
    }

    @Test func freshCatalogHasEveryMigrationAndUsesWAL() throws {
        let path = try temporaryCatalogPath()
        let catalog = try Catalog(path: path)
        #expect(try catalog.appliedMigrations() == Catalog.knownMigrations)
        let mode = try catalog.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
        let tables = try catalog.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'grdb%' AND name NOT LIKE 'event\\_search\\_%' ESCAPE '\\' ORDER BY name") }
        #expect(tables == ["compositions", "connections", "event_search", "events", "interruptions", "jobs", "recordings", "session_segments", "sessions", "uploads", "webhook_outbox"])
    }

    @Test func upgradesAnOlderSchemaKeepingItsData() throws {
        let path = try temporaryCatalogPath()
        // A catalog written by a recbot that knew only the first migration.
        do {
            let queue = try DatabaseQueue(path: path)
            try Catalog.migrator(upTo: "0001_catalog").migrate(queue)
            try queue.write { db in
                // Raw SQL: today's SessionRecord has columns the first schema did not.
                try db.execute(sql: "INSERT INTO sessions (id, channel_id, started_at) VALUES ('01JD0000000000000000000000', 'old', 1000)")
            }
            #expect(try queue.read { db in try Catalog.migrator().appliedMigrations(db) } == ["0001_catalog"])
        }
        let catalog = try Catalog(path: path)
        #expect(try catalog.appliedMigrations() == Catalog.knownMigrations)
        #expect(try catalog.sessions().map(\.channelID) == ["old"])
        #expect(try catalog.segments(sessionID: "01JD0000000000000000000000").map(\.segment) == [1], "0014 gives every session its first segment")
        let indexes = try catalog.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'sessions_by_channel_started'") }
        #expect(indexes == ["sessions_by_channel_started"])
    }

    @Test func refusesAFileThatIsNotSQLite() throws {
        let path = try temporaryCatalogPath()
        try Data("this is a text file, not a catalog\n".utf8).write(to: URL(fileURLWithPath: path))
        let before = try snapshot(path)
        #expect { try Catalog(path: path) } throws: { error in
            (error as? CatalogError)?.reason == .notSQLite && "\(error)".contains(path)
        }
        let after = try snapshot(path)
        #expect(after.bytes == before.bytes && after.siblings == before.siblings)
    }

    @Test func refusesACorruptDatabase() throws {
        let path = try temporaryCatalogPath()
        _ = try Catalog(path: path)
        // Keep the SQLite header, wreck the rest (schema page included).
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for index in 16..<min(bytes.count, 8192) { bytes[index] = UInt8(truncatingIfNeeded: index * 31) }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try snapshot(path)
        #expect { try Catalog(path: path) } throws: { error in
            guard let reason = (error as? CatalogError)?.reason else { return false }
            switch reason {
            case .corrupt, .notSQLite: return "\(error)".contains(path)
            default: return false
            }
        }
        let after = try snapshot(path)
        #expect(after.bytes == before.bytes && after.siblings == before.siblings)
    }

    @Test func refusesANewerSchema() throws {
        let path = try temporaryCatalogPath()
        do {
            let catalog = try Catalog(path: path)
            try catalog.pool.writeWithoutTransaction { db in
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('9999_from_the_future')")
                try db.checkpoint(.truncate)
            }
        }
        let before = try snapshot(path)
        #expect { try Catalog(path: path) } throws: { error in
            (error as? CatalogError)?.reason == .newerSchema(unknown: ["9999_from_the_future"]) && "\(error)".contains(path)
        }
        let after = try snapshot(path)
        #expect(after.bytes == before.bytes)
    }

    /// Issue 12: joins starting together on a fresh (or older) catalog raced through the
    /// migrations ("table already exists"). Twenty openers, one catalog, all must succeed.
    @Test(arguments: [nil, "0001_catalog"])
    func twentyOpenersAtOnceMigrateOnce(startingAt: String?) async throws {
        let path = try temporaryCatalogPath()
        if let startingAt { try Catalog.migrator(upTo: startingAt).migrate(try DatabaseQueue(path: path)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = try Catalog(path: path) } }
            try await group.waitForAll()
        }
        #expect(try Catalog(path: path).appliedMigrations() == Catalog.knownMigrations)
    }

    /// Query commands never migrate: an older catalog is read as it is, and says what it lacks.
    @Test func queriesOpenReadOnlyAndNeverMigrate() throws {
        let path = try temporaryCatalogPath()
        try Catalog.migrator(upTo: "0001_catalog").migrate(try DatabaseQueue(path: path))
        #expect { try Catalog.openForQuery(path: path) } throws: { error in
            guard case .olderSchema(let missing)? = (error as? CatalogError)?.reason else { return false }
            return missing.first == "0002_query_indexes" && "\(error)".contains("recbot repair")
        }
        #expect(try DatabaseQueue(path: path).read { db in try Catalog.migrator().appliedIdentifiers(db) } == ["0001_catalog"], "not migrated")
        _ = try Catalog(path: path)
        let reader = try #require(try Catalog.openForQuery(path: path))
        #expect(try reader.sessions().isEmpty)
        #expect(throws: CatalogError.self) { try reader.insertSession(SessionRecord(id: "01JD0000000000000000000000", channelID: "x", startedAt: 1)) }
        #expect(try Catalog.openForQuery(path: path + ".missing") == nil)
    }

    @Test func writersInSeveralConnectionsCoexist() async throws {
        // Each Catalog has its own pool and SQLite connections, as separate processes would.
        let path = try temporaryCatalogPath()
        _ = try Catalog(path: path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    let catalog = try Catalog(path: path)
                    for index in 0..<50 {
                        let id = ULID(milliseconds: UInt64(writer * 1000 + index), randomBytes: Array(repeating: UInt8(writer), count: 10))
                        try catalog.insertSession(SessionRecord(id: id.string, channelID: "c\(writer)", startedAt: Int64(index)))
                        try catalog.insertEvent(EventRecord(sessionID: id.string, kind: .notify, receivedAt: Int64(index), payload: .json("{}")))
                    }
                }
            }
            try await group.waitForAll()
        }
        let catalog = try Catalog(path: path)
        #expect(try catalog.sessions().count == 200)
    }
}
