import STUN
import TURNServerModel
import Testing
import WireCoding
@testable import TURN

let serverAddress = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 3478)
let relayedAddress = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 50_000)
let mappedAddress = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 40_000)
let peerAddress = TransportAddress(ip: IPAddress("10.1.2.3")!, port: 6_000)

func seededRandom(_ seed: UInt64) -> () -> UInt64 {
    var generator = SplitMix64(seed: seed)
    return { generator.next() }
}

/// A client and the mini server exchanging messages instantly, on a simulated clock.
final class Link {
    let client: TURNClient
    let server: MiniTURNServer
    var now = MonotonicTime.milliseconds(0)
    var events: [TURNEvent] = []
    /// Messages the client sent, as the server received them.
    var sentByClient: [[UInt8]] = []
    var deliver = true

    init(transport: TURNTransport = .udp, password: String = "secret", configure: (inout TURNClientConfiguration) -> Void = { _ in }) {
        var configuration = TURNClientConfiguration(server: serverAddress, transport: transport,
                                                    credentials: TURNCredentials(username: "recbot", password: password))
        configure(&configuration)
        client = TURNClient(configuration: configuration, random: seededRandom(42))
        server = MiniTURNServer(users: ["recbot": "secret"], relayed: relayedAddress, mapped: mappedAddress, padsChannelData: transport.isStream)
    }

    func absorb(_ output: TURNOutput) {
        events += output.events
        for message in output.toServer {
            sentByClient.append(message)
            guard deliver else { continue }
            for answer in server.handle(message) { absorb(client.handle(answer, now: now)) }
        }
    }

    func advance(to milliseconds: Int64) {
        let target = MonotonicTime.milliseconds(milliseconds)
        while let deadline = client.nextTimeout, deadline <= target {
            now = max(now, deadline)
            absorb(client.handleTimeout(now: now))
        }
        now = target
    }

    var failures: [TURNFailure] { events.compactMap { if case .failed(let failure) = $0 { failure } else { nil } } }
}

@Suite struct TURNAllocationTests {
    @Test func allocatesAfterTheChallengeWithLongTermCredentials() throws {
        let link = Link()
        link.absorb(link.client.start(now: link.now))
        #expect(link.client.state == .allocated)
        #expect(link.events == [.allocated(relayed: relayedAddress, mapped: mappedAddress, lifetimeSeconds: 600)])
        // First Allocate without credentials, the retry with USERNAME/REALM/NONCE and valid integrity.
        let requests = link.server.requests
        #expect(requests.count == 2)
        #expect(requests[0].username == nil && requests[0].attribute(STUNAttributeType.messageIntegrity) == nil)
        #expect(requests[1].username == "recbot" && requests[1].realm == "recbot.test" && requests[1].nonce == "nonce-1")
        #expect(requests[1].attribute(STUNAttributeType.requestedTransport)?.value == [17, 0, 0, 0])
        #expect(requests[1].hasValidMessageIntegrity(key: STUNIntegrity.longTermKey(username: "recbot", realm: "recbot.test", password: "secret")))
        #expect(requests[1].hasValidFingerprint())
        #expect(requests[0].transactionID != requests[1].transactionID)
    }

    @Test func wrongPasswordFailsOnceWithoutLooping() {
        let link = Link(password: "wrong")
        link.absorb(link.client.start(now: link.now))
        #expect(link.client.state == .failed)
        #expect(link.failures.count == 1)
        #expect(link.failures.first?.isAuthentication == true)
        #expect(link.server.requests.count == 2)
        #expect(link.failures.first?.description.contains("wrong") == false)
    }

