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

    /// No srtp_init/srtp_shutdown here: libsrtp's state is process-wide and other suites
    /// use it in parallel (SRTPSession initialises it once).
    @Test func libsrtpOffersBothProfiles() {
        #expect(String(cString: srtp_get_version_string()).hasPrefix("libsrtp2"))
        var gcm = srtp_crypto_policy_t()
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&gcm)
        #expect(gcm.cipher_key_len == 28 && gcm.auth_tag_len == 16)
        var cm = srtp_crypto_policy_t()
        srtp_crypto_policy_set_rtp_default(&cm)
        #expect(cm.cipher_key_len == 30 && cm.auth_tag_len == 10)
    }

    @Test func codecLibrariesReportVersions() {
        #expect(String(cString: vpx_codec_version_str()).isEmpty == false)
        #expect(String(cString: opus_get_version_string()).hasPrefix("libopus"))
    }
}
