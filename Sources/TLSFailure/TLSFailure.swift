import NIOSSL

/// The ways a TLS client handshake fails in practice, each in one line an operator can act on.
/// swift-nio-ssl's own descriptions are BoringSSL error stacks with source paths; the signaling,
/// TURN, PostgreSQL and S3 clients all turn them into these.
public enum TLSFailure {
    /// nil when `error` is not about TLS. `serverName`: the name the certificate was checked
    /// for; `trustHint`: how to trust a private CA with the caller's options (for the error
    /// where the chain was not trusted).
    public static func describe(_ error: any Error, serverName: String, trustHint: String? = nil) -> String? {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "TLS: the server's certificate is not valid for \(serverName)"
        }
        guard let failure = error as? NIOSSLError else { return nil }
        switch failure {
        case .handshakeFailed(let underlying):
            let reason = reasonCode(underlying)
            if reason == "CERTIFICATE_VERIFY_FAILED" {
                let hint = trustHint.map { " (\($0))" } ?? ""
                return "TLS: the certificate of \(serverName) is not trusted: unknown CA, expired or not yet valid\(hint)"
            }
            return "TLS handshake with \(serverName) failed: \(reason ?? "\(underlying)")"
        case .uncleanShutdown:
            return "TLS: \(serverName) closed the connection in the middle of TLS"
        default:
            return "TLS with \(serverName): \(failure)"
        }
    }

    /// True when the server's certificate was refused (untrusted chain, wrong name): another
    /// try cannot succeed until the configuration changes, so callers do not retry it.
    public static func isCertificateRejection(_ error: any Error) -> Bool {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname { return true }
        if case .handshakeFailed(let underlying) = error as? NIOSSLError { return reasonCode(underlying) == "CERTIFICATE_VERIFY_FAILED" }
        return false
    }

    /// Checks a CA file before anything connects: a file that is not PEM certificates would
    /// otherwise fail every connection later, and look like a server problem. nil when usable.
    public static func problem(withTrustFile path: String) -> String? {
        do {
            return try NIOSSLCertificate.fromPEMFile(path).isEmpty ? "\(path) holds no PEM certificate" : nil
        } catch {
            return "\(path) is not a PEM certificate file (\(error))"
        }
    }

    /// BoringSSL's reason ("CERTIFICATE_VERIFY_FAILED", "WRONG_VERSION_NUMBER"): the last
    /// colon-separated field of its first error string, without the source location.
    static func reasonCode(_ error: BoringSSLError) -> String? {
        let text = String(describing: error)
        guard let marker = text.firstRange(of: "OPENSSL_internal:") else { return nil }
        let rest: Substring = text[marker.upperBound...]
        let reason: Substring = rest.prefix { $0 != " " && $0 != "]" && $0 != "," }
        return reason.isEmpty ? nil : String(reason)
    }
}
