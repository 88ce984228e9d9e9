/// A query string as an HTML form sends it (`application/x-www-form-urlencoded`): `+` is a
/// space and `%XX` a byte. Hummingbird's `queryParameters` decodes by RFC 3986, which leaves
/// `+` alone, so a search typed as "late message" in the archive's form arrived as
/// "late+message". Hand-written because it is a dozen lines; sans-IO and fuzzed.
public struct FormQuery: Sendable, Equatable {
    public static let maximumPairs = 64
    public private(set) var pairs: [(name: String, value: String)] = []

    public init(_ query: String?) {
        guard let query else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true).prefix(Self.maximumPairs) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            pairs.append((Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : ""))
        }
    }

    /// The first value given for `name`.
    public func get(_ name: String) -> String? { pairs.first { $0.name == name }?.value }

    /// `+` as a space, `%XX` as its byte (a malformed escape is kept as written), then UTF-8
    /// (an invalid sequence becomes U+FFFD).
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var input = text.utf8[...]
        while let byte = input.popFirst() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                let digits = input.prefix(2)
                if digits.count == 2, let high = hexValue(digits.first!), let low = hexValue(digits.last!) {
                    bytes.append(high << 4 | low)
                    input = input.dropFirst(2)
                } else {
                    bytes.append(byte)
                }
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    public static func == (lhs: FormQuery, rhs: FormQuery) -> Bool {
        lhs.pairs.map(\.name) == rhs.pairs.map(\.name) && lhs.pairs.map(\.value) == rhs.pairs.map(\.value)
    }
}
