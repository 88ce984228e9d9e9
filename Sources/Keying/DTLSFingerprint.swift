/// A DTLS certificate fingerprint, `a=fingerprint:<hash> <hex:hex:...>` (RFC 8122).
public struct DTLSFingerprint: Equatable, Hashable, Sendable, CustomStringConvertible {
    public static let algorithms: [String: Int] = ["sha-1": 20, "sha-224": 28, "sha-256": 32, "sha-384": 48, "sha-512": 64]

    public var algorithm: String
    public var bytes: [UInt8]

    public init?(algorithm: String, bytes: [UInt8]) {
        let name = algorithm.lowercased()
        guard DTLSFingerprint.algorithms[name] == bytes.count else { return nil }
        self.algorithm = name
        self.bytes = bytes
    }

    public init?(sdp value: String) {
        let parts = value.split(separator: " ")
        guard parts.count == 2 else { return nil }
        let hexes = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        var bytes: [UInt8] = []
        for hex in hexes {
            guard hex.count == 2, let byte = UInt8(hex, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(algorithm: String(parts[0]), bytes: bytes)
    }

    public var sdp: String {
        algorithm + " " + bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    public var description: String { sdp }
}
