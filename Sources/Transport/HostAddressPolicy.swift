import NIOCore
import NIOPosix
import STUN

/// An IP prefix such as `127.0.0.0/8` or `fd00::/8`.
public struct IPPrefix: Equatable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var length: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }  // "" and "/" name nothing
        let maximum = address.isIPv4 ? 32 : 128
        let length = parts.count == 2 ? Int(parts[1]) : maximum
        guard let length, (0...maximum).contains(length) else { return nil }
        self.address = address
        self.length = length
    }

    public func contains(_ ip: IPAddress) -> Bool {
        guard ip.isIPv4 == address.isIPv4 else { return false }
        let a = address.bytes, b = ip.bytes
        var remaining = length
        for index in a.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a[index] & mask != b[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(address)/\(length)" }
}

/// Which local addresses get host candidates. Without an allow list: every up interface's
/// IPv4 and global IPv6 addresses except loopback and link-local. Deny wins over allow.
public struct HostAddressPolicy: Sendable {
    public var allow: [IPPrefix]
    public var deny: [IPPrefix]
    public var ipv4: Bool
    public var ipv6: Bool

    public init(allow: [IPPrefix] = [], deny: [IPPrefix] = [], ipv4: Bool = true, ipv6: Bool = true) {
        self.allow = allow
        self.deny = deny
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    /// Loopback only: what tests use.
    public static let loopback = HostAddressPolicy(allow: [IPPrefix("127.0.0.1/32")!], ipv6: false)

    public func permits(_ ip: IPAddress) -> Bool {
        if ip.isIPv4 ? !ipv4 : !ipv6 { return false }
        if deny.contains(where: { $0.contains(ip) }) { return false }
        if !allow.isEmpty { return allow.contains { $0.contains(ip) } }
        let loopback = IPPrefix("127.0.0.0/8")!.contains(ip) || ip == IPAddress("::1")!
        let linkLocal = IPPrefix("169.254.0.0/16")!.contains(ip) || IPPrefix("fe80::/10")!.contains(ip)
        return !loopback && !linkLocal
    }

    /// The local addresses to bind, from the system's interfaces (deduplicated, IPv4 first).
    public func hostAddresses() throws -> [IPAddress] {
        var result: [IPAddress] = []
        var candidates: [IPAddress] = []
        for device in try System.enumerateDevices() {
            guard let address = device.address, let ip = IPAddress(socketAddress: address) else { continue }
            candidates.append(ip)
        }
        // Allow-listed addresses that are not interface addresses (e.g. 127.0.0.1 on some setups) still count.
        for prefix in allow where prefix.length == (prefix.address.isIPv4 ? 32 : 128) { candidates.append(prefix.address) }
        for ip in candidates.sorted(by: { $0.isIPv4 && !$1.isIPv4 }) where permits(ip) && !result.contains(ip) {
            result.append(ip)
        }
        return result
    }
}

extension IPAddress {
    public init?(socketAddress: SocketAddress) {
        guard let text = socketAddress.ipAddress else { return nil }
        self.init(text.split(separator: "%").first.map(String.init) ?? text)
    }
}

extension TransportAddress {
    /// Straight from the sockaddr bytes: this runs for every datagram, and going through the
    /// address's text (inet_ntop, then parsing it back) cost about a sixth of the receive path.
    public init?(socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let address):
            let raw = address.address
            let value = UInt32(bigEndian: raw.sin_addr.s_addr)
            self.init(ip: .v4(UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
                              UInt8(truncatingIfNeeded: value)),
                      port: UInt16(bigEndian: raw.sin_port))
        case .v6(let address):
            var raw = address.address
            let bytes = withUnsafeBytes(of: &raw.sin6_addr) { Array($0) }
            self.init(ip: .v6(bytes), port: UInt16(bigEndian: raw.sin6_port))
        default:
            return nil
        }
    }

    func socketAddress() throws -> SocketAddress {
        try SocketAddress(ipAddress: ip.description, port: Int(port))
    }
}
