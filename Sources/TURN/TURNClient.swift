import STUN
import WireCoding

/// A sans-IO TURN client (RFC 8656) for one allocation on one server: Allocate with long-term
/// credentials (401 challenge, 438 stale nonce), refreshes of the allocation, permissions and
/// channel bindings, Send/Data indications and ChannelData. Bytes from the server and time go in;
/// messages for the server, events and a deadline come out. The caller frames streams
/// (`TURNStreamFramer`) and owns the socket or connection.
public final class TURNClient {
    public enum State: Equatable, Sendable { case idle, allocating, allocated, failed, closed }

    public let configuration: TURNClientConfiguration
    public internal(set) var state: State = .idle
    public private(set) var relayed: TransportAddress?
    public private(set) var mapped: TransportAddress?
    public internal(set) var counters = TURNCounters()

    enum Purpose: Equatable {
        case allocate
        case refresh(lifetime: UInt32)
        case createPermission([IPAddress])
        case channelBind(peer: TransportAddress, channel: UInt16)

        var method: UInt16 {
            switch self {
            case .allocate: STUNMethod.allocate
            case .refresh: STUNMethod.refresh
            case .createPermission: STUNMethod.createPermission
            case .channelBind: STUNMethod.channelBind
            }
        }
    }

    struct Transaction {
        /// A 401 or 438 resends the same purpose with new credentials and a new transaction id.
        var purpose: Purpose
        var authenticated: Bool
        var bytes: [UInt8]
        var transmissions: Int
        var rto: Int64
        /// The next retransmission over UDP, the give-up time on a stream (or after the last one).
        var deadline: MonotonicTime
    }

    var transactions: [STUNTransactionID: Transaction] = [:]
    private var realm: String?
    private var nonce: String?
    private var key: [UInt8]?
    private var staleNonceRetries = 0
    private var allocationRefreshAt: MonotonicTime?
    var permissions: [IPAddress: Permission] = [:]
    var channelsByPeer: [TransportAddress: Channel] = [:]
    var peersByChannel: [UInt16: TransportAddress] = [:]
    var nextChannelNumber = ChannelData.channelNumbers.lowerBound
    let random: () -> UInt64

    public init(configuration: TURNClientConfiguration, random: @escaping () -> UInt64) {
        self.configuration = configuration
        self.random = random
    }

    // MARK: - Inputs

    /// Sends the first Allocate (without credentials: the server's 401 gives the realm and nonce).
    public func start(now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        guard state == .idle else { return output }
        state = .allocating
        request(.allocate, now: now, &output)
        return output
    }

    /// One message from the server: a STUN response or Data indication, or ChannelData.
    public func handle(_ message: [UInt8], now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        guard state == .allocating || state == .allocated, let first = message.first else { return output }
        if (64...79).contains(first) {
            receiveChannelData(message, &output)
            return output
        }
        guard let stun = try? STUNMessage(parsing: message) else {
            counters.dropped += 1
            return output
        }
        switch stun.messageClass {
        case .indication where stun.method == STUNMethod.data: receiveDataIndication(stun, &output)
        case .successResponse, .errorResponse: handleResponse(stun, now: now, &output)
        default: counters.dropped += 1
        }
        return output
    }

    public var nextTimeout: MonotonicTime? {
        guard state == .allocating || state == .allocated else { return nil }
        var deadlines = transactions.values.map(\.deadline)
        if let allocationRefreshAt { deadlines.append(allocationRefreshAt) }
        deadlines += permissions.values.compactMap(\.refreshAt)
        deadlines += channelsByPeer.values.compactMap(\.refreshAt)
        return deadlines.min()
    }

    public func handleTimeout(now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        guard state == .allocating || state == .allocated else { return output }
        expireTransactions(now: now, &output)
        guard state == .allocated else { return output }
        if let refreshAt = allocationRefreshAt, now >= refreshAt {
            allocationRefreshAt = nil
            counters.allocationRefreshes += 1
            request(.refresh(lifetime: configuration.requestedLifetimeSeconds), now: now, &output)
        }
        refreshPeers(now: now, &output)
        return output
    }

