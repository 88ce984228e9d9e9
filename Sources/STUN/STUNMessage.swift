/// STUN (RFC 8489) message classes.
public enum STUNClass: UInt16, Sendable {
    case request = 0b00
    case indication = 0b01
    case successResponse = 0b10
    case errorResponse = 0b11
}

/// Methods recbot uses (RFC 8489, and RFC 8656 for TURN). Others parse fine and keep their raw value.
public enum STUNMethod {
    public static let binding: UInt16 = 0x001
    public static let allocate: UInt16 = 0x003
    public static let refresh: UInt16 = 0x004
    /// Indications only: data to a peer, and data from one.
    public static let send: UInt16 = 0x006
    public static let data: UInt16 = 0x007
    public static let createPermission: UInt16 = 0x008
    public static let channelBind: UInt16 = 0x009
}

/// The 96-bit transaction id.
public struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 12 else { return nil }
        self.bytes = bytes
    }

    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> STUNTransactionID {
        STUNTransactionID(uncheckedBytes: (0..<12).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// From two draws of a 64-bit source: the sans-IO cores (ICE, TURN) take randomness as a closure.
    public static func random(_ next: () -> UInt64) -> STUNTransactionID {
        let a = next(), b = next()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: a >> UInt64(shift))) }
        for shift in stride(from: 56, through: 32, by: -8) { bytes.append(UInt8(truncatingIfNeeded: b >> UInt64(shift))) }
        return STUNTransactionID(uncheckedBytes: bytes)
    }

    init(uncheckedBytes: [UInt8]) { bytes = uncheckedBytes }

    public var description: String { bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
}

/// Attribute types (RFC 8489 §18.3, RFC 8445 §16.1, RFC 5780 excluded).
public enum STUNAttributeType {
    public static let mappedAddress: UInt16 = 0x0001
    public static let username: UInt16 = 0x0006
    public static let messageIntegrity: UInt16 = 0x0008
    public static let errorCode: UInt16 = 0x0009
    public static let unknownAttributes: UInt16 = 0x000A
    // TURN (RFC 8656 §18)
    public static let channelNumber: UInt16 = 0x000C
    public static let lifetime: UInt16 = 0x000D
    public static let xorPeerAddress: UInt16 = 0x0012
    public static let data: UInt16 = 0x0013
    public static let realm: UInt16 = 0x0014
    public static let nonce: UInt16 = 0x0015
    public static let xorRelayedAddress: UInt16 = 0x0016
    public static let requestedAddressFamily: UInt16 = 0x0017
    public static let evenPort: UInt16 = 0x0018
    public static let requestedTransport: UInt16 = 0x0019
    public static let dontFragment: UInt16 = 0x001A
    public static let reservationToken: UInt16 = 0x0022
    public static let messageIntegritySHA256: UInt16 = 0x001C
    public static let userhash: UInt16 = 0x001E
    public static let xorMappedAddress: UInt16 = 0x0020
    public static let priority: UInt16 = 0x0024
    public static let useCandidate: UInt16 = 0x0025
    public static let software: UInt16 = 0x8022
    public static let alternateServer: UInt16 = 0x8023
    public static let fingerprint: UInt16 = 0x8028
    public static let iceControlled: UInt16 = 0x8029
    public static let iceControlling: UInt16 = 0x802A

    /// Attributes below 0x8000 must be understood (comprehension-required).
    public static func isComprehensionRequired(_ type: UInt16) -> Bool { type < 0x8000 }

    /// The comprehension-required attributes this codec understands.
    static let understood: Set<UInt16> = [
        mappedAddress, username, messageIntegrity, errorCode, unknownAttributes, realm, nonce,
        xorMappedAddress, priority, useCandidate,
        channelNumber, lifetime, xorPeerAddress, data, xorRelayedAddress, requestedAddressFamily, evenPort,
        requestedTransport, dontFragment, reservationToken,
    ]
}

public struct STUNAttribute: Equatable, Sendable {
    public var type: UInt16
    public var value: [UInt8]

    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
    }
}

/// A decoded STUN message. Keeps the bytes it was parsed from, so MESSAGE-INTEGRITY and
/// FINGERPRINT can be checked exactly as received.
public struct STUNMessage: Sendable {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerLength = 20

    public var method: UInt16
    public var messageClass: STUNClass
    public var transactionID: STUNTransactionID
    /// In wire order. Attributes after MESSAGE-INTEGRITY other than FINGERPRINT are dropped (RFC 8489 §14.5).
    public var attributes: [STUNAttribute]

    /// Offset of MESSAGE-INTEGRITY's attribute header in `raw`, when present.
    public internal(set) var messageIntegrityOffset: Int?
    public internal(set) var fingerprintOffset: Int?
    /// The datagram this message was parsed from (empty for messages built locally).
    public internal(set) var raw: [UInt8] = []

    public init(method: UInt16, class messageClass: STUNClass, transactionID: STUNTransactionID, attributes: [STUNAttribute] = []) {
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    public func attribute(_ type: UInt16) -> STUNAttribute? { attributes.first { $0.type == type } }

    /// Comprehension-required attributes present that this codec does not understand
    /// (a request carrying any must be answered with 420 Unknown Attribute).
    public var unknownComprehensionRequired: [UInt16] {
        attributes.map(\.type).filter { STUNAttributeType.isComprehensionRequired($0) && !STUNAttributeType.understood.contains($0) }
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
