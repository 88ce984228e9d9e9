/// An ICE candidate in SDP grammar (RFC 8839 §5.1):
/// `candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> [raddr <a> rport <p>] [<name> <value>]...`
public struct ICECandidate: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case host, srflx, prflx, relay }

    public var foundation: String
    public var component: Int
    public var transport: String  // "udp" (TCP candidates are parsed but not used)
    public var priority: UInt32
    public var address: String
    public var port: UInt16
    public var kind: Kind
    public var relatedAddress: String?
    public var relatedPort: UInt16?
    public var extensions: [String: String]

    public init(foundation: String, component: Int = 1, transport: String = "udp", priority: UInt32, address: String, port: UInt16,
                kind: Kind, relatedAddress: String? = nil, relatedPort: UInt16? = nil, extensions: [String: String] = [:]) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.kind = kind
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.extensions = extensions
    }

    /// Parses the attribute value, with or without the leading `candidate:` (and `a=`).
    public init?(sdp text: String) {
        var body = Substring(text)
        if body.hasPrefix("a=") { body = body.dropFirst(2) }
        if body.hasPrefix("candidate:") { body = body.dropFirst("candidate:".count) }
        guard body.utf8.count <= 1_024 else { return nil }
        let parts = body.split(separator: " ").map(String.init)
        guard parts.count >= 8, parts[6] == "typ",
              (1...32).contains(parts[0].count),
              let component = Int(parts[1]), (1...256).contains(component),
              let priority = UInt32(parts[3]),
              let port = UInt16(parts[5]),
              let kind = Kind(rawValue: parts[7])
        else { return nil }
        self.init(foundation: parts[0], component: component, transport: parts[2].lowercased(), priority: priority,
                  address: parts[4], port: port, kind: kind)
        var index = 8
        while index + 1 < parts.count {
            let key = parts[index], value = parts[index + 1]
            switch key {
            case "raddr": relatedAddress = value
            case "rport": relatedPort = UInt16(value)
            default: extensions[key] = value
            }
            index += 2
        }
    }

    /// The attribute value, `candidate:...` (without `a=`).
    public var sdp: String {
        var text = "candidate:\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(kind.rawValue)"
        if let relatedAddress, let relatedPort { text += " raddr \(relatedAddress) rport \(relatedPort)" }
        for key in extensions.keys.sorted() { text += " \(key) \(extensions[key]!)" }
        return text
    }

    public var description: String { sdp }
}
