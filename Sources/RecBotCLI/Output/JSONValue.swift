import Archive
import Foundation

/// JSON output with keys in the order we choose (id first) and stored JSON payloads
/// embedded verbatim, so what was received is what `--json` prints.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// Already-valid JSON text, inserted as is.
    case raw(String)

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.rendered() == rhs.rendered() }

    public static func string(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    public static func int(_ value: Int64?) -> JSONValue { value.map { .int($0) } ?? .null }
    public static func int(_ value: Int?) -> JSONValue { value.map { .int(Int64($0)) } ?? .null }

    public func rendered(indent: Int = 0, pretty: Bool = true) -> String {
        var out = ""
        write(to: &out, indent: indent, pretty: pretty)
        return out
    }

    private func write(to out: inout String, indent: Int, pretty: Bool) {
        let newline = pretty ? "\n" : ""
        let pad = pretty ? String(repeating: "  ", count: indent + 1) : ""
        let closingPad = pretty ? String(repeating: "  ", count: indent) : ""
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .raw(let text): out += text
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "[" + newline
            for (index, item) in items.enumerated() {
                out += pad
                item.write(to: &out, indent: indent + 1, pretty: pretty)
                out += (index < items.count - 1 ? "," : "") + newline
            }
            out += closingPad + "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{" + newline
            for (index, (key, value)) in members.enumerated() {
                out += pad
                JSONValue.writeString(key, to: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, indent: indent + 1, pretty: pretty)
                out += (index < members.count - 1 ? "," : "") + newline
            }
            out += closingPad + "}"
        }
    }

    static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{00}"..."\u{1F}", "\u{2028}", "\u{2029}":
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// True when `text` is one complete JSON value (objects, arrays and scalars alike).
    public static func isValidJSON(_ text: String) -> Bool {
        StrictJSON.isValid(text)
    }
}
