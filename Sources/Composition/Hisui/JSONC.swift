import Foundation

/// JSON with comments (`//`, `/* */`) and trailing commas, as hisui's `.jsonc` layouts are
/// written, turned into plain JSON for Foundation's parser. Written by hand because no JSONC
/// reader is among this project's libraries and the grammar is a small lexical pass; it also
/// bounds what Foundation's recursive parser sees (size and nesting), since a layout file is
/// untrusted input.
enum JSONC {
    static let maximumBytes = 1 << 20
    static let maximumDepth = 64

    enum Failure: Error, Equatable {
        case tooLarge(Int)
        case tooDeep
        case unterminatedComment
        case unterminatedString
    }

    /// The text as plain JSON: comments become spaces (so positions and line numbers stay),
    /// a comma before `]` or `}` is dropped.
    static func plainJSON(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        guard bytes.count <= maximumBytes else { throw .tooLarge(bytes.count) }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var index = 0
        var depth = 0
        /// Where a comma was written that a closing bracket may still cancel.
        var pendingComma: Int?
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let end = try stringEnd(bytes, from: index)
                out += bytes[index..<end]
                index = end
                pendingComma = nil
                continue
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { out.append(UInt8(ascii: " ")); index += 1 }
                continue
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                guard let close = blockCommentEnd(bytes, from: index + 2) else { throw .unterminatedComment }
                for position in index..<close { out.append(bytes[position] == UInt8(ascii: "\n") ? UInt8(ascii: "\n") : UInt8(ascii: " ")) }
                index = close
                continue
            case UInt8(ascii: ","):
                pendingComma = out.count
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                guard depth <= maximumDepth else { throw .tooDeep }
                pendingComma = nil
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if let comma = pendingComma { out[comma] = UInt8(ascii: " ") }
                pendingComma = nil
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                break
            default:
                pendingComma = nil
            }
            out.append(byte)
            index += 1
        }
        return out
    }

    /// The index just past a string's closing quote.
    private static func stringEnd(_ bytes: [UInt8], from start: Int) throws(Failure) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        throw .unterminatedString
    }

    /// The index just past `*/`, or nil.
    private static func blockCommentEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/") { return index + 2 }
            index += 1
        }
        return nil
    }
}
