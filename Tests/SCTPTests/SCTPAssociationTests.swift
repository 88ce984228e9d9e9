import Testing
import WireCoding
@testable import SCTP

func seeded(_ seed: UInt64) -> () -> UInt64 {
    var generator = SplitMix64(seed: seed)
    return { generator.next() }
}

/// Two associations on a simulated link; `drop` decides per packet (A→B and B→A).
final class Link {
    let a: SCTPAssociation
    let b = SCTPAssociation(maximumMessageSize: 64 * 1024, random: seeded(2))
    var eventsA: [SCTPEvent] = []
    var eventsB: [SCTPEvent] = []
    var drop: (_ toB: Bool, _ packet: [UInt8]) -> Bool = { _, _ in false }
    var now = MonotonicTime.milliseconds(0)

    /// `aMaySend`: what B advertised as its max-message-size, as A knows it.
    init(aMaySend: Int = 64 * 1024) {
        a = SCTPAssociation(maximumMessageSize: 64 * 1024, peerMaximumMessageSize: aMaySend, random: seeded(1))
    }

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
        link.run(link.a.start(now: link.now), fromA: true)
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
        link.run(link.a.start(now: link.now), fromA: true)
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
        let link = Link(aMaySend: 0)  // A ignores B's limit, as a hostile peer would
        link.run(link.a.start(now: link.now), fromA: true)
        link.run(link.a.send([UInt8](repeating: 9, count: 70 * 1024), streamID: 0, payloadProtocol: 53, now: link.now), fromA: true)
        link.run(link.a.send([7], streamID: 0, payloadProtocol: 53, now: link.now), fromA: true)
        #expect(link.b.counters.oversizedMessages >= 1)
        #expect(link.messagesB().map(\.data) == [[7]], "the stream goes on after the dropped message")
    }
}

/// A peer written by hand, to reach what our own sender never does.
@Suite struct SCTPPeerBehaviourTests {
    @Test func gapBlocksNamingMillionsOfTSNsStillAcknowledgeExactly() throws {
        let link = Link()
        var toA: [[UInt8]] = []
        var toB: [[UInt8]] = []
        link.drop = { towardB, packet in
            if towardB { toB.append(packet) } else { toA.append(packet) }
            return false
        }
        link.run(link.a.start(now: link.now), fromA: true)
        let aTag = try SCTPPacket(parsing: try #require(toA.last)).verificationTag
        // A's message is lost on the way; SACKs are forged instead of B's.
        link.drop = { towardB, packet in
            if towardB { toB.append(packet) }
            return towardB
        }
        link.run(link.a.send(Array("x".utf8), streamID: 1, payloadProtocol: 51, now: link.now), fromA: true)
        guard case .data(let sent) = try SCTPPacket(parsing: try #require(toB.last)).chunks.first else {
            Issue.record("no DATA")
            return
        }
        func sack(_ blocks: [(start: UInt16, end: UInt16)]) -> [UInt8] {
            SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: aTag, chunks: [
                .selectiveAck(SCTPSelectiveAck(cumulativeTSN: sent.tsn &- 2, advertisedReceiverWindow: 1 << 20, gapBlocks: blocks)),
            ]).serialized
        }
        // 200 blocks of 65 534 TSNs each, none covering ours (offset 2 from the cumulative TSN).
        let wide = (0..<200).map { _ in (start: UInt16(3), end: UInt16.max) }
        _ = link.a.handle(packet: sack(wide), now: link.now)
        #expect(link.a.nextTimeout != nil, "still outstanding")
        _ = link.a.handle(packet: sack([(start: 2, end: 2)] + wide), now: link.now)
        #expect(link.a.nextTimeout == nil, "acknowledged by the gap block")
    }

    @Test func ownMessagesLargerThanThePeerAcceptsAreNotSent() {
        let link = Link(aMaySend: 1_000)
        link.run(link.a.start(now: link.now), fromA: true)
        link.run(link.a.send([UInt8](repeating: 1, count: 1_001), streamID: 1, payloadProtocol: 53, now: link.now), fromA: true)
        link.run(link.a.send([UInt8](repeating: 2, count: 1_000), streamID: 1, payloadProtocol: 53, now: link.now), fromA: true)
        #expect(link.messagesB().map(\.data.count) == [1_000])
        #expect(link.a.counters.oversizedSends == 1)
    }

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

    /// The chunks of each packet in `output`.
    func chunks(_ output: SCTPOutput) throws -> [[SCTPChunk]] { try output.packets.map { try SCTPPacket(parsing: $0).chunks } }

    /// Our own outgoing-reset request in `output`, if any.
    func ourResetRequest(_ output: SCTPOutput) throws -> (sequence: UInt32, response: UInt32, streams: [UInt16])? {
        for packet in try chunks(output) {
            for case .reconfig(let parameters) in packet {
                for case .outgoingReset(let sequence, let response, _, let streams) in parameters { return (sequence, response, streams) }
            }
        }
        return nil
    }

