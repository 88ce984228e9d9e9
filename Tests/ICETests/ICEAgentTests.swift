import SDP
import STUN
import Testing
import WireCoding
@testable import ICE

let addressA = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 40_000)
let addressB = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 50_000)

func seededRandom(seed: UInt64) -> () -> UInt64 {
    var generator = SplitMix64(seed: seed)
    return { generator.next() }
}

func candidate(_ address: TransportAddress, priority: UInt32 = 2_130_706_431) -> ICECandidate {
    ICECandidate(foundation: "1", priority: priority, address: address.ip.description, port: address.port, kind: .host)
}

/// Two agents on a simulated network with a simulated clock; `drop` decides per datagram.
final class SimulatedNetwork {
    let a: ICEAgent
    let b: ICEAgent
    var now = MonotonicTime.milliseconds(0)
    var inFlight: [(at: MonotonicTime, datagram: ICEOutput.Datagram)] = []
    var delivered = 0
    var drop: (ICEOutput.Datagram, Int) -> Bool = { _, _ in false }
    /// Milliseconds each datagram takes to arrive.
    var latency: (ICEOutput.Datagram) -> Int64 = { _ in 10 }
    var eventsA: [ICEEvent] = []
    var eventsB: [ICEEvent] = []
    var sent = 0

    init(roleA: ICERole, roleB: ICERole, tieA: UInt64 = 10, tieB: UInt64 = 20) {
        var configA = ICEConfiguration(localUfrag: "ufA1", localPassword: "passwordOfAgentA123456", remoteUfrag: "ufB1",
                                       remotePassword: "passwordOfAgentB123456", role: roleA, tieBreaker: tieA)
        var configB = ICEConfiguration(localUfrag: "ufB1", localPassword: "passwordOfAgentB123456", remoteUfrag: "ufA1",
                                       remotePassword: "passwordOfAgentA123456", role: roleB, tieBreaker: tieB)
        configA.consentIntervalMilliseconds = 5_000
        configB.consentIntervalMilliseconds = 5_000
        a = ICEAgent(configuration: configA, hosts: [addressA], random: seededRandom(seed: 1))
        b = ICEAgent(configuration: configB, hosts: [addressB], random: seededRandom(seed: 2))
        _ = a.handle(remoteCandidate: candidate(addressB), now: .milliseconds(0))
        _ = b.handle(remoteCandidate: candidate(addressA), now: .milliseconds(0))
    }

    func absorb(_ output: ICEOutput, into events: inout [ICEEvent]) {
        events += output.events
        for datagram in output.datagrams {
            sent += 1
            if drop(datagram, sent) { continue }
            inFlight.append((now.adding(milliseconds: latency(datagram)), datagram))
        }
    }

    func start() {
        absorb(a.start(now: now), into: &eventsA)
        absorb(b.start(now: now), into: &eventsB)
    }

    /// Advances time event by event until `until`.
    func run(until end: MonotonicTime) {
        while true {
            let deadlines = [a.nextTimeout, b.nextTimeout, inFlight.map(\.at).min()].compactMap { $0 }
            guard let next = deadlines.min(), next <= end else { now = end; return }
            now = max(now, next)
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            for (_, datagram) in due {
                delivered += 1
                if datagram.to == addressA {
                    absorb(a.handle(datagram: datagram.bytes, from: datagram.from, to: datagram.to, now: now), into: &eventsA)
                } else {
                    absorb(b.handle(datagram: datagram.bytes, from: datagram.from, to: datagram.to, now: now), into: &eventsB)
                }
            }
            absorb(a.handleTimeout(now: now), into: &eventsA)
            absorb(b.handleTimeout(now: now), into: &eventsB)
        }
    }
}

