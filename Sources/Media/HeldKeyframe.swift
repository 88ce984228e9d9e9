import RTP

/// Finds a whole keyframe among the packets a stream holds behind a gap. When the gap's NACKs go
/// unanswered (a sender that kept no copy: Janus keeps none until it knows the round trip), the
/// frames behind the gap cannot be decoded anyway until a keyframe; with one already here, the
/// stream need not wait out the whole recovery window for the gap.
enum HeldKeyframe {
    /// A frame longer than this is not looked for (its packets stay held as before).
    static let maximumPackets = 512

    /// The first sequence number of the frame `sequence` belongs to, when that frame is whole
    /// in `held` (from a packet after one of another timestamp, to its marker) and is a keyframe.
    static func start(around sequence: Int64, held: (Int64) -> RTPPacket?, depacketizer: any Depacketizer) -> Int64? {
        guard let packet = held(sequence) else { return nil }
        let timestamp = packet.timestamp
        var first = sequence
        while true {
            guard sequence - first < maximumPackets, let previous = held(first - 1) else { return nil }
            if previous.timestamp != timestamp { break }  // the frame before: ours starts at `first`
            first -= 1
        }
        var last = sequence
        while !(held(last)?.marker ?? false) {
            guard last - first < maximumPackets, let next = held(last + 1), next.timestamp == timestamp else { return nil }
            last += 1
        }
        guard let head = held(first), depacketizer.isFrameStart(head.payload) else { return nil }
        let payloads = (first...last).compactMap { held($0)?.payload }
        guard let frame = try? depacketizer.assemble(payloads, timestamp: timestamp), frame.isKeyframe else { return nil }
        return first
    }
}
