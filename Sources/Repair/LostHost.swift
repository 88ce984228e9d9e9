import Archive

/// A host that will not come back (a machine gone, a volume deleted): its files still marked
/// `recording` can never be finished. `recbot repair --lost-host NAME` flags them
/// `interrupted`, saying so, and stamps them missing, so the catalog stops promising them; the
/// other hosts' files, and whatever the sessions recorded elsewhere (a failover), are untouched.
public enum LostHost {
    public static let reason = "lost: its host is gone (recbot repair --lost-host)"

    /// The rows it flagged.
    public static func flag(_ host: String, catalog: any CatalogStore, at time: Int64) throws(CatalogError) -> [RecordingRecord] {
        var flagged: [RecordingRecord] = []
        for var row in try catalog.recordings() where row.host == host && row.status == .recording {
            row.status = .interrupted
            row.error = reason
            row.missingAt = time
            try catalog.updateRecording(row)
            flagged.append(row)
        }
        return flagged
    }
}
