/// Why bytes were not a valid STUN message. Offsets are into the datagram.
public enum STUNError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(length: Int)
    case notSTUN(firstByte: UInt8)
    case badMagicCookie(UInt32)
    case lengthMismatch(header: Int, datagram: Int)
    case lengthNotMultipleOfFour(Int)
    case attributeOverrun(type: UInt16, offset: Int)
    case tooManyAttributes(Int)
    case fingerprintNotLast(offset: Int)
    case malformedAttribute(type: UInt16, reason: String)

    public var description: String {
        switch self {
        case .tooShort(let length): "STUN message too short (\(length) bytes)"
        case .notSTUN(let byte): "not a STUN message (first byte 0x\(String(byte, radix: 16)))"
        case .badMagicCookie(let cookie): "bad STUN magic cookie 0x\(String(cookie, radix: 16))"
        case .lengthMismatch(let header, let datagram): "STUN length \(header) does not match datagram of \(datagram) bytes"
        case .lengthNotMultipleOfFour(let length): "STUN length \(length) is not a multiple of 4"
        case .attributeOverrun(let type, let offset): "STUN attribute 0x\(String(type, radix: 16)) at \(offset) runs past the message"
        case .tooManyAttributes(let count): "STUN message has more than \(count) attributes"
        case .fingerprintNotLast(let offset): "STUN FINGERPRINT at \(offset) is not the last attribute"
        case .malformedAttribute(let type, let reason): "malformed STUN attribute 0x\(String(type, radix: 16)): \(reason)"
        }
    }
}
