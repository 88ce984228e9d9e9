import WireCoding

/// RTCP report block (RFC 3550 §6.4.1).
public struct RTCPReportBlock: Equatable, Sendable {
    public var ssrc: UInt32
    public var fractionLost: UInt8
    public var cumulativeLost: Int32
    public var highestSequence: UInt32
    public var jitter: UInt32
    public var lastSenderReport: UInt32
    public var delaySinceLastSenderReport: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSequence: UInt32, jitter: UInt32,
                lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.highestSequence = highestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }
}

/// The RTCP packets recbot reads or sends. Others are kept as `.other`.
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [RTCPReportBlock])
    case receiverReport(ssrc: UInt32, reports: [RTCPReportBlock])
    case sourceDescription(cnames: [UInt32: String])
    case goodbye(ssrcs: [UInt32])
    /// Generic NACK (RFC 4585 §6.2.1): lost sequence numbers.
    case nack(sender: UInt32, media: UInt32, lost: [UInt16])
    /// Picture Loss Indication (RFC 4585 §6.3.1).
    case pictureLossIndication(sender: UInt32, media: UInt32)
    /// Full Intra Request (RFC 5104 §4.3.1).
    case fullIntraRequest(sender: UInt32, media: UInt32, sequence: UInt8)
    case other(packetType: UInt8, count: UInt8)

    /// The media stream a feedback message is about (nil for reports and the rest).
    public var mediaSSRC: UInt32? {
        switch self {
        case .nack(_, let media, _), .pictureLossIndication(_, let media), .fullIntraRequest(_, let media, _): media
        default: nil
        }
    }
}

public enum RTCPError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(Int)
    case badVersion(UInt8, offset: Int)
    case lengthOverrun(offset: Int)
    case tooManyPackets(Int)
    case malformed(packetType: UInt8, offset: Int)

    public var description: String {
        switch self {
        case .tooShort(let count): "RTCP packet too short (\(count) bytes)"
        case .badVersion(let version, let offset): "RTCP version \(version) at \(offset)"
        case .lengthOverrun(let offset): "RTCP packet at \(offset) runs past the datagram"
        case .tooManyPackets(let count): "RTCP compound packet has more than \(count) packets"
        case .malformed(let type, let offset): "malformed RTCP packet type \(type) at \(offset)"
        }
    }
}

extension RTCPPacket {
    public static let maximumPacketsPerCompound = 64

