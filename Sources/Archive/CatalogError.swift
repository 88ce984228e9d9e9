/// Why the catalog could not be used. Always names the catalog: its file, or its URL without
/// the password.
public struct CatalogError: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable, Equatable {
        /// The file exists but is not an SQLite database.
        case notSQLite
        /// SQLite reports the file as damaged.
        case corrupt(String)
        /// Migrations this binary does not know were applied: a newer recbot wrote it.
        case newerSchema(unknown: [String])
        /// Migrations this binary has are missing: an older recbot wrote it (queries do not migrate).
        case olderSchema(missing: [String])
        case cannotCreateDirectory(String)
        case sqlite(String)
        case notFound(String)
        /// `--catalog` / RECBOT_CATALOG_URL does not say where a catalog is.
        case badLocation(String)
        /// The PostgreSQL server cannot be reached (refused, timed out, connection lost). A
        /// write sent before the loss may have been committed.
        case unreachable(String)
        /// The PostgreSQL server answered but cannot take the statement now, and rolled it back:
        /// a read-only standby after a failover, a statement timeout, a serialization failure or
        /// deadlock, no memory, disk or connections left. Asking again later is right.
        case unavailable(String)
        /// The PostgreSQL server refused the user or password.
        case credentials(String)
        /// The PostgreSQL server refused a statement (SQLSTATE and message).
        case server(String)
        /// Some rows of a batch were refused for good; the others were stored.
        case rowsRefused(String)
        /// The write came from a process whose turn is over: its job was claimed again (a newer
        /// fencing token) or another process continues its session (a newer segment).
        case superseded(String)
    }

    /// The catalog's file, or its URL without the password.
    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    /// Asking again later may succeed: the write waits (in the spool) instead of being lost.
    public var isRetryable: Bool {
        switch reason {
        case .unreachable, .unavailable: true
        default: false
        }
    }

    /// The write was sent and the connection lost before its answer: the server may have
    /// committed it (a replay checks before applying it again).
    public var mayHaveBeenApplied: Bool {
        if case .unreachable = reason { true } else { false }
    }

    public var description: String {
        switch reason {
        case .notSQLite:
            "catalog \(path) is not an SQLite database; refusing to touch it"
        case .corrupt(let detail):
            "catalog \(path) is corrupt (\(detail)); refusing to touch it"
        case .newerSchema(let unknown):
            "catalog \(path) has a newer schema than this recbot knows (migrations \(unknown.joined(separator: ", "))); upgrade recbot"
        case .olderSchema(let missing):
            "catalog \(path) has an older schema (missing \(missing.joined(separator: ", "))); queries never change it: run `recbot repair --all` (or the next `recbot join`) once to upgrade it"
        case .cannotCreateDirectory(let detail):
            "cannot create the directory for catalog \(path): \(detail)"
        case .sqlite(let detail):
            "catalog \(path): \(detail)"
        case .notFound(let what):
            "catalog \(path): \(what) not found"
        case .badLocation(let why):
            "catalog location \(path): \(why)"
        case .unreachable(let why):
            "catalog \(path) is unreachable: \(why)"
        case .unavailable(let why):
            "catalog \(path) cannot take writes now: \(why)"
        case .credentials(let why):
            "catalog \(path) refused the credentials: \(why)"
        case .server(let why), .rowsRefused(let why):
            "catalog \(path): \(why)"
        case .superseded(let why):
            "catalog \(path): refused, superseded: \(why)"
        }
    }
}
