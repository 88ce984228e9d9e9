import DTLS
import PeerConnection
import SDP
import STUN
import Testing

/// An empty room's offer may have no section at all (RFC 3264 §5). It is answered with none,
/// and no transport is set up; one with sections recbot cannot receive still has no answer.
@Suite struct EmptyOfferTests {
    static let hosts = [TransportAddress(ip: .v4(127, 0, 0, 1), port: 50_000)]

    @Test func anOfferWithNoSectionIsAnsweredWithNone() throws {
        let offer = try SessionDescription(parsing: "v=0\r\no=- 4 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n")
        let certificate = try DTLSCertificate()
        do throws(NegotiationError) {
            _ = try RecvOnlyNegotiation(offer: offer, hosts: Self.hosts, certificate: certificate, random: { 4 })
            Issue.record("an offer with no section gave a transport")
        } catch {
            guard case .nothingToReceive(let answer) = error else {
                Issue.record("expected nothingToReceive, got \(error)")
                return
            }
            let parsed = try SessionDescription(parsing: answer)
            #expect(parsed.media.isEmpty, "\(answer)")
        }
    }

    @Test func anOfferWhoseSectionsAreAllRefusedStillHasNoTransport() throws {
        // A video section in a codec recbot does not take.
        let offer = try SessionDescription(parsing: """
            v=0\r
            o=- 4 2 IN IP4 127.0.0.1\r
            s=-\r
            t=0 0\r
            m=video 9 UDP/TLS/RTP/SAVPF 120\r
            c=IN IP4 0.0.0.0\r
            a=mid:0\r
            a=sendonly\r
            a=rtcp-mux\r
            a=ice-ufrag:abcd\r
            a=ice-pwd:abcdefghijklmnopqrstuvwx\r
            a=fingerprint:sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF\r
            a=setup:actpass\r
            a=rtpmap:120 UNKNOWN/90000\r

            """)
        let certificate = try DTLSCertificate()
        #expect(throws: NegotiationError.noTransport) {
            _ = try RecvOnlyNegotiation(offer: offer, hosts: Self.hosts, certificate: certificate, random: { 4 })
        }
    }
}
