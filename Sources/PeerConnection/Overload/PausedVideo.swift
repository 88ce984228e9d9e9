import RTP

/// Video streams paused for overload, and the check that drops their new pictures before SRTP.
///
/// The RTP header is sent in the clear (RFC 3711 encrypts only the payload), so a packet's
/// SSRC and timestamp can be read without decrypting it, and decryption is most of what a
/// packet costs. A paused stream keeps packets of pictures up to its boundary (the last one
/// taken in can complete, and retransmissions of earlier ones still help) and drops newer ones.
/// Reading unauthenticated header fields is safe here: a forged packet can only be dropped,
/// which SRTP authentication would have done anyway.
struct PausedVideo {
    struct Stream {
        /// The RTP timestamp of the last picture taken in before the pause.
        var boundary: UInt32
        var lastShedTimestamp: UInt32?
        /// Pictures and packets dropped in this pause.
        var shedFrames = 0
        var shedPackets = 0
        /// Packets dropped since the governor last looked (the stream is still arriving).
        var recentPackets = 0
    }

    private(set) var streams: [UInt32: Stream] = [:]
    private(set) var shedFrames = 0
    private(set) var shedPackets = 0

    var isEmpty: Bool { streams.isEmpty }
    var count: Int { streams.count }

    mutating func pause(ssrc: UInt32, boundary: UInt32) {
        streams[ssrc] = Stream(boundary: boundary)
    }

    /// Ends the pause of `ssrc`; what it shed.
    mutating func resume(ssrc: UInt32) -> Stream? { streams.removeValue(forKey: ssrc) }

    /// True when `datagram` (SRTP, first byte 128...191) is a packet of a paused stream's picture
    /// newer than its boundary: it is dropped unread.
    mutating func sheds(_ datagram: [UInt8]) -> Bool {
        guard !streams.isEmpty, datagram.count >= 12, !RTPPacket.isRTCP(datagram) else { return false }
        let ssrc = RTPHeaderFields.ssrc(datagram)
        guard var stream = streams[ssrc] else { return false }
        let timestamp = RTPHeaderFields.timestamp(datagram)
        // Serial-number order (RFC 1982): newer when the difference is positive as a signed value.
        guard Int32(bitPattern: timestamp &- stream.boundary) > 0 else { return false }
        if stream.lastShedTimestamp != timestamp {
            stream.lastShedTimestamp = timestamp
            stream.shedFrames += 1
            shedFrames += 1
        }
        stream.shedPackets += 1
        stream.recentPackets += 1
        shedPackets += 1
        streams[ssrc] = stream
        return true
    }

    /// Streams that shed packets since the last call (they have not ended), counts reset.
    mutating func takeRecentlyArriving() -> [UInt32] {
        var arriving: [UInt32] = []
        for (ssrc, stream) in streams where stream.recentPackets > 0 {
            arriving.append(ssrc)
            streams[ssrc]?.recentPackets = 0
        }
        return arriving
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
