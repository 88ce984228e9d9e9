import Testing
import WireCoding
@testable import DTLS

/// The server role (the load generator plays Sora): two of recbot's own endpoints, one per
/// role, each checking the other's certificate against its fingerprint, derive the same keys.
/// The client side is proven against an independent OpenSSL server in DTLSClientTests.
@Suite struct DTLSServerRoleTests {
    /// Runs both endpoints against each other until neither has more to send; their events.
    func handshake(_ client: DTLSEndpoint, _ server: DTLSEndpoint) -> (client: [DTLSEvent], server: [DTLSEvent]) {
        let now = MonotonicTime.milliseconds(0)
        _ = server.start(now: now)
        var toServer = client.start(now: now).datagrams
        var clientEvents: [DTLSEvent] = [], serverEvents: [DTLSEvent] = []
        for _ in 0..<20 where !toServer.isEmpty {
            var toClient: [[UInt8]] = []
            for datagram in toServer {
                let output = server.handle(datagram: datagram, now: now)
                serverEvents += output.events
                toClient += output.datagrams
            }
            toServer = []
            for datagram in toClient {
                let output = client.handle(datagram: datagram, now: now)
                clientEvents += output.events
                toServer += output.datagrams
            }
        }
        return (clientEvents, serverEvents)
    }

    @Test func clientAndServerEndpointsAgreeOnTheKeys() throws {
        let clientCertificate = try DTLSCertificate(), serverCertificate = try DTLSCertificate()
        let client = try DTLSEndpoint(certificate: clientCertificate, expectedFingerprints: [try #require(serverCertificate.fingerprint())])
        let server = try DTLSEndpoint(certificate: serverCertificate, expectedFingerprints: [try #require(clientCertificate.fingerprint())],
                                      role: .server)
        #expect(server.start(now: .milliseconds(0)).datagrams.isEmpty, "a server waits for the ClientHello")
        let events = handshake(client, server)
        let clientKeys = try #require(connectedKeys(events.client)), serverKeys = try #require(connectedKeys(events.server))
        #expect(clientKeys == serverKeys && client.state == .connected && server.state == .connected)
        #expect(server.peerFingerprint == clientCertificate.fingerprint())
    }

    @Test func aServerRefusesAClientWhoseCertificateIsNotTheSignaledOne() throws {
        let server = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [try #require(try DTLSCertificate().fingerprint())],
                                      role: .server)
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [try #require(try DTLSCertificate().fingerprint())])
        let events = handshake(client, server)
        #expect(connectedKeys(events.server) == nil && server.state != .connected)
    }
}