    @Test func peerStreamResetIsPerformedAnsweredAndFollowedByOurs() throws {
        let (association, tag, _) = established()
        let request: SCTPChunk = .reconfig([.outgoingReset(requestSequence: 9, responseSequence: 0, lastTSN: 99, streams: [3, 5])])
        let result = association.handle(packet: packet(tag, [request]), now: .milliseconds(2))
        #expect(result.events == [.streamsReset([3, 5])])
        #expect(try chunks(result).first == [.reconfig([.response(responseSequence: 9, result: 1)])])
        // RFC 8831 §6.7: our outgoing streams follow, so the channel closes both ways.
        let ours = try #require(try ourResetRequest(result))
        #expect(ours.streams == [3, 5] && ours.response == 9)

        // A retransmitted request gets the same answer and is not performed twice.
        let again = association.handle(packet: packet(tag, [request]), now: .milliseconds(3))
        #expect(again.events.isEmpty)
        #expect(try chunks(again) == [[.reconfig([.response(responseSequence: 9, result: 1)])]])

        // Ours is retransmitted until answered, then settled.
        let timeout = try #require(association.nextTimeout)
        let retransmitted = association.handleTimeout(now: timeout)
        #expect(try ourResetRequest(retransmitted)?.sequence == ours.sequence)
        let answered = association.handle(packet: packet(tag, [.reconfig([.response(responseSequence: ours.sequence, result: 1)])]), now: timeout)
        #expect(answered.packets.isEmpty && association.nextTimeout == nil)
        #expect(association.counters.streamResetsReceived == 1)
    }

