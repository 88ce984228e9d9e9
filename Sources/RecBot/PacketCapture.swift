import Foundation
import Logging
import Synchronization
import WireCoding

/// `recbot join --capture-rtp FILE`: every RTP and RTCP packet as recbot had it after SRTP,
/// with its arrival time, in a pcap file (nanosecond timestamps, raw IPv4/UDP so Wireshark
/// reads it with "Decode As… RTP"), and every offer beside it (`FILE.offers.jsonl`). It is how
/// the corpus of real senders' streams in Tests/Corpus was made: a replay feeds it through the
/// media core on a simulated clock. A debugging aid, off by default, bounded in size.
///
/// Written by hand: pcap is 40 lines of format, and no package here writes it.
final class PacketCapture: Sendable {
    /// What waits to be written, how much was, and whether the limit was reached. Recorded on
    /// the transport's loop; the lock is uncontended (the close comes after the loop's last use).
    private struct Pending {
        var buffer: [UInt8] = PcapFormat.fileHeader()
        var bytes = 0
        var full = false

        /// The buffer's bytes, handed to the writer.
        mutating func take() -> [UInt8] {
            defer { buffer.removeAll(keepingCapacity: true) }
            bytes += buffer.count
            return buffer
        }
    }

    /// The file handles are used only on `queue`.
    private let queue = DispatchQueue(label: "recbot.capture")
    private let packets: FileHandle
    private let offers: FileHandle
    private let logger: Logger
    private let wallStart: Int64
    private let monotonicStart: MonotonicTime
    private let pending = Mutex(Pending())

    /// The capture stops growing here (a debugging run left on must not fill the disk).
    static let maximumBytes = 512 << 20
    static let flushBytes = 256 << 10

    init(path: String, clock: any TimeSource, logger: Logger) throws {
        for file in [path, path + ".offers.jsonl"] {
            guard FileManager.default.createFile(atPath: file, contents: nil) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: file])
            }
        }
        packets = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        offers = try FileHandle(forWritingTo: URL(fileURLWithPath: path + ".offers.jsonl"))
        self.logger = logger
        (wallStart, monotonicStart) = (clock.wallClockMilliseconds(), clock.now())
    }

    /// One decrypted RTP or RTCP packet (on the transport's event loop).
    func record(_ datagram: [UInt8], at time: MonotonicTime) {
        let nanoseconds = wallStart &* 1_000_000 &+ (time.nanoseconds &- monotonicStart.nanoseconds)
        let (chunk, reachedLimit) = pending.withLock { pending -> ([UInt8]?, Bool) in
            guard !pending.full else { return (nil, false) }
            PcapFormat.appendRecord(datagram, nanoseconds: nanoseconds, to: &pending.buffer)
            let reachedLimit = pending.bytes + pending.buffer.count > Self.maximumBytes
            if reachedLimit { pending.full = true }
            return (pending.buffer.count >= Self.flushBytes || reachedLimit ? pending.take() : nil, reachedLimit)
        }
        if reachedLimit {
            logger.warning("capture: size limit reached; later packets are not captured", metadata: ["bytes": "\(Self.maximumBytes)"])
        }
        if let chunk { write(chunk) }
    }

    /// An offer (or re-offer) the session answered, so a replay knows the tracks.
    func recordOffer(_ sdp: String, at time: MonotonicTime) {
        // `at_ns` counts from the capture's start, which the packets' wall-clock times share (`start_ns`).
        let line: [String: Any] = ["at_ns": time.nanoseconds &- monotonicStart.nanoseconds, "start_ns": wallStart &* 1_000_000, "sdp": sdp]
        guard let json = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) else { return }
        let data = json + [0x0A]
        queue.async { [offers] in try? offers.write(contentsOf: data) }
    }

    private func write(_ chunk: [UInt8]) {
        queue.async { [packets] in try? packets.write(contentsOf: chunk) }
    }

    /// Writes what is buffered and closes both files (waits for the writes).
    func close() {
        write(pending.withLock { $0.take() })
        queue.sync {
            try? packets.close()
            try? offers.close()
        }
    }
}

/// The pcap file format (nanosecond variant, LINKTYPE_RAW): each packet wrapped in an IPv4
/// and a UDP header from 192.0.2.1:5004 to 192.0.2.2:5004 (documentation addresses).
enum PcapFormat {
    static func fileHeader() -> [UInt8] {
        var writer = LittleEndianWriter()
        writer.u32(0xA1B2_3C4D)  // nanosecond timestamps
        writer.u16(2)
        writer.u16(4)
        writer.u32(0)  // thiszone
        writer.u32(0)  // sigfigs
        writer.u32(65_535)  // snaplen
        writer.u32(101)  // LINKTYPE_RAW
        return writer.bytes
    }

    static func appendRecord(_ payload: [UInt8], nanoseconds: Int64, to out: inout [UInt8]) {
        let payload = payload.prefix(65_535 - 28)
        let length = payload.count + 28
        var writer = LittleEndianWriter()
        writer.u32(UInt32(truncatingIfNeeded: nanoseconds / 1_000_000_000))
        writer.u32(UInt32(truncatingIfNeeded: nanoseconds % 1_000_000_000))
        writer.u32(UInt32(length))
        writer.u32(UInt32(length))
        out += writer.bytes
        var ip: [UInt8] = [0x45, 0, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, 0x40, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]
        let checksum = internetChecksum(ip)
        (ip[10], ip[11]) = (UInt8(checksum >> 8), UInt8(checksum & 0xFF))
        out += ip
        let udpLength = payload.count + 8
        out += [0x13, 0x8C, 0x13, 0x8C, UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0]  // no UDP checksum (0: none, for IPv4)
        out += payload
    }

    static func internetChecksum(_ header: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        for index in stride(from: 0, to: header.count, by: 2) { sum += UInt32(header[index]) << 8 | UInt32(header[index + 1]) }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }
}

private struct LittleEndianWriter {
    var bytes: [UInt8] = []
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
    mutating func u32(_ value: UInt32) { for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(value >> UInt32(shift) & 0xFF)) } }
}