@Suite struct ICEAgentTests {
    @Test func controlledAgentConnectsToAControllingAgent() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        #expect(!network.a.isValidated(remote: addressB))
        network.start()
        network.run(until: .milliseconds(1_000))
        #expect(network.a.state == .connected && network.b.state == .connected)
        #expect(network.eventsA.contains(.selectedPair(local: addressA, remote: addressB)))
        #expect(network.eventsB.contains(.selectedPair(local: addressB, remote: addressA)))
        #expect(network.a.isValidated(remote: addressB) && network.b.isValidated(remote: addressA))
        #expect(network.a.pairs.first?.nominated == true)
        #expect(network.a.counters.dropped == 0 && network.b.counters.dropped == 0)
    }

    @Test func lostChecksAreRetransmittedWithBackoff() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        var sendTimes: [Int64] = []
        network.drop = { datagram, _ in
            guard datagram.from == addressB, (try? STUNMessage(parsing: datagram.bytes))?.messageClass == .request else { return false }
            sendTimes.append(network.now.nanoseconds / 1_000_000)
            return sendTimes.count <= 3  // B's first three requests vanish
        }
        network.start()
        network.run(until: .milliseconds(5_000))
        #expect(network.a.state == .connected && network.b.state == .connected)
        #expect(network.b.counters.retransmissions >= 2)
        // RTO 500 ms doubling: B's check goes out at 0, 500 and 1500 ms.
        #expect(Array(sendTimes.prefix(3)) == [0, 500, 1_500])
    }

    @Test func consentIsLostThirtySecondsAfterThePeerGoesSilent() throws {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        network.start()
        network.run(until: .milliseconds(1_000))
        #expect(network.a.state == .connected)
        network.run(until: .milliseconds(40_000))
        #expect(network.a.state == .connected, "consent checks keep it alive")
        #expect(network.a.counters.responsesReceived >= 7, "a consent check answered every 4-6 s")
        // B vanishes: consent expires 30 s after the last answered consent check, not earlier.
        network.drop = { datagram, _ in datagram.from == addressB }
        network.run(until: network.now.adding(milliseconds: 10))
        let expiry = try #require(network.a.consentExpiresAt)
        #expect(expiry.milliseconds(since: network.now) > 23_000)
        network.run(until: expiry.adding(milliseconds: -1))
        #expect(network.a.state == .connected, "not before 30 s without consent")
        network.run(until: expiry)
        #expect(network.a.state == .failed)
        #expect(network.eventsA.contains(.consentLost))
    }

    /// An overloaded peer answers every consent check, but 12 s late (longer than the checks'
    /// interval): each answer still counts, so consent holds.
    @Test func lateConsentAnswersStillCount() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        network.start()
        network.run(until: .milliseconds(1_000))
        network.latency = { datagram in
            datagram.from == addressB && (try? STUNMessage(parsing: datagram.bytes))?.messageClass == .successResponse ? 12_000 : 10
        }
        network.run(until: .milliseconds(120_000))
        #expect(network.a.state == .connected && !network.eventsA.contains(.consentLost))
        #expect(network.a.counters.dropped == 0, "no answer arrived after its check was forgotten")
    }

    /// Seven of ten answers lost for ten minutes: with checks every 4-6 s, six in a row are lost
    /// in a 30 s window about one time in nine, so consent would most likely end; with hurried
    /// checks all of about 24 are lost one time in 4,000.
    @Test func consentHoldsThroughHeavyLossOfAnswers() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        network.start()
        network.run(until: .milliseconds(1_000))
        #expect(network.a.state == .connected)
        var coin = SplitMix64(seed: 77)
        network.drop = { datagram, _ in datagram.from == addressB && coin.next() % 10 < 7 }
        network.run(until: .milliseconds(600_000))
        #expect(network.a.state == .connected && !network.eventsA.contains(.consentLost))
    }

    /// Hurried checks are for a missed answer only: on a clean path they stay 4-6 s apart.
    @Test func consentChecksAreHurriedOnlyWhileUnanswered() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        network.start()
        network.run(until: .milliseconds(1_000))
        var sentByA = 0
        network.drop = { datagram, _ in
            if datagram.from == addressA, (try? STUNMessage(parsing: datagram.bytes))?.messageClass == .request { sentByA += 1 }
            return false
        }
        network.run(until: .milliseconds(61_000))
        #expect(sentByA >= 10 && sentByA <= 15, "one check every 4-6 s, not every second: \(sentByA)")
        // Silence for 20 s: after one check's interval without an answer, checks come about
        // every second (at 4-6 s apart there would be 3 to 5), then slow down once answered.
        sentByA = 0
        network.drop = { datagram, _ in
            if datagram.from == addressA, (try? STUNMessage(parsing: datagram.bytes))?.messageClass == .request { sentByA += 1 }
            return datagram.from == addressB
        }
        network.run(until: .milliseconds(81_000))
        let hurried = sentByA
        network.drop = { _, _ in false }
        sentByA = 0
        network.run(until: .milliseconds(141_000))
        #expect(hurried >= 10, "hurried while unanswered: \(hurried) in 20 s")
        #expect(sentByA <= 18, "back to 4-6 s once answered: \(sentByA) in 60 s")
        #expect(network.a.state == .connected)
    }

    @Test func roleConflictIsResolved() {
        let network = SimulatedNetwork(roleA: .controlling, roleB: .controlling, tieA: 99, tieB: 1)
        network.start()
        network.run(until: .milliseconds(3_000))
        #expect(network.a.state == .connected && network.b.state == .connected)
        #expect(network.a.role == .controlling && network.b.role == .controlled, "the larger tie-breaker keeps control")
        #expect(network.eventsB.contains(.roleChanged(.controlled)))
    }

    @Test func bothControlledAlsoResolves() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlled, tieA: 1, tieB: 99)
        network.start()
        network.run(until: .milliseconds(3_000))
        #expect(network.a.state == .connected && network.b.state == .connected)
        #expect(network.b.role == .controlling && network.a.role == .controlled)
    }

    @Test func failsWhenNobodyAnswers() {
        let network = SimulatedNetwork(roleA: .controlled, roleB: .controlling)
        network.drop = { _, _ in true }
        network.start()
        network.run(until: .milliseconds(29_000))
        #expect(network.a.state == .checking)
        network.run(until: .milliseconds(31_000))
        #expect(network.a.state == .failed && network.eventsA.contains(.stateChanged(.failed)))
    }
}

