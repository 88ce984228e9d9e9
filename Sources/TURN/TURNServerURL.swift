/// A `turn:` or `turns:` URI (RFC 7065): `turn:host[:port][?transport=udp|tcp]`,
/// `turns:host[:port][?transport=tcp]`. The host may be a name, IPv4, or bracketed IPv6.
public struct TURNServerURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var transport: TURNTransport

    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case notTURN(String)
        case malformed(String, reason: String)

        public var description: String {
            switch self {
            case .notTURN(let text): "\(text.prefix(100)) is not a turn: or turns: URL"
            case .malformed(let text, let reason): "TURN URL \(text.prefix(100)): \(reason)"
            }
        }
    }

    public init(host: String, port: UInt16, transport: TURNTransport) {
        self.host = host
        self.port = port
        self.transport = transport
    }

    public init(parsing text: String) throws(ParseError) {
        guard text.utf8.count <= 512 else { throw .malformed(text, reason: "longer than 512 bytes") }
        let lower = text.lowercased()
        let secure: Bool
        if lower.hasPrefix("turns:") { secure = true } else if lower.hasPrefix("turn:") { secure = false } else { throw .notTURN(text) }
        let rest = text.dropFirst(secure ? 6 : 5)
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let authority = String(parts[0])
        var requested: String?
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let keyValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard keyValue.count == 2, keyValue[0].lowercased() == "transport" else {
                    throw .malformed(text, reason: "unknown query \"\(pair.prefix(40))\"")
                }
                requested = keyValue[1].lowercased()
            }
        }
        let (host, portText) = try Self.splitAuthority(authority, text: text)
        guard !host.isEmpty else { throw .malformed(text, reason: "no host") }
        guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:_".contains($0)) }) else {
            throw .malformed(text, reason: "the host has characters a host name cannot")
        }
        let port: UInt16
        if let portText {
            guard let value = UInt16(portText), value > 0 else { throw .malformed(text, reason: "bad port \"\(portText.prefix(10))\"") }
            port = value
        } else {
            port = secure ? 5349 : 3478
        }
        switch (secure, requested) {
        case (false, nil), (false, "udp"): transport = .udp
        case (false, "tcp"): transport = .tcp
        case (true, nil), (true, "tcp"): transport = .tls
        default: throw .malformed(text, reason: "transport \(requested ?? "") is not supported with \(secure ? "turns" : "turn")")
        }
        self.host = host
        self.port = port
    }

    private static func splitAuthority(_ authority: String, text: String) throws(ParseError) -> (String, String?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .malformed(text, reason: "unclosed [") }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.isEmpty { return (host, nil) }
            guard after.hasPrefix(":") else { throw .malformed(text, reason: "junk after ]") }
            return (host, String(after.dropFirst()))
        }
        let pieces = authority.split(separator: ":", omittingEmptySubsequences: false)
        switch pieces.count {
        case 1: return (authority, nil)
        case 2: return (String(pieces[0]), String(pieces[1]))
        default: throw .malformed(text, reason: "an IPv6 host must be in brackets")
        }
    }

    public var description: String {
        let scheme = transport == .tls ? "turns" : "turn"
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "\(scheme):\(host):\(port)?transport=\(transport == .udp ? "udp" : "tcp")"
    }
}
