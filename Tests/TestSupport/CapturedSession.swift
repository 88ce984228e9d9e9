import Foundation

/// A session captured by `recbot join --capture-rtp FILE`: its decrypted RTP/RTCP packets with
/// their arrival times (nanoseconds from the capture's start), and the offers it answered.
public struct CapturedSession: Sendable {
    public struct Packet: Sendable {
        public var at: Int64
        public var bytes: [UInt8]
    }

    public struct Offer: Sendable {
        public var at: Int64
        public var sdp: String
    }

    public var packets: [Packet] = []
    public var offers: [Offer] = []

    public enum ReadError: Error { case notAPcap(String), truncated(String) }

    /// Reads `path` (nanosecond pcap, raw IPv4/UDP) and `path.offers.jsonl`.
    public init(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count >= 24, Self.u32(bytes, 0) == 0xA1B2_3C4D, Self.u32(bytes, 20) == 101 else { throw ReadError.notAPcap(path) }
        var offset = 24
        var raw: [(at: Int64, bytes: [UInt8])] = []
        while offset < bytes.count {
            guard offset + 16 <= bytes.count else { throw ReadError.truncated(path) }
            let time = Int64(Self.u32(bytes, offset)) * 1_000_000_000 + Int64(Self.u32(bytes, offset + 4))
            let length = Int(Self.u32(bytes, offset + 8))
            offset += 16
            guard length >= 28, offset + length <= bytes.count else { throw ReadError.truncated(path) }
            raw.append((time, Array(bytes[(offset + 28)..<(offset + length)])))
            offset += length
        }
        var start = raw.first?.at ?? 0
        for line in try String(contentsOfFile: path + ".offers.jsonl", encoding: .utf8).split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let at = (object["at_ns"] as? NSNumber)?.int64Value, let sdp = object["sdp"] as? String else { continue }
            if let wall = (object["start_ns"] as? NSNumber)?.int64Value { start = wall }
            offers.append(Offer(at: at, sdp: sdp))
        }
        packets = raw.map { Packet(at: $0.at - start, bytes: $0.bytes) }
    }

    private static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}
