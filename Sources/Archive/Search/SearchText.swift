import Foundation

/// What message search looks in, for a payload whose stored text is not already that text.
///
/// - A binary data-channel message is searchable when its bytes are UTF-8 text: Sora's
///   messaging channels carry bytes, and a chat client sends its text as UTF-8.
/// - JSON whose strings use `\u` escapes is searched as its keys and strings, unescaped, one
///   per line, so "契約" is found however the sender encoded it.
/// - Text, and JSON without escapes, are searched as stored (nil here).
public enum SearchText {
    /// Longer text is searched in its first this many bytes: the index stays proportional to
    /// the catalog, whatever one message holds.
    public static let maximumBytes = 64 * 1024

    public static func of(_ payload: EventPayload) -> String? {
        switch payload {
        case .text(let text): return text.utf8.count > maximumBytes ? cut(text) : nil
        case .json(let text): return unescapedJSON(text) ?? (text.utf8.count > maximumBytes ? cut(text) : nil)
        case .binary(let bytes):
            guard let text = decodedText(bytes) else { return nil }
            return unescapedJSON(text).map(cut) ?? cut(text)
        }
    }

    /// UTF-8 that reads as text: valid, and no control characters other than whitespace
    /// (so an image or a protobuf that happens to decode is not indexed as noise).
    static func decodedText(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty else { return nil }
        let kept = bytes[..<characterBoundary(bytes[...], atMost: maximumBytes)]
        let text = String(decoding: kept, as: UTF8.self)
        guard text.utf8.elementsEqual(kept) else { return nil }  // not UTF-8: decoding replaced bytes
        let controls = text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\r" && $0 != "\t" }
        return controls ? nil : text
    }

    /// The keys and strings of JSON written with escapes; nil when it has none or is not JSON.
    static func unescapedJSON(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "\\")),
              let value = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else { return nil }
        var strings: [String] = []
        collect(value, into: &strings, depth: 0)
        return cut(strings.joined(separator: "\n").replacingOccurrences(of: "\0", with: " "))
    }

    private static func collect(_ value: Any, into strings: inout [String], depth: Int) {
        guard depth < 64 else { return }
        switch value {
        case let text as String: strings.append(text)
        case let object as [String: Any]:
            for key in object.keys.sorted() {
                strings.append(key)
                collect(object[key] as Any, into: &strings, depth: depth + 1)
            }
        case let array as [Any]: for element in array { collect(element, into: &strings, depth: depth + 1) }
        default: break
        }
    }

    /// At most `maximumBytes` of UTF-8, cut at a character boundary.
    static func cut(_ text: String) -> String {
        guard text.utf8.count > maximumBytes else { return text }
        let bytes = Array(text.utf8.prefix(maximumBytes + 1))
        return String(decoding: bytes[..<characterBoundary(bytes[...], atMost: maximumBytes)], as: UTF8.self)
    }

    /// The largest end ≤ `limit` that does not split a UTF-8 sequence (continuation bytes are 10xxxxxx).
    private static func characterBoundary(_ bytes: ArraySlice<UInt8>, atMost limit: Int) -> Int {
        guard bytes.count > limit else { return bytes.endIndex }
        var end = bytes.startIndex + limit
        while end > bytes.startIndex, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return end
    }
}
