import Foundation

/// An IP address in network byte order, parsed from or printed as text.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt8, UInt8, UInt8, UInt8)
    case v6([UInt8])  // exactly 16 bytes

    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self = .v4(bytes[0], bytes[1], bytes[2], bytes[3])
        case 16: self = .v6(bytes)
        default: return nil
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .v4(let a, let b, let c, let d): [a, b, c, d]
        case .v6(let bytes): bytes
        }
    }

    public var isIPv4: Bool { if case .v4 = self { true } else { false } }

    /// Parses dotted IPv4 or RFC 4291 IPv6 text (with `::` compression; no zone ids).
    public init?(_ text: String) {
        if text.contains(":") {
            guard let bytes = IPAddress.parseIPv6(text) else { return nil }
            self = .v6(bytes)
        } else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var octets: [UInt8] = []
            for part in parts {
                guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
                octets.append(value)
            }
            self = .v4(octets[0], octets[1], octets[2], octets[3])
        }
    }

    private static func parseIPv6(_ text: String) -> [UInt8]? {
        guard text.count <= 45 else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all += Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    public var description: String {
        switch self {
        case .v4(let a, let b, let c, let d):
            return "\(a).\(b).\(c).\(d)"
        case .v6(let bytes):
            let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            // Compress the longest run (>= 2) of zero groups, as RFC 5952 says.
            var bestStart = -1, bestLength = 1, index = 0
            while index < 8 {
                if groups[index] == 0 {
                    var end = index
                    while end < 8 && groups[end] == 0 { end += 1 }
                    if end - index > bestLength { bestStart = index; bestLength = end - index }
                    index = end
                } else {
                    index += 1
                }
            }
            let hex = groups.map { String($0, radix: 16) }
            if bestStart < 0 { return hex.joined(separator: ":") }
            return hex[..<bestStart].joined(separator: ":") + "::" + hex[(bestStart + bestLength)...].joined(separator: ":")
        }
    }
}

/// An IP address and UDP port.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: UInt16

    public init(ip: IPAddress, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    public var description: String { ip.isIPv4 ? "\(ip):\(port)" : "[\(ip)]:\(port)" }
}
