import Foundation

/// Where recbot keeps its catalog and recordings.
///
/// Chosen by `--data-dir`, else `RECBOT_DATA_DIR`, else `/var/lib/recbot` for root and
/// `$XDG_DATA_HOME/recbot` (default `~/.local/share/recbot`) for other users.
public struct DataDirectory: Sendable, Equatable {
    public var path: String

    public init(path: String) { self.path = path }

    public static func resolve(flag: String?, environment: [String: String], isRoot: Bool) -> DataDirectory {
        if let flag, !flag.isEmpty { return DataDirectory(path: absolute(flag)) }
        if let variable = environment["RECBOT_DATA_DIR"], !variable.isEmpty { return DataDirectory(path: absolute(variable)) }
        if isRoot { return DataDirectory(path: "/var/lib/recbot") }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return DataDirectory(path: xdg + "/recbot") }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return DataDirectory(path: home + "/.local/share/recbot")
    }

    public var catalogPath: String { path + "/catalog.sqlite" }
    public var recordingsPath: String { path + "/recordings" }

    /// Catalog paths are relative to the data directory, so the directory can move.
    public func absolute(catalogPath relative: String) -> String {
        relative.hasPrefix("/") ? relative : path + "/" + relative
    }

    private static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        let joined = FileManager.default.currentDirectoryPath + "/" + expanded
        return (joined as NSString).standardizingPath
    }
}
