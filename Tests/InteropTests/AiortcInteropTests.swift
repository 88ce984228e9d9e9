import DTLS
import Foundation
import ICE
import Keying
import NIOCore
import NIOPosix
import PeerConnection
import RTP
import SCTP
import SDP
import SRTP
import STUN
import SystemClock
import Testing
import Transport
import WireCoding

/// Events collected from the transport's event loop.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [TransportEvent] = []
    private var _rtpBySSRC: [UInt32: Int] = [:]
    private var _dataChannelMessages: [(label: String, isBinary: Bool, data: [UInt8])] = []
    private var _openedChannels: [DataChannel] = []
    /// Per message: nanoseconds from its datagram's read (the time it carries) to this event.
    private var _messageReadAges: [Int64] = []
    /// The transport's own clock (the default one).
    private let clock = SystemTimeSource()

    func record(_ event: TransportEvent) {
        lock.lock(); defer { lock.unlock() }
        if case .rtp(let box) = event {
            _rtpBySSRC[box.packet.ssrc, default: 0] += 1
        } else if case .dataChannelMessage(let channel, let isBinary, let data, let readAt) = event {
            _dataChannelMessages.append((channel.label, isBinary, data))
            _messageReadAges.append(clock.now().nanoseconds - readAt.nanoseconds)
        } else if case .dataChannel(.opened(let channel)) = event {
            _openedChannels.append(channel)
        } else {
            _events.append(event)
        }
    }

    var events: [TransportEvent] { lock.lock(); defer { lock.unlock() }; return _events }
    var dataChannelMessages: [(label: String, isBinary: Bool, data: [UInt8])] { lock.lock(); defer { lock.unlock() }; return _dataChannelMessages }
    var openedChannels: [DataChannel] { lock.lock(); defer { lock.unlock() }; return _openedChannels }
    var messageReadAges: [Int64] { lock.lock(); defer { lock.unlock() }; return _messageReadAges }
    var rtpBySSRC: [UInt32: Int] { lock.lock(); defer { lock.unlock() }; return _rtpBySSRC }
    var closedChannels: [String] {
        events.compactMap { if case .dataChannel(.closed(let channel)) = $0 { channel.label } else { nil } }
    }
}

struct InteropResult {
    var report: [String: Any]
    var log: EventLog
    var negotiated: RecvOnlyAnswer
    var counters: TransportCounters?
    var sctp: SCTPCounters?
    /// RTP packets the media core took in, per SSRC.
    var mediaPackets: [UInt32: Int] = [:]
}

