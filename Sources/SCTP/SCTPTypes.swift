/// A message delivered on a stream (data channels sit on top).
public struct SCTPMessage: Equatable, Sendable {
    public var streamID: UInt16
    public var payloadProtocol: UInt32
    public var unordered: Bool
    public var data: [UInt8]
}

public enum SCTPEvent: Equatable, Sendable {
    case established
    case message(SCTPMessage)
    /// The peer reset these incoming streams (closed data channels).
    case streamsReset([UInt16])
    case aborted(String)
    case closed
}

public struct SCTPOutput: Equatable, Sendable {
    /// Each goes into one DTLS record.
    public var packets: [[UInt8]] = []
    public var events: [SCTPEvent] = []
}

public struct SCTPCounters: Equatable, Sendable {
    public var packetsReceived = 0
    public var droppedPackets = 0
    public var dataChunks = 0
    public var duplicateChunks = 0
    /// FORWARD-TSN chunks: the peer abandoned messages (partial reliability).
    public var forwardTSNChunks = 0
    public var messagesDelivered = 0
    /// Messages over the size limit, or reassemblies given up.
    public var oversizedMessages = 0
    public var retransmissions = 0
    /// Our own messages not sent because the peer's max-message-size is smaller.
    public var oversizedSends = 0
    /// Peer stream-reset requests performed, and ours that were never answered.
    public var streamResetsReceived = 0
    public var streamResetsAbandoned = 0
}
