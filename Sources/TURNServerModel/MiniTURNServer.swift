import STUN
import TURN
import WireCoding

/// A small TURN server as a sans-IO value, for tests of the client and of the transport over a
/// relay: long-term credentials with a 401 challenge, optional 438s, Allocate, Refresh,
/// CreatePermission, ChannelBind, Send indications and ChannelData. It checks what it is sent as
/// strictly as coturn does (integrity, nonce, permissions), so a client bug shows as a refusal.
public final class MiniTURNServer {
    public var realm = "recbot.test"
    public var nonce = "nonce-1"
    public var users: [String: String]
    public let relayed: TransportAddress
    public let mapped: TransportAddress
    public var grantedLifetime: UInt32 = 600
    public var padsChannelData: Bool
    /// Answer the next this many authenticated requests with 438 and a fresh nonce.
    public var staleNoncesToSend = 0
    /// Answer Refresh requests (other than deletes) with this error code.
    public var refreshError: Int?
    public var silent = false

    public private(set) var requests: [STUNMessage] = []
    public private(set) var permissions: Set<IPAddress> = []
    public private(set) var channels: [UInt16: TransportAddress] = [:]
    /// What the client asked to send to peers, in order.
    public private(set) var relayedToPeers: [(peer: TransportAddress, payload: [UInt8], viaChannel: Bool)] = []
    public private(set) var deleted = false
    public private(set) var refusedData = 0

    public init(users: [String: String], relayed: TransportAddress, mapped: TransportAddress, padsChannelData: Bool = false) {
        self.users = users
        self.relayed = relayed
        self.mapped = mapped
        self.padsChannelData = padsChannelData
    }

    /// One message from the client; returns the server's answers.
    public func handle(_ bytes: [UInt8]) -> [[UInt8]] {
        if let first = bytes.first, (64...79).contains(first) {
            if let (channel, payload) = try? ChannelData.parse(bytes), let peer = channels[channel] {
                relayedToPeers.append((peer, Array(payload), true))
            } else {
                refusedData += 1
            }
            return []
        }
        guard !silent, let message = try? STUNMessage(parsing: bytes) else { return [] }
        if message.messageClass == .indication && message.method == STUNMethod.send {
            if let peer = message.xorPeerAddress, let data = message.data, permissions.contains(peer.ip) {
                relayedToPeers.append((peer, data, false))
            } else {
                refusedData += 1
            }
            return []
        }
        guard message.messageClass == .request else { return [] }
        requests.append(message)
        guard let username = message.username, let password = users[username], let requestRealm = message.realm,
              message.nonce != nil else {
            return [error(message, 401, "Unauthorized", challenge: true)]
        }
        let key = STUNIntegrity.longTermKey(username: username, realm: requestRealm, password: password)
        guard requestRealm == realm, message.hasValidMessageIntegrity(key: key) else {
            return [error(message, 401, "Unauthorized", challenge: true)]
        }
        if message.nonce != nonce || staleNoncesToSend > 0 {
            if staleNoncesToSend > 0 {
                staleNoncesToSend -= 1
                nonce += "x"
            }
            return [error(message, 438, "Stale Nonce", challenge: true)]
        }
        return [answer(message, key: key)]
    }

    /// What a peer sending `payload` to the relayed address makes the server send the client.
    public func fromPeer(_ payload: [UInt8], peer: TransportAddress) -> [UInt8]? {
        guard permissions.contains(peer.ip) else { return nil }
        if let channel = channels.first(where: { $0.value == peer })?.key {
            return ChannelData.encode(channel: channel, payload: payload, padded: padsChannelData)
        }
        let id = STUNTransactionID(bytes: Array(repeating: 7, count: 12))!
        return STUNMessage(method: STUNMethod.data, class: .indication, transactionID: id,
                           attributes: [.xorPeerAddress(peer, transactionID: id), .data(payload)]).encoded()
    }

    private func answer(_ message: STUNMessage, key: [UInt8]) -> [UInt8] {
        let id = message.transactionID
        var attributes: [STUNAttribute] = []
        switch message.method {
        case STUNMethod.allocate:
            attributes = [.xorRelayedAddress(relayed, transactionID: id), .xorMappedAddress(mapped, transactionID: id),
                          .lifetime(seconds: min(grantedLifetime, message.lifetime ?? 600))]
        case STUNMethod.refresh:
            if message.lifetime == 0 {
                deleted = true
                attributes = [.lifetime(seconds: 0)]
            } else if let refreshError {
                return error(message, refreshError, "Refused", challenge: false)
            } else {
                attributes = [.lifetime(seconds: min(grantedLifetime, message.lifetime ?? 600))]
            }
        case STUNMethod.createPermission:
            for attribute in message.attributes where attribute.type == STUNAttributeType.xorPeerAddress {
                var single = message
                single.attributes = [attribute]
                if let peer = single.xorPeerAddress { permissions.insert(peer.ip) }
            }
        case STUNMethod.channelBind:
            guard let channel = message.channelNumber, let peer = message.xorPeerAddress else {
                return error(message, 400, "Bad Request", challenge: false)
            }
            channels[channel] = peer
            permissions.insert(peer.ip)
        default:
            return error(message, 400, "Bad Request", challenge: false)
        }
        return STUNMessage(method: message.method, class: .successResponse, transactionID: id, attributes: attributes)
            .encoded(integrityKey: key, fingerprint: true)
    }

    private func error(_ message: STUNMessage, _ code: Int, _ reason: String, challenge: Bool) -> [UInt8] {
        var attributes: [STUNAttribute] = [.errorCode(code, reason: reason)]
        if challenge { attributes += [.realm(realm), .nonce(nonce)] }
        return STUNMessage(method: message.method, class: .errorResponse, transactionID: message.transactionID, attributes: attributes)
            .encoded(fingerprint: true)
    }
}
