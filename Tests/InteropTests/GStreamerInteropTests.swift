import DTLS
import Foundation
import ICE
import NIOCore
import NIOPosix
import PeerConnection
import SCTP
import SDP
import STUN
import Testing
import Transport
import WireCoding

/// Data channels against a second, independent SCTP stack: GStreamer's webrtcbin
/// (usrsctp, libnice, its own DTLS), from Debian's packages.
@Suite(.serialized) struct GStreamerInteropTests {
    /// What recbot sends once the peer's channels are open: a message larger than
    /// one SCTP chunk, non-ASCII text, binary and an empty string.
    static let replies: [(label: String, message: PeerMessage)] = [
        ("#chat", PeerMessage(isBinary: false, data: Array("hello from recbot".utf8))),
        ("#chat", PeerMessage(isBinary: false, data: Array(String(repeating: "r", count: 4_000).utf8))),
        ("#chat", PeerMessage(isBinary: false, data: Array("録画しています".utf8))),
        ("#chat", PeerMessage(isBinary: true, data: (0..<300).map { UInt8($0 % 256) })),
        ("#chat", PeerMessage(isBinary: false, data: [])),
        ("#fast", PeerMessage(isBinary: false, data: Array("fast reply".utf8))),
    ]

    /// GStreamer 1.22 swaps the PPIDs of empty messages (its source names 56 "binary empty"
    /// and 57 "string empty"; RFC 8831 §8 has it the other way round), so the empty string
    /// recbot sends (PPID 56) reaches webrtcbin as empty binary. recbot follows the RFC (the
    /// aiortc test checks that); here the expectation is what webrtcbin itself does.
    static func acrossWebrtcbin(_ message: PeerMessage) -> PeerMessage {
        message.data.isEmpty ? PeerMessage(isBinary: !message.isBinary, data: []) : message
    }

    /// 16 kB messages webrtcbin sends on "#chat" after its plan: 2.4 MB, more than our 1 MiB window.
    static let bulk = 150

    static func bulkMessage(_ index: Int) -> PeerMessage {
        let number = String(index)
        let text = "bulk-" + String(repeating: "0", count: max(0, 5 - number.count)) + number + "-" + String(repeating: "b", count: 16_000)
        return PeerMessage(isBinary: false, data: Array(text.utf8))
    }

    @Test func exchangesDataChannelMessagesWithWebrtcbin() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await withTaskExecutorPreference(PeerSessionExecutor.shared) { try await exchangeMessages(on: group) }
            try await group.shutdownGracefully()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private func exchangeMessages(on group: MultiThreadedEventLoopGroup) async throws {
        let transport = try await UDPTransport.bind(addresses: [IPAddress("127.0.0.1")!], on: group.next())
        let peer = try PeerProcess.gstreamer(arguments: ["--seconds", "25", "--expect", String(Self.replies.count), "--bulk", String(Self.bulk)])
        defer { peer.terminate() }

        // webrtcbin offers (DTLS server, controlling ICE); recbot answers as usual.
        let offerMessage = try await peer.next(type: "offer", within: 20)
        let offer = try SessionDescription(parsing: try #require(offerMessage["sdp"] as? String))
        var capabilities = ReceiverCapabilities()
        capabilities.acceptsDataChannels = true
        var generator = SystemRandomNumberGenerator()
        let negotiation = try RecvOnlyNegotiation(offer: offer, hosts: transport.localAddresses, certificate: try DTLSCertificate(),
                                                  capabilities: capabilities, random: { UInt64.random(in: .min ... .max, using: &generator) })
        let log = EventLog()
        transport.run(negotiation.core) { log.record($0) }
        try peer.send(["type": "answer", "sdp": negotiation.answer.sdp.serialized])

        // Both channels are opened by the peer (DCEP OPEN); recbot acknowledges them.
        let deadline = Date().addingTimeInterval(20)
        while Set(log.openedChannels.map(\.label)) != ["#chat", "#fast"], Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try #require(Set(log.openedChannels.map(\.label)) == ["#chat", "#fast"], "events: \(log.events); peer: \(peer.stderr.suffix(2_000))")
        #expect(log.openedChannels.first { $0.label == "#chat" }?.ordered == true)
        #expect(log.openedChannels.first { $0.label == "#fast" }?.ordered == false)

        for reply in Self.replies {
            transport.handle(.dataChannelMessage(reply.message.data, label: reply.label, binary: reply.message.isBinary))
        }

        // Once webrtcbin has closed "#fast" and its burst on "#chat" is in, recbot closes
        // "#chat" from its side.
        let lastBulk = Self.bulkMessage(Self.bulk - 1).data
        let closeDeadline = Date().addingTimeInterval(20)
        while !(log.closedChannels.contains("#fast") && log.dataChannelMessages.contains { $0.data == lastBulk }), Date() < closeDeadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        transport.handle(.closeDataChannel(label: "#chat"))

        let report = try await peer.next(type: "report", within: 30)
        let resetDeadline = Date().addingTimeInterval(3)  // webrtcbin's reset of "#chat" may still be crossing
        while log.closedChannels.count < 2, Date() < resetDeadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let (counters, sctp) = try await transport.eventLoop.submit(confined: negotiation.core) { core in
            (core.dataChannels?.counters, core.dataChannels?.association.counters)
        }.get()
        await transport.close()

        #expect(report["state"] as? String == "connected", "webrtcbin: \(report); \(peer.stderr.suffix(2_000))")
        #expect(Set(report["opened"] as? [String] ?? []) == ["#chat", "#fast"], "webrtcbin saw our DCEP ACKs")
        // Both closes complete on webrtcbin's side: "#fast" (its own) only when recbot reset
        // its outgoing stream in return, "#chat" when recbot started the close.
        #expect(report["closed"] as? [String] == ["#fast", "#chat"], "webrtcbin: \(report["closed"] ?? "nil")")

        // webrtcbin → recbot: complete, identical, in order on the ordered channel.
        let sent = try #require(PeerMessage.byLabel(report["sent"]))
        let received = log.dataChannelMessages
        #expect(received.contains { $0.data.count == 5_000 }, "a message larger than one SCTP chunk")
        let chat = received.filter { $0.label == "#chat" }.map { PeerMessage(isBinary: $0.isBinary, data: $0.data) }
        let expectedChat = (sent["#chat"] ?? []) + (0..<Self.bulk).map(Self.bulkMessage)
        #expect(chat.count == expectedChat.count, "\(chat.count) of \(expectedChat.count) on #chat")
        #expect(chat == expectedChat, "complete, identical and in order, 2.4 MB of it in one burst")
        #expect(Set(received.filter { $0.label == "#fast" }.map(\.data)) == Set((sent["#fast"] ?? []).map(\.data)))

        // recbot → webrtcbin: the same, the other way.
        let delivered = try #require(PeerMessage.byLabel(report["received"]))
        #expect(delivered["#chat"] == Self.replies.filter { $0.label == "#chat" }.map { Self.acrossWebrtcbin($0.message) },
                "webrtcbin received: \(delivered)")
        #expect(delivered["#fast"] == Self.replies.filter { $0.label == "#fast" }.map(\.message))

        #expect(log.closedChannels == ["#fast", "#chat"], "events: \(log.events)")
        #expect(!log.events.contains { if case .failed = $0 { return true }; return false }, "events: \(log.events)")
        #expect(counters?.messagesOnUnknownStreams == 0 && counters?.malformedControlMessages == 0, "\(String(describing: counters))")
        #expect(sctp?.streamResetsReceived == 2 && sctp?.droppedPackets == 0, "\(String(describing: sctp))")
    }
}