    /// Parses a (decrypted) compound RTCP datagram.
    public static func parseCompound(_ bytes: [UInt8]) throws(RTCPError) -> [RTCPPacket] {
        guard bytes.count >= 4 else { throw .tooShort(bytes.count) }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset + 4 <= bytes.count {
            guard packets.count < maximumPacketsPerCompound else { throw .tooManyPackets(maximumPacketsPerCompound) }
            let first = bytes[offset]
            guard first >> 6 == 2 else { throw .badVersion(first >> 6, offset: offset) }
            let count = first & 0x1F
            let type = bytes[offset + 1]
            let length = (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) + 1) * 4
            guard offset + length <= bytes.count else { throw .lengthOverrun(offset: offset) }
            var end = offset + length
            if first & 0x20 != 0 {  // padding (only legal on the last packet, but be lenient)
                let padding = Int(bytes[end - 1])
                guard padding >= 1, padding <= length - 4 else { throw .malformed(packetType: type, offset: offset) }
                end -= padding
            }
            var reader = ByteReader(bytes, offset: offset + 4, end: end)
            packets.append(try parseOne(type: type, count: count, reader: &reader, offset: offset))
            offset += length
        }
        guard offset == bytes.count else { throw .lengthOverrun(offset: offset) }
        return packets
    }

    static func parseOne(type: UInt8, count: UInt8, reader: inout ByteReader, offset: Int) throws(RTCPError) -> RTCPPacket {
        func reports(_ n: UInt8) throws(RTCPError) -> [RTCPReportBlock] {
            var blocks: [RTCPReportBlock] = []
            for _ in 0..<n {
                guard let ssrc = reader.readUInt32(), let lost = reader.readUInt32(), let highest = reader.readUInt32(),
                      let jitter = reader.readUInt32(), let lsr = reader.readUInt32(), let dlsr = reader.readUInt32()
                else { throw .malformed(packetType: type, offset: offset) }
                let cumulative = Int32(bitPattern: (lost & 0x00FF_FFFF) << 8) >> 8  // sign-extend 24 bits
                blocks.append(RTCPReportBlock(ssrc: ssrc, fractionLost: UInt8(lost >> 24), cumulativeLost: cumulative,
                                              highestSequence: highest, jitter: jitter, lastSenderReport: lsr,
                                              delaySinceLastSenderReport: dlsr))
            }
            return blocks
        }
        switch type {
        case 200:
            guard let ssrc = reader.readUInt32(), let ntp = reader.readUInt64(), let rtp = reader.readUInt32(),
                  let packets = reader.readUInt32(), let octets = reader.readUInt32()
            else { throw .malformed(packetType: type, offset: offset) }
            return .senderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packets, octetCount: octets,
                                 reports: try reports(count))
        case 201:
            guard let ssrc = reader.readUInt32() else { throw .malformed(packetType: type, offset: offset) }
            return .receiverReport(ssrc: ssrc, reports: try reports(count))
        case 202:
            var cnames: [UInt32: String] = [:]
            for _ in 0..<count {
                guard let ssrc = reader.readUInt32() else { throw .malformed(packetType: type, offset: offset) }
                let chunkStart = reader.offset - 4
                while true {
                    guard let item = reader.readUInt8() else { throw .malformed(packetType: type, offset: offset) }
                    if item == 0 { break }
                    guard let length = reader.readUInt8(), let value = reader.readBytes(Int(length)) else {
                        throw .malformed(packetType: type, offset: offset)
                    }
                    if item == 1 { cnames[ssrc] = String(decoding: value, as: UTF8.self) }
                }
                // Chunks end on a 32-bit boundary.
                let used = reader.offset - chunkStart
                guard reader.skip((4 - used % 4) % 4) else { throw .malformed(packetType: type, offset: offset) }
            }
            return .sourceDescription(cnames: cnames)
        case 203:
            var ssrcs: [UInt32] = []
            for _ in 0..<count {
                guard let ssrc = reader.readUInt32() else { throw .malformed(packetType: type, offset: offset) }
                ssrcs.append(ssrc)
            }
            return .goodbye(ssrcs: ssrcs)
        case 205, 206:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32() else {
                throw .malformed(packetType: type, offset: offset)
            }
            if type == 205 && count == 1 {
                var lost: [UInt16] = []
                while !reader.isAtEnd {
                    guard let pid = reader.readUInt16(), let blp = reader.readUInt16() else { throw .malformed(packetType: type, offset: offset) }
                    lost.append(pid)
                    for bit in 0..<16 where blp & (1 << bit) != 0 { lost.append(pid &+ UInt16(bit + 1)) }
                }
                return .nack(sender: sender, media: media, lost: lost)
            }
            if type == 206 && count == 1 { return .pictureLossIndication(sender: sender, media: media) }
            if type == 206 && count == 4 {
                guard let target = reader.readUInt32(), let sequence = reader.readUInt8() else {
                    throw .malformed(packetType: type, offset: offset)
                }
                return .fullIntraRequest(sender: sender, media: target, sequence: sequence)
            }
            return .other(packetType: type, count: count)
        default:
            return .other(packetType: type, count: count)
        }
    }

    /// Serialises one packet (for a compound, concatenate; an RR or SR must come first).
    public var serialized: [UInt8] {
        var body = ByteWriter(capacity: 64)
        var count: UInt8 = 0
        let type: UInt8
        func write(_ blocks: [RTCPReportBlock]) {
            for block in blocks.prefix(31) {
                body.write(block.ssrc)
                body.write(UInt32(block.fractionLost) << 24 | UInt32(bitPattern: block.cumulativeLost) & 0x00FF_FFFF)
                body.write(block.highestSequence)
                body.write(block.jitter)
                body.write(block.lastSenderReport)
                body.write(block.delaySinceLastSenderReport)
            }
        }
        switch self {
        case .senderReport(let ssrc, let ntp, let rtp, let packets, let octets, let reports):
            type = 200
            count = UInt8(min(reports.count, 31))
            body.write(ssrc); body.write(ntp); body.write(rtp); body.write(packets); body.write(octets)
            write(reports)
        case .receiverReport(let ssrc, let reports):
            type = 201
            count = UInt8(min(reports.count, 31))
            body.write(ssrc)
            write(reports)
        case .sourceDescription(let cnames):
            type = 202
            let entries = cnames.sorted { $0.key < $1.key }.prefix(31)
            count = UInt8(entries.count)
            for (ssrc, cname) in entries {
                let start = body.count
                let value = Array(cname.utf8.prefix(255))
                body.write(ssrc); body.write(UInt8(1)); body.write(UInt8(value.count)); body.write(value); body.write(UInt8(0))
                body.write(zeros: (4 - (body.count - start) % 4) % 4)
            }
        case .goodbye(let ssrcs):
            type = 203
            count = UInt8(min(ssrcs.count, 31))
            for ssrc in ssrcs.prefix(31) { body.write(ssrc) }
        case .nack(let sender, let media, let lost):
            type = 205
            count = 1
            body.write(sender); body.write(media)
            for (pid, blp) in RTCPPacket.nackPairs(lost) { body.write(pid); body.write(blp) }
        case .pictureLossIndication(let sender, let media):
            type = 206
            count = 1
            body.write(sender); body.write(media)
        case .fullIntraRequest(let sender, let media, let sequence):
            type = 206
            count = 4
            body.write(sender); body.write(UInt32(0)); body.write(media); body.write(sequence); body.write(zeros: 3)
        case .other(let packetType, let packetCount):
            type = packetType
            count = packetCount & 0x1F
        }
        var writer = ByteWriter(capacity: body.count + 4)
        writer.write(UInt8(0x80 | count))
        writer.write(type)
        writer.write(UInt16(body.count / 4))
        writer.write(body.bytes)
        return writer.bytes
    }

    /// Packs lost sequence numbers into (PID, BLP) pairs, in order of first appearance.
    static func nackPairs(_ lost: [UInt16]) -> [(UInt16, UInt16)] {
        var pairs: [(UInt16, UInt16)] = []
        for sequence in lost {
            if let last = pairs.last, case let distance = sequence &- last.0, distance >= 1 && distance <= 16 {
                pairs[pairs.count - 1].1 |= 1 << (distance - 1)
            } else if !pairs.contains(where: { $0.0 == sequence }) {
                pairs.append((sequence, 0))
            }
        }
        return pairs
    }
}
