import Testing
import WireCoding
@testable import RTP

@Suite struct RTPPacketTests {
    @Test func parsesHeaderExtensionsAndPayload() throws {
        var builder = RTPPacketBuilder(payloadType: 96, sequenceNumber: 65_535, timestamp: 0xDEAD_BEEF, ssrc: 0x1234_5678)
        builder.marker = true
        builder.extensions = [(1, Array("0".utf8)), (10, Array("r1".utf8))]
        let bytes = builder.build(payload: [1, 2, 3, 4, 5])
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.marker && packet.payloadType == 96 && packet.sequenceNumber == 65_535)
        #expect(packet.timestamp == 0xDEAD_BEEF && packet.ssrc == 0x1234_5678 && packet.csrcs.isEmpty)
        #expect(packet.headerExtension(1).map(Array.init) == Array("0".utf8))
        #expect(packet.headerExtension(10).map(Array.init) == Array("r1".utf8))
        #expect(packet.headerExtension(3) == nil)
        #expect(Array(packet.payload) == [1, 2, 3, 4, 5])
    }

    @Test func handlesCSRCsTwoByteExtensionsAndPadding() throws {
        // V=2 P=1 X=1 CC=1, PT 111, seq 7, ts 9, ssrc 5, csrc 6, two-byte ext (0x1000) id 3 len 2, payload, padding 3.
        let bytes: [UInt8] = [0xB1, 111, 0, 7, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 6,
                              0x10, 0x00, 0x00, 0x01, 3, 2, 0xAA, 0xBB,
                              0xC0, 0xC1, 0, 0, 3]
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.csrcs == [6] && packet.paddingLength == 3)
        #expect(packet.headerExtension(3).map(Array.init) == [0xAA, 0xBB])
        #expect(Array(packet.payload) == [0xC0, 0xC1])
    }

    @Test func malformedPacketsAreTypedErrors() {
        #expect(throws: RTPError.tooShort(11)) { try RTPPacket(parsing: Array(repeating: 0x80, count: 11)) }
        #expect(throws: RTPError.badVersion(1)) { try RTPPacket(parsing: [0x40] + Array(repeating: 0, count: 11)) }
        #expect(throws: RTPError.truncatedHeader(needed: 72, available: 12)) { try RTPPacket(parsing: [0x8F] + Array(repeating: 0, count: 11)) }
        #expect(throws: RTPError.truncatedHeader(needed: 16 + 4 * 255, available: 16)) {
            try RTPPacket(parsing: [0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xBE, 0xDE, 0, 255])
        }
        #expect(throws: RTPError.badPadding(200)) { try RTPPacket(parsing: [0xA0] + Array(repeating: 0, count: 12) + [200]) }
        #expect(throws: RTPError.badPadding(0)) { try RTPPacket(parsing: [0xA0] + Array(repeating: 0, count: 12) + [0]) }
        #expect(throws: RTPError.malformedExtension("one-byte element overruns")) {
            try RTPPacket(parsing: [0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xBE, 0xDE, 0, 1, 0x1F, 0, 0, 0])
        }
    }

    @Test func randomInputNeverCrashes() {
        var generator = SplitMix64(seed: 42)
        func next() -> UInt64 { generator.next() }
        for _ in 0..<50_000 {
            var bytes = (0..<Int(next() % 64)).map { _ in UInt8(truncatingIfNeeded: next()) }
            if !bytes.isEmpty { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
            if let packet = try? RTPPacket(parsing: bytes) {
                _ = (packet.payload.count, packet.extensions.map { packet.bytes[$0.range] })
            }
            _ = try? RTCPPacket.parseCompound(bytes)
        }
    }
}

@Suite struct RTCPPacketTests {
    let block = RTCPReportBlock(ssrc: 7, fractionLost: 12, cumulativeLost: -3, highestSequence: 70_000, jitter: 5,
                                lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 99)

    @Test func compoundRoundTrips() throws {
        let packets: [RTCPPacket] = [
            .senderReport(ssrc: 1, ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 90_000, packetCount: 10, octetCount: 1_000, reports: [block]),
            .sourceDescription(cnames: [1: "cname-of-one", 2: "x"]),
            .receiverReport(ssrc: 3, reports: [block, block]),
            .nack(sender: 3, media: 1, lost: [100, 101, 116, 117, 200]),
            .pictureLossIndication(sender: 3, media: 1),
            .fullIntraRequest(sender: 3, media: 1, sequence: 9),
            .goodbye(ssrcs: [1, 2]),
        ]
        let bytes = packets.flatMap(\.serialized)
        #expect(bytes.count % 4 == 0)
        #expect(RTPPacket.isRTCP(bytes))
        let parsed = try RTCPPacket.parseCompound(bytes)
        #expect(parsed == packets)
    }

    @Test func nackPacksNearbyLossesIntoOneEntry() {
        #expect(RTCPPacket.nackPairs([10, 11, 26, 27]).map { [$0.0, $0.1] } == [[10, 0b1000_0000_0000_0001], [27, 0]])
        #expect(RTCPPacket.nackPairs([65_535, 0, 1]).map { [$0.0, $0.1] } == [[65_535, 0b11]], "wraps around")
    }

    @Test func malformedCompoundsAreTypedErrors() {
        let rr = RTCPPacket.receiverReport(ssrc: 3, reports: [block]).serialized
        #expect(throws: RTCPError.tooShort(3)) { try RTCPPacket.parseCompound([0x80, 201, 0]) }
        #expect(throws: RTCPError.lengthOverrun(offset: 0)) { try RTCPPacket.parseCompound(Array(rr.dropLast(4))) }
        var badVersion = rr; badVersion[0] = 0x40
        #expect(throws: RTCPError.badVersion(1, offset: 0)) { try RTCPPacket.parseCompound(badVersion) }
        var tooManyReports = rr; tooManyReports[0] = 0x82  // claims 2 blocks, holds 1
        #expect(throws: RTCPError.malformed(packetType: 201, offset: 0)) { try RTCPPacket.parseCompound(tooManyReports) }
        let many = Array(repeating: RTCPPacket.pictureLossIndication(sender: 1, media: 2).serialized, count: 65).flatMap { $0 }
        #expect(throws: RTCPError.tooManyPackets(64)) { try RTCPPacket.parseCompound(many) }
    }
}