    @Test func staleNonceIsRetriedWithTheNewNonceThenGivenUp() {
        let link = Link()
        link.server.staleNoncesToSend = 2
        link.absorb(link.client.start(now: link.now))
        #expect(link.client.state == .allocated)
        #expect(link.client.counters.staleNonces == 2)
        #expect(link.server.requests.last?.nonce == link.server.nonce)

        let stubborn = Link()
        stubborn.server.staleNoncesToSend = 10
        stubborn.absorb(stubborn.client.start(now: stubborn.now))
        #expect(stubborn.client.state == .failed)
        #expect(stubborn.failures == [.rejected(code: 438, reason: "Stale Nonce")])
        #expect(stubborn.server.requests.count == 1 + 1 + 3)  // challenge, first try, three retries
    }

    @Test func unansweredAllocateRetransmitsOverUDPAndFailsAfterAbout40Seconds() {
        let link = Link()
        link.deliver = false
        link.absorb(link.client.start(now: link.now))
        link.advance(to: 39_000)
        #expect(link.client.state == .allocating)
        #expect(link.sentByClient.count == 7)
        link.advance(to: 40_000)
        #expect(link.client.state == .failed)
        #expect(link.failures.count == 1)
        if case .unreachable = link.failures.first {} else { Issue.record("expected unreachable, got \(link.failures)") }
    }

    @Test func streamsNeverRetransmit() {
        let link = Link(transport: .tcp)
        link.deliver = false
        link.absorb(link.client.start(now: link.now))
        link.advance(to: 39_000)
        #expect(link.sentByClient.count == 1)
        link.advance(to: 39_500)
        #expect(link.client.state == .failed)
    }

    @Test func allocationIsRefreshedBeforeItExpiresAndLostWhenARefreshIsRefused() {
        let link = Link()
        link.server.grantedLifetime = 300
        link.absorb(link.client.start(now: link.now))
        let before = link.server.requests.count
        link.advance(to: 239_000)
        #expect(link.server.requests.count == before)
        link.advance(to: 240_000)  // 300 s granted, refreshed 60 s ahead
        #expect(link.server.requests.count == before + 1)
        #expect(link.server.requests.last?.method == STUNMethod.refresh)
        #expect(link.server.requests.last?.lifetime == 600)
        link.advance(to: 480_000)
        #expect(link.server.requests.count == before + 2)
        #expect(link.client.state == .allocated)

        link.server.refreshError = 437
        link.advance(to: 720_000)
        #expect(link.client.state == .failed)
        #expect(link.failures == [.allocationLost("refresh refused: 437 Refused")])
    }

    @Test func closeDeletesTheAllocation() {
        let link = Link()
        link.absorb(link.client.start(now: link.now))
        link.absorb(link.client.close(now: link.now))
        #expect(link.server.deleted)
        #expect(link.client.state == .closed)
        #expect(link.client.nextTimeout == nil)
    }

    @Test func successWithBadIntegrityIsIgnored() throws {
        let link = Link()
        link.deliver = false
        link.absorb(link.client.start(now: link.now))
        // Answer the challenge properly, then forge a success for the authenticated retry.
        for answer in link.server.handle(link.sentByClient[0]) { link.absorb(link.client.handle(answer, now: link.now)) }
        let retry = try STUNMessage(parsing: link.sentByClient.last!)
        let forged = STUNMessage(method: STUNMethod.allocate, class: .successResponse, transactionID: retry.transactionID,
                                 attributes: [.xorRelayedAddress(peerAddress, transactionID: retry.transactionID), .lifetime(seconds: 600)])
            .encoded(integrityKey: Array(repeating: 1, count: 16), fingerprint: true)
        _ = link.client.handle(forged, now: link.now)
        #expect(link.client.state == .allocating)
        #expect(link.client.counters.dropped == 1)
    }
}

@Suite struct TURNDataPathTests {
    func allocated(_ transport: TURNTransport = .udp) -> Link {
        let link = Link(transport: transport)
        link.absorb(link.client.start(now: link.now))
        link.events.removeAll()
        return link
    }

