import ICE
import STUN
import TURN
import WireCoding

/// TURN relays under the ICE agent: each server's client gets the bytes from its server (UDP
/// from a host socket, or a framed TCP/TLS stream), its allocation becomes a relayed candidate,
/// unwrapped datagrams re-enter the demux as if they had arrived on the relayed address, and
/// whatever the core sends from a relayed address leaves through its relay.
extension PeerConnectionCore {
    /// The stream connections the socket driver must open (TCP or TLS), then report with
    /// `.relayConnected` / `.relayConnectionFailed` and feed with `.relayStream`.
    public var relayStreams: [RelayServer] { relays.map(\.server).filter { $0.client.transport.isStream } }

    public var relayCounters: [String: TURNCounters] {
        Dictionary(relays.map { ($0.server.name, $0.client.counters) }, uniquingKeysWith: { a, _ in a })
    }

    /// UDP relays start at once, from the first host socket of the server's family.
    func startDatagramRelays(now: MonotonicTime, _ output: inout TransportOutput) {
        for (index, relay) in relays.enumerated() where !relay.server.client.transport.isStream {
            let server = relay.server.client.server
            guard let host = ice.localCandidates.first(where: { $0.kind == .host && $0.base.ip.isIPv4 == server.ip.isIPv4 }) else {
                output.events.append(.relay(.failed(server: relay.server.name,
                                                    .unreachable("no local address of the server's family"))))
                continue
            }
            relay.hostSocket = host.base
            relayByServer[server] = index
            absorb(relay: index, relay.client.start(now: now), now: now, &output)
        }
        checkRelaysLeft(&output)
    }

    func relayConnected(link: Int, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = now
        guard failure == nil, let index = relays.firstIndex(where: { $0.server.id == link }) else { return output }
        absorb(relay: index, relays[index].client.start(now: now), now: now, &output)
        return routed(output, now: now)
    }

    func relayConnectionFailed(link: Int, reason: String, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = now
        guard failure == nil, let index = relays.firstIndex(where: { $0.server.id == link }) else { return output }
        let client = relays[index].client
        if client.state == .idle {
            // Never connected: the client has not started, so say so for it.
            _ = client.start(now: now)
        }
        absorb(relay: index, client.connectionLost(reason), now: now, &output)
        return routed(output, now: now)
    }

    /// Bytes read from the stream connection of relay `link`.
    func handle(stream bytes: [UInt8], link: Int, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        lastNow = now
        guard failure == nil, let index = relays.firstIndex(where: { $0.server.id == link }) else { return output }
        let relay = relays[index]
        do {
            for frame in try relay.framer.append(bytes) {
                absorb(relay: index, relay.client.handle(frame, now: now), now: now, &output)
            }
        } catch {
            output.streamsToClose.append(link)
            absorb(relay: index, relay.client.connectionLost("\(error)"), now: now, &output)
        }
        return routed(output, now: now)
    }

    func relayTimeouts(now: MonotonicTime, _ output: inout TransportOutput) {
        for (index, relay) in relays.enumerated() {
            guard let deadline = relay.client.nextTimeout, deadline <= now else { continue }
            absorb(relay: index, relay.client.handleTimeout(now: now), now: now, &output)
        }
    }

    func absorb(relay index: Int, _ relayOutput: TURNOutput, now: MonotonicTime, _ output: inout TransportOutput) {
        let relay = relays[index]
        for message in relayOutput.toServer {
            if relay.server.client.transport.isStream {
                output.streamWrites.append(StreamWrite(link: relay.server.id, bytes: message))
            } else if let host = relay.hostSocket {
                output.datagrams.append(.init(bytes: message, from: host, to: relay.server.client.server))
            }
        }
        for event in relayOutput.events {
            switch event {
            case .data(let payload, let peer):
                guard let relayed = relay.relayed else { continue }
                counters.relayedDatagrams += 1
                receive(payload, from: peer, to: relayed, now: now, &output)
            case .allocated(let relayed, let mapped, _):
                relay.relayed = relayed
                relayByRelayed[relayed] = index
                output.events.append(.relay(.allocated(server: relay.server.name, relayed: relayed, mapped: mapped)))
                absorb(ice.addRelayCandidate(relayed: relayed, mapped: mapped, typePreference: relay.server.typePreference, now: now),
                       now: now, &output)
            case .channelBound(let peer, _):
                output.events.append(.relay(.channelBound(server: relay.server.name, peer: peer)))
            case .failed(let reason):
                output.events.append(.relay(.failed(server: relay.server.name, reason)))
                lastRelayFailure = reason
                if relay.server.client.transport.isStream && !output.streamsToClose.contains(relay.server.id) {
                    output.streamsToClose.append(relay.server.id)
                }
                relayFailed(relay, reason, now: now, &output)
            }
        }
    }

    private func relayFailed(_ relay: RelayEndpoint, _ reason: TURNFailure, now: MonotonicTime, _ output: inout TransportOutput) {
        if let relayed = relay.relayed {
            relayByRelayed[relayed] = nil
            // Media was flowing through it: the session cannot go on on this pair.
            if ice.selected?.local == relayed {
                fail(.relay(reason), &output)
                return
            }
            absorb(ice.relayCandidateFailed(relayed: relayed, now: now), now: now, &output)
        }
        checkRelaysLeft(&output, lastFailure: reason)
    }

    /// Relay-only with every relay failed: nothing can ever connect, so say why now rather
    /// than after ICE's 30 s timeout.
    private func checkRelaysLeft(_ output: inout TransportOutput, lastFailure: TURNFailure? = nil) {
        guard ice.configuration.relayOnly, failure == nil, ice.selected == nil else { return }
        let alive = relays.contains { $0.client.state == .idle || $0.client.state == .allocating || $0.client.state == .allocated }
        guard !alive else { return }
        fail(.relay(lastFailure ?? .unreachable("no TURN server to use (relay-only policy)")), &output)
    }

    /// Why ICE failed when only relays could have worked and none ever allocated: their reason
    /// says more than "no candidate pair succeeded".
    func relayExplanation() -> TURNFailure? {
        guard ice.configuration.relayOnly, !relays.contains(where: { $0.relayed != nil }) else { return nil }
        if let lastRelayFailure { return lastRelayFailure }
        let waiting = relays.filter { $0.client.state == .allocating || $0.client.state == .idle }.map(\.server.name)
        return waiting.isEmpty ? nil : .unreachable("no allocation from \(waiting.joined(separator: ", ")) before ICE gave up")
    }

    func bindChannelIfRelayed(local: TransportAddress, remote: TransportAddress, now: MonotonicTime, _ output: inout TransportOutput) {
        guard let index = relayByRelayed[local] else { return }
        absorb(relay: index, relays[index].client.bindChannel(to: remote, now: now), now: now, &output)
    }

    /// Datagrams the core wants to send from a relayed address leave through that relay.
    func routed(_ output: TransportOutput, now: MonotonicTime) -> TransportOutput {
        guard !relayByRelayed.isEmpty, output.datagrams.contains(where: { relayByRelayed[$0.from] != nil }) else { return output }
        var result = output
        result.datagrams = []
        for datagram in output.datagrams {
            guard let index = relayByRelayed[datagram.from] else {
                result.datagrams.append(datagram)
                continue
            }
            absorb(relay: index, relays[index].client.send(datagram.bytes, to: datagram.to, now: now), now: now, &result)
        }
        return result
    }

    func closeRelays(_ output: inout TransportOutput) {
        for index in relays.indices {
            absorb(relay: index, relays[index].client.close(now: lastNow), now: lastNow, &output)
        }
    }
}
