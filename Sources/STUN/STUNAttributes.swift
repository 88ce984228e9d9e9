import WireCoding

/// Typed views of the attributes ICE uses, and constructors for them.
extension STUNMessage {
    public var username: String? { attribute(STUNAttributeType.username).flatMap { String(validating: $0.value, as: UTF8.self) } }
    public var software: String? { attribute(STUNAttributeType.software).flatMap { String(validating: $0.value, as: UTF8.self) } }
    public var realm: String? { attribute(STUNAttributeType.realm).flatMap { String(validating: $0.value, as: UTF8.self) } }
    public var nonce: String? { attribute(STUNAttributeType.nonce).flatMap { String(validating: $0.value, as: UTF8.self) } }

    public var priority: UInt32? { attribute(STUNAttributeType.priority).flatMap { STUNMessage.uint32($0.value) } }
    public var iceControlling: UInt64? { attribute(STUNAttributeType.iceControlling).flatMap { STUNMessage.uint64($0.value) } }
    public var iceControlled: UInt64? { attribute(STUNAttributeType.iceControlled).flatMap { STUNMessage.uint64($0.value) } }
    public var useCandidate: Bool { attribute(STUNAttributeType.useCandidate) != nil }
    /// CHANNEL-NUMBER (TURN ChannelBind).
    public var channelNumber: UInt16? {
        guard let value = attribute(STUNAttributeType.channelNumber)?.value, value.count == 4 else { return nil }
        return UInt16(value[0]) << 8 | UInt16(value[1])
    }

    /// ERROR-CODE as (code, reason), e.g. (487, "Role Conflict").
    public var errorCode: (code: Int, reason: String)? {
        guard let value = attribute(STUNAttributeType.errorCode)?.value, value.count >= 4 else { return nil }
        let code = Int(value[2] & 0x07) * 100 + Int(value[3])
        return (code, String(decoding: value[4...], as: UTF8.self))
    }

    /// XOR-MAPPED-ADDRESS, un-XORed with the magic cookie and transaction id.
    public var xorMappedAddress: TransportAddress? { xorAddress(STUNAttributeType.xorMappedAddress) }
    /// TURN: the relayed transport address of an allocation, and a peer's address.
    public var xorRelayedAddress: TransportAddress? { xorAddress(STUNAttributeType.xorRelayedAddress) }
    public var xorPeerAddress: TransportAddress? { xorAddress(STUNAttributeType.xorPeerAddress) }

    /// LIFETIME in seconds (TURN allocations).
    public var lifetime: UInt32? { attribute(STUNAttributeType.lifetime).flatMap { STUNMessage.uint32($0.value) } }
    /// DATA: the payload of a Send or Data indication.
    public var data: [UInt8]? { attribute(STUNAttributeType.data)?.value }

    /// Any XOR-encoded address attribute (RFC 8489 §14.2), un-XORed.
    public func xorAddress(_ type: UInt16) -> TransportAddress? {
        guard let value = attribute(type)?.value else { return nil }
        var reader = ByteReader(value)
        guard reader.readUInt8() != nil, let family = reader.readUInt8(), let xPort = reader.readUInt16() else { return nil }
        let port = xPort ^ UInt16(STUNMessage.magicCookie >> 16)
        let mask = STUNMessage.xorMask(transactionID)
        switch family {
        case 0x01:
            guard let x = reader.readBytes(4), reader.isAtEnd else { return nil }
            return IPAddress(bytes: zip(x, mask.prefix(4)).map { $0 ^ $1 }).map { TransportAddress(ip: $0, port: port) }
        case 0x02:
            guard let x = reader.readBytes(16), reader.isAtEnd else { return nil }
            return IPAddress(bytes: zip(x, mask).map { $0 ^ $1 }).map { TransportAddress(ip: $0, port: port) }
        default:
            return nil
        }
    }

    static func xorMask(_ id: STUNTransactionID) -> [UInt8] {
        [0x21, 0x12, 0xA4, 0x42] + id.bytes
    }

    static func uint32(_ value: [UInt8]) -> UInt32? {
        var reader = ByteReader(value)
        guard value.count == 4 else { return nil }
        return reader.readUInt32()
    }

    static func uint64(_ value: [UInt8]) -> UInt64? {
        var reader = ByteReader(value)
        guard value.count == 8 else { return nil }
        return reader.readUInt64()
    }
}

