import RTP

/// Video streams paused for overload, and the check that drops their new pictures before SRTP.
///
/// The RTP header is sent in the clear (RFC 3711 encrypts only the payload), so a packet's
/// SSRC and timestamp can be read without decrypting it, and decryption is most of what a
/// packet costs. A paused stream keeps packets of pictures up to its boundary (the last one
/// taken in can complete, and retransmissions of earlier ones still help) and drops newer ones.
/// Reading unauthenticated header fields is safe here: a forged packet can only be dropped,
/// which SRTP authentication would have done anyway.
///
/// The core keeps one (for what reaches it: packets read before a pause, relayed ones); the
/// transport's sockets' thread keeps a copy of its boundaries (`boundaries`), so most shed
/// packets are dropped as they are read, before they are copied or queued.
public struct PausedVideo: Sendable {
    struct Stream: Sendable {
        /// The RTP timestamp of the last picture taken in before the pause.
        var boundary: UInt32
        /// The picture last dropped (its packets after the first count no new picture).
        var lastShedTimestamp: UInt32?
    }

    private(set) var streams: [UInt32: Stream] = [:]
    public private(set) var shedFrames = 0
    public private(set) var shedPackets = 0
    /// Changes with every pause and resume (the transport copies the boundaries when it moves).
    public private(set) var generation = 0

    public init() {}

    public var isEmpty: Bool { streams.isEmpty }
    public var count: Int { streams.count }
    /// Each paused stream's boundary, by SSRC.
    public var boundaries: [UInt32: UInt32] { streams.mapValues(\.boundary) }

    mutating func pause(ssrc: UInt32, boundary: UInt32) {
        streams[ssrc] = Stream(boundary: boundary)
        generation &+= 1
    }

    /// Ends the pause of `ssrc`; false when it was not paused.
    mutating func resume(ssrc: UInt32) -> Bool {
        generation &+= 1
        return streams.removeValue(forKey: ssrc) != nil
    }

    /// Follows another's boundaries (the core's, on the sockets' thread): streams no longer
    /// paused go, new ones come, the others keep their counts.
    public mutating func follow(_ boundaries: [UInt32: UInt32]) {
        streams = boundaries.reduce(into: [:]) { result, entry in
            result[entry.key] = streams[entry.key].flatMap { $0.boundary == entry.value ? $0 : nil } ?? Stream(boundary: entry.value)
        }
        generation &+= 1
    }

    /// True when `datagram` (SRTP, first byte 128...191) is a packet of a paused stream's picture
    /// newer than its boundary: it is dropped unread.
    mutating func sheds(_ datagram: [UInt8]) -> Bool {
        guard !streams.isEmpty, datagram.count >= 12, !RTPPacket.isRTCP(datagram) else { return false }
        return sheds(ssrc: RTPHeaderFields.ssrc(datagram), timestamp: RTPHeaderFields.timestamp(datagram))
    }

    /// The same for an RTP packet (not RTCP) whose header the caller read.
    public mutating func sheds(ssrc: UInt32, timestamp: UInt32) -> Bool {
        guard var stream = streams[ssrc] else { return false }
        // Serial-number order (RFC 1982): newer when the difference is positive as a signed value.
        guard Int32(bitPattern: timestamp &- stream.boundary) > 0 else { return false }
        if stream.lastShedTimestamp != timestamp {
            stream.lastShedTimestamp = timestamp
            shedFrames += 1
        }
        shedPackets += 1
        streams[ssrc] = stream
        return true
    }
}

/// The clear RTP header fields the pause check reads (RFC 3550 section 5.1), from a datagram
/// at least 12 bytes long.
enum RTPHeaderFields {
    static func ssrc(_ bytes: [UInt8]) -> UInt32 { word(bytes, at: 8) }

    static func timestamp(_ bytes: [UInt8]) -> UInt32 { word(bytes, at: 4) }

    private static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
