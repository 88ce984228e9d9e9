import Foundation
import GRDB
import Logging

/// The SQLite catalog (the embedded default; `CatalogStore` says what every catalog does) of sessions, connections, recordings and events.
///
/// WAL mode and a busy timeout let `recbot sessions list` read while several bots write.
/// GRDB starts a pool's write transactions IMMEDIATE, so concurrent writer processes
/// queue on the busy timeout instead of failing on a read-to-write lock upgrade.
public final class Catalog: CatalogStore {
    public let path: String
    public var location: String { path }
    let pool: DatabasePool

    public static let busyTimeout: TimeInterval = 10

    /// The migrations this binary carries, in order (embedded from migrations/*.sql at build time).
    public static var knownMigrations: [String] { EmbeddedMigrations.all.map(\.identifier) }

    /// Opens (creating when missing) the catalog and applies pending migrations.
    /// A file that is not SQLite, is corrupt, or has a newer schema is left untouched.
    public init(path: String, logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) {
        self.path = path
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: path) {
            try Catalog.inspectExisting(path: path)
        } else {
            let directory = (path as NSString).deletingLastPathComponent
            do {
                try fileManager.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
            } catch {
                throw CatalogError(path: path, reason: .cannotCreateDirectory(error.localizedDescription))
            }
        }
        do {
            // Joins that start together on a fresh or older catalog would race through the
            // migrations ("table already exists"): one process migrates at a time.
            let lock = try FileLock(path: path + ".lock", for: path)
            defer { lock.release() }
            pool = try DatabasePool(path: path, configuration: Catalog.configuration(readonly: false))
            let migrator = Catalog.migrator()
            let before = try pool.read { db in try migrator.appliedIdentifiers(db) }
            try migrator.migrate(pool)
            let applied = Catalog.knownMigrations.filter { !before.contains($0) }
            if !applied.isEmpty {
                logger.notice("catalog schema updated", metadata: [
                    "catalog": "\(path)", "applied": "\(applied.joined(separator: ","))", "created": "\(before.isEmpty)",
                ])
            }
        } catch {
            throw CatalogError(path: path, error)
        }
    }

    /// Opens an existing catalog to write (verify, repair), migrating it; nil when there is none yet.
    public static func openExisting(path: String) throws(CatalogError) -> Catalog? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try Catalog(path: path)
    }

    /// Opens an existing catalog read-only for the query commands, or returns nil when there is
    /// none yet. It never migrates: a newer or older schema is an error that says so.
    public static func openForQuery(path: String) throws(CatalogError) -> Catalog? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try inspectExisting(path: path)
        do {
            let pool = try DatabasePool(path: path, configuration: configuration(readonly: true))
            let applied = try pool.read { db in try db.tableExists("grdb_migrations") ? Set(String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")) : [] }
            let missing = knownMigrations.filter { !applied.contains($0) }
            if !missing.isEmpty { throw CatalogError(path: path, reason: .olderSchema(missing: missing)) }
            return Catalog(path: path, pool: pool)
        } catch {
            throw CatalogError(path: path, error)
        }
    }

    private init(path: String, pool: DatabasePool) {
        self.path = path
        self.pool = pool
    }

    /// Migration identifiers recorded as applied.
    public func appliedMigrations() throws(CatalogError) -> [String] {
        try read { db in try Catalog.migrator().appliedMigrations(db) }
    }

    // MARK: - Access

    func read<T>(_ body: (Database) throws -> T) throws(CatalogError) -> T {
        do { return try pool.read(body) } catch { throw CatalogError(path: path, error) }
    }

    func write<T>(_ body: (Database) throws -> T) throws(CatalogError) -> T {
        do { return try pool.write(body) } catch { throw CatalogError(path: path, error) }
    }

    // MARK: - Opening

    static func configuration(readonly: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = readonly
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        configuration.label = "recbot.catalog"
        return configuration
    }

    static func migrator(upTo last: String? = nil) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in EmbeddedMigrations.all {
            migrator.registerMigration(migration.identifier) { db in
                try db.execute(sql: MigrationDialect.sqlite.sql(of: migration.sql))
                if migration.identifier == SearchTextBackfill.migration { try SearchTextBackfill.run(db) }
            }
            if migration.identifier == last { break }
        }
        return migrator
    }

    /// Checks an existing file without writing to it: SQLite magic, readable schema,
    /// and no migrations unknown to this binary.
    static func inspectExisting(path: String) throws(CatalogError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CatalogError(path: path, reason: .sqlite("cannot open for reading"))
        }
        let magic = (try? handle.read(upToCount: 16)) ?? nil
        try? handle.close()
        guard let magic, !magic.isEmpty else { return }  // empty file: SQLite treats it as a new database
        guard magic == Data("SQLite format 3\0".utf8) else {
            throw CatalogError(path: path, reason: .notSQLite)
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration(readonly: true))
            let applied: Set<String> = try queue.read { db in
                // Touches the schema pages, so a damaged file is detected here, before any write.
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                guard try db.tableExists("grdb_migrations") else { return [] }
                return try Set(String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
            }
            try queue.close()
            let unknown = applied.subtracting(knownMigrations).sorted()
            if !unknown.isEmpty { throw CatalogError(path: path, reason: .newerSchema(unknown: unknown)) }
        } catch let error as CatalogError {
            throw error
        } catch {
            throw CatalogError(path: path, error)
        }
    }
}

extension CatalogError {
    init(path: String, _ error: any Error) {
        if let catalogError = error as? CatalogError {
            self = catalogError
            return
        }
        if let databaseError = error as? DatabaseError {
            switch databaseError.resultCode {
            case .SQLITE_NOTADB: self.init(path: path, reason: .notSQLite)
            case .SQLITE_CORRUPT: self.init(path: path, reason: .corrupt(databaseError.message ?? "database disk image is malformed"))
            default: self.init(path: path, reason: .sqlite(databaseError.description))
            }
            return
        }
        self.init(path: path, reason: .sqlite(String(describing: error)))
    }
}
