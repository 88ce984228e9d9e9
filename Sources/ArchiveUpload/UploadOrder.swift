/// Which files of a session directory go up, in what order: media first, then the sidecars
/// that describe them, then split end markers, and the report last. sora-archive-uploader's
/// consumers take an `archive-*.json` to mean its media is there and the report to mean the
/// whole recording is: an interrupted upload must never leave a sidecar without its media, or
/// a report without its files. Anything else (temporary files, dotfiles) stays local.
public enum UploadOrder {
    public static func files(_ names: [String]) -> [String] {
        func rank(_ name: String) -> Int? {
            guard !name.hasPrefix(".") else { return nil }
            if name.hasSuffix(".webm"), name.hasPrefix("archive-") || name.hasPrefix("split-archive-") { return 0 }
            guard name.hasSuffix(".json") else { return nil }
            if name.hasPrefix("split-archive-end-") { return 2 }
            if name.hasPrefix("archive-") || name.hasPrefix("split-archive-") { return 1 }
            if name.hasPrefix("report-") { return 3 }
            return nil
        }
        var ranked: [(name: String, rank: Int)] = []
        for name in names { if let value = rank(name) { ranked.append((name, value)) } }
        ranked.sort { (a, b) -> Bool in a.rank == b.rank ? a.name < b.name : a.rank < b.rank }
        return ranked.map(\.name)
    }

    /// A recording's media (not a sidecar, marker or report).
    public static func isMedia(_ name: String) -> Bool { name.hasSuffix(".webm") }

    public static func contentType(_ name: String) -> String {
        name.hasSuffix(".webm") ? "video/webm" : "application/json"
    }
}
