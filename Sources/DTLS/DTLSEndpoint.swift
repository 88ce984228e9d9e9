import COpenSSL
import COpenSSLShim
import Keying
import WireCoding

public enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    case setup(String)
    /// The peer's certificate does not match the fingerprint signaled in SDP.
    case fingerprintMismatch(expected: [DTLSFingerprint], actual: [DTLSFingerprint])
    case noPeerCertificate
    case noSRTPProfile
    case handshakeFailed(String)
    case retransmissionsExhausted
    case outputOverflow

    public var description: String {
        switch self {
        case .setup(let detail): "DTLS setup failed: \(detail)"
        case .fingerprintMismatch(let expected, let actual):
            "peer certificate fingerprint \(actual.map(\.sdp).joined(separator: ", ")) does not match SDP \(expected.map(\.sdp).joined(separator: ", "))"
        case .noPeerCertificate: "the DTLS peer sent no certificate"
        case .noSRTPProfile: "the DTLS peer negotiated no SRTP profile"
        case .handshakeFailed(let detail): "DTLS handshake failed: \(detail)"
        case .retransmissionsExhausted: "DTLS handshake timed out"
        case .outputOverflow: "DTLS produced more datagrams than allowed"
        }
    }
}

public enum DTLSEvent: Equatable, Sendable {
    case connected(SRTPKeyingMaterial)
    case applicationData([UInt8])
    /// The peer sent close_notify.
    case closed
    case failed(DTLSError)
}

public struct DTLSOutput: Equatable, Sendable {
    public var datagrams: [[UInt8]] = []
    public var events: [DTLSEvent] = []
}

public struct DTLSCounters: Equatable, Sendable {
    public var datagramsReceived = 0
    public var retransmissions = 0
}

/// Which side of the handshake an endpoint plays. recbot answers Sora's `actpass` with
/// `active`, so it is the client; the load generator plays Sora, the server.
public enum DTLSRole: Sendable, Equatable {
    case client, server
}

/// A DTLS 1.2 endpoint on OpenSSL, driven sans-IO: datagrams and timeouts in, datagrams and
/// events out. Either role verifies the peer's certificate against the SDP fingerprints. OpenSSL reads its own clock for retransmission timers, so `nextTimeout`
/// is relative to the `now` passed in; tests that simulate loss use real time for DTLS.
public final class DTLSEndpoint {
    public let role: DTLSRole
    public enum State: Equatable, Sendable { case idle, handshaking, connected, closed, failed }

    public private(set) var state: State = .idle
    public private(set) var counters = DTLSCounters()
    public let expectedFingerprints: [DTLSFingerprint]
    public private(set) var peerFingerprint: DTLSFingerprint?

    private let context: OpaquePointer  // SSL_CTX*
    private let ssl: OpaquePointer  // SSL*
    private let bio = DatagramBIO()
    private var verificationError: DTLSError?
    private var deadline: MonotonicTime?

    /// `initialRetransmitMilliseconds`: the first flight's retransmission timer (RFC 6347 says 1 s).
    public init(certificate: DTLSCertificate, expectedFingerprints: [DTLSFingerprint],
                profiles: [SRTPProtectionProfile] = SRTPProtectionProfile.allCases,
                initialRetransmitMilliseconds: UInt32 = 1_000, role: DTLSRole = .client) throws(DTLSError) {
        self.expectedFingerprints = expectedFingerprints
        self.role = role
        guard !expectedFingerprints.isEmpty else { throw .setup("no remote fingerprint to verify against") }
        guard let context = SSL_CTX_new(role == .client ? DTLS_client_method() : DTLS_server_method()) else { throw .setup(OpenSSLError.drain()) }
        self.context = context
        // Before SSL_new, which copies the context's verify settings.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { preverified, store in
            DTLSEndpoint.verify(preverified: preverified, store: store)
        }
        guard recbot_ssl_ctx_use_dtls12(context) == 1,
              SSL_CTX_use_certificate(context, certificate.certificate) == 1,
              SSL_CTX_use_PrivateKey(context, certificate.key) == 1,
              SSL_CTX_set_cipher_list(context, DTLSEndpoint.cipherList) == 1,
              // OpenSSL returns 0 on success here.
              SSL_CTX_set_tlsext_use_srtp(context, profiles.map(\.openSSLName).joined(separator: ":")) == 0,
              let ssl = SSL_new(context)
        else {
            let detail = OpenSSLError.drain()
            SSL_CTX_free(context)
            throw .setup(detail)
        }
        self.ssl = ssl
        guard let bio = bio.makeBIO() else {
            SSL_free(ssl)
            SSL_CTX_free(context)
            throw .setup("cannot create the datagram BIO")
        }
        SSL_set_bio(ssl, bio, bio)  // one BIO for both directions; SSL_free frees it once
        recbot_ssl_set_mtu(ssl, DatagramBIO.mtu)
        recbot_dtls_set_initial_timeout(ssl, initialRetransmitMilliseconds)
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        if role == .client { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    static let cipherList = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
    ].joined(separator: ":")

    /// A client sends its ClientHello; a server starts waiting for one.
    public func start(now: MonotonicTime) -> DTLSOutput {
        guard state == .idle else { return DTLSOutput() }
        state = .handshaking
        var output = DTLSOutput()
        guard role == .client else { return output }
        advanceHandshake(&output)
        finish(&output, now: now)
        return output
    }

    /// Feeds one datagram received from the peer (first byte 20...63).
    public func handle(datagram: [UInt8], now: MonotonicTime) -> DTLSOutput {
        var output = DTLSOutput()
        guard state == .handshaking || state == .connected, !datagram.isEmpty else { return output }
        counters.datagramsReceived += 1
        bio.incoming = datagram
        if state == .handshaking { advanceHandshake(&output) }
        if state == .connected { readApplicationData(&output) }
        bio.incoming = nil  // whatever OpenSSL did not consume is discarded, as UDP would
        finish(&output, now: now)
        return output
    }

