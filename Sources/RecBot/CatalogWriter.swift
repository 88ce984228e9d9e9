import Archive
import Foundation
import Logging

/// Catalog writes off the network event loop: one serial queue, bounded. Dropped writes are
/// counted and logged (a full queue means the disk cannot keep up).
final class CatalogWriter: @unchecked Sendable {
    let catalog: Catalog
    private let queue = DispatchQueue(label: "recbot.catalog-writer")
    private let lock = NSLock()
    private var pending = 0
    private(set) var dropped = 0
    private(set) var firstError: CatalogError?
    private let logger: Logger
    static let maximumPending = 50_000

    init(catalog: Catalog, logger: Logger) {
        self.catalog = catalog
        self.logger = logger
    }

    func submit(_ what: String, _ body: @escaping @Sendable (Catalog) throws(CatalogError) -> Void) {
        let accepted = lock.withLock { () -> Bool in
            guard pending < CatalogWriter.maximumPending else { dropped += 1; return false }
            pending += 1
            return true
        }
        guard accepted else {
            logger.error("catalog write dropped: queue full", metadata: ["what": "\(what)"])
            return
        }
        queue.async { [self] in
            do throws(CatalogError) { try body(catalog) } catch {
                lock.withLock { if firstError == nil { firstError = error } }
                logger.error("catalog write failed", metadata: ["what": "\(what)", "error": "\(error)"])
            }
            lock.withLock { pending -= 1 }
        }
    }

    /// Waits until every submitted write is done.
    func drain() { queue.sync {} }

    var error: CatalogError? { lock.withLock { firstError } }
}
