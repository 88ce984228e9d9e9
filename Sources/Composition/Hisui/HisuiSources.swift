import Foundation

/// One recorded file as a hisui layout names it: its sidecar's file name (`archive-<id>.json`,
/// `split-archive-<id>_0001.json`) and its span on the session's timeline.
public struct HisuiSourceFile: Sendable, Equatable {
    public var name: String
    public var connectionID: String
    /// Milliseconds on the session's timeline.
    public var start: Int64
    public var end: Int64

    public init(name: String, connectionID: String, start: Int64, end: Int64) {
        (self.name, self.connectionID, self.start, self.end) = (name, connectionID, start, end)
    }
}

/// One sender as hisui aggregates it: all its matched files (split parts and the whole file),
/// from the earliest start to the latest end.
struct HisuiSource: Sendable, Equatable {
    var connectionID: String
    var start: Int64
    var end: Int64
    var files: [HisuiSourceFile]

    /// hisui's overlap test (touching counts).
    func overlaps(_ other: HisuiSource) -> Bool {
        start <= other.start ? other.start <= end : start <= other.end
    }

    /// The files to play, as hisui merges a whole recording with its split parts: by start,
    /// the longer first, dropping any that starts inside one already taken.
    var playedFiles: [HisuiSourceFile] {
        var taken: [HisuiSourceFile] = []
        var lastEnd: Int64 = 0
        for file in files.sorted(by: { ($0.start, -$0.end, $0.name) < ($1.start, -$1.end, $1.name) }) where file.start >= lastEnd {
            taken.append(file)
            lastEnd = file.end
        }
        return taken
    }
}

/// Resolves a layout's source names against a session's files, as hisui resolves them
/// against its ROOT_DIR: `*` in the file name, a name without `*` must exist, exclusions by
/// the same patterns. Sources live in the session's own directory, so a name with a directory
/// in it is refused rather than looked up elsewhere.
enum HisuiSources {
    static func resolve(_ patterns: [String], excluding excluded: [String], in files: [HisuiSourceFile], key: String) throws(HisuiLayoutError) -> [HisuiSourceFile] {
        var chosen: [HisuiSourceFile] = []
        var seen = Set<String>()
        for pattern in patterns {
            let name = try fileName(pattern, key: key)
            let matched = files.filter { matches(name, $0.name) }.sorted { $0.name < $1.name }
            if matched.isEmpty && !name.contains("*") { throw .sources("\(key): no recorded file \(pattern) in the session") }
            for file in matched where seen.insert(file.name).inserted { chosen.append(file) }
        }
        let exclusions = try excluded.map { pattern throws(HisuiLayoutError) in try fileName(pattern, key: key + "_excluded") }
        return chosen.filter { file in !exclusions.contains { matches($0, file.name) } }
    }

    /// Matched files grouped per sender, in connection id order.
    static func aggregate(_ files: [HisuiSourceFile]) -> [HisuiSource] {
        Dictionary(grouping: files, by: \.connectionID).keys.sorted().compactMap { id in
            let own = files.filter { $0.connectionID == id }
            guard let start = own.map(\.start).min(), let end = own.map(\.end).max() else { return nil }
            return HisuiSource(connectionID: id, start: start, end: end, files: own)
        }
    }

    /// The file-name part of a pattern; `./name` is the session's directory too.
    static func fileName(_ pattern: String, key: String) throws(HisuiLayoutError) -> String {
        var name = Substring(pattern)
        while name.hasPrefix("./") { name = name.dropFirst(2) }
        guard !name.isEmpty, !name.contains("/"), name != "..", name != "." else {
            throw .sources("\(key): \(pattern) is not a file name in the session's directory (recbot reads a session's own files only)")
        }
        return String(name)
    }

    /// A wildcard match: `*` stands for any run of characters, the rest is literal. (hisui
    /// looks each piece up at its first occurrence, so `a*b` misses `abab`; this matches it,
    /// which only ever finds more of a session's files.)
    static func matches(_ pattern: String, _ name: String) -> Bool {
        let tokens = pattern.split(separator: "*", omittingEmptySubsequences: false)
        guard tokens.count > 1 else { return pattern == name }
        var rest = Substring(name)
        guard rest.hasPrefix(tokens[0]) else { return false }
        rest = rest.dropFirst(tokens[0].count)
        for token in tokens.dropFirst().dropLast() where !token.isEmpty {
            guard let range = rest.range(of: token) else { return false }
            rest = rest[range.upperBound...]
        }
        let last = tokens[tokens.count - 1]
        return rest.count >= last.count && rest.hasSuffix(last)
    }
}
