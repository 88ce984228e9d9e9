import Foundation

/// Where recbot keeps its catalog and recordings: the one owner of those paths, for `join`,
/// `repair` and the queries alike.
///
/// Chosen by `--data-dir`, else `RECBOT_DATA_DIR` (from the environment, then from the config
/// file), else `/var/lib/recbot` for root and `$XDG_DATA_HOME/recbot` (default
/// `~/.local/share/recbot`) for other users.
public struct DataDirectory: Sendable, Equatable {
    public var path: String

    public init(path: String) { self.path = path }

    /// `flag` over `configured` (the setting, from the environment or a config file, as the
    /// caller's settings table resolved it); without either, the system's or the user's default
    /// (`environment` gives XDG_DATA_HOME and HOME).
    public static func resolve(flag: String?, configured: String?, environment: [String: String], isRoot: Bool) -> DataDirectory {
        if let flag, !flag.isEmpty { return DataDirectory(path: absolute(flag)) }
        if let configured, !configured.isEmpty { return DataDirectory(path: absolute(configured)) }
        if isRoot { return DataDirectory(path: "/var/lib/recbot") }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return DataDirectory(path: ArchiveLayout.join(xdg, "recbot")) }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return DataDirectory(path: ArchiveLayout.join(home, ".local/share/recbot"))
    }

    public var catalogPath: String { ArchiveLayout.join(path, "catalog.sqlite") }
    /// Catalog writes waiting for an unreachable PostgreSQL catalog, one file per session.
    public var spoolDirectory: String { ArchiveLayout.join(path, "spool") }
    public func spoolPath(session: String) -> String { ArchiveLayout.join(spoolDirectory, session + ".sqlite") }
    public var recordingsPath: String { ArchiveLayout.join(path, DataDirectory.recordingsFolder) }
    /// One upload of a session at a time on this host (`upload --pending` from cron, `join --upload`).
    public func uploadLockPath(session: String) -> String { ArchiveLayout.join(ArchiveLayout.join(path, "locks"), "upload-" + session + ".lock") }
    /// Recordings live in `<data dir>/recordings/<session id>/`.
    static let recordingsFolder = "recordings"

    /// A session's archive directory and file names.
    public func layout(session: String) -> ArchiveLayout {
        ArchiveLayout(recordingsRoot: recordingsPath, recordingID: session)
    }

    /// Catalog paths are relative to the data directory, so the directory can move. For showing
    /// a path only: what is opened, renamed or deleted goes through `recordingFile`.
    public func absolute(catalogPath relative: String) -> String {
        relative.hasPrefix("/") ? relative : ArchiveLayout.join(path, relative)
    }

    /// The catalog's name for a file given by its absolute path: relative to the data
    /// directory, or nil for a file outside it.
    public func catalogPath(absolute file: String) -> String? {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        return file.hasPrefix(prefix) ? String(file.dropFirst(prefix.count)) : nil
    }

    /// The file a recording's catalog row names, when it is one recbot could have written there:
    /// `recordings/<session>/<archive name of this sender>`, the ids by the connection-id rule.
    /// A shared catalog is not trusted to name any other file: repair rewrites, renames and
    /// deletes what it names, verify reads it, and a row is one SQL statement away from
    /// `../../etc/passwd`.
    public func recordingFile(catalogPath: String, sessionID: String, connectionID: String) -> String? {
        guard let layout = confinedLayout(session: sessionID), ArchiveLayout.isSafeConnectionID(connectionID) else { return nil }
        let name = (catalogPath as NSString).lastPathComponent
        guard case .media(connectionID, _) = ArchiveFile(name: name) else { return nil }
        let absolute = layout.path(of: name)
        // Rows name files relative to the data directory; the oldest named them absolutely.
        guard catalogPath == layout.catalogPath(name) || catalogPath == absolute else { return nil }
        return absolute
    }

    /// A session's layout when its id is one recbot makes (nil for an id from a catalog that
    /// would lead out of the recordings directory).
    public func confinedLayout(session: String) -> ArchiveLayout? {
        ArchiveLayout.isSafeConnectionID(session) ? layout(session: session) : nil
    }

    private static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        let joined = ArchiveLayout.join(FileManager.default.currentDirectoryPath, expanded)
        return (joined as NSString).standardizingPath
    }
}
