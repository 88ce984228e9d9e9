import Archive
import Foundation
import Logging
import PostgresNIO

/// The catalog on a PostgreSQL server, for fleets: many recbots on many hosts write one
/// catalog, and the query commands read it. Same migrations (migrations/*.sql, translated by
/// `PostgresDialect`), same queries, same JSON as the SQLite catalog.
public final class PostgresCatalog: CatalogStore {
    let link: PostgresLink
    public var location: String { link.url.redacted }

    /// Every migration runs in one transaction that first takes this transaction-scoped
    /// advisory lock ("recbot" in ASCII): joins starting together on a fresh or older catalog
    /// migrate one after the other, and a crash mid-migration rolls the whole step back.
    static let migrationLockKey: Int64 = 0x72_65_63_62_6F_74

    /// Connects and applies pending migrations (the join, repair and verify path).
    public init(url: PostgresCatalogURL, logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) {
        link = PostgresLink(url: url, logger: logger)
        try migrate(logger: logger)
    }

    private init(link: PostgresLink) {
        self.link = link
    }

    /// Connects for the query commands: never migrates. An older or newer schema is an error
    /// that says which; a database recbot never wrote to is nil (nothing recorded yet).
    public static func openForQuery(url: PostgresCatalogURL, logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) -> PostgresCatalog? {
        let catalog = PostgresCatalog(link: PostgresLink(url: url, logger: logger, readOnly: true))
        let applied = try catalog.link.withConnection { session in try Self.appliedIdentifiers(session) }
        guard let applied else { return nil }
        try Self.checkNotNewer(applied, location: catalog.location)
        let missing = CatalogMigrations.identifiers.filter { !applied.contains($0) }
        if !missing.isEmpty { throw CatalogError(path: catalog.location, reason: .olderSchema(missing: missing)) }
        return catalog
    }

    /// Closes the connection now rather than when the last reference goes.
    public func close() { link.close() }

    public func appliedMigrations() throws(CatalogError) -> [String] {
        try link.withConnection { session in
            let rows = try session.query("SELECT identifier FROM recbot_migrations ORDER BY identifier COLLATE \"C\"")
            return try rows.rows.map { try $0.decode(String.self) }
        }
    }

    // MARK: Migrations

    private func migrate(logger: Logger) throws(CatalogError) {
        let location = self.location
        // Its own connection, with more time per statement: building an index over a large
        // catalog's events (migration 0017) takes longer than any query should.
        let migrations = PostgresLink(url: link.url, logger: logger, statementTimeout: .minutes(10))
        defer { migrations.close() }
        let applied = try migrations.transaction { session -> [String] in
            try session.query("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))")
            try session.execute("""
                CREATE TABLE IF NOT EXISTS recbot_migrations (identifier TEXT PRIMARY KEY NOT NULL, applied_at BIGINT NOT NULL)
                """)
            let before = try Self.appliedIdentifiers(session) ?? []
            try Self.checkNotNewer(before, location: location)
            var applied: [String] = []
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            for migration in CatalogMigrations.all where !before.contains(migration.identifier) {
                for statement in PostgresDialect.statements(fromSQLite: MigrationDialect.postgres.sql(of: migration.sql)) {
                    try session.execute(statement)
                }
                if migration.identifier == SearchTextBackfill.migration { try Self.backfillSearchText(session) }
                try session.query("INSERT INTO recbot_migrations (identifier, applied_at) VALUES (\(migration.identifier), \(now))")
                applied.append(migration.identifier)
            }
            return applied
        }
        if !applied.isEmpty {
            logger.notice("catalog schema updated", metadata: ["catalog": "\(location)", "applied": "\(applied.joined(separator: ","))"])
        }
    }

    /// nil when recbot never created its tables in this database.
    private static func appliedIdentifiers(_ session: PostgresLink.Session) throws -> Set<String>? {
        let exists = try session.query("SELECT to_regclass('recbot_migrations') IS NOT NULL").rows.first?.decode(Bool.self) ?? false
        guard exists else { return nil }
        return Set(try session.query("SELECT identifier FROM recbot_migrations").rows.map { try $0.decode(String.self) })
    }

    private static func checkNotNewer(_ applied: Set<String>, location: String) throws(CatalogError) {
        let unknown = applied.subtracting(CatalogMigrations.identifiers).sorted()
        if !unknown.isEmpty { throw CatalogError(path: location, reason: .newerSchema(unknown: unknown)) }
    }
}

extension PostgresCatalog {
    /// Migration 0017's `search_text` for the events stored before it (see `SearchTextBackfill`).
    static func backfillSearchText(_ session: PostgresLink.Session) throws {
        var after: Int64 = 0
        while true {
            let rows = try session.query("""
                SELECT id, payload_format, payload_text, payload_blob FROM events
                WHERE id > \(after) AND \(unescaped: SearchTextBackfill.candidates) ORDER BY id LIMIT \(Int64(SearchTextBackfill.batchSize))
                """).rows
            var last: Int64?
            for row in rows {
                let (id, format, text, blob) = try row.decode((Int64, String, String?, ByteBuffer?).self)
                last = id
                let payload = SearchTextBackfill.payload(format: format, text: text, bytes: blob.map { Array($0.readableBytesView) })
                if let searched = SearchText.of(payload) {
                    try session.query("UPDATE events SET search_text = \(searched) WHERE id = \(id)")
                }
            }
            guard let last else { return }
            after = last
        }
    }
}
