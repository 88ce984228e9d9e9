import STUN
import WireCoding

/// A sans-IO ICE agent (RFC 8445) for one component over BUNDLE + rtcp-mux: controlled
/// against a full agent, controlling against ICE-lite (regular nomination), with triggered and
/// peer-reflexive checks, role-conflict repair, server-reflexive gathering, and consent
/// freshness (RFC 7675). Datagrams, time and randomness go in; datagrams, events and a
/// deadline come out.
public final class ICEAgent {
    public private(set) var configuration: ICEConfiguration
    public private(set) var state: ICEState = .new
    public private(set) var counters = ICECounters()
    public private(set) var localCandidates: [LocalCandidate] = []
    public private(set) var remoteCandidates: [RemoteCandidate] = []
    public private(set) var pairs: [CandidatePair] = []
    public private(set) var selected: (local: TransportAddress, remote: TransportAddress)?
    public var role: ICERole { configuration.role }

    private struct PairKey: Hashable { var local: TransportAddress; var remote: TransportAddress }

    private enum Purpose { case check(nominate: Bool), consent, gather }

    private struct Transaction {
        var key: PairKey
        var purpose: Purpose
        var bytes: [UInt8]
        var transmissions: Int
        var maximumTransmissions: Int
        var rto: Int64
        var nextRetransmit: MonotonicTime
    }

    private var transactions: [STUNTransactionID: Transaction] = [:]
    private var triggered: [PairKey] = []
    /// Checks are paced Ta apart; a triggered check goes out at once when the slot is free.
    private var lastCheckSentAt: MonotonicTime?
    private var startedAt: MonotonicTime?
    private var consent: ConsentFreshness
    private var remoteEndOfCandidates = false
    private var nominating: PairKey?
    private let random: () -> UInt64

    /// `hosts`: the addresses of the sockets recbot listens on (the bases); `remoteCandidates`:
    /// the offer's (later ones trickle in through `handle(remoteCandidate:now:)`).
    public init(configuration: ICEConfiguration, hosts: [TransportAddress], remoteCandidates: [ICECandidate] = [],
                random: @escaping () -> UInt64) {
        self.configuration = configuration
        self.random = random
        consent = ConsentFreshness(configuration: configuration)
        localCandidates = ICEAgent.hostCandidates(hosts)
        for candidate in remoteCandidates { add(candidate) }
    }

    /// The host candidates an agent on these sockets advertises (earlier hosts preferred).
    public static func hostCandidates(_ hosts: [TransportAddress]) -> [LocalCandidate] {
        hosts.enumerated().map { index, host in
            let preference = UInt32(65_535 - min(index, 65_535))
            return LocalCandidate(address: host, base: host, kind: .host,
                                  priority: ICEPriority.candidate(kind: .host, localPreference: preference), foundation: "\(index + 1)")
        }
    }

    // MARK: - Inputs

    public func start(now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        guard state == .new else { return output }
        startedAt = now
        setState(.checking, &output)
        runTimers(now: now, &output)
        return output
    }

    /// A candidate trickled after the offer. Unusable ones are counted and ignored; a usable one
    /// is paired, and its checks go out on the pacing timer (so the output is empty today).
    public func handle(remoteCandidate candidate: ICECandidate, now: MonotonicTime) -> ICEOutput {
        add(candidate)
        return ICEOutput()
    }

    private func add(_ candidate: ICECandidate) {
        guard candidate.transport == "udp", candidate.component == 1, candidate.kind != .prflx,
              let ip = IPAddress(candidate.address),
              remoteCandidates.count < configuration.maximumRemoteCandidates
        else {
            counters.ignoredRemoteCandidates += 1
            return
        }
        let remote = RemoteCandidate(address: TransportAddress(ip: ip, port: candidate.port), priority: candidate.priority, kind: candidate.kind)
        guard !remoteCandidates.contains(where: { $0.address == remote.address }) else { return }
        remoteCandidates.append(remote)
        for local in localCandidates where isPairable(local) && local.base.ip.isIPv4 == ip.isIPv4 {
            addPair(local: local, remote: remote)
        }
    }

