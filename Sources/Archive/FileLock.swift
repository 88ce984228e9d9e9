import Foundation
import Glibc

/// An exclusive flock(2) on a lock file. The catalog holds `<catalog>.lock` while a process
/// opens and migrates it, so concurrent first runs (or upgrades) migrate once and the others
/// wait; a spool holds its own for as long as its writer lives, so nobody else replays it.
/// The kernel drops the lock when the process dies, however it dies.
public struct FileLock: Sendable {
    private let descriptor: Int32

    /// Waits for the lock.
    public init(path: String, for owner: String) throws(CatalogError) {
        guard let lock = try FileLock(path: path, for: owner, blocking: true) else {
            throw CatalogError(path: owner, reason: .sqlite("cannot lock \(path)"))
        }
        self = lock
    }

    /// nil when another process holds the lock and `blocking` is false.
    public init?(path: String, for owner: String, blocking: Bool) throws(CatalogError) {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw CatalogError(path: owner, reason: .sqlite("cannot open \(path): \(String(cString: strerror(errno)))")) }
        while flock(descriptor, LOCK_EX | (blocking ? 0 : LOCK_NB)) != 0 {
            let code = errno
            guard code == EINTR else {
                _ = close(descriptor)
                if code == EWOULDBLOCK { return nil }
                throw CatalogError(path: owner, reason: .sqlite("cannot lock \(path): \(String(cString: strerror(code)))"))
            }
        }
    }

    public func release() {
        _ = flock(descriptor, LOCK_UN)
        _ = close(descriptor)
    }
}
