import Archive
import Foundation

/// What `recbot repair` did with the spool a join left behind (a PostgreSQL catalog that was
/// unreachable when the join ended, or when it was killed).
public struct SpoolReplayOutcome: Sendable {
    public var path: String
    public var applied: Int
    public var refused: [String]
}

extension SessionRepair {
    /// Applies every spool whose join is gone (a live join's spool is locked and skipped), in
    /// session order, before any session is repaired: the catalog must hold what the join
    /// wrote before repair judges what is missing. Throws when the catalog is still unreachable.
    public func replaySpools() throws(CatalogError) -> [SpoolReplayOutcome] {
        var outcomes: [SpoolReplayOutcome] = []
        for path in CatalogSpool.leftovers(in: dataDirectory.spoolDirectory) {
            guard let spool = try CatalogSpool(path: path) else { continue }
            let result = try spool.replay(into: catalog)
            spool.removeIfEmpty()
            outcomes.append(SpoolReplayOutcome(path: path, applied: result.applied, refused: result.refused))
        }
        return outcomes
    }
}