    @Test func peerStreamResetWaitsForDataSentBeforeIt() throws {
        let (association, tag, tsn) = established()
        // The peer reset stream 1 after sending TSNs tsn and tsn+1; only tsn+1 has arrived.
        _ = association.handle(packet: packet(tag, [data(tsn + 1, ssn: 1, "second")]), now: .milliseconds(2))
        let early = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 100, responseSequence: 0, lastTSN: tsn + 1, streams: [1])])]),
                                       now: .milliseconds(3))
        #expect(early.events.isEmpty, "not before the data it follows")
        #expect(try chunks(early) == [[.reconfig([.response(responseSequence: 100, result: 6)])]], "in progress")

        let filled = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "first")]), now: .milliseconds(4))
        #expect(messages(filled) == ["first", "second"])
        #expect(filled.events.last == .streamsReset([1]))
        #expect(try ourResetRequest(filled)?.streams == [1])
        // The peer asks again (its timer): now performed.
        let asked = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 100, responseSequence: 0, lastTSN: tsn + 1, streams: [1])])]),
                                       now: .milliseconds(5))
        #expect(try chunks(asked).first == [.reconfig([.response(responseSequence: 100, result: 1)])] && asked.events.isEmpty)
        // The stream starts again at SSN 0.
        #expect(messages(association.handle(packet: packet(tag, [data(tsn + 2, ssn: 0, "reopened")]), now: .milliseconds(6))) == ["reopened"])
    }

    @Test func aDeferredResetIsPerformedOnceAndLaterDataWaitsForIt() throws {
        let (association, tag, tsn) = established()
        // The peer resets stream 1 after TSN tsn+1, which has not arrived yet.
        let request: SCTPChunk = .reconfig([.outgoingReset(requestSequence: 100, responseSequence: 0, lastTSN: tsn + 1, streams: [1])])
        _ = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "old-0")]), now: .milliseconds(2))
        _ = association.handle(packet: packet(tag, [request]), now: .milliseconds(3))
        // Stream 1's new numbering starts at SSN 0, sent after the reset: it must wait for it.
        let early = association.handle(packet: packet(tag, [data(tsn + 2, ssn: 0, "new-0")]), now: .milliseconds(4))
        #expect(messages(early).isEmpty)
        // FORWARD-TSN and the retransmitted request in one packet: performed exactly once.
        let done = association.handle(packet: packet(tag, [.forwardTSN(newCumulativeTSN: tsn + 1, streams: [(1, 1)]), request]), now: .milliseconds(5))
        #expect(done.events.filter { $0 == .streamsReset([1]) }.count == 1, "\(done.events)")
        #expect(messages(done) == ["new-0"], "what waited for the reset is delivered after it")
        let next = association.handle(packet: packet(tag, [data(tsn + 3, ssn: 1, "new-1")]), now: .milliseconds(6))
        #expect(messages(next) == ["new-1"])
    }

    @Test func aFragmentedMessageThatWaitedForAResetIsDeliveredWhole() {
        let (association, tag, tsn) = established()
        _ = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 100, responseSequence: 0, lastTSN: tsn, streams: [1])])]),
                               now: .milliseconds(2))
        // After the reset's last TSN: a two-piece message in the stream's new numbering.
        _ = association.handle(packet: packet(tag, [data(tsn + 1, ssn: 0, "new ", e: false), data(tsn + 2, ssn: 0, "message", b: false)]),
                               now: .milliseconds(3))
        let filled = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "old")]), now: .milliseconds(4))
        #expect(messages(filled) == ["old", "new message"])
        #expect(association.counters.oversizedMessages == 0)
    }

    @Test func theTSNThatFillsTheGapIsAlwaysTaken() {
        let (association, tag, tsn) = established()
        // Everything up to the distance limit arrives before the first TSN; one beyond it is refused.
        for offset in UInt32(1)..<4_096 {
            _ = association.handle(packet: packet(tag, [data(tsn + offset, stream: 2, ssn: 0, "u", unordered: true)]), now: .milliseconds(2))
        }
        _ = association.handle(packet: packet(tag, [data(tsn + 4_096, stream: 2, ssn: 0, "too far", unordered: true)]), now: .milliseconds(2))
        #expect(association.counters.droppedPackets == 1)
        let filled = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "first")]), now: .milliseconds(3))
        #expect(messages(filled) == ["first"])
        let next = association.handle(packet: packet(tag, [data(tsn + 4_096, stream: 2, ssn: 0, "now in reach", unordered: true)]), now: .milliseconds(4))
        #expect(messages(next) == ["now in reach"])
    }

    @Test func packetRulesINITAloneUnknownChunksStopCookiesExpireAndEndedStaysEnded() throws {
        let (association, tag, tsn) = established()
        let bundled = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [
            .initiation(SCTPInit(initiateTag: 1, advertisedReceiverWindow: 1, outboundStreams: 1, inboundStreams: 1, initialTSN: 1)),
            data(tsn, ssn: 0, "smuggled"),
        ]).serialized
        #expect(association.handle(packet: bundled, now: .milliseconds(2)).packets.isEmpty, "INIT with company is dropped whole")
        // An unknown chunk type with the top bits 00 ends processing of its packet.
        let unknown = association.handle(packet: packet(tag, [.unknown(type: 0x3F, flags: 0, value: []), data(tsn, ssn: 0, "after")]), now: .milliseconds(3))
        #expect(messages(unknown).isEmpty)

        // A cookie older than its lifetime is refused; after an ABORT even a fresh one is.
        let fresh = SCTPAssociation(random: seeded(9))
        let initPacket = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiation(SCTPInit(
            initiateTag: 0xABCD, advertisedReceiverWindow: 65_536, outboundStreams: 16, inboundStreams: 16, initialTSN: 100))]).serialized
        let ack = try SCTPPacket(parsing: fresh.handle(packet: initPacket, now: .milliseconds(0)).packets[0])
        guard case .initiationAck(let initAck) = ack.chunks[0], let cookie = initAck.stateCookie else { Issue.record("no INIT-ACK"); return }
        let echo = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: initAck.initiateTag, chunks: [.cookieEcho(cookie: cookie)]).serialized
        #expect(fresh.handle(packet: echo, now: .milliseconds(61_000)).events.isEmpty && fresh.state == .closed, "stale")
        #expect(fresh.handle(packet: echo, now: .milliseconds(2)).events == [.established])
        _ = fresh.handle(packet: SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: initAck.initiateTag,
                                            chunks: [.abort(reflected: false, causes: [])]).serialized, now: .milliseconds(3))
        #expect(fresh.handle(packet: echo, now: .milliseconds(4)).events.isEmpty && fresh.state == .aborted, "no resurrection")
    }

    @Test func manyForwardTSNsOrResetRequestsInOnePacketCostOne() throws {
        let (association, tag, tsn) = established()
        _ = association.handle(packet: packet(tag, [data(tsn + 5, ssn: 5, "kept")]), now: .milliseconds(2))
        let forwards: [SCTPChunk] = (0..<5).map { .forwardTSN(newCumulativeTSN: tsn + UInt32($0), streams: [(1, UInt16($0))]) }
        let result = association.handle(packet: packet(tag, forwards), now: .milliseconds(3))
        #expect(messages(result) == ["kept"], "acts as the furthest one")
        #expect(association.counters.forwardTSNChunks == 5)

        let requests: [SCTPReconfigParameter] = (0..<3).map { .outgoingReset(requestSequence: 200 + $0, responseSequence: 0, lastTSN: tsn - 1, streams: [7]) }
        let answers = try SCTPPacket(parsing: try #require(association.handle(packet: packet(tag, [.reconfig(requests)]), now: .milliseconds(4)).packets.first))
        #expect(answers.chunks == [.reconfig([.response(responseSequence: 200, result: 1), .response(responseSequence: 201, result: 1),
                                              .response(responseSequence: 202, result: 2)])])
    }

    @Test func aLateINITDoesNotRewindAnEstablishedAssociation() throws {
        let (association, tag, tsn) = established()
        _ = association.handle(packet: packet(tag, [data(tsn, ssn: 0, "first")]), now: .milliseconds(2))
        let initPacket = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiation(SCTPInit(
            initiateTag: 0x5555, advertisedReceiverWindow: 65_536, outboundStreams: 16, inboundStreams: 16, initialTSN: 9_000))]).serialized
        let reply = association.handle(packet: initPacket, now: .milliseconds(3))
        #expect(try SCTPPacket(parsing: try #require(reply.packets.first)).verificationTag == 0x5555, "answered with an INIT-ACK")
        #expect(association.state == .established)
        let next = association.handle(packet: packet(tag, [data(tsn + 1, ssn: 1, "second")]), now: .milliseconds(4))
        #expect(messages(next) == ["second"], "the receive side was not rewound")
    }

    @Test func hostileResetRequestsAreBounded() throws {
        let (association, tag, tsn) = established()
        // Far-future requests pile up only to a limit; the rest are denied.
        var results: [UInt32] = []
        for request in UInt32(0)..<40 {
            let output = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 500 + request, responseSequence: 0,
                                                                                               lastTSN: tsn + 1_000, streams: [UInt16(request)])])]),
                                            now: .milliseconds(2))
            for case .reconfig(let parameters) in try chunks(output).joined() {
                for case .response(_, let result) in parameters { results.append(result) }
            }
        }
        #expect(results.filter { $0 == 6 }.count == 16 && results.filter { $0 == 2 }.count == 24)
        // An incoming-reset request (not used by WebRTC) is denied, not obeyed.
        let incoming = association.handle(packet: packet(tag, [.reconfig([.incomingReset(requestSequence: 900, streams: [1])])]), now: .milliseconds(3))
        #expect(try chunks(incoming) == [[.reconfig([.response(responseSequence: 900, result: 2)])]])
        // Our own request, never answered, is given up after a bounded number of tries.
        _ = association.handle(packet: packet(tag, [.reconfig([.outgoingReset(requestSequence: 1_000, responseSequence: 0, lastTSN: tsn - 1, streams: [7])])]),
                               now: .milliseconds(4))
        var now = MonotonicTime.milliseconds(4)
        var tries = 0
        while let next = association.nextTimeout, tries < 20 {
            now = next
            _ = association.handleTimeout(now: now)
            tries += 1
        }
        #expect(association.nextTimeout == nil && association.counters.streamResetsAbandoned == 1 && tries == 8)
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

