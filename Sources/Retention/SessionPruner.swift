import Archive
import DiskLayout
import Foundation

/// What pruning one session did.
public struct PruneOutcome: Sendable {
    public var decision: PruneDecision
    /// Files removed, and the bytes they held.
    public var removed: [String] = []
    public var bytesFreed: Int64 = 0
    public var mark: PruneMark?
    /// Composition rows whose files went with the session's directory.
    public var compositionsRemoved = 0
    public var error: String?

    /// Nothing done yet (what a dry run reports).
    public init(decision: PruneDecision) { self.decision = decision }
}

/// Removes what `PruneSelection` chose. The catalog is marked first, in a transaction that
/// checks the session again (a hold that came meanwhile wins, and nothing is removed); then the
/// session's directory here goes, file by file. A file that cannot be removed is reported, and
/// the next prune takes what is left (a pruned session with files here is selected again).
public struct SessionPruner {
    public let catalog: any CatalogStore
    public let dataDirectory: DataDirectory

    public init(catalog: any CatalogStore, dataDirectory: DataDirectory) {
        (self.catalog, self.dataDirectory) = (catalog, dataDirectory)
    }

    public func prune(_ decision: PruneDecision, policy: PrunePolicy, now: Int64) -> PruneOutcome {
        var outcome = PruneOutcome(decision: decision)
        guard decision.verdict == .prune else { return outcome }
        do {
            outcome.mark = try catalog.markPruned(sessionID: decision.session.id, host: policy.host, at: now, deletingEvents: policy.deleteEvents)
        } catch {
            outcome.error = "\(error)"
            return outcome
        }
        for path in decision.files {
            let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
            guard unlink(path) == 0 || errno == ENOENT else {
                outcome.error = "cannot remove \(path): \(String(cString: strerror(errno)))"
                continue
            }
            outcome.removed.append(path)
            outcome.bytesFreed += size
        }
        if outcome.error == nil, let layout = dataDirectory.confinedLayout(session: decision.session.id) {
            rmdir(layout.directory)  // only when empty: a file that came meanwhile stays
        }
        // A composition written in the session's directory went with it: its row would name a file
        // that is gone. One composed elsewhere (`--out`) stays, and so does its row.
        let removedPaths = outcome.removed.map { dataDirectory.catalogPath(absolute: $0) ?? $0 }
        do {
            outcome.compositionsRemoved = try catalog.removeCompositions(sessionID: decision.session.id, paths: removedPaths)
        } catch {
            outcome.error = outcome.error ?? "the files are gone, but their composition rows stay: \(error)"
        }
        return outcome
    }
}
