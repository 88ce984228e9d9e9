import WireCoding

public enum RTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(Int)
    case badVersion(UInt8)
    case truncatedHeader(needed: Int, available: Int)
    case badPadding(Int)
    case malformedExtension(String)

    public var description: String {
        switch self {
        case .tooShort(let count): "RTP packet too short (\(count) bytes)"
        case .badVersion(let version): "RTP version \(version), expected 2"
        case .truncatedHeader(let needed, let available): "RTP header needs \(needed) bytes, packet has \(available)"
        case .badPadding(let padding): "RTP padding \(padding) exceeds the payload"
        case .malformedExtension(let reason): "malformed RTP header extension: \(reason)"
        }
    }
}

/// One RTP header extension element (RFC 8285), by local id.
public struct RTPHeaderExtensionElement: Equatable, Sendable {
    public var id: UInt8
    public var range: Range<Int>
}

/// A parsed RTP packet (RFC 3550). Refers to the datagram's bytes by range instead of copying the payload.
public struct RTPPacket: Sendable {
    public let bytes: [UInt8]
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    public var extensions: [RTPHeaderExtensionElement]
    public var payloadRange: Range<Int>
    public var paddingLength: Int

    public var payload: ArraySlice<UInt8> { bytes[payloadRange] }

    /// The value of header extension `id`, when present.
    public func headerExtension(_ id: UInt8) -> ArraySlice<UInt8>? {
        extensions.first { $0.id == id }.map { bytes[$0.range] }
    }

    /// RFC 7983 / RFC 5761: RTP and RTCP share first byte 128...191; RTCP packet types 192...223.
    public static func isRTCP(_ datagram: [UInt8]) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }

    public init(parsing bytes: [UInt8]) throws(RTPError) {
        guard bytes.count >= 12 else { throw .tooShort(bytes.count) }
        let first = bytes[0]
        guard first >> 6 == 2 else { throw .badVersion(first >> 6) }
        self.bytes = bytes
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        let csrcCount = Int(first & 0x0F)
        marker = bytes[1] & 0x80 != 0
        payloadType = bytes[1] & 0x7F
        var reader = ByteReader(bytes, offset: 2)
        sequenceNumber = reader.readUInt16() ?? 0
        timestamp = reader.readUInt32() ?? 0
        ssrc = reader.readUInt32() ?? 0
        var headerLength = 12 + 4 * csrcCount
        guard bytes.count >= headerLength else { throw .truncatedHeader(needed: headerLength, available: bytes.count) }
        csrcs = (0..<csrcCount).compactMap { _ in reader.readUInt32() }
        extensions = []
        if hasExtension {
            guard let profile = reader.readUInt16(), let words = reader.readUInt16() else {
                throw .truncatedHeader(needed: headerLength + 4, available: bytes.count)
            }
            let start = headerLength + 4
            headerLength = start + Int(words) * 4
            guard bytes.count >= headerLength else { throw .truncatedHeader(needed: headerLength, available: bytes.count) }
            extensions = try RTPPacket.parseExtensions(bytes, profile: profile, range: start..<headerLength)
        }
        paddingLength = 0
        var payloadEnd = bytes.count
        if hasPadding {
            let padding = Int(bytes[bytes.count - 1])
            guard padding >= 1, padding <= bytes.count - headerLength else { throw .badPadding(padding) }
            paddingLength = padding
            payloadEnd -= padding
        }
        payloadRange = headerLength..<payloadEnd
    }

    /// One-byte (0xBEDE) and two-byte (0x100x) header extension forms.
    static func parseExtensions(_ bytes: [UInt8], profile: UInt16, range: Range<Int>) throws(RTPError) -> [RTPHeaderExtensionElement] {
        var elements: [RTPHeaderExtensionElement] = []
        var index = range.lowerBound
        if profile == 0xBEDE {
            while index < range.upperBound {
                let byte = bytes[index]
                if byte == 0 { index += 1; continue }  // padding
                let id = byte >> 4
                if id == 15 { break }  // reserved: stop parsing (RFC 8285 §4.2)
                let length = Int(byte & 0x0F) + 1
                guard index + 1 + length <= range.upperBound else { throw .malformedExtension("one-byte element overruns") }
                elements.append(RTPHeaderExtensionElement(id: id, range: (index + 1)..<(index + 1 + length)))
                index += 1 + length
            }
        } else if profile & 0xFFF0 == 0x1000 {
            while index < range.upperBound {
                let id = bytes[index]
                if id == 0 { index += 1; continue }
                guard index + 1 < range.upperBound else { throw .malformedExtension("two-byte element header overruns") }
                let length = Int(bytes[index + 1])
                guard index + 2 + length <= range.upperBound else { throw .malformedExtension("two-byte element overruns") }
                elements.append(RTPHeaderExtensionElement(id: id, range: (index + 2)..<(index + 2 + length)))
                index += 2 + length
            }
        }
        // Other profiles: opaque, ignored.
        return elements
    }
}

/// Builds RTP packets (tests, fuzz seeds, and later RTX handling).
public struct RTPPacketBuilder {
    public var marker = false
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// One-byte-form extensions (ids 1...14, 1...16 bytes each).
    public var extensions: [(id: UInt8, value: [UInt8])] = []

    public init(payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
    }

    public func build(payload: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 12 + payload.count + 32)
        writer.write(UInt8(0x80 | (extensions.isEmpty ? 0 : 0x10)))
        writer.write(UInt8((marker ? 0x80 : 0) | (payloadType & 0x7F)))
        writer.write(sequenceNumber)
        writer.write(timestamp)
        writer.write(ssrc)
        if !extensions.isEmpty {
            var body = ByteWriter()
            for element in extensions {
                body.write(UInt8(element.id << 4 | UInt8(element.value.count - 1)))
                body.write(element.value)
            }
            body.write(zeros: (4 - body.count % 4) % 4)
            writer.write(UInt16(0xBEDE))
            writer.write(UInt16(body.count / 4))
            writer.write(body.bytes)
        }
        writer.write(payload)
        return writer.bytes
    }
}