    @Test func firstDatagramWaitsForItsPermissionThenGoesAsASendIndication() {
        let link = allocated()
        link.absorb(link.client.send([1, 2, 3], to: peerAddress, now: link.now))
        #expect(link.server.permissions == [peerAddress.ip])
        #expect(link.server.relayedToPeers.map(\.payload) == [[1, 2, 3]])
        #expect(link.server.relayedToPeers.first?.viaChannel == false)
        #expect(link.server.refusedData == 0)
        link.absorb(link.client.send([4], to: peerAddress, now: link.now))
        #expect(link.client.counters.permissionRequests == 1)
        #expect(link.server.relayedToPeers.count == 2)
    }

    @Test func dataIndicationsFromPermittedPeersOnly() throws {
        let link = allocated()
        link.absorb(link.client.send([0], to: peerAddress, now: link.now))
        link.absorb(link.client.handle(try #require(link.server.fromPeer([9, 9], peer: peerAddress)), now: link.now))
        #expect(link.events == [.data([9, 9], from: peerAddress)])
        let stranger = TransportAddress(ip: IPAddress("10.9.9.9")!, port: 1)
        let id = STUNTransactionID(bytes: Array(repeating: 3, count: 12))!
        let unsolicited = STUNMessage(method: STUNMethod.data, class: .indication, transactionID: id,
                                      attributes: [.xorPeerAddress(stranger, transactionID: id), .data([1])]).encoded()
        link.absorb(link.client.handle(unsolicited, now: link.now))
        #expect(link.events.count == 1)
        #expect(link.client.counters.dropped == 1)
    }

    @Test(arguments: [TURNTransport.udp, .tcp])
    func boundChannelCarriesDataBothWays(transport: TURNTransport) throws {
        let link = allocated(transport)
        link.absorb(link.client.bindChannel(to: peerAddress, now: link.now))
        #expect(link.events == [.channelBound(peer: peerAddress, channel: 0x4000)])
        link.absorb(link.client.send([1, 2, 3, 4, 5], to: peerAddress, now: link.now))
        #expect(link.server.relayedToPeers.map(\.viaChannel) == [true])
        let frame = try #require(link.sentByClient.last)
        #expect(frame.count == (transport.isStream ? 12 : 9))  // padded to four bytes on streams only
        link.absorb(link.client.handle(try #require(link.server.fromPeer([7, 7, 7], peer: peerAddress)), now: link.now))
        #expect(link.events.last == .data([7, 7, 7], from: peerAddress))
        #expect(link.client.counters.channelDataReceived == 1)
    }

    @Test func permissionsAndChannelsAreRefreshedBeforeTheyExpire() {
        let link = allocated()
        let other = TransportAddress(ip: IPAddress("10.1.2.4")!, port: 7_000)
        link.absorb(link.client.send([1], to: other, now: link.now))
        link.absorb(link.client.bindChannel(to: peerAddress, now: link.now))
        func count(_ method: UInt16) -> Int { link.server.requests.filter { $0.method == method }.count }
        #expect(count(STUNMethod.createPermission) == 1)
        #expect(count(STUNMethod.channelBind) == 1)
        link.advance(to: 239_999)
        #expect(count(STUNMethod.createPermission) == 1)
        link.advance(to: 240_000)  // 300 s permission, refreshed 60 s ahead (both IPs in one request)
        #expect(count(STUNMethod.createPermission) == 2)
        link.advance(to: 540_000)  // 600 s channel
        #expect(count(STUNMethod.channelBind) == 2)
        #expect(count(STUNMethod.refresh) == 1)  // the allocation's own, at 540 s
        link.advance(to: 3_600_000)
        #expect(link.client.state == .allocated)
        #expect(link.client.hasPermission(for: other.ip))
        #expect(link.client.boundChannel(to: peerAddress) == 0x4000)
    }

    @Test func queuedDatagramsPerPeerAreBounded() {
        let link = allocated()
        link.deliver = false
        for index in 0..<20 { link.absorb(link.client.send([UInt8(index)], to: peerAddress, now: link.now)) }
        #expect(link.client.counters.sendsRefused == 20 - 8)
    }
}
