/// RTP payloads for the clip's frames. Written here because the receive side (Media) only
/// depacketizes; these are the sender's half, per the same RFCs.
enum Packetizers {
    /// The largest RTP payload, so header (12) + payload + SRTP tag (16) stays within 1,200 bytes.
    static let maximumPayloadBytes = 1_172

    /// VP8 (RFC 7741 §4.2): a 4-byte payload descriptor (X, S on the first packet, a 15-bit
    /// PictureID) and the frame cut into near-equal pieces.
    static func vp8(_ frame: [UInt8], pictureID: UInt16) -> [[UInt8]] {
        let room = maximumPayloadBytes - 4
        let count = max(1, (frame.count + room - 1) / room)
        let pieceSize = (frame.count + count - 1) / max(1, count)
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity(count)
        var offset = 0
        repeat {
            let end = min(frame.count, offset + pieceSize)
            var payload = [UInt8]()
            payload.reserveCapacity(4 + end - offset)
            payload.append(offset == 0 ? 0x90 : 0x80)  // X=1, S on the partition's first packet, PID 0
            payload.append(0x80)  // I: a PictureID follows
            payload.append(0x80 | UInt8(truncatingIfNeeded: (pictureID >> 8) & 0x7F))  // M: 15 bits
            payload.append(UInt8(truncatingIfNeeded: pictureID))
            payload.append(contentsOf: frame[offset..<end])
            payloads.append(payload)
            offset = end
        } while offset < frame.count
        return payloads
    }
}
