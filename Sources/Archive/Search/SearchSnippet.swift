import Foundation

/// The part of a matched message around its first match, on one line, for a results list.
public enum SearchSnippet {
    public static func around(_ text: String, match query: String, radius: Int = 40) -> String {
        let line = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        guard let found = line.range(of: query, options: [.caseInsensitive]) else {
            return line.count > radius * 2 ? String(line.prefix(radius * 2)) + "…" : line
        }
        let start = line.index(found.lowerBound, offsetBy: -radius, limitedBy: line.startIndex) ?? line.startIndex
        let end = line.index(found.upperBound, offsetBy: radius, limitedBy: line.endIndex) ?? line.endIndex
        return (start > line.startIndex ? "…" : "") + line[start..<end] + (end < line.endIndex ? "…" : "")
    }
}
