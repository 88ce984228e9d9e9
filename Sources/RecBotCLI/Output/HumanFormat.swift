import Archive
import DiskLayout
import Foundation

/// Formats for people (tables) and for scripts (JSON: RFC 3339 UTC).
enum HumanFormat {
    /// "Name:  value" lines with the values aligned; absent values show as "-".
    static func fields(_ fields: [(String, String?)]) -> String {
        let width = fields.map(\.0.count).max() ?? 0
        return fields.map { name, value in name + ":" + String(repeating: " ", count: width - name.count + 1) + TerminalText.escaped(value ?? "-") }
            .joined(separator: "\n")
    }

    /// `end - start` of catalog times, or nil when a damaged catalog makes it overflow.
    static func span(from start: Int64, to end: Int64) -> Int64? { CatalogTime.span(from: start, to: end) }

    /// RFC 3339 in UTC with milliseconds, e.g. 2026-11-22T01:52:22.123Z.
    static func rfc3339(milliseconds: Int64) -> String { DiskLayout.rfc3339(milliseconds: milliseconds) }

    /// Local wall-clock time to the second, e.g. 2026-11-22 10:52:22.
    static func localTime(milliseconds: Int64?) -> String? {
        guard let milliseconds else { return nil }
        var seconds = time_t(milliseconds.floorDivided(by: 1000))
        var parts = tm()
        tzset()  // localtime_r need not read TZ by itself
        localtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// 850ms, 42s, 15m02s, 2h03m07s.
    /// A position in a file as seconds with tenths (what a player's #t= takes), e.g. 83.4s.
    static func offset(milliseconds: Int64) -> String {
        "\(milliseconds / 1000).\(milliseconds % 1000 / 100)s"
    }

    static func duration(milliseconds: Int64?) -> String? {
        guard let milliseconds, milliseconds >= 0 else { return nil }
        if milliseconds < 1000 { return "\(milliseconds)ms" }
        let total = milliseconds / 1000
        let hours = total / 3600, minutes = total / 60 % 60, seconds = total % 60
        if hours > 0 { return String(format: "%dh%02dm%02ds", hours, minutes, seconds) }
        if minutes > 0 { return String(format: "%dm%02ds", minutes, seconds) }
        return "\(seconds)s"
    }

    /// 512 B, 1.5 KiB, 23.4 MiB, 1.2 GiB.
    static func size(bytes: Int64?) -> String? {
        guard let bytes else { return nil }
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
