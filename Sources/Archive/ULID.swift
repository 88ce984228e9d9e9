/// A ULID: 48-bit millisecond time + 80 random bits, as 26 Crockford base32 characters.
/// Session ids are ULIDs; they sort by start time and match Sora's 26-character id shape,
/// so they double as Sora-layout recording ids.
public struct ULID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let string: String

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// Validates untrusted text: exactly 26 upper-case Crockford characters, within 128 bits.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 26, bytes.allSatisfy({ ULID.alphabet.contains($0) }), bytes[0] <= UInt8(ascii: "7") else {
            return nil
        }
        string = text
    }

    /// `randomBytes` must hold at least 10 bytes; both inputs are injected for testability.
    public init(milliseconds: UInt64, randomBytes: [UInt8]) {
        precondition(randomBytes.count >= 10, "ULID needs 80 random bits")
        // 128 bits as two halves: time (48) + random (80).
        var high = milliseconds << 16 | UInt64(randomBytes[0]) << 8 | UInt64(randomBytes[1])
        var low: UInt64 = 0
        for byte in randomBytes[2..<10] { low = low << 8 | UInt64(byte) }
        var characters = [UInt8](repeating: 0, count: 26)
        for index in stride(from: 25, through: 0, by: -1) {
            characters[index] = ULID.alphabet[Int(low & 0x1F)]
            low = low >> 5 | (high & 0x1F) << 59
            high >>= 5
        }
        string = String(decoding: characters, as: UTF8.self)
    }

    public static func generate(now milliseconds: UInt64) -> ULID {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<10).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return ULID(milliseconds: milliseconds, randomBytes: random)
    }

    /// The creation time encoded in the first 10 characters.
    public var milliseconds: UInt64 {
        var value: UInt64 = 0
        for byte in string.utf8.prefix(10) {
            value = value << 5 | UInt64(ULID.alphabet.firstIndex(of: byte) ?? 0)
        }
        return value
    }

    public var description: String { string }
    public static func < (lhs: ULID, rhs: ULID) -> Bool { lhs.string < rhs.string }
}
