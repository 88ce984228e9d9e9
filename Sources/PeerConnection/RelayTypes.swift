import STUN
import TURN

/// A TURN server the transport allocates a relayed candidate on.
public struct RelayServer: Sendable, Equatable {
    /// Names the stream connection (TCP/TLS) between the core and its socket driver.
    public var id: Int
    public var client: TURNClientConfiguration
    /// For logs: the URL without credentials.
    public var name: String
    /// TLS: the name to verify the server's certificate against (and send as SNI).
    public var tlsServerName: String?

    public init(id: Int, client: TURNClientConfiguration, name: String, tlsServerName: String? = nil) {
        self.id = id
        self.client = client
        self.name = name
        self.tlsServerName = tlsServerName
    }

    /// RFC 8445 type preference among relayed candidates: UDP 2, TCP 1, TLS 0.
    var typePreference: UInt32 {
        switch client.transport {
        case .udp: 2
        case .tcp: 1
        case .tls: 0
        }
    }
}

public enum RelayEvent: Equatable, Sendable {
    case allocated(server: String, relayed: TransportAddress, mapped: TransportAddress?)
    case channelBound(server: String, peer: TransportAddress)
    case failed(server: String, TURNFailure)
}

/// Bytes for the stream connection to a TURN server (`RelayServer.id`).
public struct StreamWrite: Equatable, Sendable {
    public var link: Int
    public var bytes: [UInt8]
}

/// One TURN server's client, with what the core needs to route to and from it.
final class RelayEndpoint {
    let server: RelayServer
    let client: TURNClient
    var framer = TURNStreamFramer()
    /// UDP: the host socket that talks to the server.
    var hostSocket: TransportAddress?
    var relayed: TransportAddress?

    init(server: RelayServer, random: @escaping () -> UInt64) {
        self.server = server
        client = TURNClient(configuration: server.client, random: random)
    }
}
