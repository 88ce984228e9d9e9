import Foundation
import GRDB

/// Catalog writes waiting for a PostgreSQL catalog that cannot be reached, in a local SQLite
/// file (`<data-dir>/spool/<session-id>.sqlite`), in the order they were made. The recording
/// goes on while the server is away; the writes are applied when it is back, by the join that
/// made them or, if that join ended first, by the next `recbot repair`.
///
/// Bounded: past `maximumBytes`, writes that are not essential (events, progress, connection
/// refreshes) are refused and counted; a session's and its recordings' rows always go in.
/// While its writer lives, the file's lock says so, and nobody else replays it.
public final class CatalogSpool: @unchecked Sendable {
    public let path: String
    public let maximumBytes: Int
    private let queue: DatabaseQueue
    private let lock: FileLock
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()
    public private(set) var bytes = 0
    public private(set) var count = 0

    public static let defaultMaximumBytes = 256 << 20

    /// Opens (creating) a spool and takes its lock; nil when another live process holds it.
    public init?(path: String, maximumBytes: Int = CatalogSpool.defaultMaximumBytes) throws(CatalogError) {
        self.path = path
        self.maximumBytes = maximumBytes
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        } catch {
            throw CatalogError(path: path, reason: .cannotCreateDirectory(error.localizedDescription))
        }
        guard let lock = try FileLock(path: path + ".lock", for: path, blocking: false) else { return nil }
        self.lock = lock
        do {
            queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS writes (
                        seq INTEGER PRIMARY KEY, body BLOB NOT NULL, attempted INTEGER NOT NULL DEFAULT 0)
                    """)
                (count, bytes) = try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(length(body)), 0) FROM writes")
                    .map { ($0[0], $0[1]) } ?? (0, 0)
            }
        } catch {
            lock.release()
            throw CatalogError(path: path, error)
        }
    }

    deinit { lock.release() }

    public var isEmpty: Bool { count == 0 }

    /// Keeps a write for later. `attempted`: it was sent once and the connection was lost, so
    /// the server may have applied it. False when the spool is full and the write not essential.
    @discardableResult
    public func append(_ write: CatalogWrite, attempted: Bool = false) throws(CatalogError) -> Bool {
        let body: Data
        do { body = try encoder.encode(write) } catch { throw CatalogError(path: path, reason: .sqlite("cannot encode a \(write.name) write: \(error)")) }
        guard write.isEssential || bytes + body.count <= maximumBytes else { return false }
        do {
            try queue.write { db in
                try db.execute(sql: "INSERT INTO writes (body, attempted) VALUES (?, ?)", arguments: [body, attempted])
            }
        } catch {
            throw CatalogError(path: path, error)
        }
        count += 1
        bytes += body.count
        return true
    }

    /// What a replay did: writes applied, writes the catalog refused for good that may go
    /// (logged by the caller), and the write it stopped at.
    public struct ReplayResult: Sendable, Equatable {
        public var applied = 0
        public var refused: [String] = []
        /// A write the catalog refused for good that must not be lost (see
        /// `CatalogWrite.mayBeDropped`): the replay stopped there, and it and every later write
        /// stay in the spool for the next replay (an operator can read why in the log).
        public var heldAt: String?
    }

    /// Applies the spooled writes in order, removing each once applied. Stops, keeping the rest,
    /// at the first the catalog cannot take now (that error is thrown: unreachable, read-only,
    /// timed out, busy), and at the first it refuses for good unless that write may be dropped
    /// (then it is named in the result and the replay goes on).
    public func replay(into store: any CatalogStore) throws(CatalogError) -> ReplayResult {
        var result = ReplayResult()
        while let (seq, write, attempted) = try head() {
            do {
                try store.apply(write, replay: attempted)
                result.applied += 1
            } catch {
                if error.isRetryable {
                    if error.mayHaveBeenApplied { try mark(seq) }
                    throw error
                }
                if case .rowsRefused = error.reason {
                    result.applied += 1  // applied but for the rows that can never be stored
                } else if !write.mayBeDropped {
                    result.heldAt = "\(write.name): \(error)"
                    return result
                }
                result.refused.append("\(write.name): \(error)")
            }
            try remove(seq)
        }
        return result
    }

    /// Deletes the file once it is empty (the writer's last step).
    public func removeIfEmpty() {
        guard isEmpty else { return }
        try? queue.close()
        for suffix in ["", "-wal", "-shm", "-journal", ".lock"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    private func head() throws(CatalogError) -> (Int64, CatalogWrite, Bool)? {
        do {
            guard let row = try queue.read({ db in try Row.fetchOne(db, sql: "SELECT seq, body, attempted FROM writes ORDER BY seq LIMIT 1") })
            else { return nil }
            let body: Data = row["body"]
            return (row["seq"], try decoder.decode(CatalogWrite.self, from: body), row["attempted"])
        } catch {
            throw CatalogError(path: path, reason: .corrupt("a spooled write does not decode: \(error)"))
        }
    }

    private func mark(_ seq: Int64) throws(CatalogError) {
        do { try queue.write { db in try db.execute(sql: "UPDATE writes SET attempted = 1 WHERE seq = ?", arguments: [seq]) } } catch {
            throw CatalogError(path: path, error)
        }
    }

    private func remove(_ seq: Int64) throws(CatalogError) {
        do {
            let size = try queue.write { db -> Int in
                let size = try Int.fetchOne(db, sql: "SELECT length(body) FROM writes WHERE seq = ?", arguments: [seq]) ?? 0
                try db.execute(sql: "DELETE FROM writes WHERE seq = ?", arguments: [seq])
                return size
            }
            count -= 1
            bytes -= size
        } catch {
            throw CatalogError(path: path, error)
        }
    }

    /// Spool files in `directory`, oldest first (session ids sort by time). Opening one fails
    /// while its writer lives.
    public static func leftovers(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".sqlite") }.sorted().map { (directory as NSString).appendingPathComponent($0) }
    }
}
