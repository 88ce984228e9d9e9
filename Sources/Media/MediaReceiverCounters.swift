/// What the media receive core refused, dropped or did, summed over its streams.
public struct MediaReceiverCounters: Sendable, Equatable {
    public var rtpPackets = 0
    public var rtcpPackets = 0
    public var unknownStream = 0
    public var unknownPayloadType = 0
    public var unknownRetransmission = 0
    public var tooManyStreams = 0
    /// Packets on SSRCs a section that names its SSRCs did not name.
    public var unannouncedStream = 0
    public var unsupportedCodec = 0
    /// RTX packets with no payload (bandwidth probes): ignored.
    public var paddingOnlyRetransmissions = 0
    public var streamsExpired = 0
    public var goodbyes = 0
    /// Times the receiver-wide buffer budget made a stream give up a gap or a frame early.
    public var budgetSheds = 0
    public var rtcpDatagramsSent = 0
    public var sync = SyncCounters()
    /// Requests the session-wide feedback budget held back.
    public var feedback = FeedbackBudgetCounters()

    public init() {}

    /// Counters of two connections (or periods), summed.
    public static func + (lhs: MediaReceiverCounters, rhs: MediaReceiverCounters) -> MediaReceiverCounters {
        var sum = lhs
        sum.rtpPackets += rhs.rtpPackets
        sum.rtcpPackets += rhs.rtcpPackets
        sum.unknownStream += rhs.unknownStream
        sum.unknownPayloadType += rhs.unknownPayloadType
        sum.unknownRetransmission += rhs.unknownRetransmission
        sum.tooManyStreams += rhs.tooManyStreams
        sum.unannouncedStream += rhs.unannouncedStream
        sum.unsupportedCodec += rhs.unsupportedCodec
        sum.paddingOnlyRetransmissions += rhs.paddingOnlyRetransmissions
        sum.streamsExpired += rhs.streamsExpired
        sum.goodbyes += rhs.goodbyes
        sum.budgetSheds += rhs.budgetSheds
        sum.rtcpDatagramsSent += rhs.rtcpDatagramsSent
        sum.sync = lhs.sync + rhs.sync
        sum.feedback = lhs.feedback + rhs.feedback
        return sum
    }

    public var unrouted: Int { unknownStream + unknownPayloadType + unknownRetransmission + tooManyStreams + unannouncedStream }
}
