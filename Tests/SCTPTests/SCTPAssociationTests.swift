import Testing
import WireCoding
@testable import SCTP

func seeded(_ seed: UInt64) -> () -> UInt64 {
    var state = seed
    return { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return state }
}

/// Two associations on a simulated link; `drop` decides per packet (A→B and B→A).
final class Link {
    let a = SCTPAssociation(maximumMessageSize: 64 * 1024, random: seeded(1))
    let b = SCTPAssociation(maximumMessageSize: 64 * 1024, random: seeded(2))
    var eventsA: [SCTPEvent] = []
    var eventsB: [SCTPEvent] = []
    var drop: (_ toB: Bool, _ packet: [UInt8]) -> Bool = { _, _ in false }
    var now = MonotonicTime.milliseconds(0)

    func run(_ output: SCTPOutput, fromA: Bool) {
        var queue = output.packets.map { (fromA, $0) }
        if fromA { eventsA += output.events } else { eventsB += output.events }
        var steps = 0
        while !queue.isEmpty && steps < 10_000 {
            steps += 1
            let (fromA, packet) = queue.removeFirst()
            if drop(fromA, packet) { continue }
            let result = fromA ? b.handle(packet: packet, now: now) : a.handle(packet: packet, now: now)
            if fromA { eventsB += result.events } else { eventsA += result.events }
            queue += result.packets.map { (!fromA, $0) }
        }
    }

    func advance(to time: MonotonicTime) {
        now = time
        run(a.handleTimeout(now: now), fromA: true)
        run(b.handleTimeout(now: now), fromA: false)
    }

    func messagesB() -> [SCTPMessage] { eventsB.compactMap { if case .message(let m) = $0 { m } else { nil } } }
}

@Suite struct SCTPAssociationTests {
    @Test func handshakeAndMessagesIncludingFragmentedOnes() {
        let link = Link()
        link.run(link.a.connect(now: link.now), fromA: true)
        #expect(link.a.state == .established && link.b.state == .established)
        #expect(link.eventsA.contains(.established) && link.eventsB.contains(.established))

        let big = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        link.run(link.a.send(Array("hello".utf8), streamID: 1, payloadProtocol: 51, now: link.now), fromA: true)
        link.run(link.a.send(big, streamID: 1, payloadProtocol: 53, now: link.now), fromA: true)
        link.run(link.a.send([], streamID: 2, payloadProtocol: 57, now: link.now), fromA: true)
        #expect(link.messagesB() == [
            SCTPMessage(streamID: 1, payloadProtocol: 51, unordered: false, data: Array("hello".utf8)),
            SCTPMessage(streamID: 1, payloadProtocol: 53, unordered: false, data: big),
            SCTPMessage(streamID: 2, payloadProtocol: 57, unordered: false, data: [0]),
        ])
        #expect(link.a.nextTimeout == nil, "everything acknowledged")
    }

    @Test func lostFragmentIsRetransmittedAndOrderIsKept() {
        let link = Link()
        link.run(link.a.connect(now: link.now), fromA: true)
        var dataPackets = 0
        link.drop = { toB, packet in
            guard toB, let parsed = try? SCTPPacket(parsing: packet), case .data = parsed.chunks.first else { return false }
            dataPackets += 1
            return dataPackets == 2  // the second fragment of the first message vanishes once
        }
        let first = [UInt8](repeating: 1, count: 3_000)
        link.run(link.a.send(first, streamID: 4, payloadProtocol: 53, now: link.now), fromA: true)
        link.run(link.a.send(Array("after".utf8), streamID: 4, payloadProtocol: 51, now: link.now), fromA: true)
        #expect(link.messagesB().isEmpty, "the second message waits for the first (ordered)")
        link.advance(to: .milliseconds(1_100))  // T3-rtx fires
        #expect(link.a.counters.retransmissions >= 1)
        #expect(link.messagesB().map(\.data) == [first, Array("after".utf8)])
    }

    @Test func oversizedMessagesAreDroppedAndCounted() {
        let link = Link()
        link.run(link.a.connect(now: link.now), fromA: true)
        link.run(link.a.send([UInt8](repeating: 9, count: 70 * 1024), streamID: 0, payloadProtocol: 53, now: link.now), fromA: true)
        link.run(link.a.send([7], streamID: 0, payloadProtocol: 53, now: link.now), fromA: true)
        #expect(link.b.counters.oversizedMessages >= 1)
        #expect(link.messagesB().map(\.data) == [[7]], "the stream goes on after the dropped message")
    }
}

