import DiskLayout

/// Which files of a session directory go up, in what order (`ArchiveFile.uploadRank`): media
/// first, then the sidecars that describe them, then split end markers, the report, and after
/// it a composition (made from the recording, not part of it).
/// sora-archive-uploader's consumers take an `archive-*.json` to mean its media is there and the
/// report to mean the whole recording is: an interrupted upload must never leave a sidecar
/// without its media, or a report without its files. Anything else (temporary files, dotfiles)
/// stays local.
public enum UploadOrder {
    public static func files(_ names: [String]) -> [String] {
        var ranked: [(name: String, rank: Int)] = []
        for name in names {
            if let file = ArchiveFile(name: name) { ranked.append((name, file.uploadRank)) }
        }
        ranked.sort { (a, b) -> Bool in a.rank == b.rank ? a.name < b.name : a.rank < b.rank }
        return ranked.map(\.name)
    }

    /// A recording's media (not a sidecar, marker or report).
    public static func isMedia(_ name: String) -> Bool { ArchiveFile(name: name)?.isMedia ?? false }

    public static func contentType(_ name: String) -> String {
        ArchiveFile(name: name)?.contentType ?? "application/octet-stream"
    }
}
