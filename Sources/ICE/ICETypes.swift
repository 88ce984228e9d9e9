import STUN
import WireCoding

public enum ICERole: Equatable, Sendable { case controlling, controlled }

public enum ICEState: Equatable, Sendable {
    case new, checking, connected, failed, closed
}

public struct ICEConfiguration: Sendable {
    public var localUfrag: String
    public var localPassword: String
    public var remoteUfrag: String
    public var remotePassword: String
    /// Controlled, unless the remote is ICE-lite (then we must control; RFC 8445 §6.1.1).
    public var role: ICERole
    public var tieBreaker: UInt64
    /// Pacing of ordinary checks (RFC 8445 Ta).
    public var checkIntervalMilliseconds: Int64 = 50
    /// First retransmission timeout of a check; doubles per retransmission.
    public var initialRTOMilliseconds: Int64 = 500
    /// Transmissions per check before it fails (RFC 8489 Rc).
    public var maximumTransmissions = 7
    /// Give up when nothing connected within this long of `start`.
    public var connectTimeoutMilliseconds: Int64 = 30_000
    /// RFC 7675: consent checks every 4-6 s; consent lost after 30 s without a response.
    public var consentIntervalMilliseconds: Int64 = 5_000
    public var consentTimeoutMilliseconds: Int64 = 30_000
    /// After a consent check that went unanswered for its whole interval, the next ones go
    /// every 0.8-1.2 s until one is answered (as libwebrtc pings a connection that missed
    /// answers): under heavy loss, six checks in the window can all be lost; about 25 rarely are.
    public var hurriedConsentIntervalMilliseconds: Int64 = 1_000
    public var maximumRemoteCandidates = 64
    /// `iceTransportPolicy: relay`: only relayed local candidates are paired, host sockets
    /// answer nothing (they still reach TURN servers), and no server-reflexive gathering.
    public var relayOnly = false

    public init(localUfrag: String, localPassword: String, remoteUfrag: String, remotePassword: String, role: ICERole, tieBreaker: UInt64) {
        self.localUfrag = localUfrag
        self.localPassword = localPassword
        self.remoteUfrag = remoteUfrag
        self.remotePassword = remotePassword
        self.role = role
        self.tieBreaker = tieBreaker
    }
}

/// A local candidate: a host address we own (the base), a server-reflexive address of one, or
/// an address a TURN server relays for us (its own base: checks leave through the relay).
public struct LocalCandidate: Equatable, Hashable, Sendable {
    public var address: TransportAddress
    public var base: TransportAddress
    public var kind: ICECandidate.Kind
    public var priority: UInt32
    public var foundation: String
    /// raddr/rport in the SDP: the base for server-reflexive, the mapped address for relayed.
    public var related: TransportAddress?

    public var sdp: ICECandidate {
        let related = kind == .host ? nil : (self.related ?? base)
        return ICECandidate(foundation: foundation, priority: priority, address: address.ip.description, port: address.port, kind: kind,
                            relatedAddress: related?.ip.description, relatedPort: related?.port)
    }

    /// Host and relayed candidates own a socket (or an allocation) that checks leave from.
    var isBase: Bool { kind == .host || kind == .relay }
}

public struct RemoteCandidate: Equatable, Hashable, Sendable {
    public var address: TransportAddress
    public var priority: UInt32
    public var kind: ICECandidate.Kind
}

public struct CandidatePair: Equatable, Sendable {
    public enum State: Equatable, Sendable { case frozen, waiting, inProgress, succeeded, failed }

    public var local: TransportAddress  // always a base: checks are sent from the host socket
    public var localPriority: UInt32
    public var remote: RemoteCandidate
    public var state: State = .waiting
    public var nominated = false
    /// The controlling peer asked to nominate this pair before our check succeeded.
    public var nominateOnSuccess = false
}

public enum ICEEvent: Equatable, Sendable {
    case stateChanged(ICEState)
    /// The pair media flows on: send DTLS/RTCP from `local` to `remote`.
    case selectedPair(local: TransportAddress, remote: TransportAddress)
    /// A candidate to trickle to the peer (e.g. server-reflexive, found after the answer).
    case localCandidate(ICECandidate)
    /// RFC 7675: no consent for 30 s; the connection must stop sending.
    case consentLost
    case roleChanged(ICERole)
}

public struct ICEOutput: Equatable, Sendable {
    public struct Datagram: Equatable, Sendable {
        public var bytes: [UInt8]
        public var from: TransportAddress
        public var to: TransportAddress

        public init(bytes: [UInt8], from: TransportAddress, to: TransportAddress) {
            self.bytes = bytes
            self.from = from
            self.to = to
        }
    }

    public var datagrams: [Datagram] = []
    public var events: [ICEEvent] = []
}

public struct ICECounters: Equatable, Sendable {
    public var requestsReceived = 0
    public var responsesReceived = 0
    public var checksSent = 0
    public var retransmissions = 0
    /// STUN that failed parsing, integrity or fingerprint, or had an unknown transaction.
    public var dropped = 0
    public var roleConflicts = 0
    public var ignoredRemoteCandidates = 0
    /// Checks that reached a host socket while only relayed candidates may be used.
    public var droppedOutsidePolicy = 0
}

/// Priorities (RFC 8445 §5.1.2, §6.1.2.3).
public enum ICEPriority {
    public static func typePreference(_ kind: ICECandidate.Kind) -> UInt32 {
        switch kind {
        case .host: 126
        case .prflx: 110
        case .srflx: 100
        case .relay: 0
        }
    }

    /// Component 1 only (rtcp-mux, BUNDLE).
    public static func candidate(kind: ICECandidate.Kind, localPreference: UInt32) -> UInt32 {
        typePreference(kind) << 24 | (localPreference & 0xFFFF) << 8 | (256 - 1)
    }

    /// Relayed candidates rank below everything else, and among them UDP to the server above
    /// TCP above TLS (libwebrtc ranks them the same way): `typePreference` 2, 1 or 0.
    public static func relayCandidate(typePreference: UInt32, localPreference: UInt32) -> UInt32 {
        (typePreference & 0xFF) << 24 | (localPreference & 0xFFFF) << 8 | (256 - 1)
    }

    public static func pair(controlling g: UInt32, controlled d: UInt32) -> UInt64 {
        (UInt64(1) << 32) * UInt64(min(g, d)) + 2 * UInt64(max(g, d)) + (g > d ? 1 : 0)
    }
}