/// Runs one session: aiortc offers and sends, recbot's transport answers and receives.
/// `replies` are sent by recbot once their channels are open.
func runAiortcSession(profile: String, seconds: Double = 3, peerArguments: [String] = [], capabilities: ReceiverCapabilities = ReceiverCapabilities(),
                      replies: [(label: String, message: PeerMessage)] = [],
                      editOffer: (inout SessionDescription) -> Void = { _ in },
                      editAnswer: (inout String) -> Void = { _ in }) async throws -> InteropResult {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    do {
        let result = try await withTaskExecutorPreference(PeerSessionExecutor.shared) {
            try await runAiortcSession(on: group, profile: profile, seconds: seconds, peerArguments: peerArguments,
                                       capabilities: capabilities, replies: replies, editOffer: editOffer, editAnswer: editAnswer)
        }
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
}

private func runAiortcSession(on group: MultiThreadedEventLoopGroup, profile: String, seconds: Double, peerArguments: [String],
                              capabilities: ReceiverCapabilities, replies: [(label: String, message: PeerMessage)],
                              editOffer: (inout SessionDescription) -> Void,
                              editAnswer: (inout String) -> Void) async throws -> InteropResult {
    let transport = try await UDPTransport.bind(addresses: [IPAddress("127.0.0.1")!], on: group.next())
    let peer = try PeerProcess.aiortc(arguments: ["--profile", profile, "--seconds", String(seconds)] + peerArguments)
    defer { peer.terminate() }

    let offerMessage = try await peer.next(type: "offer", within: 20)
    var offer = try SessionDescription(parsing: try #require(offerMessage["sdp"] as? String))
    editOffer(&offer)
    var generator = SystemRandomNumberGenerator()
    let negotiation = try RecvOnlyNegotiation(offer: offer, hosts: transport.localAddresses, certificate: try DTLSCertificate(),
                                              capabilities: capabilities, random: { UInt64.random(in: .min ... .max, using: &generator) })
    let log = EventLog()
    transport.run(negotiation.core) { log.record($0) }
    var answerText = negotiation.answer.sdp.serialized
    editAnswer(&answerText)
    try peer.send(["type": "answer", "sdp": answerText])

    if !replies.isEmpty {
        let labels = Set(replies.map(\.label))
        let deadline = Date().addingTimeInterval(seconds + 10)
        while !labels.isSubset(of: Set(log.openedChannels.map(\.label))), Date() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        for reply in replies {
            transport.handle(.dataChannelMessage(reply.message.data, label: reply.label, binary: reply.message.isBinary))
        }
    }

    let report = try await peer.next(type: "report", within: seconds + 25)
    try await Task.sleep(nanoseconds: 300_000_000)  // packets still in flight
    let (counters, sctp, mediaPackets) = try await transport.eventLoop.submit(confined: negotiation.core) { core in
        (core.counters, core.dataChannels?.association.counters, core.media?.packetsBySSRC ?? [:])
    }.get()
    await transport.close()
    return InteropResult(report: report, log: log, negotiated: negotiation.answer, counters: counters, sctp: sctp, mediaPackets: mediaPackets)
}

@Suite(.serialized) struct AiortcInteropTests {
    @Test(arguments: [("cm80", SRTPProtectionProfile.aes128CMSHA1_80), ("gcm128", SRTPProtectionProfile.aeadAES128GCM)])
    func receivesMediaFromAiortc(profile: String, expected: SRTPProtectionProfile) async throws {
        let result = try await runAiortcSession(profile: profile)
        let events = result.log.events
        #expect(result.report["state"] as? String == "connected", "aiortc: \(result.report)")
        #expect(events.contains(.iceStateChanged(.connected)), "events: \(events)")
        #expect(events.contains(.dtlsConnected(expected)))
        #expect(!events.contains { if case .failed = $0 { return true }; return false }, "events: \(events)")

        // At least 95 % of what aiortc reports sending, per stream, decrypted on our side.
        let sent = try #require(result.report["sent"] as? [String: [String: Any]])
        #expect(Set(sent.keys) == ["video", "audio"])
        for (kind, stats) in sent {
            let ssrc = try #require((stats["ssrc"] as? NSNumber)?.uint32Value)
            let packetsSent = try #require((stats["packetsSent"] as? NSNumber)?.intValue)
            let received = result.mediaPackets[ssrc] ?? 0
            #expect(packetsSent > (kind == "audio" ? 100 : 50), "\(kind): only \(packetsSent) sent")
            #expect(Double(received) >= 0.95 * Double(packetsSent), "\(kind): received \(received) of \(packetsSent)")
        }
        #expect(result.counters?.droppedUnvalidatedSource == 0)
        #expect(result.negotiated.media.map(\.accepted) == [true, true])
    }

    @Test func receivesDataChannelMessagesFromAiortc() async throws {
        var capabilities = ReceiverCapabilities()
        capabilities.acceptsDataChannels = true
        let replies: [(label: String, message: PeerMessage)] = [
            ("#chat", PeerMessage(isBinary: false, data: Array("reply-1".utf8))),
            ("#chat", PeerMessage(isBinary: false, data: Array("lost-once".utf8))),  // aiortc drops its first arrival
            ("#chat", PeerMessage(isBinary: false, data: Array(String(repeating: "y", count: 3_000).utf8))),
            ("#chat", PeerMessage(isBinary: true, data: [0, 1, 2, 255])),
            ("#fast", PeerMessage(isBinary: false, data: Array("unordered reply".utf8))),
        ]
        let result = try await runAiortcSession(profile: "any", seconds: 3, peerArguments: ["--data-channels"], capabilities: capabilities,
                                                replies: replies)
        #expect(result.report["state"] as? String == "connected", "aiortc: \(result.report)")
        #expect(Set(result.log.openedChannels.map(\.label)) == ["#chat", "#fast", "#pr"], "\(result.log.events)")
        #expect(result.log.openedChannels.first { $0.label == "#fast" }?.ordered == false)
        #expect(result.log.openedChannels.first { $0.label == "#pr" }?.channelType == .partialReliableRexmit)
        #expect(Set(result.report["datachannels_opened"] as? [String] ?? []) == ["#chat", "#fast", "#pr"], "aiortc saw our DCEP ACKs")
        let sent = try #require(PeerMessage.byLabel(result.report["datachannel_messages"]))
        #expect(sent["#chat"]?.count == 5 && sent["#fast"]?.count == 3 && sent["#pr"]?.count == 15)
        #expect(result.log.dataChannelMessages.contains { $0.data.count == 5_000 }, "a message larger than one SCTP chunk")
        // Each message carries when the sockets' thread read its last datagram (its time in the
        // archive): before the event, and not by more than a busy machine's moment.
        let ages = result.log.messageReadAges
        #expect(!ages.isEmpty && ages.allSatisfy { $0 >= 0 && $0 < 5_000_000_000 }, "read ages (ns): \(ages)")
        // On "#pr" two messages were lost once and, with no retransmits allowed, abandoned:
        // aiortc's FORWARD-TSN lets the ordered stream go on without them.
        let dropped = Set((result.report["datachannel_dropped"] as? [String] ?? []).map { Array($0.utf8) })
        #expect(dropped.count == 2, "aiortc lost two #pr chunks: \(result.report["datachannel_dropped"] ?? "-")")
        for (label, expected) in sent {
            let received = result.log.dataChannelMessages.filter { $0.label == label }.map { PeerMessage(isBinary: $0.isBinary, data: $0.data) }
            switch label {
            case "#chat": #expect(received == expected, "ordered, complete and identical on \(label)")
            case "#pr": #expect(received == expected.filter { !dropped.contains($0.data) }, "in order, without the abandoned ones")
            default: #expect(Set(received.map(\.data)) == Set(expected.map(\.data)), "\(label) (unordered)")
            }
        }
        #expect((result.sctp?.forwardTSNChunks ?? 0) >= 1, "\(String(describing: result.sctp))")

        // recbot → aiortc: all replies arrive in order, the lost one through our T3 retransmission.
        let delivered = try #require(PeerMessage.byLabel(result.report["datachannel_received"]))
        #expect(delivered["#chat"] == replies.filter { $0.label == "#chat" }.map(\.message), "aiortc received: \(delivered)")
        #expect(delivered["#fast"] == replies.filter { $0.label == "#fast" }.map(\.message))
        #expect(result.report["lost_incoming"] as? Int == 1)
        #expect((result.sctp?.retransmissions ?? 0) >= 1, "\(String(describing: result.sctp))")
    }

    @Test func tamperedOfferFingerprintFailsOurHandshake() async throws {
        let result = try await runAiortcSession(profile: "any", seconds: 1) { offer in
            for index in offer.media.indices {
                offer.media[index].attributes = offer.media[index].attributes.map { attribute in
                    guard attribute.name == "fingerprint", var fingerprint = DTLSFingerprint(sdp: attribute.value ?? "") else { return attribute }
                    fingerprint.bytes[0] ^= 0xFF
                    return SDPAttribute("fingerprint", fingerprint.sdp)
                }
            }
        }
        let events = result.log.events
        #expect(events.contains(.iceStateChanged(.connected)))
        #expect(events.contains { if case .failed(.dtls(.fingerprintMismatch)) = $0 { return true }; return false }, "events: \(events)")
        #expect(!events.contains { if case .dtlsConnected = $0 { return true }; return false })
        #expect(result.mediaPackets.isEmpty)
        #expect(result.report["state"] as? String != "connected" || (result.report["sent"] as? [String: Any]) != nil)
    }

    @Test func tamperedAnswerFingerprintMakesAiortcRefuseUs() async throws {
        let result = try await runAiortcSession(profile: "any", seconds: 1, editAnswer: { answer in
            // Flip one hex digit of our own fingerprint as aiortc sees it.
            guard let range = answer.range(of: "a=fingerprint:sha-256 ") else { return }
            let index = range.upperBound
            let digit = answer[index]
            answer.replaceSubrange(index...index, with: digit == "0" ? "1" : "0")
        })
        #expect(result.report["state"] as? String == "failed", "aiortc: \(result.report)")
        #expect(result.mediaPackets.values.reduce(0, +) == 0)
    }
}
