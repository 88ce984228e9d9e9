import Crypto
import Foundation

/// How a caller proves it may use an endpoint of `recbot serve`: a shared secret in a header
/// (Sora's webhook settings can add a header), HTTP basic auth, or a bearer token (the API).
/// mTLS, when configured, is checked by TLS before any of this. Comparisons take the same time
/// whatever the guess, so a secret cannot be found byte by byte.
public struct RequestAuthentication: Sendable, Equatable {
    public enum Method: Sendable, Equatable {
        /// The header (lower-cased name) must carry the secret.
        case header(name: String, secret: String)
        case basic(user: String, password: String)
        case bearer(token: String)
    }

    public var methods: [Method]

    public init(_ methods: [Method]) { self.methods = methods }

    /// No method configured: nothing is let in (the service refuses to start that way unless
    /// told to run open on loopback).
    public var isEmpty: Bool { methods.isEmpty }

    /// True when any configured method accepts the request's headers (lower-cased names).
    public func accepts(headers: [(name: String, value: String)]) -> Bool {
        methods.contains { method in
            switch method {
            case .header(let name, let secret):
                return headers.contains { $0.name.lowercased() == name && Self.sameBytes($0.value, secret) }
            case .basic(let user, let password):
                let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
                return headers.contains { $0.name.lowercased() == "authorization" && Self.sameBytes($0.value, expected) }
            case .bearer(let token):
                return headers.contains { $0.name.lowercased() == "authorization" && Self.sameBytes($0.value, "Bearer " + token) }
            }
        }
    }

    /// Compares digests, so neither the length nor the first differing byte shows in the time taken.
    static func sameBytes(_ given: String, _ expected: String) -> Bool {
        let (a, b) = (SHA256.hash(data: Data(given.utf8)), SHA256.hash(data: Data(expected.utf8)))
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
