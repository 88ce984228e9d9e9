import DTLS
import ICE
@testable import PeerConnection
import Keying
import SDP
import STUN
import Testing
@testable import Transport
import WireCoding

let local = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 40_000)
let peer = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 50_000)
let stranger = TransportAddress(ip: IPAddress("127.0.0.7")!, port: 50_000)

func makeCore(consentTimeoutMilliseconds: Int64? = nil) throws -> PeerConnectionCore {
    var configuration = ICEConfiguration(localUfrag: "ufA1", localPassword: "passwordOfAgentA123456", remoteUfrag: "ufB1",
                                         remotePassword: "passwordOfAgentB123456", role: .controlled, tieBreaker: 1)
    if let consentTimeoutMilliseconds { configuration.consentTimeoutMilliseconds = consentTimeoutMilliseconds }
    var generator = SplitMix64(seed: 9)
    let ice = ICEAgent(configuration: configuration, hosts: [local], random: { generator.next() })
    _ = ice.handle(remoteCandidate: ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: 50_000, kind: .host), now: .milliseconds(0))
    let fingerprint = DTLSFingerprint(algorithm: "sha-256", bytes: Array(repeating: 7, count: 32))!
    return PeerConnectionCore(ice: ice, dtls: try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [fingerprint]),
                              random: { generator.next() })
}

@Suite struct PeerConnectionCoreTests {
    @Test func demultiplexesByFirstByteAndDropsUnvalidatedSources() throws {
        let core = try makeCore()
        _ = core.feed(.start, now: .milliseconds(0))
        // DTLS and SRTP before ICE validated anything: dropped and counted, never parsed.
        _ = core.feed(.datagram([22, 254, 253] + Array(repeating: 0, count: 40), from: peer, to: local), now: .milliseconds(1))
        _ = core.feed(.datagram([0x80, 96] + Array(repeating: 0, count: 40), from: peer, to: local), now: .milliseconds(1))
        // Outside every RFC 7983 range.
        _ = core.feed(.datagram([200, 1, 2, 3], from: peer, to: local), now: .milliseconds(1))
        _ = core.feed(.datagram([64, 1, 2, 3], from: peer, to: local), now: .milliseconds(1))
        // Garbage in the STUN range goes to ICE, which drops it.
        _ = core.feed(.datagram([1, 1, 0, 0], from: stranger, to: local), now: .milliseconds(1))
        #expect(core.counters.droppedUnvalidatedSource == 2)
        #expect(core.counters.droppedUnknownProtocol == 2)
        #expect(core.ice.counters.dropped == 1)
        #expect(core.dtls.counters.datagramsReceived == 0, "nothing reached DTLS")
        #expect(core.failure == nil)
    }

