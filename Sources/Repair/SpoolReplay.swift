import Archive
import Foundation

/// What `recbot repair` did with the spool a join left behind (a PostgreSQL catalog that could
/// not take writes when the join ended, or when it was killed).
public struct SpoolReplayOutcome: Sendable {
    public var path: String
    /// The session whose writes the spool holds (its file is named after it).
    public var sessionID: String
    public var applied: Int
    public var refused: [String]
    /// Why writes are still in the spool (a write the catalog refuses for good, or a spool that
    /// cannot be read); nil when the spool was emptied and removed.
    public var held: String?
}

extension SessionRepair {
    /// Applies every spool whose join is gone (a live join's spool is locked and skipped), in
    /// session order, before any session is repaired: the catalog must hold what the join
    /// wrote before repair judges what is missing. Throws when the catalog cannot take writes
    /// now (unreachable, read-only, busy); a spool it refuses, or one that cannot be read, is
    /// kept, named in its outcome, and the others go on.
    public func replaySpools() throws(CatalogError) -> [SpoolReplayOutcome] {
        var outcomes: [SpoolReplayOutcome] = []
        for path in CatalogSpool.leftovers(in: dataDirectory.spoolDirectory) {
            let sessionID = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
            var outcome = SpoolReplayOutcome(path: path, sessionID: sessionID, applied: 0, refused: [])
            do throws(CatalogError) {
                guard let spool = try CatalogSpool(path: path) else { continue }
                let result = try spool.replay(into: catalog)
                (outcome.applied, outcome.refused, outcome.held) = (result.applied, result.refused, result.heldAt)
                spool.removeIfEmpty()
            } catch where !error.isRetryable {
                outcome.held = "\(error)"
            }
            outcomes.append(outcome)
        }
        return outcomes
    }
}