@Suite struct StreamResetLoadTests {
    @Test func resetsNamingEveryStreamStayCheapAndGoOutInBoundedRequests() throws {
        let (association, tag, tsn) = SCTPPeerBehaviourTests().established()
        // Requests naming 500 streams each, 131 of them: every stream id there is.
        var requests = 0
        for batch in 0..<131 {
            let streams = (0..<500).compactMap { UInt16(exactly: batch * 500 + $0) }
            let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: tag,
                                    chunks: [.reconfig([.outgoingReset(requestSequence: 100 + UInt32(batch), responseSequence: 0, lastTSN: tsn - 1, streams: streams)])])
            let output = association.handle(packet: packet.serialized, now: .milliseconds(2))
            requests += try output.packets.map { try SCTPPacket(parsing: $0) }.filter { packet in
                packet.chunks.contains { if case .reconfig(let parameters) = $0 { return parameters.contains { if case .outgoingReset = $0 { true } else { false } } }; return false }
            }.count
        }
        #expect(association.counters.streamResetsReceived == 131)
        #expect(requests == 1, "one request of ours in flight at a time")
        // Each answer releases the next request, at most 256 streams each: 65 536 streams in 256 requests.
        var sequence: UInt32? = nil
        var sent = 1
        var now = MonotonicTime.milliseconds(3)
        while sent < 300, let timeout = association.nextTimeout {
            now = timeout
            let retransmitted = association.handleTimeout(now: now)
            guard let request = try retransmitted.packets.lazy.compactMap({ packet -> UInt32? in
                for case .reconfig(let parameters) in try SCTPPacket(parsing: packet).chunks {
                    for case .outgoingReset(let requestSequence, _, _, let streams) in parameters {
                        #expect(streams.count <= 256)
                        return requestSequence
                    }
                }
                return nil
            }).first else { break }
            #expect(request != sequence)
            sequence = request
            let answer = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: tag,
                                    chunks: [.reconfig([.response(responseSequence: request, result: 1)])])
            let next = association.handle(packet: answer.serialized, now: now)
            sent += next.packets.isEmpty ? 0 : 1
        }
        #expect(sent == 256 && association.nextTimeout == nil)
    }
}
