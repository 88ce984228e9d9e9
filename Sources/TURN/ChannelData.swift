import WireCoding

/// TURN ChannelData (RFC 8656 §12.4): a two-byte channel number, a two-byte payload length,
/// the payload, and on TCP/TLS padding to a multiple of four that the length does not count.
public enum ChannelData {
    /// RFC 8656 narrowed the range to 0x4000-0x4FFF so the first byte stays in RFC 7983's 64-79.
    public static let channelNumbers: ClosedRange<UInt16> = 0x4000...0x4FFF
    public static let headerLength = 4

    /// True when the first byte is in the range RFC 7983 gives ChannelData.
    public static func isChannelData(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first else { return false }
        return (64...79).contains(first)
    }

    /// Builds a ChannelData message; `padded` is required on streams (and allowed on UDP).
    public static func encode(channel: UInt16, payload: [UInt8], padded: Bool) -> [UInt8] {
        let padding = padded ? (4 - payload.count % 4) % 4 : 0
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerLength + payload.count + padding)
        bytes.append(UInt8(channel >> 8))
        bytes.append(UInt8(channel & 0xFF))
        bytes.append(UInt8(payload.count >> 8))
        bytes.append(UInt8(payload.count & 0xFF))
        bytes.append(contentsOf: payload)
        if padding > 0 { bytes.append(contentsOf: repeatElement(0, count: padding)) }
        return bytes
    }

    /// The channel and payload of one ChannelData message. Trailing bytes after the payload
    /// are padding (up to three on UDP, where a sender may pad or not); more is malformed.
    public static func parse(_ bytes: [UInt8]) throws(TURNWireError) -> (channel: UInt16, payload: ArraySlice<UInt8>) {
        guard bytes.count >= headerLength else { throw .truncated(bytes.count) }
        let channel = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let length = Int(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
        guard channelNumbers.contains(channel) else { throw .badChannelNumber(channel) }
        let available = bytes.count - headerLength
        guard length <= available else { throw .lengthMismatch(declared: length, available: available) }
        guard available - length <= 3 else { throw .lengthMismatch(declared: length, available: available) }
        return (channel, bytes[headerLength..<(headerLength + length)])
    }
}

/// Why bytes from a TURN server were not a valid frame.
public enum TURNWireError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(Int)
    case badChannelNumber(UInt16)
    case lengthMismatch(declared: Int, available: Int)
    /// On a stream: the first two bits were neither STUN (00) nor ChannelData (01).
    case unknownFrame(firstByte: UInt8)
    case bufferLimit(Int)

    public var description: String {
        switch self {
        case .truncated(let count): "TURN frame too short (\(count) bytes)"
        case .badChannelNumber(let number): "TURN channel number 0x\(String(number, radix: 16)) outside 0x4000-0x4FFF"
        case .lengthMismatch(let declared, let available): "TURN ChannelData length \(declared) does not fit \(available) bytes"
        case .unknownFrame(let byte): "TURN stream frame starts with 0x\(String(byte, radix: 16)): neither STUN nor ChannelData"
        case .bufferLimit(let limit): "TURN stream buffered more than \(limit) bytes without a whole frame"
        }
    }
}
