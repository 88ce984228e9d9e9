import Archive
import ArgumentParser
import Foundation
import RecBot
import Recorder

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "Data directory (catalog and recordings). Overrides RECBOT_DATA_DIR.", valueName: "dir"))
    var dataDir: String?
    @Option(help: ArgumentHelp("Config file of RECBOT_NAME=value lines (also RECBOT_CONFIG).", valueName: "file")) var config: String?

    /// The environment over the config file (--config or RECBOT_CONFIG).
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        try Settings.load(environment: environment, configPath: config ?? environment["RECBOT_CONFIG"])
    }

    /// Resolved the same way for every command, so `join` and the queries agree even when the
    /// data directory is set only in a config file. An unreadable config file is an error
    /// thrown by `settings()`; here it just does not count.
    var dataDirectory: DataDirectory {
        let environment = ProcessInfo.processInfo.environment
        return DataDirectory.resolve(flag: dataDir, environment: environment, configured: (try? settings(environment: environment))?["RECBOT_DATA_DIR"],
                                     isRoot: getuid() == 0)
    }

    /// Opens the catalog read-only for a query (never migrating it). Returns nil (after a note
    /// on stderr) when nothing was recorded yet.
    func openCatalogForQuery() throws -> Catalog? {
        try open { path throws(CatalogError) in try Catalog.openForQuery(path: path) }
    }

    /// Opens the catalog to write to it (verify, repair), upgrading an older schema.
    func openCatalogForWriting() throws -> Catalog? {
        try open { path throws(CatalogError) in try Catalog.openExisting(path: path) }
    }

    private func open(_ opener: (String) throws(CatalogError) -> Catalog?) throws -> Catalog? {
        let path = dataDirectory.catalogPath
        do {
            guard let catalog = try opener(path) else {
                Console.note("no catalog at \(path) yet: nothing has been recorded there")
                return nil
            }
            return catalog
        } catch {
            throw Console.fail(error, status: .storage)
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

    /// Reports an error on stderr and returns the exit code to throw.
    static func fail(_ error: any Error, status: ExitStatus) -> ExitCode {
        StandardStreams.err("recbot: error: \(error)\n")
        return status.exitCode
    }
}

extension Catalog {
    /// Runs a query, turning catalog errors into a message and the storage exit code.
    func query<T>(_ body: (Catalog) throws(CatalogError) -> T) throws -> T {
        do { return try body(self) } catch { throw Console.fail(error, status: .storage) }
    }
}
