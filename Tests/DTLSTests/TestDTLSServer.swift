import COpenSSL
import COpenSSLShim
@testable import DTLS
import Keying
import SDP
import SRTP

/// A DTLS server on OpenSSL (server role, its own certificate), the peer of `DTLSEndpoint` in tests.
final class TestDTLSServer {
    let certificate: DTLSCertificate
    let context: OpaquePointer
    let ssl: OpaquePointer
    let bio = DatagramBIO()
    var handshakeDone = false
    var received: [[UInt8]] = []
    var sawCloseNotify = false
    var failed = false

    init(profiles: [SRTPProtectionProfile]) throws {
        certificate = try DTLSCertificate(commonName: "test-server")
        context = SSL_CTX_new(DTLS_server_method())!
        _ = recbot_ssl_ctx_use_dtls12(context)
        SSL_CTX_use_certificate(context, certificate.certificate)
        SSL_CTX_use_PrivateKey(context, certificate.key)
        _ = SSL_CTX_set_tlsext_use_srtp(context, profiles.map(\.openSSLName).joined(separator: ":"))
        // Ask for the client's certificate and accept any (fingerprints are checked via SDP).
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        ssl = SSL_new(context)!
        let b = bio.makeBIO()!
        SSL_set_bio(ssl, b, b)
        recbot_ssl_set_mtu(ssl, 1_200)
        SSL_set_accept_state(ssl)
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    var fingerprint: DTLSFingerprint { certificate.fingerprint()! }

    /// Feeds a datagram; returns the datagrams the server sends back.
    func handle(_ datagram: [UInt8]) -> [[UInt8]] {
        bio.incoming = datagram
        if !handshakeDone {
            let result = SSL_do_handshake(ssl)
            if result == 1 { handshakeDone = true }
            else if SSL_get_error(ssl, result) == SSL_ERROR_SSL { failed = true }
        }
        if handshakeDone {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                if n > 0 { received.append(Array(buffer.prefix(Int(n)))); continue }
                if SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN { sawCloseNotify = true }
                break
            }
        }
        bio.incoming = nil
        return drain()
    }

    func send(_ data: [UInt8]) -> [[UInt8]] {
        _ = data.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        return drain()
    }

    func shutdown() -> [[UInt8]] {
        SSL_shutdown(ssl)
        return drain()
    }

    func exportKeys(profile: SRTPProtectionProfile) -> [UInt8] {
        var material = [UInt8](repeating: 0, count: 2 * (profile.keyLength + profile.saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        _ = SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0)
        return material
    }

    private func drain() -> [[UInt8]] {
        defer { bio.outgoing.removeAll() }
        return bio.outgoing
    }
}
