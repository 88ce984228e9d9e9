import MessageAuthentication
import WireCoding

extension STUNMessage {
    /// Most attributes a message may carry; real ICE checks carry about eight.
    public static let maximumAttributes = 32

    /// True when the datagram looks like STUN (RFC 7983: first byte 0...3) with the magic cookie.
    public static func isProbablySTUN(_ datagram: [UInt8]) -> Bool {
        datagram.count >= headerLength && datagram[0] < 4
            && datagram[4] == 0x21 && datagram[5] == 0x12 && datagram[6] == 0xA4 && datagram[7] == 0x42
    }

    /// Parses one STUN message from a whole UDP datagram.
    public init(parsing datagram: [UInt8]) throws(STUNError) {
        var reader = ByteReader(datagram)
        guard datagram.count >= STUNMessage.headerLength,
              let type = reader.readUInt16(), let length = reader.readUInt16(), let cookie = reader.readUInt32(),
              let id = reader.readBytes(12)
        else { throw .tooShort(length: datagram.count) }
        guard type & 0xC000 == 0 else { throw .notSTUN(firstByte: datagram[0]) }
        guard cookie == STUNMessage.magicCookie else { throw .badMagicCookie(cookie) }
        guard Int(length) % 4 == 0 else { throw .lengthNotMultipleOfFour(Int(length)) }
        guard STUNMessage.headerLength + Int(length) == datagram.count else {
            throw .lengthMismatch(header: Int(length), datagram: datagram.count)
        }
        // Method bits are interleaved with the two class bits (RFC 8489 §5).
        let classBits = (type >> 7 & 0b10) | (type >> 4 & 0b01)
        let method = (type & 0x000F) | (type >> 1 & 0x0070) | (type >> 2 & 0x0F80)
        self.init(method: method, class: STUNClass(rawValue: classBits)!, transactionID: STUNTransactionID(uncheckedBytes: id))
        raw = datagram

        while !reader.isAtEnd {
            let start = reader.offset
            guard let attributeType = reader.readUInt16() else { throw .attributeOverrun(type: 0, offset: start) }
            guard let attributeLength = reader.readUInt16(), let value = reader.readBytes(Int(attributeLength)) else {
                throw .attributeOverrun(type: attributeType, offset: start)
            }
            let padding = (4 - Int(attributeLength) % 4) % 4
            guard reader.skip(padding) else { throw .attributeOverrun(type: attributeType, offset: start) }

            if fingerprintOffset != nil { throw .fingerprintNotLast(offset: start) }
            if attributeType == STUNAttributeType.fingerprint {
                guard attributeLength == 4 else { throw .malformedAttribute(type: attributeType, reason: "length \(attributeLength)") }
                fingerprintOffset = start
            } else if messageIntegrityOffset != nil {
                continue  // ignored after MESSAGE-INTEGRITY
            } else if attributeType == STUNAttributeType.messageIntegrity {
                guard attributeLength == 20 else { throw .malformedAttribute(type: attributeType, reason: "length \(attributeLength)") }
                messageIntegrityOffset = start
            }
            guard attributes.count < STUNMessage.maximumAttributes else { throw .tooManyAttributes(STUNMessage.maximumAttributes) }
            attributes.append(STUNAttribute(type: attributeType, value: value))
        }
    }

    /// Serialises the message, appending MESSAGE-INTEGRITY (when `integrityKey` is given)
    /// and FINGERPRINT (when asked) over the bytes before them.
    public func encoded(integrityKey: [UInt8]? = nil, fingerprint: Bool = false) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        let m = method
        let c = messageClass.rawValue
        let type = (m & 0x000F) | (m & 0x0070) << 1 | (m & 0x0F80) << 2 | (c & 0b01) << 4 | (c & 0b10) << 7
        writer.write(type)
        writer.write(UInt16(0))  // length, patched below
        writer.write(STUNMessage.magicCookie)
        writer.write(transactionID.bytes)
        for attribute in attributes
        where attribute.type != STUNAttributeType.messageIntegrity && attribute.type != STUNAttributeType.fingerprint {
            writer.write(attribute.type)
            writer.write(UInt16(attribute.value.count))
            writer.write(attribute.value)
            writer.write(zeros: (4 - attribute.value.count % 4) % 4)
        }
        if let integrityKey {
            // The length covers MESSAGE-INTEGRITY itself while the HMAC is computed.
            writer.patch(UInt16(writer.count - STUNMessage.headerLength + 24), at: 2)
            let mac = STUNIntegrity.hmacSHA1(key: integrityKey, message: writer.bytes)
            writer.write(STUNAttributeType.messageIntegrity)
            writer.write(UInt16(20))
            writer.write(mac)
        }
        if fingerprint {
            writer.patch(UInt16(writer.count - STUNMessage.headerLength + 8), at: 2)
            let crc = STUNIntegrity.fingerprint(of: writer.bytes)
            writer.write(STUNAttributeType.fingerprint)
            writer.write(UInt16(4))
            writer.write(crc)
        }
        writer.patch(UInt16(writer.count - STUNMessage.headerLength), at: 2)
        return writer.bytes
    }

    /// Checks MESSAGE-INTEGRITY (HMAC-SHA1) of a parsed message with the given key.
    public func hasValidMessageIntegrity(key: [UInt8]) -> Bool {
        guard let offset = messageIntegrityOffset, raw.count >= offset + 24 else { return false }
        var covered = Array(raw[0..<offset])
        let length = UInt16(offset - STUNMessage.headerLength + 24)
        covered[2] = UInt8(length >> 8)
        covered[3] = UInt8(length & 0xFF)
        let expected = STUNIntegrity.hmacSHA1(key: key, message: covered)
        return MessageAuthentication.constantTimeEqual(expected, Array(raw[(offset + 4)..<(offset + 24)]))
    }

    /// Checks FINGERPRINT (CRC-32 XOR 0x5354554e) of a parsed message.
    public func hasValidFingerprint() -> Bool {
        guard let offset = fingerprintOffset, raw.count == offset + 8 else { return false }
        var reader = ByteReader(raw, offset: offset + 4)
        guard let received = reader.readUInt32() else { return false }
        return STUNIntegrity.fingerprint(of: Array(raw[0..<offset])) == received
    }
}
