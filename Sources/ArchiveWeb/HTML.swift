import Foundation

/// Text made safe for HTML: every page is built from catalog rows, and those hold what
/// publishers sent (metadata, chat), so nothing reaches a page unescaped.
public enum HTML {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // Controls (except tab and newlines) and bidirectional overrides would let a sender
            // reorder what a reader sees around them; shown as their code instead.
            case _ where Self.isHidden(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 { return value != 0x09 && value != 0x0A && value != 0x0D }
        return value == 0x7F || (0x80...0x9F).contains(value) || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
            || value == 0x200E || value == 0x200F
    }

    /// A query string from pairs, percent-encoded (nil values left out).
    public static func query(_ pairs: [(String, String?)]) -> String {
        let kept = pairs.compactMap { name, value in value.map { (name, $0) } }.filter { !$0.1.isEmpty }
        guard !kept.isEmpty else { return "" }
        return "?" + kept.map { "\(percent($0.0))=\(percent($0.1))" }.joined(separator: "&")
    }

    public static func percent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// A page of the archive: the shared head, navigation and search box around a body.
public struct WebPage: Sendable {
    public var title: String
    public var body: String
    public var searchText: String

    public init(title: String, body: String, searchText: String = "") {
        (self.title, self.body, self.searchText) = (title, body, searchText)
    }

    public func rendered() -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(HTML.escape(title)) · recbot</title>
        <link rel="stylesheet" href="\(WebPaths.stylesheet)">
        <script src="\(WebPaths.script)" defer></script>
        </head><body>
        <header><a class="home" href="\(WebPaths.sessions)">recbot archive</a>
        <form class="search" action="\(WebPaths.search)" method="get"><input type="search" name="q" value="\(HTML.escape(searchText))" placeholder="Search messages" aria-label="Search messages"><button>Search</button></form>
        </header>
        <main>
        \(body)
        </main>
        </body></html>
        """
    }
}

/// The web archive's URLs, in one place so pages and routes agree.
public enum WebPaths {
    public static let root = "/archive"
    public static let sessions = root + "/"
    public static let search = root + "/search"
    public static let stylesheet = root + "/assets/archive.css"
    public static let script = root + "/assets/archive.js"

    public static func session(_ id: String) -> String { root + "/sessions/" + HTML.percent(id) }
    public static func recording(_ id: Int64) -> String { root + "/recordings/\(id)" }
    public static func media(_ id: Int64) -> String { root + "/files/\(id).webm" }
    public static func captions(_ id: Int64) -> String { root + "/files/\(id).vtt" }
    /// The session's composition (`recbot compose`'s default output).
    public static func composition(_ session: String) -> String { root + "/compositions/" + HTML.percent(session) + ".webm" }
    public static func compositionCaptions(_ session: String) -> String { root + "/compositions/" + HTML.percent(session) + ".vtt" }
    /// A moment of a recording: its page, playing from `milliseconds` into the file.
    public static func moment(_ id: Int64, milliseconds: Int64) -> String {
        recording(id) + "#t=" + WebFormat.seconds(milliseconds: milliseconds)
    }
}
