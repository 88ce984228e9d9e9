import Archive
import ArchivePostgres
import ArgumentParser
import DiskLayout
import Foundation
import Logging
import Outcomes
import Recorder

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "Data directory (catalog and recordings). Overrides RECBOT_DATA_DIR.", valueName: "dir"))
    var dataDir: String?
    @Option(help: ArgumentHelp("Config file of RECBOT_NAME=value lines (also RECBOT_CONFIG).", valueName: "file")) var config: String?
    @Option(name: .customLong("catalog"), help: ArgumentHelp(
        "The catalog: postgres://user@host[:port]/database[?sslmode=…] for a fleet's shared PostgreSQL, or an SQLite file. Default: catalog.sqlite in the data directory. Overrides RECBOT_CATALOG_URL; a password belongs there (or in the config file), not on the command line.",
        valueName: "url"))
    var catalog: String?

    /// The environment over the config file (--config or RECBOT_CONFIG).
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        try Settings.load(environment: environment, configPath: config ?? environment[SettingName.config.variable])
    }

    /// Resolved the same way for every command, so `join` and the queries agree even when the
    /// data directory is set only in a config file. An unreadable config file is an error
    /// thrown by `settings()`; here it just does not count.
    var dataDirectory: DataDirectory {
        let environment = ProcessInfo.processInfo.environment
        // The environment's value counts even when the config file cannot be read.
        let configured = environment[SettingName.dataDirectory.variable] ?? (try? settings(environment: environment))?[.dataDirectory]
        return DataDirectory.resolve(flag: dataDir, configured: configured, environment: environment, isRoot: getuid() == 0)
    }

    /// `--catalog`, else RECBOT_CATALOG_URL (environment or config file), else the data
    /// directory's SQLite file. A password on the command line is refused: ps shows it.
    func catalogLocation(settings: Settings) throws -> CatalogLocation {
        let text = catalog ?? settings[.catalogURL]
        guard let text else { return .sqlite(path: dataDirectory.catalogPath) }
        let location: CatalogLocation
        do { location = try CatalogLocation.parse(text) } catch { throw Console.fail(error, cause: .invalidConfiguration) }
        if catalog != nil, case .postgres(let url) = location, url.password != nil {
            throw ValidationError("--catalog must not carry a password (ps shows it): set RECBOT_CATALOG_URL in the environment or the config file")
        }
        return location
    }

    /// Opens the catalog read-only for a query (never migrating it). Returns nil (after a note
    /// on stderr) when nothing was recorded yet.
    func openCatalogForQuery() throws -> (any CatalogStore)? {
        try open { location throws(CatalogError) in try location.openForQuery(logger: Logger(label: "recbot.catalog")) }
    }

    /// Opens the catalog to write to it (verify, repair), upgrading an older schema.
    func openCatalogForWriting() throws -> (any CatalogStore)? {
        try open { location throws(CatalogError) in try location.openExisting(logger: Logger(label: "recbot.catalog")) }
    }

    private func open(_ opener: (CatalogLocation) throws(CatalogError) -> (any CatalogStore)?) throws -> (any CatalogStore)? {
        let location = try catalogLocation(settings: try settings())
        do {
            guard let catalog = try opener(location) else {
                Console.note("no catalog at \(location) yet: nothing has been recorded there")
                return nil
            }
            return catalog
        } catch {
            throw Console.fail(error, cause: error.endCause)
        }
    }
}

struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (an array; RFC 3339 UTC times) instead of a table.")
    var json = false
}

enum Console {
    static func print(_ text: String) {
        StandardStreams.out(text + "\n")
    }

    static func note(_ text: String) {
        StandardStreams.err("recbot: " + text + "\n")
    }

    /// Reports an error on stderr and returns the end to throw.
    static func fail(_ error: any Error, cause: EndCause) -> CommandEnd {
        fail("\(error)", cause: cause)
    }

    static func fail(_ message: String, cause: EndCause) -> CommandEnd {
        StandardStreams.err("recbot: error: \(message)\n")
        return CommandEnd(cause: cause)
    }
}

extension CatalogStore {
    /// Runs a query, turning catalog errors into a message and their exit code.
    func query<T>(_ body: (Self) throws(CatalogError) -> T) throws -> T {
        do { return try body(self) } catch { throw Console.fail(error, cause: error.endCause) }
    }
}