/// A peer written by hand, to reach what our own sender never does.
@Suite struct SCTPPeerBehaviourTests {
    func established() -> (SCTPAssociation, UInt32, UInt32) {
        let association = SCTPAssociation(random: seeded(5))
        // The peer starts: INIT, then our INIT-ACK's cookie comes back.
        let initPacket = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiation(SCTPInit(
            initiateTag: 0xABCD, advertisedReceiverWindow: 65_536, outboundStreams: 16, inboundStreams: 16, initialTSN: 100))]).serialized
        let ack = try! SCTPPacket(parsing: association.handle(packet: initPacket, now: .milliseconds(0)).packets[0])
        guard case .initiationAck(let initAck) = ack.chunks[0], let cookie = initAck.stateCookie else { fatalError("no INIT-ACK") }
        let echo = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: initAck.initiateTag, chunks: [.cookieEcho(cookie: cookie)]).serialized
        let result = association.handle(packet: echo, now: .milliseconds(1))
        #expect(result.events == [.established])
        return (association, initAck.initiateTag, 100)
    }

    func packet(_ tag: UInt32, _ chunks: [SCTPChunk]) -> [UInt8] {
        SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: tag, chunks: chunks).serialized
    }

    func data(_ tsn: UInt32, stream: UInt16 = 1, ssn: UInt16, _ text: String, unordered: Bool = false, b: Bool = true, e: Bool = true) -> SCTPChunk {
        .data(SCTPData(tsn: tsn, streamID: stream, streamSequence: ssn, payloadProtocol: 51, unordered: unordered, beginning: b, ending: e,
                       userData: Array(text.utf8)))
    }

    func messages(_ output: SCTPOutput) -> [String] {
        output.events.compactMap { if case .message(let m) = $0 { String(decoding: m.data, as: UTF8.self) } else { nil } }
    }

    @Test func gapsAreReportedAndFilled() throws {
        let (association, tag, tsn) = established()
        let later = association.handle(packet: packet(tag, [data(tsn + 2, ssn: 2, "third"), data(tsn + 3, ssn: 0, "x", unordered: true)]),
                                       now: .milliseconds(2))
        #expect(messages(later) == ["x"], "unordered needs no order")
        let sack = try SCTPPacket(parsing: try #require(later.packets.first))
        guard case .selectiveAck(let ack) = sack.chunks[0] else { Issue.record("no SACK"); return }
        #expect(ack.cumulativeTSN == tsn - 1 && ack.gapBlocks.map { [$0.start, $0.end] } == [[3, 4]])
        let filled = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "first"), data(tsn + 1, ssn: 1, "second")]), now: .milliseconds(3))
        #expect(messages(filled) == ["first", "second", "third"])
        // A duplicate is reported back, not delivered twice.
        let duplicate = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "first")]), now: .milliseconds(4))
        #expect(messages(duplicate).isEmpty && association.counters.duplicateChunks == 1)
    }

    @Test func forwardTSNSkipsAbandonedMessages() {
        let (association, tag, tsn) = established()
        _ = association.handle(packet: packet(tag, [data(tsn + 1, ssn: 1, "kept")]), now: .milliseconds(2))
        // TSN `tsn` (ssn 0) was abandoned by the sender (partial reliability).
        let forwarded = association.handle(packet: packet(tag, [.forwardTSN(newCumulativeTSN: tsn, streams: [(1, 0)])]), now: .milliseconds(3))
        #expect(messages(forwarded) == ["kept"])
    }

    @Test func streamResetIsAcknowledged() throws {
        let (association, tag, _) = established()
        let result = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 9, responseSequence: 0, lastTSN: 99, streams: [3, 5])])]),
                                        now: .milliseconds(2))
        #expect(result.events == [.streamsReset([3, 5])])
        let reply = try SCTPPacket(parsing: try #require(result.packets.first))
        #expect(reply.chunks == [.reconfig([.response(responseSequence: 9, result: 1)])])
    }

    @Test func heartbeatsAreEchoed() throws {
        let (association, tag, _) = established()
        let info: [UInt8] = [0, 1, 0, 8, 1, 2, 3, 4]
        let result = association.handle(packet: packet(tag, [.heartbeat(info: info)]), now: .milliseconds(2))
        #expect(try SCTPPacket(parsing: try #require(result.packets.first)).chunks == [.heartbeatAck(info: info)])
    }

    @Test func forgedCookiesWrongTagsAndBadChecksumsAreDropped() {
        let association = SCTPAssociation(random: seeded(6))
        let forged = association.handle(packet: packet(0x1234, [.cookieEcho(cookie: [UInt8](repeating: 7, count: 48))]), now: .milliseconds(0))
        #expect(forged.events.isEmpty && association.state == .closed)
        let (established, tag, tsn) = established()
        let before = established.counters.droppedPackets
        _ = established.handle(packet: packet(tag &+ 1, [data(tsn, ssn: 0, "spoofed")]), now: .milliseconds(2))
        var corrupted = packet(tag, [data(tsn, ssn: 0, "corrupted")])
        corrupted[corrupted.count - 1] ^= 0xFF
        let result = established.handle(packet: corrupted, now: .milliseconds(3))
        #expect(messages(result).isEmpty && established.counters.droppedPackets == before + 2)
    }

    @Test func abortEndsTheAssociation() {
        let (association, tag, _) = established()
        let result = association.handle(packet: packet(tag, [.abort(reflected: false, causes: [])]), now: .milliseconds(2))
        #expect(association.state == .aborted && result.events == [.aborted("peer sent ABORT")])
    }
}