    /// Adds the relayed address a TURN allocation got (trickled as `.localCandidate`) and pairs
    /// it with every remote candidate of its family. `typePreference`: 2 UDP, 1 TCP, 0 TLS.
    public func addRelayCandidate(relayed: TransportAddress, mapped: TransportAddress?, typePreference: UInt32, now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        guard state == .new || state == .checking || state == .connected,
              !localCandidates.contains(where: { $0.address == relayed }) else { return output }
        let index = localCandidates.filter { $0.kind == .relay }.count
        let candidate = LocalCandidate(address: relayed, base: relayed, kind: .relay,
                                       priority: ICEPriority.relayCandidate(typePreference: typePreference,
                                                                            localPreference: UInt32(65_535 - min(index, 65_535))),
                                       foundation: "r\(index + 1)", related: mapped)
        localCandidates.append(candidate)
        output.events.append(.localCandidate(candidate.sdp))
        for remote in remoteCandidates where remote.address.ip.isIPv4 == relayed.ip.isIPv4 {
            addPair(local: candidate, remote: remote)
        }
        runTimers(now: now, &output)
        return output
    }

    /// The allocation behind a relayed candidate is gone: its pairs fail, their checks stop.
    public func relayCandidateFailed(relayed: TransportAddress, now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        for index in pairs.indices where pairs[index].local == relayed { pairs[index].state = .failed }
        transactions = transactions.filter { $0.value.key.local != relayed }
        triggered.removeAll { $0.local == relayed }
        if nominating?.local == relayed { nominating = nil }
        runTimers(now: now, &output)
        return output
    }

    private func isPairable(_ local: LocalCandidate) -> Bool {
        local.kind == .relay || (local.kind == .host && !configuration.relayOnly)
    }

    public func setRemoteEndOfCandidates() { remoteEndOfCandidates = true }