/// Hand-made peers for the edge cases.
@Suite struct ICERequestHandlingTests {
    func agent(role: ICERole = .controlled) -> ICEAgent {
        let configuration = ICEConfiguration(localUfrag: "ufA1", localPassword: "passwordOfAgentA123456", remoteUfrag: "ufB1",
                                             remotePassword: "passwordOfAgentB123456", role: role, tieBreaker: 5)
        return ICEAgent(configuration: configuration, hosts: [addressA], random: seededRandom(seed: 3))
    }

    func request(username: String = "ufA1:ufB1", password: String = "passwordOfAgentA123456", extra: [STUNAttribute] = []) -> [UInt8] {
        STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(1...12))!,
                    attributes: [.username(username), .priority(1_862_270_975), .iceControlling(77), .useCandidate] + extra)
            .encoded(integrityKey: Array(password.utf8), fingerprint: true)
    }

    /// Issue 12: a remote candidate added before any check was sent made the next deadline
    /// Int64.min, and the UDP driver's `deadline - now` overflowed.
    @Test func aCandidateBeforeAnyCheckIsDueAtOnceNotAtTheStartOfTime() throws {
        let ice = agent()
        _ = ice.start(now: .milliseconds(5_000))
        _ = ice.handle(remoteCandidate: try #require(ICECandidate(sdp: "candidate:1 1 udp 2130706431 192.0.2.1 9 typ host")), now: .milliseconds(5_000))
        let next = try #require(ice.nextTimeout)
        #expect(next.nanoseconds >= 0 && next <= .milliseconds(5_000))
    }

    @Test func unauthenticatedRequestsGetNoAnswer() {
        let ice = agent()
        _ = ice.start(now: .milliseconds(0))
        for bytes in [request(password: "wrong-password-1234567"), request(username: "other:ufB1"), Array(request().dropLast(8))] {
            let output = ice.handle(datagram: bytes, from: addressB, to: addressA, now: .milliseconds(1))
            #expect(output.datagrams.isEmpty)
        }
        #expect(ice.counters.dropped == 3)
        #expect(ice.remoteCandidates.isEmpty, "nothing learned from unauthenticated traffic")
    }

    @Test func peerReflexiveCandidateIsLearnedAndCheckedBack() throws {
        let ice = agent()
        _ = ice.start(now: .milliseconds(0))
        let output = ice.handle(datagram: request(), from: addressB, to: addressA, now: .milliseconds(1))
        let response = try STUNMessage(parsing: try #require(output.datagrams.first).bytes)
        #expect(response.messageClass == .successResponse && response.xorMappedAddress == addressB)
        #expect(response.hasValidMessageIntegrity(key: Array("passwordOfAgentA123456".utf8)))
        #expect(ice.remoteCandidates.map(\.kind) == [.prflx] && ice.remoteCandidates[0].priority == 1_862_270_975)
        // The triggered check goes out, carrying our credentials the other way.
        let check = try #require(output.datagrams.dropFirst().first)
        let checkMessage = try STUNMessage(parsing: check.bytes)
        #expect(checkMessage.messageClass == .request && checkMessage.username == "ufB1:ufA1" && checkMessage.iceControlled == 5)
        #expect(checkMessage.hasValidMessageIntegrity(key: Array("passwordOfAgentB123456".utf8)))

        // Its success nominates the pair (USE-CANDIDATE came first).
        let success = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: checkMessage.transactionID,
                                  attributes: [.xorMappedAddress(addressA, transactionID: checkMessage.transactionID)])
            .encoded(integrityKey: Array("passwordOfAgentB123456".utf8), fingerprint: true)
        // From the wrong address: ignored.
        let spoofed = TransportAddress(ip: IPAddress("127.0.0.9")!, port: 1)
        #expect(ice.handle(datagram: success, from: spoofed, to: addressA, now: .milliseconds(2)).events.isEmpty)
        let done = ice.handle(datagram: success, from: addressB, to: addressA, now: .milliseconds(3))
        #expect(done.events.contains(.selectedPair(local: addressA, remote: addressB)) && ice.state == .connected)
    }

    @Test func unknownComprehensionRequiredAttributeGets420() throws {
        let ice = agent()
        _ = ice.start(now: .milliseconds(0))
        let output = ice.handle(datagram: request(extra: [STUNAttribute(type: 0x0042, value: [1])]), from: addressB, to: addressA,
                                now: .milliseconds(1))
        let response = try STUNMessage(parsing: try #require(output.datagrams.first).bytes)
        #expect(response.messageClass == .errorResponse && response.errorCode?.code == 420)
    }

    @Test func controllingAgentAnswersConflictWith487() throws {
        let ice = agent(role: .controlling)  // tie-breaker 5 < 77: it must yield
        _ = ice.start(now: .milliseconds(0))
        let yielding = ice.handle(datagram: request(), from: addressB, to: addressA, now: .milliseconds(1))
        #expect(yielding.events.contains(.roleChanged(.controlled)) && ice.role == .controlled)

        var configuration = ICEConfiguration(localUfrag: "ufA1", localPassword: "passwordOfAgentA123456", remoteUfrag: "ufB1",
                                             remotePassword: "passwordOfAgentB123456", role: .controlling, tieBreaker: 1_000)
        configuration.checkIntervalMilliseconds = 50
        let strong = ICEAgent(configuration: configuration, hosts: [addressA], random: seededRandom(seed: 4))
        _ = strong.start(now: .milliseconds(0))
        let output = strong.handle(datagram: request(), from: addressB, to: addressA, now: .milliseconds(1))
        let response = try STUNMessage(parsing: try #require(output.datagrams.first).bytes)
        #expect(response.errorCode?.code == 487 && strong.role == .controlling)
    }

    @Test func serverReflexiveCandidateIsGathered() throws {
        let ice = agent()
        let server = TransportAddress(ip: IPAddress("127.0.0.2")!, port: 3_478)
        let output = ice.gatherServerReflexive(server: server, from: addressA, now: .milliseconds(0))
        let request = try STUNMessage(parsing: try #require(output.datagrams.first).bytes)
        #expect(output.datagrams.first?.to == server && request.messageClass == .request)
        let mapped = TransportAddress(ip: IPAddress("198.51.100.7")!, port: 61_000)
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: request.transactionID,
                                   attributes: [.xorMappedAddress(mapped, transactionID: request.transactionID)]).encoded(fingerprint: true)
        let result = ice.handle(datagram: response, from: server, to: addressA, now: .milliseconds(20))
        guard case .localCandidate(let candidate) = try #require(result.events.first) else {
            Issue.record("no candidate event")
            return
        }
        #expect(candidate.kind == .srflx && candidate.address == "198.51.100.7" && candidate.relatedAddress == "127.0.0.1")
    }

    @Test func unusableRemoteCandidatesAreIgnored() {
        let ice = agent()
        for text in ["candidate:1 1 tcp 1 127.0.0.1 9 typ host tcptype active", "candidate:1 2 udp 1 127.0.0.1 9 typ host",
                     "candidate:1 1 udp 1 3f2a-host.local 9 typ host", "candidate:1 1 udp 1 ::1 9 typ host"] {
            _ = ice.handle(remoteCandidate: ICECandidate(sdp: text)!, now: .milliseconds(0))
        }
        #expect(ice.counters.ignoredRemoteCandidates == 3)
        #expect(ice.pairs.isEmpty, "the IPv6 candidate has no IPv6 host to pair with")
    }
}
