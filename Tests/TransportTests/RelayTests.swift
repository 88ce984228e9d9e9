import DTLS
import ICE
@testable import PeerConnection
import Keying
import SDP
import STUN
import Testing
@testable import Transport
import TURN
import TURNServerModel
import WireCoding

private let turnServer = TransportAddress(ip: IPAddress("127.0.0.9")!, port: 3_478)
private let relayed = TransportAddress(ip: IPAddress("127.0.0.9")!, port: 55_000)
private let localPassword = "passwordOfAgentA123456"
private let remotePassword = "passwordOfAgentB123456"

/// A relay-only core, a strict TURN server and a remote ICE peer that can only be reached through
/// the relay, all on one simulated clock.
private final class RelayedSession {
    let core: PeerConnectionCore
    let server: MiniTURNServer
    var now = MonotonicTime.milliseconds(0)
    var events: [TransportEvent] = []
    /// What reached the peer through the relay.
    var atPeer: [(bytes: [UInt8], viaChannel: Bool)] = []
    var streamWrites: [StreamWrite] = []
    var serverAnswers = true
    private var relayedCount = 0

    init(relayOnly: Bool = true, password: String = "secret", transport: TURNTransport = .udp) throws {
        var configuration = ICEConfiguration(localUfrag: "ufA1", localPassword: localPassword, remoteUfrag: "ufB1",
                                             remotePassword: remotePassword, role: .controlled, tieBreaker: 1)
        configuration.relayOnly = relayOnly
        var generator = SplitMix64(seed: 9)
        let random: () -> UInt64 = { generator.next() }
        let ice = ICEAgent(configuration: configuration, hosts: [local], random: random)
        _ = ice.handle(remoteCandidate: ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: 50_000, kind: .host), now: .milliseconds(0))
        let fingerprint = DTLSFingerprint(algorithm: "sha-256", bytes: Array(repeating: 7, count: 32))!
        let relay = RelayServer(id: 1, client: TURNClientConfiguration(server: turnServer, transport: transport,
                                                                       credentials: TURNCredentials(username: "recbot", password: password)),
                                name: "turn:127.0.0.9:3478")
        core = PeerConnectionCore(ice: ice, dtls: try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [fingerprint]),
                                  relays: [relay], random: random)
        server = MiniTURNServer(users: ["recbot": "secret"], relayed: relayed, mapped: local, padsChannelData: transport.isStream)
    }

    func absorb(_ output: TransportOutput) {
        events += output.events
        var answers: [[UInt8]] = []
        for datagram in output.datagrams where datagram.to == turnServer && serverAnswers {
            #expect(datagram.from == local)
            answers += server.handle(datagram.bytes)
        }
        for write in output.streamWrites where serverAnswers {
            streamWrites.append(write)
            answers += server.handle(write.bytes)
        }
        for datagram in output.datagrams where datagram.to != turnServer { Issue.record("sent directly to \(datagram.to)") }
        collectRelayed()
        for answer in answers {
            if core.relayStreams.isEmpty {
                absorb(core.feed(.datagram(answer, from: turnServer, to: local), now: now))
            } else {
                absorb(core.feed(.relayStream(answer, link: 1), now: now))
            }
        }
    }

    private func collectRelayed() {
        while relayedCount < server.relayedToPeers.count {
            let sent = server.relayedToPeers[relayedCount]
            relayedCount += 1
            #expect(sent.peer == peer)
            atPeer.append((sent.payload, sent.viaChannel))
        }
    }

    /// The peer sends `bytes` to our relayed address.
    func fromPeer(_ bytes: [UInt8]) {
        guard let message = server.fromPeer(bytes, peer: peer) else { return }
        absorb(core.isStreamRelay ? core.feed(.relayStream(message, link: 1), now: now) : core.feed(.datagram(message, from: turnServer, to: local), now: now))
    }

    func advance(by milliseconds: Int64) {
        let target = now.adding(milliseconds: milliseconds)
        while let deadline = core.nextTimeout, deadline <= target {
            now = max(now, deadline)
            absorb(core.feed(.timeout, now: now))
        }
        now = target
    }

    var failure: TransportFailure? { core.failure }
}

private extension PeerConnectionCore {
    var isStreamRelay: Bool { !relayStreams.isEmpty }
}

