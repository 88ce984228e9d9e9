import Foundation
import TestSupport
import Testing
import WireCoding
@testable import SCTP

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func python(_ arguments: [String], input: String = "") throws -> Any {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Checkers/sctp_vectors.py").path
    return try JSONSerialization.jsonObject(with: runProcess("/usr/bin/env", ["python3", script] + arguments, standardInput: Data(input.utf8)).stdout)
}

@Suite struct CRC32cTests {
    @Test func knownVectors() {
        #expect(CRC32c.checksum(Array("123456789".utf8)) == 0xE306_9283)
        // RFC 3720 (iSCSI) appendix B.4.
        #expect(CRC32c.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32c.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32c.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
    }
}

/// aiortc's SCTP codec, an independent implementation, in both directions.
@Suite struct SCTPInteropTests {
    @Test func parsesEveryPacketAiortcBuilds() throws {
        let vectors = try #require(try python(["make"]) as? [[String: Any]])
        #expect(vectors.count >= 12)
        for vector in vectors {
            let name = vector["name"] as? String ?? "?"
            let packet = try SCTPPacket(parsing: hex(vector["hex"] as! String))
            #expect(packet.sourcePort == 5000 && packet.destinationPort == 5000 && Int(packet.verificationTag) == vector["tag"] as? Int, "\(name)")
            let fields = vector["chunk"] as! [String: Any]
            let chunk = try #require(packet.chunks.first, "\(name)")
            switch chunk {
            case .initiation(let value), .initiationAck(let value):
                #expect(Int(value.initiateTag) == fields["initiate_tag"] as? Int && Int(value.initialTSN) == fields["initial_tsn"] as? Int)
                #expect(Int(value.outboundStreams) == fields["outbound_streams"] as? Int && Int(value.inboundStreams) == fields["inbound_streams"] as? Int)
                #expect(value.parameters.map { [Int($0.type)] } == (fields["params"] as! [[Any]]).map { [$0[0] as! Int] })
                if name == "init" { #expect(value.supportsForwardTSN) }
                if name == "init-ack" { #expect(value.stateCookie == Array("state-cookie-bytes!".utf8)) }
            case .data(let data):
                let flags = fields["flags"] as! Int
                #expect(data.tsn == 0xFFFF_FFFE && data.streamID == 3 && data.streamSequence == 9 && data.payloadProtocol == 51)
                #expect(data.unordered == (flags & 4 != 0) && data.beginning == (flags & 2 != 0) && data.ending == (flags & 1 != 0))
                #expect(String(decoding: data.userData, as: UTF8.self) == "héllo")
            case .selectiveAck(let sack):
                #expect(sack.cumulativeTSN == 100 && sack.gapBlocks.map { [$0.start, $0.end] } == [[2, 3], [5, 5]] && sack.duplicateTSNs == [99, 98])
            case .forwardTSN(let tsn, let streams):
                #expect(tsn == 200 && streams.map { [$0.stream, $0.sequence] } == [[1, 5], [2, 7]])
            case .reconfig(let parameters):
                #expect(parameters == [.outgoingReset(requestSequence: 5, responseSequence: 4, lastTSN: 150, streams: [1, 3])])
            case .shutdown(let tsn): #expect(tsn == 300)
            case .cookieEcho(let cookie): #expect(cookie == Array("xyz-cookie".utf8))
            case .heartbeat(let info): #expect(info.count == 4 + 14, "the heartbeat info parameter, kept whole")
            case .cookieAck: break
            default: Issue.record("\(name): unexpected \(chunk)")
            }
            // And our serialisation of it is byte-identical to aiortc's.
            #expect(packet.serialized == hex(vector["hex"] as! String), "\(name) re-serialises identically")
        }
    }

    @Test func aiortcParsesEveryPacketWeBuild() throws {
        let packets: [SCTPPacket] = [
            SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiation(SCTPInit(
                initiateTag: 0xCAFE_F00D, advertisedReceiverWindow: 1 << 20, outboundStreams: 1024, inboundStreams: 1024, initialTSN: 42,
                parameters: [SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: [])]))]),
            SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 77, chunks: [
                .selectiveAck(SCTPSelectiveAck(cumulativeTSN: 1_000, advertisedReceiverWindow: 65_536, gapBlocks: [(2, 4)], duplicateTSNs: [998])),
                .data(SCTPData(tsn: 1_001, streamID: 2, streamSequence: 3, payloadProtocol: 53, unordered: true, userData: [1, 2, 3])),
            ]),
            SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 78, chunks: [
                .reconfig([.response(responseSequence: 5, result: 1)]), .forwardTSN(newCumulativeTSN: 9, streams: [(4, 1)]),
            ]),
            SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 79, chunks: [.cookieAck, .shutdown(cumulativeTSN: 12)]),
        ]
        let parsed = try #require(try python(["parse"], input: packets.map { $0.serialized.map { String(format: "%02x", $0) }.joined() }
            .joined(separator: "\n")) as? [[String: Any]])
        #expect(parsed.count == packets.count)
        let first = (parsed[0]["chunks"] as! [[String: Any]])[0]
        #expect(first["type"] as? Int == 1 && first["initiate_tag"] as? Int == 0xCAFE_F00D && first["initial_tsn"] as? Int == 42)
        let second = parsed[1]["chunks"] as! [[String: Any]]
        #expect(second[0]["cumulative_tsn"] as? Int == 1_000 && (second[0]["gaps"] as? [[Int]]) == [[2, 4]] && (second[0]["duplicates"] as? [Int]) == [998])
        #expect(second[1]["tsn"] as? Int == 1_001 && second[1]["flags"] as? Int == 0x07 && second[1]["user_data"] as? String == "010203")
        let third = parsed[2]["chunks"] as! [[String: Any]]
        #expect(third.map { $0["type"] as? Int } == [130, 192] && (third[1]["streams"] as? [[Int]]) == [[4, 1]])
        #expect(((parsed[3]["chunks"] as! [[String: Any]]).map { $0["type"] as? Int }) == [11, 7])
    }
}