extension STUNAttribute {
    public static func username(_ name: String) -> STUNAttribute { .init(type: STUNAttributeType.username, value: Array(name.utf8)) }
    public static func software(_ name: String) -> STUNAttribute { .init(type: STUNAttributeType.software, value: Array(name.utf8)) }
    public static var useCandidate: STUNAttribute { .init(type: STUNAttributeType.useCandidate, value: []) }

    public static func priority(_ value: UInt32) -> STUNAttribute {
        var writer = ByteWriter(capacity: 4)
        writer.write(value)
        return .init(type: STUNAttributeType.priority, value: writer.bytes)
    }

    public static func iceControlling(_ tieBreaker: UInt64) -> STUNAttribute {
        var writer = ByteWriter(capacity: 8)
        writer.write(tieBreaker)
        return .init(type: STUNAttributeType.iceControlling, value: writer.bytes)
    }

    public static func iceControlled(_ tieBreaker: UInt64) -> STUNAttribute {
        var writer = ByteWriter(capacity: 8)
        writer.write(tieBreaker)
        return .init(type: STUNAttributeType.iceControlled, value: writer.bytes)
    }

    public static func errorCode(_ code: Int, reason: String) -> STUNAttribute {
        var writer = ByteWriter(capacity: 4 + reason.utf8.count)
        writer.write(UInt16(0))
        writer.write(UInt8(code / 100))
        writer.write(UInt8(code % 100))
        writer.write(Array(reason.utf8))
        return .init(type: STUNAttributeType.errorCode, value: writer.bytes)
    }

    public static func unknownAttributes(_ types: [UInt16]) -> STUNAttribute {
        var writer = ByteWriter(capacity: types.count * 2)
        for type in types { writer.write(type) }
        return .init(type: STUNAttributeType.unknownAttributes, value: writer.bytes)
    }

    public static func xorMappedAddress(_ address: TransportAddress, transactionID: STUNTransactionID) -> STUNAttribute {
        xorAddress(STUNAttributeType.xorMappedAddress, address, transactionID: transactionID)
    }

    public static func xorPeerAddress(_ address: TransportAddress, transactionID: STUNTransactionID) -> STUNAttribute {
        xorAddress(STUNAttributeType.xorPeerAddress, address, transactionID: transactionID)
    }

    public static func xorRelayedAddress(_ address: TransportAddress, transactionID: STUNTransactionID) -> STUNAttribute {
        xorAddress(STUNAttributeType.xorRelayedAddress, address, transactionID: transactionID)
    }

    public static func realm(_ realm: String) -> STUNAttribute { .init(type: STUNAttributeType.realm, value: Array(realm.utf8)) }
    public static func nonce(_ nonce: String) -> STUNAttribute { .init(type: STUNAttributeType.nonce, value: Array(nonce.utf8)) }
    public static func data(_ payload: [UInt8]) -> STUNAttribute { .init(type: STUNAttributeType.data, value: payload) }

    public static func lifetime(seconds: UInt32) -> STUNAttribute {
        var writer = ByteWriter(capacity: 4)
        writer.write(seconds)
        return .init(type: STUNAttributeType.lifetime, value: writer.bytes)
    }

    /// REQUESTED-TRANSPORT UDP (protocol 17, then three reserved bytes): the only one RFC 8656 allocates.
    public static var requestedTransportUDP: STUNAttribute { .init(type: STUNAttributeType.requestedTransport, value: [17, 0, 0, 0]) }

    /// CHANNEL-NUMBER: the number, then two reserved bytes.
    public static func channelNumber(_ number: UInt16) -> STUNAttribute {
        var writer = ByteWriter(capacity: 4)
        writer.write(number)
        writer.write(UInt16(0))
        return .init(type: STUNAttributeType.channelNumber, value: writer.bytes)
    }

    public static func xorAddress(_ type: UInt16, _ address: TransportAddress, transactionID: STUNTransactionID) -> STUNAttribute {
        var writer = ByteWriter(capacity: 20)
        writer.write(UInt8(0))
        writer.write(UInt8(address.ip.isIPv4 ? 0x01 : 0x02))
        writer.write(address.port ^ UInt16(STUNMessage.magicCookie >> 16))
        let mask = STUNMessage.xorMask(transactionID)
        writer.write(zip(address.ip.bytes, mask).map { $0 ^ $1 })
        return .init(type: type, value: writer.bytes)
    }
}
