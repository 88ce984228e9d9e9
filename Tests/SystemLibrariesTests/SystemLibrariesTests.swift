import COpenSSL
import COpus
import CSRTP
import CVPX
import Testing

/// The system-library module maps link and the features later layers rely on are present.
@Suite struct SystemLibrariesTests {
    @Test func openSSLOffersDTLSWithBothSRTPProfiles() throws {
        let context = try #require(SSL_CTX_new(DTLS_client_method()))
        defer { SSL_CTX_free(context) }
        // OpenSSL returns 0 on success here.
        #expect(SSL_CTX_set_tlsext_use_srtp(context, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") == 0)
        #expect(SSL_CTX_set_tlsext_use_srtp(context, "SRTP_NO_SUCH_PROFILE") != 0)
    }

    @Test func libsrtpInitialises() {
        #expect(srtp_init() == srtp_err_status_ok)
        #expect(srtp_shutdown() == srtp_err_status_ok)
    }

    @Test func codecLibrariesReportVersions() {
        #expect(String(cString: vpx_codec_version_str()).isEmpty == false)
        #expect(String(cString: opus_get_version_string()).hasPrefix("libopus"))
    }
}
