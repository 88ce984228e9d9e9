import WireCoding

/// Payload protocol identifiers of WebRTC data channels (RFC 8831 §8).
public enum DataChannelPPID {
    public static let dcep: UInt32 = 50
    public static let string: UInt32 = 51
    public static let binary: UInt32 = 53
    public static let stringEmpty: UInt32 = 56
    public static let binaryEmpty: UInt32 = 57
    /// Deprecated partial-message PPIDs some old stacks still send.
    public static let stringPartial: UInt32 = 54
    public static let binaryPartial: UInt32 = 52
}

/// Data Channel Establishment Protocol messages (RFC 8832).
public enum DCEPMessage: Equatable, Sendable {
    public enum ChannelType: UInt8, Sendable {
        case reliable = 0x00
        case reliableUnordered = 0x80
        case partialReliableRexmit = 0x01
        case partialReliableRexmitUnordered = 0x81
        case partialReliableTimed = 0x02
        case partialReliableTimedUnordered = 0x82

        public var isOrdered: Bool { rawValue & 0x80 == 0 }
    }

    case open(channelType: ChannelType, priority: UInt16, reliabilityParameter: UInt32, label: String, protocolName: String)
    case ack

    public enum ParseError: Error, Equatable, Sendable {
        case empty
        case unknownMessageType(UInt8)
        case unknownChannelType(UInt8)
        case truncated
        case invalidUTF8
    }

    /// Labels and protocols longer than this are refused (the field allows 64 KiB).
    public static let maximumStringLength = 1_024

    public init(parsing bytes: [UInt8]) throws(ParseError) {
        var reader = ByteReader(bytes)
        guard let type = reader.readUInt8() else { throw .empty }
        switch type {
        case 0x02:
            self = .ack
        case 0x03:
            guard let rawChannel = reader.readUInt8() else { throw .truncated }
            guard let channelType = ChannelType(rawValue: rawChannel) else { throw .unknownChannelType(rawChannel) }
            guard let priority = reader.readUInt16(), let reliability = reader.readUInt32(), let labelLength = reader.readUInt16(),
                  let protocolLength = reader.readUInt16(), Int(labelLength) <= DCEPMessage.maximumStringLength,
                  Int(protocolLength) <= DCEPMessage.maximumStringLength,
                  let label = reader.readBytes(Int(labelLength)), let protocolName = reader.readBytes(Int(protocolLength))
            else { throw .truncated }
            guard let labelText = String(validating: label, as: UTF8.self), let protocolText = String(validating: protocolName, as: UTF8.self) else {
                throw .invalidUTF8
            }
            self = .open(channelType: channelType, priority: priority, reliabilityParameter: reliability, label: labelText, protocolName: protocolText)
        default:
            throw .unknownMessageType(type)
        }
    }

    public var serialized: [UInt8] {
        switch self {
        case .ack:
            return [0x02]
        case .open(let channelType, let priority, let reliability, let label, let protocolName):
            var writer = ByteWriter(capacity: 12 + label.utf8.count + protocolName.utf8.count)
            writer.write(UInt8(0x03))
            writer.write(channelType.rawValue)
            writer.write(priority)
            writer.write(reliability)
            writer.write(UInt16(label.utf8.count))
            writer.write(UInt16(protocolName.utf8.count))
            writer.write(Array(label.utf8))
            writer.write(Array(protocolName.utf8))
            return writer.bytes
        }
    }
}