@Suite struct SCTPHostileInputTests {
    let valid = SCTPPacket(sourcePort: 1, destinationPort: 2, verificationTag: 3,
                           chunks: [.data(SCTPData(tsn: 1, streamID: 0, streamSequence: 0, payloadProtocol: 51, userData: [65]))]).serialized

    func withChecksum(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        out[8] = 0; out[9] = 0; out[10] = 0; out[11] = 0
        let crc = CRC32c.checksum(out)
        out[8] = UInt8(crc & 0xFF); out[9] = UInt8(crc >> 8 & 0xFF); out[10] = UInt8(crc >> 16 & 0xFF); out[11] = UInt8(crc >> 24)
        return out
    }

    @Test func badChecksumAndOverrunsAreTypedErrors() {
        var corrupted = valid
        corrupted[20] ^= 1
        #expect(throws: SCTPError.self) { try SCTPPacket(parsing: corrupted) }
        #expect(throws: SCTPError.tooShort(11)) { try SCTPPacket(parsing: Array(valid.prefix(11))) }
        var overrun = valid
        overrun[15] = 200  // chunk length far past the end
        #expect(throws: SCTPError.chunkOverrun(type: 0, offset: 12)) { try SCTPPacket(parsing: withChecksum(overrun)) }
        var empty = valid
        empty[15] = 16  // DATA with no user data
        #expect(throws: SCTPError.malformedChunk(type: 0, reason: "DATA without user data")) { try SCTPPacket(parsing: withChecksum(Array(empty.prefix(28)))) }
        let zeroTag = SCTPPacket(sourcePort: 1, destinationPort: 2, verificationTag: 0, chunks: [.initiation(SCTPInit(
            initiateTag: 1, advertisedReceiverWindow: 1, outboundStreams: 1, inboundStreams: 1, initialTSN: 1))]).serialized
        var zeroed = zeroTag
        zeroed[16] = 0; zeroed[17] = 0; zeroed[18] = 0; zeroed[19] = 0
        #expect(throws: SCTPError.malformedChunk(type: 1, reason: "INIT with zero tag or stream count")) { try SCTPPacket(parsing: withChecksum(zeroed)) }
    }

    @Test func tooManyChunksAreRefused() {
        let many = SCTPPacket(sourcePort: 1, destinationPort: 2, verificationTag: 3, chunks: Array(repeating: .cookieAck, count: 129)).serialized
        #expect(throws: SCTPError.tooManyChunks(128)) { try SCTPPacket(parsing: many) }
    }

    @Test func randomPacketsNeverCrash() {
        var generator = SplitMix64(seed: 9)
        func next() -> UInt64 { generator.next() }
        for _ in 0..<20_000 {
            let bytes = (0..<Int(12 + next() % 80)).map { _ in UInt8(truncatingIfNeeded: next()) }
            if let packet = try? SCTPPacket(parsing: withChecksum(bytes)) { _ = packet.serialized }
            _ = try? DCEPMessage(parsing: Array(bytes.dropFirst(12)))
        }
    }
}

@Suite struct DCEPTests {
    @Test func openAndAckRoundTrip() throws {
        let open = DCEPMessage.open(channelType: .partialReliableRexmitUnordered, priority: 256, reliabilityParameter: 3, label: "#chat",
                                    protocolName: "")
        #expect(try DCEPMessage(parsing: open.serialized) == open)
        #expect(try DCEPMessage(parsing: [0x02]) == .ack)
        // RFC 8832 §5.1 layout: type 3, channel type, priority, reliability, label length, protocol length, label, protocol.
        #expect(open.serialized == [0x03, 0x81, 0x01, 0x00, 0, 0, 0, 3, 0, 5, 0, 0] + Array("#chat".utf8))
    }

    @Test func malformedMessagesAreTypedErrors() {
        #expect(throws: DCEPMessage.ParseError.empty) { try DCEPMessage(parsing: []) }
        #expect(throws: DCEPMessage.ParseError.unknownMessageType(7)) { try DCEPMessage(parsing: [7]) }
        #expect(throws: DCEPMessage.ParseError.unknownChannelType(0x55)) { try DCEPMessage(parsing: [3, 0x55]) }
        #expect(throws: DCEPMessage.ParseError.truncated) { try DCEPMessage(parsing: [3, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 65]) }
        #expect(throws: DCEPMessage.ParseError.invalidUTF8) { try DCEPMessage(parsing: [3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xFF]) }
        #expect(throws: DCEPMessage.ParseError.truncated) { try DCEPMessage(parsing: [3, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0]) }
    }
}