@Suite struct RelayTests {
    @Test func relayOnlySessionConnectsThroughTheRelayAndBindsAChannel() throws {
        let session = try RelayedSession()
        session.absorb(session.core.feed(.start, now: session.now))
        #expect(session.events.contains(.relay(.allocated(server: "turn:127.0.0.9:3478", relayed: relayed, mapped: local))))
        let trickled = session.events.compactMap { if case .localCandidate(let c) = $0 { c } else { nil } }
        #expect(trickled.map(\.kind) == [.relay])
        #expect(trickled.first?.port == relayed.port && trickled.first?.relatedPort == local.port)
        // Our check reached the peer through the relay, after the permission was created.
        let check = try STUNMessage(parsing: try #require(session.atPeer.first).bytes)
        #expect(check.method == STUNMethod.binding && check.messageClass == .request)
        #expect(session.server.permissions == [peer.ip])

        // The peer answers, then nominates: the relayed pair is selected and a channel bound.
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: check.transactionID,
                                   attributes: [.xorMappedAddress(relayed, transactionID: check.transactionID)])
            .encoded(integrityKey: Array(remotePassword.utf8), fingerprint: true)
        session.fromPeer(response)
        let nominate = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(1...12))!,
                                   attributes: [.username("ufA1:ufB1"), .priority(1), .iceControlling(99), .useCandidate])
            .encoded(integrityKey: Array(localPassword.utf8), fingerprint: true)
        session.fromPeer(nominate)
        #expect(session.events.contains(.selectedPair(local: relayed, remote: peer)))
        #expect(session.events.contains(.relay(.channelBound(server: "turn:127.0.0.9:3478", peer: peer))))
        // DTLS starts on the relayed pair at once (a Send indication while the channel is being
        // bound); what follows, here ICE's consent check 4-6 s later, goes as ChannelData.
        let hello = try #require(session.atPeer.last)
        #expect(hello.bytes.first == 22 && !hello.viaChannel)
        session.advance(by: 6_500)
        let consent = try #require(session.atPeer.last)
        #expect(consent.bytes.first == 0 && consent.viaChannel)
        #expect(session.core.relayCounters["turn:127.0.0.9:3478"]?.channelDataSent == 1)
        #expect(session.core.counters.relayedDatagrams == 2)
        #expect(session.failure == nil)
    }

    @Test func relayOnlyIgnoresEverythingThatArrivesDirectly() throws {
        let session = try RelayedSession()
        session.absorb(session.core.feed(.start, now: session.now))
        let direct = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(1...12))!,
                                 attributes: [.username("ufA1:ufB1"), .priority(1), .iceControlling(99), .useCandidate])
            .encoded(integrityKey: Array(localPassword.utf8), fingerprint: true)
        let output = session.core.feed(.datagram(direct, from: peer, to: local), now: session.now)
        #expect(output.datagrams.isEmpty, "no answer from the host socket")
        _ = session.core.feed(.datagram([22, 254, 253, 0], from: peer, to: local), now: session.now)
        #expect(session.core.counters.droppedOutsideRelay == 2)
        #expect(session.core.ice.pairs.allSatisfy { $0.local == relayed })
    }

    @Test func wrongCredentialsEndARelayOnlySessionAtOnce() throws {
        let session = try RelayedSession(password: "wrong")
        session.absorb(session.core.feed(.start, now: session.now))
        guard case .relay(let failure) = session.failure else {
            Issue.record("expected a relay failure, got \(String(describing: session.failure))")
            return
        }
        #expect(failure.isAuthentication)
    }

    @Test func unreachableServerEndsARelayOnlySessionAfterItsTransactionTimeout() throws {
        let session = try RelayedSession()
        session.serverAnswers = false
        session.absorb(session.core.feed(.start, now: session.now))
        session.advance(by: 29_000)
        #expect(session.failure == nil)
        session.advance(by: 1_000)  // ICE's 30 s: the relay's own reason is the one reported
        guard case .relay(.unreachable(let reason)) = session.failure else {
            Issue.record("expected unreachable, got \(String(describing: session.failure))")
            return
        }
        #expect(reason.contains("turn:127.0.0.9:3478"))
    }

    @Test func streamRelayFramesEverythingOnItsConnection() throws {
        let session = try RelayedSession(transport: .tcp)
        session.absorb(session.core.feed(.start, now: session.now))
        #expect(session.streamWrites.isEmpty, "nothing before the connection is up")
        session.absorb(session.core.feed(.relayConnected(link: 1), now: session.now))
        #expect(session.events.contains { if case .relay(.allocated) = $0 { true } else { false } })
        #expect(!session.atPeer.isEmpty)
        // A framing error closes the stream and, relay-only, ends the session.
        let output = session.core.feed(.relayStream([0xC0, 0, 0, 0], link: 1), now: session.now)
        #expect(output.streamsToClose == [1])
        guard case .relay(.allocationLost) = session.failure else {
            Issue.record("expected allocationLost, got \(String(describing: session.failure))")
            return
        }
    }

    @Test func losingTheSelectedRelayEndsTheSession() throws {
        let session = try RelayedSession()
        session.server.grantedLifetime = 40  // refreshed at 20 s, before consent (30 s) could lapse
        session.absorb(session.core.feed(.start, now: session.now))
        let check = try STUNMessage(parsing: try #require(session.atPeer.first).bytes)
        session.fromPeer(STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: check.transactionID,
                                     attributes: [.xorMappedAddress(relayed, transactionID: check.transactionID)])
            .encoded(integrityKey: Array(remotePassword.utf8), fingerprint: true))
        session.fromPeer(STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(1...12))!,
                                     attributes: [.username("ufA1:ufB1"), .priority(1), .iceControlling(99), .useCandidate])
            .encoded(integrityKey: Array(localPassword.utf8), fingerprint: true))
        #expect(session.core.ice.selected?.local == relayed)
        session.server.refreshError = 403
        session.advance(by: 21_000)
        guard case .relay(.allocationLost) = session.failure else {
            Issue.record("expected allocationLost, got \(String(describing: session.failure))")
            return
        }
    }
}
