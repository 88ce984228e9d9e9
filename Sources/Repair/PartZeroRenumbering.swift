import Archive
import DiskLayout
import Foundation

/// After a failover in a session without split, the dead process left its senders' files as
/// part 0 (`archive-<id>.webm`) and the process that continued numbered its parts from 2:
/// each such part 0 becomes the part 1 it is (`split-archive-<id>_0001.webm`), as a rejoin
/// within one process renames it. Done by `recbot repair` where the file is (its host), since
/// the process that continued may run on another machine.
struct PartZeroRenumbering {
    let catalog: any CatalogStore
    let dataDirectory: DataDirectory

    /// Indices of the rows to rename: part 0 of a sender with parts from 2 and no part 1 (so
    /// not the whole-file archive beside split parts, which always has a part 1), in a session
    /// more than one process recorded, on this host (`storageHost`).
    static func candidates(_ rows: [RecordingRecord], storageHost: String) -> [Int] {
        guard rows.contains(where: { ($0.segment ?? SessionSegmentRecord.first) > SessionSegmentRecord.first }) else { return [] }
        return rows.indices.filter { index in
            let row = rows[index]
            return row.part == 0 && row.status != .recording && (row.host == nil || row.host == storageHost)
                && rows.contains { $0.connectionID == row.connectionID && $0.part >= 2 }
                && !rows.contains { $0.connectionID == row.connectionID && $0.part == 1 }
        }
    }

    /// Renames the file (link, then unlink: an existing name is never replaced), moves its
    /// sidecar to the new name, and stores the row's new part and path.
    func rename(_ row: inout RecordingRecord, layout: ArchiveLayout) throws(CatalogError) -> SessionRepairOutcome.FileOutcome {
        let renamed = CatalogRecordings.asPartOne(row, layout: layout)
        let oldName = (row.path as NSString).lastPathComponent
        guard let from = dataDirectory.recordingFile(catalogPath: row.path, sessionID: row.sessionID, connectionID: row.connectionID) else {
            return .init(path: row.path, error: "the catalog names no file recbot writes (\(row.path.debugDescription)); nothing touched")
        }
        let to = layout.path(of: (renamed.path as NSString).lastPathComponent)
        guard FileManager.default.fileExists(atPath: from) else {
            return .init(path: from, error: "not in this data directory; repair it where it is")
        }
        guard link(from, to) == 0 else {
            return .init(path: from, error: "cannot rename it to \(to): \(String(cString: strerror(errno)))")
        }
        unlink(from)
        moveSidecar(of: row, to: renamed, layout: layout)
        row = renamed
        try catalog.updateRecording(row)
        var outcome = SessionRepairOutcome.FileOutcome(path: to)
        outcome.renamedFrom = oldName
        return outcome
    }

    /// The sidecar names its file and part: rewritten under the new name, the old one removed.
    private func moveSidecar(of row: RecordingRecord, to renamed: RecordingRecord, layout: ArchiveLayout) {
        let old = layout.path(of: layout.sidecarFilename(connectionID: row.connectionID, part: row.part))
        let new = layout.sidecarFilename(connectionID: renamed.connectionID, part: renamed.part)
        guard let data = FileManager.default.contents(atPath: old),
              var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        let media = (renamed.path as NSString).lastPathComponent
        object["filename"] = media
        object["file_path"] = layout.path(of: media)
        object["metadata_filename"] = new
        object["metadata_file_path"] = layout.path(of: new)
        object["split_index"] = ArchiveLayout.splitIndex(renamed.part)
        guard (try? ArchiveLayout.writeJSON(object, to: layout.path(of: new))) != nil else { return }
        unlink(old)
    }
}