    /// Asks a STUN server for our server-reflexive address from `base`.
    public func gatherServerReflexive(server: TransportAddress, from base: TransportAddress, now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        guard !configuration.relayOnly else { return output }  // a srflx candidate could not be used
        let id = newTransactionID()
        let request = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: id).encoded(fingerprint: true)
        transactions[id] = Transaction(key: PairKey(local: base, remote: server), purpose: .gather, bytes: request, transmissions: 1,
                                       maximumTransmissions: configuration.maximumTransmissions, rto: configuration.initialRTOMilliseconds,
                                       nextRetransmit: now.adding(milliseconds: configuration.initialRTOMilliseconds))
        output.datagrams.append(.init(bytes: request, from: base, to: server))
        return output
    }

    /// Handles a STUN datagram that arrived on socket `local` from `remote`.
    public func handle(datagram: [UInt8], from remote: TransportAddress, to local: TransportAddress, now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        guard state != .closed, let message = try? STUNMessage(parsing: datagram), message.method == STUNMethod.binding else {
            counters.dropped += 1
            return output
        }
        switch message.messageClass {
        case .request: handleRequest(message, from: remote, to: local, now: now, &output)
        case .successResponse, .errorResponse: handleResponse(message, from: remote, now: now, &output)
        case .indication: break  // keepalives
        }
        runTimers(now: now, &output)
        return output
    }

    public var nextTimeout: MonotonicTime? {
        var next = transactions.values.lazy.map(\.nextRetransmit).min()
        if state == .checking {
            // No check sent yet: due at once (the start, already past), never a sentinel that
            // a driver's arithmetic could overflow on.
            if hasCheckWork { next = .earliest(next, nextCheckSlot ?? startedAt ?? MonotonicTime(nanoseconds: 0)) }
            if let startedAt { next = .earliest(next, startedAt.adding(milliseconds: configuration.connectTimeoutMilliseconds)) }
        }
        if state == .connected { next = .earliest(next, consent.nextDeadline) }
        return next
    }

    public func handleTimeout(now: MonotonicTime) -> ICEOutput {
        var output = ICEOutput()
        runTimers(now: now, &output)
        return output
    }

    /// True once a check on a pair with this remote address succeeded: only then are
    /// DTLS and SRTP from it accepted (RFC 8445 §7.3: media only on validated pairs).
    public func isValidated(remote: TransportAddress) -> Bool {
        pairs.contains { $0.remote.address == remote && $0.state == .succeeded }
    }

    /// When the peer last proved consent on the selected pair (nil before one is selected).
    public var consentGrantedAt: MonotonicTime? {
        state == .connected ? consent.lastGranted : nil
    }

    /// When consent expires unless a consent check is answered before (RFC 7675).
    public var consentExpiresAt: MonotonicTime? {
        state == .connected ? consent.expiresAt : nil
    }

    /// Stops checking and answering; nothing is sent (ICE has no goodbye).
    public func close(now: MonotonicTime) -> ICEOutput {
        state = .closed
        transactions.removeAll()
        triggered.removeAll()
        return ICEOutput()
    }

    // MARK: - Requests

    private func handleRequest(_ message: STUNMessage, from remote: TransportAddress, to local: TransportAddress, now: MonotonicTime,
                               _ output: inout ICEOutput) {
        counters.requestsReceived += 1
        guard let localCandidate = localCandidates.first(where: { $0.base == local && $0.isBase }), isPairable(localCandidate) else {
            counters.droppedOutsidePolicy += 1  // relay-only: a host socket must not become a path
            return
        }
        let expectedPrefix = configuration.localUfrag + ":"
        guard message.hasValidFingerprint(), let username = message.username, username.hasPrefix(expectedPrefix),
              message.hasValidMessageIntegrity(key: Array(configuration.localPassword.utf8))
        else {
            counters.dropped += 1  // unauthenticated: no answer (RFC 8445 §7.3.1.1 allows silence)
            return
        }
        let unknown = message.unknownComprehensionRequired
        if !unknown.isEmpty {
            respondError(message, code: 420, reason: "Unknown Attribute", extra: [.unknownAttributes(unknown)], from: local, to: remote, &output)
            return
        }
        // Role conflict (RFC 8445 §7.3.1.1).
        if let theirs = message.iceControlling, configuration.role == .controlling {
            counters.roleConflicts += 1
            if configuration.tieBreaker >= theirs {
                respondError(message, code: 487, reason: "Role Conflict", extra: [], from: local, to: remote, &output)
                return
            }
            switchRole(to: .controlled, &output)
        } else if let theirs = message.iceControlled, configuration.role == .controlled {
            counters.roleConflicts += 1
            if configuration.tieBreaker >= theirs {
                switchRole(to: .controlling, &output)
            } else {
                respondError(message, code: 487, reason: "Role Conflict", extra: [], from: local, to: remote, &output)
                return
            }
        }
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: message.transactionID,
                                   attributes: [.xorMappedAddress(remote, transactionID: message.transactionID)])
        output.datagrams.append(.init(bytes: response.encoded(integrityKey: Array(configuration.localPassword.utf8), fingerprint: true),
                                      from: local, to: remote))

        // A request from an address we did not know is a peer-reflexive candidate.
        var candidate = remoteCandidates.first { $0.address == remote }
        if candidate == nil {
            guard remoteCandidates.count < configuration.maximumRemoteCandidates else { return }
            let learned = RemoteCandidate(address: remote, priority: message.priority ?? ICEPriority.candidate(kind: .prflx, localPreference: 0),
                                          kind: .prflx)
            remoteCandidates.append(learned)
            candidate = learned
        }
        guard let candidate else { return }
        let key = PairKey(local: local, remote: remote)
        var index = pairs.firstIndex { PairKey(local: $0.local, remote: $0.remote.address) == key }
        if index == nil { index = addPair(local: localCandidate, remote: candidate) }
        guard let index else { return }

        if message.useCandidate && configuration.role == .controlled {
            if pairs[index].state == .succeeded {
                pairs[index].nominated = true
                select(index, now: now, &output)
            } else {
                pairs[index].nominateOnSuccess = true
            }
        }
        if pairs[index].state != .succeeded && pairs[index].state != .inProgress && !triggered.contains(key) {
            pairs[index].state = .waiting
            triggered.append(key)
        }
    }

    private func respondError(_ request: STUNMessage, code: Int, reason: String, extra: [STUNAttribute], from local: TransportAddress,
                              to remote: TransportAddress, _ output: inout ICEOutput) {
        let response = STUNMessage(method: STUNMethod.binding, class: .errorResponse, transactionID: request.transactionID,
                                   attributes: [.errorCode(code, reason: reason)] + extra)
        output.datagrams.append(.init(bytes: response.encoded(integrityKey: Array(configuration.localPassword.utf8), fingerprint: true),
                                      from: local, to: remote))
    }

    private func switchRole(to role: ICERole, _ output: inout ICEOutput) {
        guard configuration.role != role else { return }
        configuration.role = role
        nominating = nil
        output.events.append(.roleChanged(role))
    }

    // MARK: - Responses

    private func handleResponse(_ message: STUNMessage, from remote: TransportAddress, now: MonotonicTime, _ output: inout ICEOutput) {
        guard let transaction = transactions[message.transactionID] else {
            counters.dropped += 1
            return
        }
        // Responses must come back from where the request went (RFC 8445 §7.2.5.2.1).
        guard transaction.key.remote == remote else {
            counters.dropped += 1
            return
        }
        if case .gather = transaction.purpose {
            transactions[message.transactionID] = nil
            counters.responsesReceived += 1
            if message.messageClass == .successResponse, let mapped = message.xorMappedAddress {
                addServerReflexive(mapped, base: transaction.key.local, &output)
            }
            return
        }
        guard message.hasValidMessageIntegrity(key: Array(configuration.remotePassword.utf8)) else {
            counters.dropped += 1
            return
        }
        transactions[message.transactionID] = nil
        counters.responsesReceived += 1
        let index = pairs.firstIndex { PairKey(local: $0.local, remote: $0.remote.address) == transaction.key }

        if message.messageClass == .errorResponse {
            if message.errorCode?.code == 487, let index {
                switchRole(to: configuration.role == .controlling ? .controlled : .controlling, &output)
                pairs[index].state = .waiting
                triggered.append(transaction.key)
            } else if let index, case .check = transaction.purpose {
                pairs[index].state = .failed
            }
            return
        }
        switch transaction.purpose {
        case .consent:
            consent.granted(now: now)
        case .check(let nominate):
            guard let index else { return }
            pairs[index].state = .succeeded
            consent.granted(now: now)
            if nominate || (configuration.role == .controlled && pairs[index].nominateOnSuccess) {
                pairs[index].nominated = true
                nominating = nil
                select(index, now: now, &output)
            } else if configuration.role == .controlling && nominating == nil && selected == nil {
                // Regular nomination: repeat the successful check with USE-CANDIDATE.
                nominating = transaction.key
                sendCheck(transaction.key, nominate: true, now: now, &output)
            }
        case .gather:
            break
        }
    }

    private func addServerReflexive(_ mapped: TransportAddress, base: TransportAddress, _ output: inout ICEOutput) {
        guard mapped != base, !localCandidates.contains(where: { $0.address == mapped }),
              let host = localCandidates.first(where: { $0.base == base && $0.kind == .host }) else { return }
        let candidate = LocalCandidate(address: mapped, base: base, kind: .srflx,
                                       priority: ICEPriority.candidate(kind: .srflx, localPreference: host.priority >> 8 & 0xFFFF),
                                       foundation: "s" + host.foundation)
        localCandidates.append(candidate)
        output.events.append(.localCandidate(candidate.sdp))
    }

    private func select(_ index: Int, now: MonotonicTime, _ output: inout ICEOutput) {
        let pair = pairs[index]
        if let current = selected, current.local == pair.local, current.remote == pair.remote.address { return }
        selected = (pair.local, pair.remote.address)
        output.events.append(.selectedPair(local: pair.local, remote: pair.remote.address))
        if state != .connected {
            setState(.connected, &output)
            consent.start(now: now, random: random)
        }
    }

    // MARK: - Timers and checks

    private var nextCheckSlot: MonotonicTime? {
        lastCheckSentAt?.adding(milliseconds: configuration.checkIntervalMilliseconds)
    }

    private var hasCheckWork: Bool {
        !triggered.isEmpty || pairs.contains { $0.state == .waiting }
    }

    private func runTimers(now: MonotonicTime, _ output: inout ICEOutput) {
        guard state == .checking || state == .connected else { return }
        for (id, transaction) in transactions where transaction.nextRetransmit <= now {
            if transaction.transmissions < transaction.maximumTransmissions {
                var updated = transaction
                updated.transmissions += 1
                updated.rto *= 2
                updated.nextRetransmit = now.adding(milliseconds: updated.rto)
                transactions[id] = updated
                counters.retransmissions += 1
                output.datagrams.append(.init(bytes: transaction.bytes, from: transaction.key.local, to: transaction.key.remote))
            } else {
                transactions[id] = nil
                if case .check = transaction.purpose,
                   let index = pairs.firstIndex(where: { PairKey(local: $0.local, remote: $0.remote.address) == transaction.key }),
                   pairs[index].state == .inProgress {
                    pairs[index].state = .failed
                    if nominating == transaction.key { nominating = nil }
                }
            }
        }
        if state == .checking {
            if hasCheckWork, nextCheckSlot.map({ now >= $0 }) ?? true, let key = nextPairToCheck() {
                sendCheck(key, nominate: false, now: now, &output)
            }
            let everythingFailed = !pairs.isEmpty && pairs.allSatisfy { $0.state == .failed } && transactions.isEmpty
            if let startedAt, now.milliseconds(since: startedAt) >= configuration.connectTimeoutMilliseconds
                || (everythingFailed && remoteEndOfCandidates) {
                setState(.failed, &output)
                transactions.removeAll()
            }
        }
        if state == .connected {
            if consent.isExpired(now: now) {
                output.events.append(.consentLost)
                setState(.failed, &output)
                transactions.removeAll()
                return
            }
            if let selected, consent.takeDueCheck(now: now, random: random) {
                sendConsentCheck(PairKey(local: selected.local, remote: selected.remote), now: now, &output)
            }
        }
    }

    private func nextPairToCheck() -> PairKey? {
        while let key = triggered.first {
            triggered.removeFirst()
            if let pair = pairs.first(where: { PairKey(local: $0.local, remote: $0.remote.address) == key }), pair.state == .waiting {
                return key
            }
        }
        return pairs.first { $0.state == .waiting }.map { PairKey(local: $0.local, remote: $0.remote.address) }
    }

    private func sendCheck(_ key: PairKey, nominate: Bool, now: MonotonicTime, _ output: inout ICEOutput) {
        guard let index = pairs.firstIndex(where: { PairKey(local: $0.local, remote: $0.remote.address) == key }) else { return }
        if pairs[index].state != .succeeded { pairs[index].state = .inProgress }
        let id = newTransactionID()
        let bytes = bindingRequest(id, localPreference: pairs[index].localPriority >> 8 & 0xFFFF, nominate: nominate)
        transactions[id] = Transaction(key: key, purpose: .check(nominate: nominate), bytes: bytes, transmissions: 1,
                                       maximumTransmissions: configuration.maximumTransmissions, rto: configuration.initialRTOMilliseconds,
                                       nextRetransmit: now.adding(milliseconds: configuration.initialRTOMilliseconds))
        counters.checksSent += 1
        lastCheckSentAt = now
        output.datagrams.append(.init(bytes: bytes, from: key.local, to: key.remote))
    }

    /// RFC 7675 consent request: like a check, never nominating, sent once (the interval retries).
    private func sendConsentCheck(_ key: PairKey, now: MonotonicTime, _ output: inout ICEOutput) {
        let id = newTransactionID()
        let bytes = bindingRequest(id, localPreference: 65_535, nominate: false)
        // Each check waits for its answer for the whole consent window, not one interval: an
        // overloaded peer (or our own busy host) that answers late still proves consent, and
        // only 30 s with no answer to any check ends it. About six are outstanding at once, up to
        // about 38 while checks are hurried.
        transactions[id] = Transaction(key: key, purpose: .consent, bytes: bytes, transmissions: 1, maximumTransmissions: 1,
                                       rto: configuration.consentTimeoutMilliseconds,
                                       nextRetransmit: now.adding(milliseconds: configuration.consentTimeoutMilliseconds))
        output.datagrams.append(.init(bytes: bytes, from: key.local, to: key.remote))
    }

    /// An authenticated Binding request as a check or consent check sends it (RFC 8445 §7.2.2):
    /// the priority it would have as a peer-reflexive candidate, our role and tie-breaker.
    private func bindingRequest(_ id: STUNTransactionID, localPreference: UInt32, nominate: Bool) -> [UInt8] {
        var attributes: [STUNAttribute] = [
            .username(configuration.remoteUfrag + ":" + configuration.localUfrag),
            .priority(ICEPriority.candidate(kind: .prflx, localPreference: localPreference)),
            configuration.role == .controlling ? .iceControlling(configuration.tieBreaker) : .iceControlled(configuration.tieBreaker),
        ]
        if nominate { attributes.append(.useCandidate) }
        return STUNMessage(method: STUNMethod.binding, class: .request, transactionID: id, attributes: attributes)
            .encoded(integrityKey: Array(configuration.remotePassword.utf8), fingerprint: true)
    }

    @discardableResult
    private func addPair(local: LocalCandidate, remote: RemoteCandidate) -> Int? {
        let key = PairKey(local: local.base, remote: remote.address)
        if let existing = pairs.firstIndex(where: { PairKey(local: $0.local, remote: $0.remote.address) == key }) { return existing }
        pairs.append(CandidatePair(local: local.base, localPriority: local.priority, remote: remote))
        let controlling = configuration.role == .controlling
        pairs.sort { a, b in
            let pa = controlling ? ICEPriority.pair(controlling: a.localPriority, controlled: a.remote.priority)
                : ICEPriority.pair(controlling: a.remote.priority, controlled: a.localPriority)
            let pb = controlling ? ICEPriority.pair(controlling: b.localPriority, controlled: b.remote.priority)
                : ICEPriority.pair(controlling: b.remote.priority, controlled: b.localPriority)
            return pa > pb
        }
        return pairs.firstIndex { PairKey(local: $0.local, remote: $0.remote.address) == key }
    }

    private func setState(_ newState: ICEState, _ output: inout ICEOutput) {
        guard state != newState else { return }
        state = newState
        output.events.append(.stateChanged(newState))
    }

    private func newTransactionID() -> STUNTransactionID { .random(random) }
}
