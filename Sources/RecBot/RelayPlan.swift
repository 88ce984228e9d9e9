import Foundation
import Logging
import NIOCore
import NIOPosix
import PeerConnection
import SoraSignalingCore
import STUN
import TURN

/// How the join reaches relays: which ICE servers (the offer's, or an override), whether only
/// relayed candidates may be used, and which CA verifies `turns:` servers.
public struct RelaySettings: Sendable, Equatable {
    /// Replaces the offer's `config.iceServers` when set.
    public var iceServers: [ICEServer]?
    /// Overrides the offer's `config.iceTransportPolicy` when set.
    public var relayOnly: Bool?
    /// PEM bundle for `turns:` certificates; the system's roots when nil.
    public var caFile: String?

    public init(iceServers: [ICEServer]? = nil, relayOnly: Bool? = nil, caFile: String? = nil) {
        self.iceServers = iceServers
        self.relayOnly = relayOnly
        self.caFile = caFile
    }
}

/// The TURN servers of one session, resolved, and the policy: built from the offer and the
/// settings before the transport exists. Credentials stay in the RelayServer values; names
/// for logs never carry them.
struct RelayPlan {
    var servers: [RelayServer] = []
    var relayOnly = false
    /// Why some ICE servers were not used (no credentials, bad URL, no address): logged once.
    var skipped: [String] = []

    /// At most this many allocations per session: Sora usually gives one server with UDP, TCP and TLS.
    static let maximumServers = 8

    static func make(offer: OfferMessage, settings: RelaySettings, logger: Logger) async -> RelayPlan {
        var plan = RelayPlan()
        plan.relayOnly = settings.relayOnly ?? (offer.iceTransportPolicy?.lowercased() == "relay")
        let servers = settings.iceServers ?? offer.iceServers
        for server in servers {
            for text in server.urls where text.lowercased().hasPrefix("turn") {
                guard plan.servers.count < maximumServers else {
                    plan.skipped.append("\(text): more than \(maximumServers) TURN URLs")
                    continue
                }
                guard let username = server.username, let password = server.credential else {
                    plan.skipped.append("\(text): no username and credential")
                    continue
                }
                let url: TURNServerURL
                do { url = try TURNServerURL(parsing: text) } catch {
                    plan.skipped.append("\(error)")
                    continue
                }
                guard let ip = await resolve(url.host) else {
                    plan.skipped.append("\(url): cannot resolve \(url.host)")
                    continue
                }
                let client = TURNClientConfiguration(server: TransportAddress(ip: ip, port: url.port), transport: url.transport,
                                                     credentials: TURNCredentials(username: username, password: password))
                plan.servers.append(RelayServer(id: plan.servers.count + 1, client: client, name: url.description,
                                                tlsServerName: IPAddress(url.host) == nil ? url.host : nil))
            }
        }
        return plan
    }

    /// A literal address, or the first IPv4 (then IPv6) address of a name. getaddrinfo blocks,
    /// so it runs on NIO's thread pool, never on an event loop.
    static func resolve(_ host: String) async -> IPAddress? {
        if let literal = IPAddress(host) { return literal }
        let addresses = try? await NIOThreadPool.singleton.runIfActive { () -> [IPAddress] in
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
            defer { freeaddrinfo(first) }
            var found: [IPAddress] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                if let address = entry.pointee.ai_addr {
                    switch Int32(address.pointee.sa_family) {
                    case AF_INET:
                        let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee) }
                        if let text = v4.ipAddress, let ip = IPAddress(text) { found.append(ip) }
                    case AF_INET6:
                        let v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee) }
                        if let text = v6.ipAddress, let ip = IPAddress(text) { found.append(ip) }
                    default: break
                    }
                }
                cursor = entry.pointee.ai_next
            }
            return found
        }
        return addresses?.first(where: \.isIPv4) ?? addresses?.first
    }
}