    /// Deletes the allocation (Refresh with LIFETIME 0, not waited for) and stops.
    public func close(now: MonotonicTime) -> TURNOutput {
        var output = TURNOutput()
        if state == .allocated {
            let message = STUNMessage(method: STUNMethod.refresh, class: .request, transactionID: newTransactionID(),
                                      attributes: [.lifetime(seconds: 0)] + credentialAttributes())
            output.toServer.append(message.encoded(integrityKey: key, fingerprint: true))
        }
        stop(.closed)
        return output
    }

    /// The connection to the server (TCP or TLS) closed or could not be made.
    public func connectionLost(_ reason: String) -> TURNOutput {
        var output = TURNOutput()
        guard state == .allocating || state == .allocated else { return output }
        fail(state == .allocating ? .unreachable(reason) : .allocationLost(reason), &output)
        return output
    }

    // MARK: - Requests and responses

    func request(_ purpose: Purpose, now: MonotonicTime, _ output: inout TURNOutput) {
        let id = newTransactionID()
        let authenticated = key != nil
        let message = STUNMessage(method: purpose.method, class: .request, transactionID: id,
                                  attributes: attributes(purpose, transactionID: id) + [.software(configuration.software)] + credentialAttributes())
        let bytes = message.encoded(integrityKey: key, fingerprint: true)
        let wait = configuration.transport.isStream ? configuration.streamTransactionTimeoutMilliseconds : configuration.initialRTOMilliseconds
        transactions[id] = Transaction(purpose: purpose, authenticated: authenticated, bytes: bytes,
                                       transmissions: 1, rto: configuration.initialRTOMilliseconds, deadline: now.adding(milliseconds: wait))
        counters.requestsSent += 1
        output.toServer.append(bytes)
    }

    /// Peer addresses are XORed with the transaction id (for IPv6), so each attempt encodes anew.
    private func attributes(_ purpose: Purpose, transactionID id: STUNTransactionID) -> [STUNAttribute] {
        switch purpose {
        case .allocate: [.requestedTransportUDP, .lifetime(seconds: configuration.requestedLifetimeSeconds)]
        case .refresh(let lifetime): [.lifetime(seconds: lifetime)]
        // A permission is for an IP address; the port is ignored (RFC 8656 §9).
        case .createPermission(let ips): ips.map { .xorPeerAddress(TransportAddress(ip: $0, port: 0), transactionID: id) }
        case .channelBind(let peer, let channel): [.channelNumber(channel), .xorPeerAddress(peer, transactionID: id)]
        }
    }

    private func credentialAttributes() -> [STUNAttribute] {
        guard key != nil, let realm, let nonce else { return [] }
        return [.username(configuration.credentials.username), .realm(realm), .nonce(nonce)]
    }

    private func handleResponse(_ message: STUNMessage, now: MonotonicTime, _ output: inout TURNOutput) {
        guard let transaction = transactions[message.transactionID], transaction.purpose.method == message.method else {
            counters.dropped += 1
            return
        }
        if message.messageClass == .successResponse {
            // Answers to authenticated requests carry MESSAGE-INTEGRITY with the same key.
            if let key, transaction.authenticated, !message.hasValidMessageIntegrity(key: key) {
                counters.dropped += 1
                return
            }
            transactions[message.transactionID] = nil
            staleNonceRetries = 0
            succeeded(transaction.purpose, message, now: now, &output)
            return
        }
        transactions[message.transactionID] = nil
        let (code, reason) = message.errorCode ?? (0, "no ERROR-CODE")
        switch code {
        case 401 where !transaction.authenticated:
            guard let realm = message.realm, let nonce = message.nonce else {
                fail(.protocolViolation("401 without REALM and NONCE"), &output)
                return
            }
            self.realm = realm
            self.nonce = nonce
            key = STUNIntegrity.longTermKey(username: configuration.credentials.username, realm: realm,
                                            password: configuration.credentials.password)
            request(transaction.purpose, now: now, &output)
        case 401, 441:
            // The credentials were sent and refused: retrying cannot help.
            fail(.unauthorized("\(code) \(reason)"), &output)
        case 438:
            counters.staleNonces += 1
            staleNonceRetries += 1
            guard staleNonceRetries <= configuration.maximumStaleNonceRetries, let nonce = message.nonce else {
                refused(transaction.purpose, code: code, reason: reason, &output)
                return
            }
            self.nonce = nonce
            if let realm = message.realm { self.realm = realm }
            request(transaction.purpose, now: now, &output)
        default:
            refused(transaction.purpose, code: code, reason: reason, &output)
        }
    }

