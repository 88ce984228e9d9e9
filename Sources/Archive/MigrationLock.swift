import Foundation
import Glibc

/// An exclusive flock(2) on `<catalog>.lock`, held while a process opens and migrates the
/// catalog, so concurrent first runs (or upgrades) migrate once and the others wait for it.
struct MigrationLock {
    private let descriptor: Int32

    init(catalogPath: String) throws(CatalogError) {
        let path = catalogPath + ".lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw CatalogError(path: catalogPath, reason: .sqlite("cannot open \(path): \(String(cString: strerror(errno)))")) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let reason = String(cString: strerror(errno))
                _ = close(descriptor)
                throw CatalogError(path: catalogPath, reason: .sqlite("cannot lock \(path): \(reason)"))
            }
        }
    }

    func release() {
        _ = flock(descriptor, LOCK_UN)
        _ = close(descriptor)
    }
}
