import Archive
import DiskLayout
import Foundation

/// What a prune would do with one session: remove its files here, or keep it, and why.
public struct PruneDecision: Sendable {
    public enum Verdict: Sendable, Equatable {
        case prune
        case keep(String)
    }

    public var session: SessionRecord
    public var verdict: Verdict
    /// The session's files in this data directory (absolute paths), and their size.
    public var files: [String]
    public var bytes: Int64
}

/// Chooses what a prune removes, from the catalog and the data directory; changes nothing, so
/// `--dry-run` lists exactly what the prune then removes. A session is kept while it is on hold,
/// still being recorded, has a file on this host `recbot verify` has not passed, or has an
/// upload not finished (or, with an upload destination configured, not made).
public struct PruneSelection {
    public let catalog: any CatalogStore
    public let dataDirectory: DataDirectory

    public init(catalog: any CatalogStore, dataDirectory: DataDirectory) {
        (self.catalog, self.dataDirectory) = (catalog, dataDirectory)
    }

    /// Oldest first: the sessions the policy names that have something left on this host.
    public func decisions(_ policy: PrunePolicy) throws(CatalogError) -> [PruneDecision] {
        var decisions: [PruneDecision] = []
        for session in try catalog.sessions(SessionFilter(channelID: policy.channel)).reversed() where Self.isDue(session, policy) {
            let rows = try catalog.recordings(RecordingFilter(sessionID: session.id)).filter { $0.host == nil || $0.host == policy.host }
            let (files, bytes) = filesHere(session.id)
            guard rows.contains(where: { $0.prunedAt == nil }) || !files.isEmpty else { continue }
            let verdict = try verdict(session, rows: rows, policy: policy)
            decisions.append(PruneDecision(session: session, verdict: verdict, files: files, bytes: bytes))
        }
        return decisions
    }

    static func isDue(_ session: SessionRecord, _ policy: PrunePolicy) -> Bool {
        if let cutoff = policy.startedBefore, session.startedAt < cutoff { return true }
        if let now = policy.expiredBy, let until = session.retainUntil, until <= now { return true }
        return false
    }

    private func verdict(_ session: SessionRecord, rows: [RecordingRecord], policy: PrunePolicy) throws(CatalogError) -> PruneDecision.Verdict {
        if session.heldAt != nil { return .keep("on hold" + (session.holdReason.map { ": \($0)" } ?? "")) }
        if session.endedAt == nil { return .keep("still being recorded") }
        let unverified = rows.filter { $0.prunedAt == nil && $0.verification != .verified }
        if !unverified.isEmpty {
            return .keep("\(unverified.count) of \(rows.count) files not verified (`recbot verify --pending`)")
        }
        let uploads = try catalog.uploads(UploadFilter(sessionID: session.id))
        if uploads.contains(where: { $0.status != .uploaded }) { return .keep("an upload is not finished (`recbot upload --pending`)") }
        if let target = policy.upload, !uploads.contains(where: {
            $0.status == .uploaded && $0.endpoint == target.endpoint && $0.objectURL.hasPrefix(target.objectURLPrefix)
                && ArchiveFile(name: $0.fileName) == .report(recordingID: session.id)
        }) {
            return .keep("not uploaded to \(target.objectURLPrefix) yet")
        }
        return .prune
    }

    /// Every regular file in the session's directory here, with the sum of their sizes.
    func filesHere(_ sessionID: String) -> (files: [String], bytes: Int64) {
        guard let layout = dataDirectory.confinedLayout(session: sessionID),
              let names = try? FileManager.default.contentsOfDirectory(atPath: layout.directory) else { return ([], 0) }
        var files: [String] = [], bytes: Int64 = 0
        for name in names.sorted() {
            let path = layout.path(of: name)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path), attributes[.type] as? FileAttributeType == .typeRegular else { continue }
            files.append(path)
            bytes += (attributes[.size] as? NSNumber)?.int64Value ?? 0
        }
        return (files, bytes)
    }
}