    /// When `handleTimeout` should next be called.
    public var nextTimeout: MonotonicTime? { deadline }

    public func handleTimeout(now: MonotonicTime) -> DTLSOutput {
        var output = DTLSOutput()
        guard state == .handshaking, let deadline, now >= deadline else { return output }
        switch recbot_dtls_handle_timeout(ssl) {
        case 1: counters.retransmissions += 1
        case 0: break
        default: fail(.retransmissionsExhausted, &output)
        }
        finish(&output, now: now)
        return output
    }

    /// Encrypts application data (SCTP) for the peer.
    public func send(_ data: [UInt8]) -> DTLSOutput {
        var output = DTLSOutput()
        guard state == .connected, !data.isEmpty else { return output }
        let written = data.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        if written <= 0 { fail(.handshakeFailed("write: \(OpenSSLError.drain())"), &output) }
        drainOutgoing(&output)
        return output
    }

    /// Sends close_notify.
    public func close() -> DTLSOutput {
        var output = DTLSOutput()
        guard state == .connected || state == .handshaking else { return output }
        if state == .connected { SSL_shutdown(ssl) }
        state = .closed
        deadline = nil
        drainOutgoing(&output)
        return output
    }

    // MARK: - Internals

    private func advanceHandshake(_ output: inout DTLSOutput) {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            completeHandshake(&output)
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            break
        default:
            let detail = OpenSSLError.drain()
            fail(verificationError ?? .handshakeFailed(detail), &output)
        }
    }

    private func completeHandshake(_ output: inout DTLSOutput) {
        guard peerFingerprint != nil, SSL_get0_peer_certificate(ssl) != nil else {
            fail(verificationError ?? .noPeerCertificate, &output)
            return
        }
        guard let selected = SSL_get_selected_srtp_profile(ssl),
              let profile = SRTPProtectionProfile(rawValue: UInt16(truncatingIfNeeded: selected.pointee.id))
        else {
            fail(.noSRTPProfile, &output)
            return
        }
        let keyLength = profile.keyLength, saltLength = profile.saltLength
        var material = [UInt8](repeating: 0, count: 2 * (keyLength + saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            fail(.handshakeFailed("keying material export: \(OpenSSLError.drain())"), &output)
            return
        }
        let keys = SRTPKeyingMaterial(
            profile: profile,
            clientKey: Array(material[0..<keyLength]),
            clientSalt: Array(material[(2 * keyLength)..<(2 * keyLength + saltLength)]),
            serverKey: Array(material[keyLength..<(2 * keyLength)]),
            serverSalt: Array(material[(2 * keyLength + saltLength)..<(2 * keyLength + 2 * saltLength)]))
        state = .connected
        deadline = nil
        output.events.append(.connected(keys))
    }

    private func readApplicationData(_ output: inout DTLSOutput) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while state == .connected {
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 {
                output.events.append(.applicationData(Array(buffer.prefix(Int(count)))))
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_ZERO_RETURN {
                state = .closed
                output.events.append(.closed)
            } else if error != SSL_ERROR_WANT_READ {
                // A damaged record is dropped by OpenSSL; a fatal alert ends the association.
                let detail = OpenSSLError.drain()
                if SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN != 0 {
                    state = .closed
                    output.events.append(.closed)
                } else {
                    fail(.handshakeFailed("read: \(detail)"), &output)
                }
            }
            break
        }
    }

    private func fail(_ error: DTLSError, _ output: inout DTLSOutput) {
        guard state != .failed else { return }
        state = .failed
        deadline = nil
        output.events.append(.failed(error))
    }

    private func finish(_ output: inout DTLSOutput, now: MonotonicTime) {
        drainOutgoing(&output)
        if state == .handshaking {
            let milliseconds = recbot_dtls_timeout_ms(ssl)
            deadline = milliseconds >= 0 ? now.adding(milliseconds: Int64(milliseconds)) : nil
        }
    }

    private func drainOutgoing(_ output: inout DTLSOutput) {
        output.datagrams.append(contentsOf: bio.outgoing)
        bio.outgoing.removeAll(keepingCapacity: true)
        if bio.overflowed {
            bio.overflowed = false
            fail(.outputOverflow, &output)
        }
    }

    /// Called by OpenSSL for each certificate of the peer's chain; the leaf (depth 0) must
    /// match every SDP fingerprint whose hash we support. Self-signed chains are expected.
    private static func verify(preverified: Int32, store: OpaquePointer?) -> Int32 {
        guard let store,
              let sslPointer = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
              let clientPointer = SSL_get_ex_data(OpaquePointer(sslPointer), 0)
        else { return 0 }
        let client = Unmanaged<DTLSEndpoint>.fromOpaque(clientPointer).takeUnretainedValue()
        guard X509_STORE_CTX_get_error_depth(store) == 0 else { return 1 }
        guard let certificate = X509_STORE_CTX_get_current_cert(store) else {
            client.verificationError = .noPeerCertificate
            return 0
        }
        var actual: [DTLSFingerprint] = []
        var matched = false
        for expected in client.expectedFingerprints {
            guard let digest = DTLSCertificate.digest(certificate, algorithm: expected.algorithm) else { continue }
            actual.append(digest)
            guard digest == expected else {
                client.verificationError = .fingerprintMismatch(expected: client.expectedFingerprints, actual: actual)
                return 0
            }
            matched = true
        }
        guard matched else {
            client.verificationError = .fingerprintMismatch(expected: client.expectedFingerprints, actual: actual)
            return 0
        }
        client.peerFingerprint = actual.first
        return 1
    }
}
