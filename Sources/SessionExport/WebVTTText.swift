/// The small pieces of WebVTT (W3C WebVTT, §4) a caption file needs, written by hand: there is
/// no WebVTT writer among the Swift packages here, and the format is three rules.
enum WebVTTText {
    /// `hh:mm:ss.ttt` (hours at least two digits) for a non-negative offset in milliseconds.
    static func timestamp(milliseconds: Int64) -> String {
        let clamped = max(0, milliseconds)
        let (seconds, millis) = clamped.quotientAndRemainder(dividingBy: 1_000)
        let (minutes, secs) = seconds.quotientAndRemainder(dividingBy: 60)
        let (hours, mins) = minutes.quotientAndRemainder(dividingBy: 60)
        return "\(pad(hours, 2)):\(pad(mins, 2)):\(pad(secs, 2)).\(pad(millis, 3))"
    }

    /// Cue text from untrusted text: `&`, `<` and `>` as character references (so no tag and no
    /// "-->" can be injected), control characters as visible `\u{XX}` escapes, no blank line (it
    /// would end the cue), and at most `limit` characters.
    static func cueText(_ text: String, limit: Int = 500) -> String {
        var lines: [String] = []
        var line = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= limit { line += "…"; break }
            count += 1
            switch scalar {
            case "\n", "\r", "\u{2028}", "\u{2029}":
                if !line.trimmingWhitespace.isEmpty { lines.append(line) }
                line = ""
            case "&": line += "&amp;"
            case "<": line += "&lt;"
            case ">": line += "&gt;"
            default:
                if isHidden(scalar) {
                    line += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                } else {
                    line.unicodeScalars.append(scalar)
                }
            }
        }
        if !line.trimmingWhitespace.isEmpty { lines.append(line) }
        return lines.isEmpty ? "(empty)" : lines.joined(separator: "\n")
    }

    /// Control characters, and the bidirectional overrides that would reorder what a viewer reads.
    private static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// A voice span's annotation (`<v name>`): no `>`, `<`, `&` or line break may end it early.
    static func voiceName(_ name: String) -> String {
        let kept = name.unicodeScalars.filter { !"<>&".unicodeScalars.contains($0) && !isHidden($0) }
        let text = String(String.UnicodeScalarView(kept.prefix(64)))
        return text.isEmpty ? "unknown" : text
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<max(start, end)]
    }
}
