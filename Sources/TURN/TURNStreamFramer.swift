/// Splits the byte stream of a TURN connection over TCP or TLS into messages (RFC 8656 §12.5,
/// RFC 6062 framing): STUN messages and padded ChannelData back to back. Sans-IO: bytes go in
/// as they arrive, whole frames come out. A frame is at most 65,535 + 4 + 3 bytes, so the buffer
/// is bounded; anything not STUN or ChannelData ends the connection (nothing after it can be framed).
public struct TURNStreamFramer: Sendable {
    /// A STUN message is at most 20 + 65,532 bytes, a padded ChannelData 4 + 65,535 + 1.
    public static let maximumFrameBytes = 4 + 65_535 + 3
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes received and not yet part of a whole frame.
    public var pendingBytes: Int { buffer.count - start }

    /// Appends what the connection read and returns every whole frame it completes (each a
    /// STUN message or a ChannelData message, padding included).
    public mutating func append(_ bytes: some Collection<UInt8>) throws(TURNWireError) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var frames: [[UInt8]] = []
        while let length = try nextFrameLength() {
            frames.append(Array(buffer[start..<(start + length)]))
            start += length
        }
        // Compact once the consumed prefix dominates: amortised O(1) per byte.
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        guard pendingBytes <= Self.maximumFrameBytes else { throw .bufferLimit(Self.maximumFrameBytes) }
        return frames
    }

    /// The length of the frame at `start` when all of it is buffered, nil when more is needed.
    private func nextFrameLength() throws(TURNWireError) -> Int? {
        guard pendingBytes >= 4 else { return nil }
        let first = buffer[start]
        let declared = Int(UInt16(buffer[start + 2]) << 8 | UInt16(buffer[start + 3]))
        let length: Int
        switch first >> 6 {
        case 0b00: length = 20 + declared  // STUN: its length is a multiple of four already
        case 0b01: length = 4 + declared + (4 - declared % 4) % 4
        default: throw .unknownFrame(firstByte: first)
        }
        return pendingBytes >= length ? length : nil
    }
}