    /// Answers the core's first check and nominates the pair, as a controlling peer does.
    private func validatePair(_ core: PeerConnectionCore) throws -> TransportOutput {
        let started = core.feed(.start, now: .milliseconds(0))
        let check = try #require(started.datagrams.first)
        let request = try STUNMessage(parsing: check.bytes)
        // The peer answers our check and nominates the pair with its own request.
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: request.transactionID,
                                   attributes: [.xorMappedAddress(local, transactionID: request.transactionID)])
            .encoded(integrityKey: Array("passwordOfAgentB123456".utf8), fingerprint: true)
        _ = core.feed(.datagram(response, from: peer, to: local), now: .milliseconds(5))
        let nominate = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(1...12))!,
                                   attributes: [.username("ufA1:ufB1"), .priority(1), .iceControlling(99), .useCandidate])
            .encoded(integrityKey: Array("passwordOfAgentA123456".utf8), fingerprint: true)
        return core.feed(.datagram(nominate, from: peer, to: local), now: .milliseconds(6))
    }

    @Test func validatedPairStartsDTLSAndOnlyThatAddressIsAccepted() throws {
        let core = try makeCore()
        let output = try validatePair(core)
        #expect(output.events.contains(.selectedPair(local: local, remote: peer)))
        // DTLS starts on the selected pair: a ClientHello (record type 22) goes to the peer.
        #expect(output.datagrams.contains { $0.to == peer && $0.bytes.first == 22 })
        _ = core.feed(.datagram([0x80, 96] + Array(repeating: 0, count: 40), from: stranger, to: local), now: .milliseconds(7))
        #expect(core.counters.droppedUnvalidatedSource == 1)
        _ = core.feed(.datagram([0x80, 96] + Array(repeating: 0, count: 40), from: peer, to: local), now: .milliseconds(7))
        #expect(core.counters.droppedBeforeKeys == 1, "validated, but no SRTP keys before the handshake")
    }

    @Test func consentLossNamesTheConfiguredWindow() throws {
        let core = try makeCore(consentTimeoutMilliseconds: 10_000)
        _ = try validatePair(core)
        var failures: [TransportFailure] = []
        // Nothing answers the consent checks: the core fails once the window has passed, not before.
        for millisecond in stride(from: Int64(100), through: 12_000, by: 100) {
            for case .failed(let failure) in core.feed(.timeout, now: .milliseconds(millisecond)).events {
                failures.append(failure)
                #expect(millisecond >= 10_000, "failed at \(millisecond) ms")
            }
        }
        #expect(failures == [.consentLost(afterMilliseconds: 10_000)])
        #expect(failures.first?.description == "ICE consent lost: no answer from the peer for 10 s")
        #expect(TransportFailure.consentLost(afterMilliseconds: 2_500).description.hasSuffix("for 2.5 s"))
    }

    @Test func serverReflexiveGatheringGoesThroughTheCore() throws {
        let core = try makeCore()
        let server = TransportAddress(ip: IPAddress("127.0.0.2")!, port: 3_478)
        let output = core.feed(.gatherServerReflexive(servers: [server, TransportAddress(ip: IPAddress("::1")!, port: 3_478)]),
                                                now: .milliseconds(0))
        #expect(output.datagrams.map(\.to) == [server], "no IPv6 host to ask from")
        let request = try STUNMessage(parsing: output.datagrams[0].bytes)
        let mapped = TransportAddress(ip: IPAddress("203.0.113.9")!, port: 4_000)
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: request.transactionID,
                                   attributes: [.xorMappedAddress(mapped, transactionID: request.transactionID)]).encoded()
        let result = core.feed(.datagram(response, from: server, to: local), now: .milliseconds(3))
        #expect(result.events.contains { if case .localCandidate(let c) = $0 { return c.kind == .srflx && c.port == 4_000 }; return false })
    }
}

@Suite struct HostAddressPolicyTests {
    @Test func prefixesMatch() throws {
        let prefix = try #require(IPPrefix("10.1.0.0/16"))
        #expect(prefix.contains(IPAddress("10.1.200.3")!) && !prefix.contains(IPAddress("10.2.0.1")!))
        #expect(IPPrefix("fd00::/8")!.contains(IPAddress("fd12::1")!) && !IPPrefix("fd00::/8")!.contains(IPAddress("fe80::1")!))
        #expect(IPPrefix("1.2.3.4/33") == nil && IPPrefix("nonsense/8") == nil)
        #expect(IPPrefix("") == nil && IPPrefix("/") == nil, "issue 12: these indexed an empty split")
        #expect(IPPrefix("0.0.0.0/0")!.contains(IPAddress("8.8.8.8")!))
    }

    @Test func defaultPolicySkipsLoopbackAndLinkLocal() {
        let policy = HostAddressPolicy()
        #expect(policy.permits(IPAddress("192.0.2.10")!) && policy.permits(IPAddress("2001:db8::5")!))
        #expect(!policy.permits(IPAddress("127.0.0.1")!) && !policy.permits(IPAddress("::1")!))
        #expect(!policy.permits(IPAddress("169.254.1.1")!) && !policy.permits(IPAddress("fe80::1")!))
    }

    @Test func allowAndDenyLists() throws {
        let policy = HostAddressPolicy(allow: [IPPrefix("10.0.0.0/8")!], deny: [IPPrefix("10.9.0.0/16")!], ipv6: false)
        #expect(policy.permits(IPAddress("10.1.1.1")!))
        #expect(!policy.permits(IPAddress("10.9.1.1")!), "deny wins")
        #expect(!policy.permits(IPAddress("192.0.2.1")!), "not allowed")
        #expect(HostAddressPolicy.loopback.permits(IPAddress("127.0.0.1")!))
        #expect(try HostAddressPolicy.loopback.hostAddresses() == [IPAddress("127.0.0.1")!])
    }
}
