import Testing
import WireCoding
@testable import SCTP

/// Our endpoint against a bare SCTP association playing the peer, which opens channels
/// with DCEP and misbehaves on purpose.
final class EndpointLink {
    let peer = SCTPAssociation(random: seeded(21))
    let endpoint = DataChannelEndpoint(association: SCTPAssociation(random: seeded(22)))
    var events: [DataChannelEvent] = []
    var peerMessages: [SCTPMessage] = []
    var peerResets: [[UInt16]] = []
    let now = MonotonicTime.milliseconds(0)

    init() {
        fromPeer(peer.start(now: now))
    }

    func fromPeer(_ output: SCTPOutput) {
        absorbPeer(output.events)
        exchange(toEndpoint: output.packets)
    }

    func fromEndpoint(_ output: DataChannelOutput) {
        events += output.events
        var toEndpoint: [[UInt8]] = []
        for packet in output.packets {
            let result = peer.handle(packet: packet, now: now)
            absorbPeer(result.events)
            toEndpoint += result.packets
        }
        exchange(toEndpoint: toEndpoint)
    }

    private func exchange(toEndpoint packets: [[UInt8]]) {
        var toEndpoint = packets
        while !toEndpoint.isEmpty {
            var toPeer: [[UInt8]] = []
            for packet in toEndpoint {
                let result = endpoint.handle(packet: packet, now: now)
                events += result.events
                toPeer += result.packets
            }
            toEndpoint = []
            for packet in toPeer {
                let result = peer.handle(packet: packet, now: now)
                absorbPeer(result.events)
                toEndpoint += result.packets
            }
        }
    }

    private func absorbPeer(_ events: [SCTPEvent]) {
        for event in events {
            if case .message(let message) = event { peerMessages.append(message) }
            if case .streamsReset(let streams) = event { peerResets.append(streams) }
        }
    }

    func open(_ label: String, stream: UInt16, type: DCEPMessage.ChannelType = .reliable) {
        let open = DCEPMessage.open(channelType: type, priority: 0, reliabilityParameter: 0, label: label, protocolName: "")
        fromPeer(peer.send(open.serialized, streamID: stream, payloadProtocol: DataChannelPPID.dcep, now: now))
    }

    func send(_ text: String, stream: UInt16, ppid: UInt32 = DataChannelPPID.string) {
        fromPeer(peer.send(Array(text.utf8), streamID: stream, payloadProtocol: ppid, now: now))
    }

    var opened: [String] { events.compactMap { if case .opened(let channel) = $0 { channel.label } else { nil } } }
    var closed: [String] { events.compactMap { if case .closed(let channel) = $0 { channel.label } else { nil } } }
    var messages: [String] {
        events.compactMap { if case .message(let channel, _, let data) = $0 { "\(channel.label):\(String(decoding: data, as: UTF8.self))" } else { nil } }
    }
}

@Suite struct DataChannelEndpointTests {
    @Test func opensAcknowledgesDeliversAndRepliesByLabel() {
        let link = EndpointLink()
        #expect(link.events.first == .established)
        link.open("#chat", stream: 1)
        link.open("#fast", stream: 3, type: .reliableUnordered)
        #expect(link.opened == ["#chat", "#fast"])
        #expect(link.peerMessages.filter { $0.payloadProtocol == DataChannelPPID.dcep }.map(\.data) == [DCEPMessage.ack.serialized, DCEPMessage.ack.serialized])
        link.send("hello", stream: 1)
        link.send("", stream: 3, ppid: DataChannelPPID.stringEmpty)
        #expect(link.messages == ["#chat:hello", "#fast:"])

        link.fromEndpoint(link.endpoint.send(Array("reply".utf8), label: "#chat", binary: false, now: link.now))
        link.fromEndpoint(link.endpoint.send([], label: "#chat", binary: true, now: link.now))
        let replies = link.peerMessages.filter { $0.streamID == 1 && $0.payloadProtocol != DataChannelPPID.dcep }
        #expect(replies.map(\.payloadProtocol) == [DataChannelPPID.string, DataChannelPPID.binaryEmpty])
        #expect(link.endpoint.send([1], label: "#nowhere", binary: true, now: link.now).packets.isEmpty, "no channel, nothing sent")
    }

    @Test func hostileChannelTrafficIsCountedNotFatal() {
        let link = EndpointLink()
        link.open("#chat", stream: 1)
        link.send("before any OPEN", stream: 7)                                    // unknown stream
        link.fromPeer(link.peer.send([0x03, 0x00], streamID: 9, payloadProtocol: DataChannelPPID.dcep, now: link.now))  // truncated OPEN
        link.send("who knows", stream: 1, ppid: 99)                                 // unknown PPID
        link.open("#chat-again", stream: 1)                                         // the same stream opened twice
        link.send("still here", stream: 1)
        let counters = link.endpoint.counters
        #expect(counters.messagesOnUnknownStreams == 1 && counters.malformedControlMessages == 1)
        #expect(counters.unknownPayloadProtocols == 1 && counters.reopenedChannels == 1)
        #expect(link.messages == ["#chat-again:still here"], "the newer channel replaces the older one")
    }

    @Test func aStreamResetClosesTheChannelBothWays() {
        let link = EndpointLink()
        link.open("#chat", stream: 1)
        link.open("#other", stream: 3)
        // The peer closes #chat, and resets stream 11 that never had a channel.
        link.fromPeer(link.peer.resetOutgoingStreams([1, 11], now: link.now))
        #expect(link.closed == ["#chat"])
        #expect(link.endpoint.counters.resetsOfUnknownStreams == 1)
        #expect(link.peerResets == [[1, 11]], "our outgoing streams were reset in return")
        link.send("not lost", stream: 3)
        #expect(link.messages.last == "#other:not lost")
        #expect(link.endpoint.nextTimeout == nil && link.peer.nextTimeout == nil, "both requests answered, nothing pending")
    }

    @Test func closingFromOurSideEndsWhenThePeerFollows() {
        let link = EndpointLink()
        link.open("#chat", stream: 1)
        link.fromEndpoint(link.endpoint.close(label: "#chat", now: link.now))
        #expect(link.closed == ["#chat"], "closed once the peer reset its stream in return")
        #expect(link.endpoint.association.counters.streamResetsReceived == 1 && link.peer.counters.streamResetsReceived == 1,
                "one reset each way, no echo")
        #expect(link.endpoint.close(label: "#chat", now: link.now).packets.isEmpty, "gone")
    }
}
