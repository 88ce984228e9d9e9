import WireCoding

/// One data channel, as the peer opened it (DCEP) on an SCTP stream.
public struct DataChannel: Equatable, Sendable {
    public var streamID: UInt16
    public var label: String
    public var protocolName: String
    public var ordered: Bool
    public var channelType: DCEPMessage.ChannelType
    public var reliabilityParameter: UInt32
}

public enum DataChannelEvent: Equatable, Sendable {
    case established
    case opened(DataChannel)
    /// A message on a channel: text (PPID 51/56) or binary (53/57).
    case message(channel: DataChannel, isBinary: Bool, data: [UInt8])
    case closed(DataChannel)
    case failed(String)
}

public struct DataChannelCounters: Equatable, Sendable {
    public var messagesReceived = 0
    /// Data on a stream no DCEP OPEN announced.
    public var messagesOnUnknownStreams = 0
    /// An OPEN for a stream that already has a channel (the newer one replaces it).
    public var reopenedChannels = 0
    public var malformedControlMessages = 0
    public var unknownPayloadProtocols = 0
    /// Streams the peer reset that carried no channel.
    public var resetsOfUnknownStreams = 0
}

public struct DataChannelOutput: Equatable, Sendable {
    /// SCTP packets, each for one DTLS record.
    public var packets: [[UInt8]] = []
    public var events: [DataChannelEvent] = []
}

/// WebRTC data channels (RFC 8831/8832) over an SCTP association: the peer opens channels
/// with DCEP, we acknowledge, and messages are delivered per channel. Sans-IO.
public final class DataChannelEndpoint {
    public let association: SCTPAssociation
    public private(set) var channels: [UInt16: DataChannel] = [:]
    public private(set) var counters = DataChannelCounters()
    public static let maximumChannels = 1_024

    public init(association: SCTPAssociation) {
        self.association = association
    }

    public func start(now: MonotonicTime) -> DataChannelOutput { translate(association.start(now: now), now: now) }

    public func handle(packet: [UInt8], now: MonotonicTime) -> DataChannelOutput {
        translate(association.handle(packet: packet, now: now), now: now)
    }

    public var nextTimeout: MonotonicTime? { association.nextTimeout }

    public func handleTimeout(now: MonotonicTime) -> DataChannelOutput { translate(association.handleTimeout(now: now), now: now) }

    /// Sends on a channel (signaling replies, stats). Text uses PPID 51, binary 53 (empty: 56/57).
    public func send(_ data: [UInt8], label: String, binary: Bool, now: MonotonicTime) -> DataChannelOutput {
        guard let channel = channels.values.first(where: { $0.label == label }) else { return DataChannelOutput() }
        let ppid: UInt32 = data.isEmpty ? (binary ? DataChannelPPID.binaryEmpty : DataChannelPPID.stringEmpty)
            : (binary ? DataChannelPPID.binary : DataChannelPPID.string)
        return translate(association.send(data, streamID: channel.streamID, payloadProtocol: ppid, now: now), now: now)
    }

    public func channel(label: String) -> DataChannel? { channels.values.first { $0.label == label } }

    /// Closes a channel from our side; `.closed` follows once the peer has reset its stream too.
    public func close(label: String, now: MonotonicTime) -> DataChannelOutput {
        guard let channel = channel(label: label) else { return DataChannelOutput() }
        return translate(association.resetOutgoingStreams([channel.streamID], now: now), now: now)
    }

    private func translate(_ output: SCTPOutput, now: MonotonicTime) -> DataChannelOutput {
        var result = DataChannelOutput(packets: output.packets, events: [])
        for event in output.events {
            switch event {
            case .established:
                result.events.append(.established)
            case .message(let message):
                receive(message, now: now, &result)
            case .streamsReset(let streams):
                for stream in streams {
                    if let channel = channels.removeValue(forKey: stream) {
                        result.events.append(.closed(channel))
                    } else {
                        counters.resetsOfUnknownStreams += 1
                    }
                }
            case .aborted(let reason):
                result.events.append(.failed(reason))
            case .closed:
                for channel in channels.values.sorted(by: { $0.streamID < $1.streamID }) { result.events.append(.closed(channel)) }
                channels.removeAll()
            }
        }
        return result
    }

    private func receive(_ message: SCTPMessage, now: MonotonicTime, _ result: inout DataChannelOutput) {
        switch message.payloadProtocol {
        case DataChannelPPID.dcep:
            guard let control = try? DCEPMessage(parsing: message.data) else {
                counters.malformedControlMessages += 1
                return
            }
            guard case .open(let type, _, let reliability, let label, let protocolName) = control else { return }  // ACK: ours are not opened by us
            if channels[message.streamID] != nil { counters.reopenedChannels += 1 }
            guard channels.count < DataChannelEndpoint.maximumChannels || channels[message.streamID] != nil else {
                counters.malformedControlMessages += 1
                return
            }
            let channel = DataChannel(streamID: message.streamID, label: label, protocolName: protocolName, ordered: type.isOrdered,
                                      channelType: type, reliabilityParameter: reliability)
            channels[message.streamID] = channel
            let ack = association.send(DCEPMessage.ack.serialized, streamID: message.streamID, payloadProtocol: DataChannelPPID.dcep, now: now)
            result.packets += ack.packets
            result.events.append(.opened(channel))
        case DataChannelPPID.string, DataChannelPPID.binary, DataChannelPPID.stringEmpty, DataChannelPPID.binaryEmpty,
             DataChannelPPID.stringPartial, DataChannelPPID.binaryPartial:
            guard let channel = channels[message.streamID] else {
                counters.messagesOnUnknownStreams += 1
                return
            }
            let empty = message.payloadProtocol == DataChannelPPID.stringEmpty || message.payloadProtocol == DataChannelPPID.binaryEmpty
            let binary = message.payloadProtocol == DataChannelPPID.binary || message.payloadProtocol == DataChannelPPID.binaryEmpty
                || message.payloadProtocol == DataChannelPPID.binaryPartial
            counters.messagesReceived += 1
            result.events.append(.message(channel: channel, isBinary: binary, data: empty ? [] : message.data))
        default:
            counters.unknownPayloadProtocols += 1
        }
    }
}
