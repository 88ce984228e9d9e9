import Archive
import DiskLayout
import Foundation
import Logging
import Retention

/// The service's retention: every `interval` it removes the files of this host's sessions
/// whose own retention has ended (a rule's `retention_days`), as `recbot prune --expired` does,
/// with the same guards (held, still recording, unverified, not uploaded: kept).
public struct RetentionPass: Sendable {
    let store: any CatalogStore
    let dataDirectory: DataDirectory
    let host: String
    let upload: PrunePolicy.UploadTarget?
    let intervalMilliseconds: Int64
    let logger: Logger

    public init(store: any CatalogStore, dataDirectory: DataDirectory, host: String, upload: PrunePolicy.UploadTarget?,
                intervalMilliseconds: Int64, logger: Logger) {
        (self.store, self.dataDirectory, self.host, self.upload) = (store, dataDirectory, host, upload)
        (self.intervalMilliseconds, self.logger) = (intervalMilliseconds, logger)
    }

    /// Until cancelled; the first pass a minute after the start (the service's first jobs come first).
    public func run() async {
        try? await Task.sleep(nanoseconds: UInt64(min(intervalMilliseconds, 60_000)) * 1_000_000)
        while !Task.isCancelled {
            await runOnce(now: Int64(Date().timeIntervalSince1970 * 1000))
            try? await Task.sleep(nanoseconds: UInt64(intervalMilliseconds) * 1_000_000)
        }
    }

    /// One pass; returns what it did (for tests and the log).
    @discardableResult
    public func runOnce(now: Int64) async -> [PruneOutcome] {
        let policy = PrunePolicy(expiredBy: now, host: host, upload: upload)
        let (store, dataDirectory) = (self.store, self.dataDirectory)
        do {
            let outcomes = try await catalogCall {
                let decisions = try PruneSelection(catalog: store, dataDirectory: dataDirectory).decisions(policy)
                let pruner = SessionPruner(catalog: store, dataDirectory: dataDirectory)
                return decisions.map { pruner.prune($0, policy: policy, now: now) }
            }
            for outcome in outcomes { log(outcome) }
            return outcomes
        } catch {
            logger.error("retention: cannot read the catalog; the next pass tries again", metadata: ["error": "\(error)"])
            return []
        }
    }

    private func log(_ outcome: PruneOutcome) {
        let session = outcome.decision.session
        if let error = outcome.error {
            logger.error("retention: prune failed", metadata: ["session": "\(session.id)", "error": "\(error)"])
        } else if case .keep(let why) = outcome.decision.verdict {
            logger.info("retention: kept past its retention", metadata: ["session": "\(session.id)", "reason": "\(why)"])
        } else {
            logger.notice("retention: pruned", metadata: ["session": "\(session.id)", "channel": "\(session.channelID)",
                                                          "files": "\(outcome.removed.count)", "bytes": "\(outcome.bytesFreed)"])
        }
    }
}
