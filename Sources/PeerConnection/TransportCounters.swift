/// What the receive path dropped, by reason: the core's own counts, and the drivers' (the
/// socket thread's backlog and the kernel's drops), which the transport adds in so one value
/// describes the whole path.
public struct TransportCounters: Equatable, Sendable {
    public var datagramsReceived = 0
    /// First byte outside STUN (0-3), DTLS (20-63) and RTP/RTCP (128-191).
    public var droppedUnknownProtocol = 0
    /// DTLS or SRTP from a transport address ICE never validated.
    public var droppedUnvalidatedSource = 0
    /// Relay-only: a datagram that reached a host socket directly, not from a TURN server.
    public var droppedOutsideRelay = 0
    /// Datagrams that arrived through a TURN relay (Data indications and ChannelData).
    public var relayedDatagrams = 0
    /// SRTP/SRTCP before the keys exist.
    public var droppedBeforeKeys = 0
    public var droppedMalformedRTP = 0
    public var droppedMalformedRTCP = 0
    public var rtpPackets = 0
    public var rtcpPackets = 0
    /// What the sockets' thread read while the core was behind (`ReceiveBacklog`): drops and
    /// the deepest backlog. Filled in by the transport (`including(_:)`), not by the core.
    public var backlog = ReceiveBacklogCounters()
    /// Datagrams the kernel dropped on the sockets (their buffer full), also from the transport.
    public var kernelReceiveDrops = 0
    /// Paused video's datagrams the kernel's socket filter dropped before recbot read them
    /// (`PausedVideoFilter`), also from the transport.
    public var kernelFilteredDatagrams = 0
    /// Video shed for overload: pictures and packets dropped unread, streams paused now, and
    /// the episodes (from the first pause to the last resume).
    public var shedVideoFrames = 0
    public var shedVideoPackets = 0
    public var pausedVideoStreams = 0
    public var videoPauses = 0
    public var overloadEpisodes = 0

    public init() {}

    /// These counters with a transport's backlog counters.
    public func including(_ backlog: ReceiveBacklogCounters, kernelDrops: KernelDrops?) -> TransportCounters {
        var counters = self
        counters.backlog = self.backlog + backlog
        counters.kernelReceiveDrops += kernelDrops?.overflowed ?? 0
        counters.kernelFilteredDatagrams += kernelDrops?.filtered ?? 0
        return counters
    }

    /// Counters of two connections (or periods), summed.
    public static func + (lhs: TransportCounters, rhs: TransportCounters) -> TransportCounters {
        var sum = lhs
        sum.datagramsReceived += rhs.datagramsReceived
        sum.droppedUnknownProtocol += rhs.droppedUnknownProtocol
        sum.droppedUnvalidatedSource += rhs.droppedUnvalidatedSource
        sum.droppedOutsideRelay += rhs.droppedOutsideRelay
        sum.relayedDatagrams += rhs.relayedDatagrams
        sum.droppedBeforeKeys += rhs.droppedBeforeKeys
        sum.droppedMalformedRTP += rhs.droppedMalformedRTP
        sum.droppedMalformedRTCP += rhs.droppedMalformedRTCP
        sum.rtpPackets += rhs.rtpPackets
        sum.rtcpPackets += rhs.rtcpPackets
        sum.backlog = lhs.backlog + rhs.backlog
        sum.kernelReceiveDrops += rhs.kernelReceiveDrops
        sum.kernelFilteredDatagrams += rhs.kernelFilteredDatagrams
        sum.shedVideoFrames += rhs.shedVideoFrames
        sum.shedVideoPackets += rhs.shedVideoPackets
        sum.pausedVideoStreams += rhs.pausedVideoStreams
        sum.videoPauses += rhs.videoPauses
        sum.overloadEpisodes += rhs.overloadEpisodes
        return sum
    }
}

/// What the kernel dropped on a transport's sockets: datagrams that found the receive buffer
/// full, and paused video that its socket filter dropped.
public struct KernelDrops: Equatable, Sendable {
    public var overflowed: Int
    public var filtered: Int
    public init(overflowed: Int, filtered: Int) { (self.overflowed, self.filtered) = (overflowed, filtered) }
}

/// What the sockets' thread dropped while the core was behind (Transport's `ReceiveBacklog`).
/// A plain value here so `TransportCounters` can carry it without the core knowing the driver.
public struct ReceiveBacklogCounters: Equatable, Sendable {
    public var mediaDropped = 0
    public var controlDropped = 0
    /// The most bytes waiting at once (media and control), and the bytes waiting when read.
    public var peakBytes = 0
    public var waitingBytes = 0
    /// Packets of paused video streams dropped as they were read (see `PausedVideo`), and
    /// their pictures.
    public var videoPacketsShed = 0
    public var videoFramesShed = 0
    public init() {}

    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.mediaDropped += rhs.mediaDropped
        sum.controlDropped += rhs.controlDropped
        sum.videoPacketsShed += rhs.videoPacketsShed
        sum.videoFramesShed += rhs.videoFramesShed
        sum.peakBytes = max(lhs.peakBytes, rhs.peakBytes)
        sum.waitingBytes = rhs.waitingBytes
        return sum
    }
}