    private func succeeded(_ purpose: Purpose, _ message: STUNMessage, now: MonotonicTime, _ output: inout TURNOutput) {
        switch purpose {
        case .allocate:
            guard state == .allocating else { return }
            guard let relayed = message.xorRelayedAddress, let lifetime = message.lifetime, lifetime > 0 else {
                fail(.protocolViolation("Allocate success without XOR-RELAYED-ADDRESS and LIFETIME"), &output)
                return
            }
            self.relayed = relayed
            mapped = message.xorMappedAddress
            state = .allocated
            scheduleAllocationRefresh(lifetime: lifetime, now: now)
            output.events.append(.allocated(relayed: relayed, mapped: mapped, lifetimeSeconds: lifetime))
        case .refresh:
            guard let lifetime = message.lifetime, lifetime > 0 else {
                fail(.allocationLost("Refresh success without a LIFETIME"), &output)
                return
            }
            scheduleAllocationRefresh(lifetime: lifetime, now: now)
        case .createPermission(let ips):
            permissionsInstalled(ips, now: now, &output)
        case .channelBind(let peer, let channel):
            channelBound(peer: peer, channel: channel, now: now, &output)
        }
    }

    private func refused(_ purpose: Purpose, code: Int, reason: String, _ output: inout TURNOutput) {
        switch purpose {
        case .allocate: fail(.rejected(code: code, reason: reason), &output)
        case .refresh: fail(.allocationLost("refresh refused: \(code) \(reason)"), &output)
        case .createPermission(let ips): permissionsFailed(ips)
        case .channelBind(let peer, let channel): channelFailed(peer: peer, channel: channel)
        }
    }

    private func scheduleAllocationRefresh(lifetime: UInt32, now: MonotonicTime) {
        let lifetimeMilliseconds = Int64(lifetime) * 1_000
        allocationRefreshAt = now.adding(milliseconds: lifetimeMilliseconds - configuration.refreshLead(lifetimeSeconds: Int64(lifetime)))
    }

    private func expireTransactions(now: MonotonicTime, _ output: inout TURNOutput) {
        for (id, transaction) in transactions where transaction.deadline <= now {
            if !configuration.transport.isStream && transaction.transmissions < configuration.maximumTransmissions {
                var updated = transaction
                updated.transmissions += 1
                updated.rto *= 2
                // The last transmission waits 16 RTO (Rm) before the transaction fails.
                let wait = updated.transmissions == configuration.maximumTransmissions ? configuration.initialRTOMilliseconds * 16 : updated.rto
                updated.deadline = now.adding(milliseconds: wait)
                transactions[id] = updated
                counters.retransmissions += 1
                output.toServer.append(transaction.bytes)
                continue
            }
            transactions[id] = nil
            switch transaction.purpose {
            case .allocate: fail(.unreachable("no answer to Allocate from \(configuration.server)"), &output)
            case .refresh: fail(.allocationLost("no answer to Refresh"), &output)
            case .createPermission(let ips): permissionsFailed(ips)
            case .channelBind(let peer, let channel): channelFailed(peer: peer, channel: channel)
            }
            guard state == .allocating || state == .allocated else { return }
        }
    }

    func fail(_ failure: TURNFailure, _ output: inout TURNOutput) {
        guard state == .allocating || state == .allocated else { return }
        stop(.failed)
        output.events.append(.failed(failure))
    }

    private func stop(_ final: State) {
        state = final
        transactions.removeAll()
        permissions.removeAll()
        channelsByPeer.removeAll()
        peersByChannel.removeAll()
        allocationRefreshAt = nil
    }

    var isStream: Bool { configuration.transport.isStream }

    func newTransactionID() -> STUNTransactionID { .random(random) }
}
