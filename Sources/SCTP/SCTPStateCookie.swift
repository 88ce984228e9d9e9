import MessageAuthentication
import WireCoding

/// The state cookie an INIT-ACK carries (RFC 9260 §5.1.3): the peer's tag and initial TSN and
/// when it was issued, signed with the association's secret, so nothing is kept for a peer until
/// its COOKIE-ECHO proves it saw the INIT-ACK. A cookie older than 60 s is stale (§5.1.5).
struct SCTPStateCookie {
    private let secret: [UInt8]
    static let lifetimeNanoseconds: Int64 = 60_000_000_000
    private static let bodyLength = 16
    private static let macLength = 32

    init(secret: [UInt8]) { self.secret = secret }

    func make(peerTag: UInt32, peerInitialTSN: UInt32, now: MonotonicTime) -> [UInt8] {
        var writer = ByteWriter(capacity: Self.bodyLength + Self.macLength)
        writer.write(peerTag)
        writer.write(peerInitialTSN)
        writer.write(UInt64(bitPattern: now.nanoseconds))
        return writer.bytes + MessageAuthentication.hmacSHA256(key: secret, message: writer.bytes)
    }

    /// The peer's tag and initial TSN, when the cookie is ours, intact and fresh.
    func verify(_ cookie: [UInt8], now: MonotonicTime) -> (tag: UInt32, initialTSN: UInt32)? {
        guard cookie.count == Self.bodyLength + Self.macLength else { return nil }
        let body = Array(cookie.prefix(Self.bodyLength))
        let mac = MessageAuthentication.hmacSHA256(key: secret, message: body)
        guard MessageAuthentication.constantTimeEqual(mac, Array(cookie.suffix(Self.macLength))) else { return nil }
        var reader = ByteReader(body)
        guard let tag = reader.readUInt32(), let tsn = reader.readUInt32(), let issued = reader.readUInt64() else { return nil }
        let age = now.nanoseconds &- Int64(bitPattern: issued)
        guard age >= 0 && age <= Self.lifetimeNanoseconds else { return nil }
        return (tag, tsn)
    }
}
