import COpenSSL
import COpenSSLShim
import Keying

public struct DTLSCertificateError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// recbot's DTLS identity: an ECDSA P-256 key and self-signed certificate made at start.
/// (ECDSA because aiortc and browsers offer ECDHE-ECDSA suites first; some accept nothing else.)
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer  // EVP_PKEY*
    let certificate: OpaquePointer  // X509*

    public init(commonName: String = "recbot", validityDays: Int = 30) throws(DTLSCertificateError) {
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        guard recbot_make_certificate(&key, &certificate, commonName, validityDays) == 1, let key, let certificate else {
            throw DTLSCertificateError(description: "cannot create the DTLS certificate: \(OpenSSLError.drain())")
        }
        self.key = key
        self.certificate = certificate
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// The fingerprint that goes into `a=fingerprint` (RFC 8122).
    public func fingerprint(algorithm: String = "sha-256") -> DTLSFingerprint? {
        DTLSCertificate.digest(certificate, algorithm: algorithm)
    }

    static func digest(_ certificate: OpaquePointer, algorithm: String) -> DTLSFingerprint? {
        let md: OpaquePointer?
        switch algorithm {
        case "sha-1": md = EVP_sha1()
        case "sha-224": md = EVP_sha224()
        case "sha-256": md = EVP_sha256()
        case "sha-384": md = EVP_sha384()
        case "sha-512": md = EVP_sha512()
        default: return nil
        }
        var buffer = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, md, &buffer, &length) == 1 else { return nil }
        return DTLSFingerprint(algorithm: algorithm, bytes: Array(buffer.prefix(Int(length))))
    }
}

enum OpenSSLError {
    /// Drains OpenSSL's thread-local error queue into one line.
    static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "no OpenSSL error" : messages.joined(separator: "; ")
    }
}
