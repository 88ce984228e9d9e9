import STUN
import WireCoding

/// How recbot reaches a TURN server. The relayed transport toward peers is UDP in every case
/// (RFC 8656); TCP and TLS only carry recbot's side, framed as `TURNStreamFramer` describes.
public enum TURNTransport: String, Sendable, CaseIterable {
    case udp, tcp, tls

    public var isStream: Bool { self != .udp }
}

/// Long-term credentials (RFC 8489 §9.2). Neither description shows the password, so a
/// configuration printed whole (by reflection) does not either.
public struct TURNCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    public var description: String { "\(username):<password>" }
    public var debugDescription: String { description }
}

public struct TURNClientConfiguration: Sendable, Equatable {
    public var server: TransportAddress
    public var transport: TURNTransport
    public var credentials: TURNCredentials
    /// Asked for in Allocate and every Refresh; the server may grant less.
    public var requestedLifetimeSeconds: UInt32 = 600
    /// Fixed by RFC 8656 (300 s and 600 s) and never signalled; settable so tests can run a
    /// server configured with shorter ones (coturn --permission-lifetime, --channel-lifetime).
    public var permissionLifetimeSeconds: Int64 = 300
    public var channelLifetimeSeconds: Int64 = 600
    /// Refreshes go out this long before expiry (at most half the lifetime).
    public var refreshMarginSeconds: Int64 = 60
    /// Over UDP: RFC 8489's retransmissions (500 ms doubling, 7 transmissions, about 39.5 s).
    public var initialRTOMilliseconds: Int64 = 500
    public var maximumTransmissions = 7
    /// Over TCP and TLS requests are never retransmitted (RFC 8489 §6.2.2), only timed out.
    public var streamTransactionTimeoutMilliseconds: Int64 = 39_500
    /// 438 Stale Nonce answers in a row before giving up.
    public var maximumStaleNonceRetries = 3
    /// Peers (permissions, channels) one allocation keeps: ICE talks to a few remote candidates.
    public var maximumPeers = 64
    /// Datagrams held per peer while its permission is being created.
    public var maximumQueuedPerPeer = 8
    /// SOFTWARE in requests, so a server operator can tell who is asking.
    public var software = "recbot"

    public init(server: TransportAddress, transport: TURNTransport, credentials: TURNCredentials) {
        self.server = server
        self.transport = transport
        self.credentials = credentials
    }

    func refreshLead(lifetimeSeconds: Int64) -> Int64 {
        min(refreshMarginSeconds, lifetimeSeconds / 2) * 1_000
    }
}

public enum TURNFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// No answer to Allocate, or the connection to the server could not be made.
    case unreachable(String)
    /// The server refused the credentials (401 after they were sent, or 441).
    case unauthorized(String)
    /// Allocate answered with another error.
    case rejected(code: Int, reason: String)
    /// The allocation ended: a refresh failed or went unanswered, or the connection closed.
    case allocationLost(String)
    /// The server broke the protocol (e.g. a success response without a relayed address).
    case protocolViolation(String)

    public var isAuthentication: Bool { if case .unauthorized = self { true } else { false } }

    public var description: String {
        switch self {
        case .unreachable(let reason): "TURN server unreachable: \(reason)"
        case .unauthorized(let reason): "TURN server refused the credentials: \(reason)"
        case .rejected(let code, let reason): "TURN allocation refused: \(code) \(reason)"
        case .allocationLost(let reason): "TURN allocation lost: \(reason)"
        case .protocolViolation(let reason): "TURN server broke the protocol: \(reason)"
        }
    }
}

public enum TURNEvent: Equatable, Sendable {
    /// The relayed address to offer as a relay candidate; `mapped` is ours as the server sees it.
    case allocated(relayed: TransportAddress, mapped: TransportAddress?, lifetimeSeconds: UInt32)
    /// A datagram a peer sent to the relayed address.
    case data([UInt8], from: TransportAddress)
    case channelBound(peer: TransportAddress, channel: UInt16)
    case failed(TURNFailure)
}

public struct TURNOutput: Equatable, Sendable {
    /// Messages for the server: each one datagram over UDP, written back to back on a stream.
    public var toServer: [[UInt8]] = []
    public var events: [TURNEvent] = []

    public init() {}
}

public struct TURNCounters: Equatable, Sendable {
    public var requestsSent = 0
    public var retransmissions = 0
    public var staleNonces = 0
    public var allocationRefreshes = 0
    public var permissionRequests = 0
    public var channelBinds = 0
    public var sendIndications = 0
    public var channelDataSent = 0
    public var dataIndicationsReceived = 0
    public var channelDataReceived = 0
    /// Malformed frames, unknown transactions or channels, failed integrity, data from peers without a permission.
    public var dropped = 0
    /// Datagrams to a peer that found no room (queue full, too many peers, no allocation).
    public var sendsRefused = 0

    public init() {}
}
