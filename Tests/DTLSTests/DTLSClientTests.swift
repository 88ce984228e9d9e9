import Foundation
import Keying
import RTP
import SRTP
import Testing
import WireCoding
@testable import DTLS
import SDP

/// Runs client and server against each other until neither has anything to send.
@discardableResult
func pump(_ client: DTLSEndpoint, _ server: TestDTLSServer, first: DTLSOutput, dropFromClient: Int = 0,
          now: MonotonicTime = .milliseconds(0)) -> [DTLSEvent] {
    var events = first.events
    var toServer = first.datagrams
    var dropped = 0
    for _ in 0..<50 {
        if toServer.isEmpty { break }
        var toClient: [[UInt8]] = []
        for datagram in toServer {
            if dropped < dropFromClient { dropped += 1; continue }
            toClient += server.handle(datagram)
        }
        toServer = []
        for datagram in toClient {
            let output = client.handle(datagram: datagram, now: now)
            events += output.events
            toServer += output.datagrams
        }
    }
    return events
}

func connectedKeys(_ events: [DTLSEvent]) -> SRTPKeyingMaterial? {
    for event in events { if case .connected(let keys) = event { return keys } }
    return nil
}

@Suite struct DTLSClientTests {
    @Test(arguments: SRTPProtectionProfile.allCases)
    func handshakeExportsMatchingKeysAndSRTPFlows(profile: SRTPProtectionProfile) throws {
        let server = try TestDTLSServer(profiles: [profile])
        let certificate = try DTLSCertificate()
        let client = try DTLSEndpoint(certificate: certificate, expectedFingerprints: [server.fingerprint])
        let events = pump(client, server, first: client.start(now: MonotonicTime.milliseconds(0)))
        let keys = try #require(connectedKeys(events), "events: \(events)")
        #expect(client.state == .connected && server.handshakeDone)
        #expect(keys.profile == profile)
        #expect(client.peerFingerprint == server.fingerprint)
        // Both ends derived the same material (client key, server key, client salt, server salt).
        #expect(keys.clientKey + keys.serverKey + keys.clientSalt + keys.serverSalt == server.exportKeys(profile: profile))
        #expect(keys.clientSalt.count == profile.saltLength)

        // SRTP from the server's side, decrypted on ours; and RTCP the other way.
        let receiver = try SRTPSession(keys: keys)
        let sender = try SRTPSession(peerOf: keys)
        var plain: [[UInt8]] = []
        for sequence in 0..<100 {
            let packet = RTPPacketBuilder(payloadType: 96, sequenceNumber: UInt16(sequence), timestamp: UInt32(sequence * 3000), ssrc: 42)
                .build(payload: Array(repeating: UInt8(sequence), count: 200))
            plain.append(packet)
            var protected = try sender.protectRTP(packet)
            #expect(protected != packet && protected.count > packet.count)
            try receiver.unprotectRTP(&protected)
            #expect(protected == packet)
        }
        #expect(receiver.counters.rtpUnprotected == 100)

        // Replays and tampering are refused and counted.
        var replay = try sender.protectRTP(RTPPacketBuilder(payloadType: 96, sequenceNumber: 500, timestamp: 0, ssrc: 42).build(payload: [1]))
        var copy = replay
        try receiver.unprotectRTP(&copy)
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(&replay) }
        var tampered = try sender.protectRTP(RTPPacketBuilder(payloadType: 96, sequenceNumber: 501, timestamp: 0, ssrc: 42).build(payload: [1, 2, 3]))
        tampered[tampered.count - 1] ^= 0xFF
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(&tampered) }
        #expect(receiver.counters.replays == 1 && receiver.counters.authenticationFailures == 1)

        let rtcp = RTCPPacket.pictureLossIndication(sender: 1, media: 42).serialized
        var protectedRTCP = try receiver.protectRTCP(rtcp)
        try sender.unprotectRTCP(&protectedRTCP)
        #expect(protectedRTCP == rtcp)
    }

    @Test func fingerprintMismatchAbortsTheHandshake() throws {
        let server = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        var wrong = server.fingerprint
        wrong.bytes[0] ^= 0x01
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [wrong])
        let events = pump(client, server, first: client.start(now: MonotonicTime.milliseconds(0)))
        #expect(client.state == .failed)
        #expect(events.contains { if case .failed(.fingerprintMismatch(let expected, let actual)) = $0 { return expected == [wrong] && actual == [server.fingerprint] }; return false })
        #expect(connectedKeys(events) == nil)
        #expect(!server.handshakeDone || server.failed, "the server got a fatal alert")
    }

    @Test func everyAdvertisedFingerprintMustMatch() throws {
        let server = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let wrong512 = DTLSFingerprint(algorithm: "sha-512", bytes: Array(repeating: 0, count: 64))!
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server.fingerprint, wrong512])
        pump(client, server, first: client.start(now: MonotonicTime.milliseconds(0)))
        #expect(client.state == .failed)

        let server2 = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let both = [server2.fingerprint, server2.certificate.fingerprint(algorithm: "sha-512")!]
        let client2 = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: both)
        #expect(connectedKeys(pump(client2, server2, first: client2.start(now: MonotonicTime.milliseconds(0)))) != nil)
    }

    @Test func noCommonSRTPProfileFails() throws {
        let server = try TestDTLSServer(profiles: [.aes128CMSHA1_80])
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server.fingerprint], profiles: [.aeadAES128GCM])
        let events = pump(client, server, first: client.start(now: MonotonicTime.milliseconds(0)))
        #expect(client.state == .failed)
        #expect(events.contains(.failed(.noSRTPProfile)))
    }

    @Test func garbageIsIgnoredAndTheHandshakeStillCompletes() throws {
        let server = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server.fingerprint])
        let start = client.start(now: MonotonicTime.milliseconds(0))
        var generator = SplitMix64(seed: 7)
        for length in [1, 13, 25, 100, 1_500] {
            var garbage = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            garbage[0] = 22  // looks like a handshake record
            let output = client.handle(datagram: garbage, now: MonotonicTime.milliseconds(1))
            #expect(!output.events.contains { if case .failed = $0 { return true }; return false })
        }
        #expect(client.state == .handshaking)
        let events = pump(client, server, first: start)
        #expect(connectedKeys(events) != nil)
    }

    @Test func lostFlightIsRetransmittedOnTimeout() throws {
        let server = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server.fingerprint],
                                    initialRetransmitMilliseconds: 50)
        let origin = DispatchTime.now().uptimeNanoseconds
        func now() -> MonotonicTime { MonotonicTime(nanoseconds: Int64(DispatchTime.now().uptimeNanoseconds - origin)) }
        let first = client.start(now: now())
        #expect(!first.datagrams.isEmpty)
        let deadline = try #require(client.nextTimeout)
        #expect(deadline.milliseconds(since: .milliseconds(0)) <= 60)
        // The ClientHello is lost. OpenSSL's timer runs on the real clock: wait it out.
        Thread.sleep(forTimeInterval: 0.08)
        let retransmitted = client.handleTimeout(now: now())
        #expect(retransmitted.datagrams.count >= 1 && client.counters.retransmissions == 1)
        let events = pump(client, server, first: retransmitted, now: now())
        #expect(connectedKeys(events) != nil)
    }

    @Test func closeNotifyBothWays() throws {
        let server = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let client = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server.fingerprint])
        pump(client, server, first: client.start(now: MonotonicTime.milliseconds(0)))
        #expect(client.state == .connected)

        // Application data both ways (SCTP rides here later).
        for datagram in client.send(Array("hello server".utf8)).datagrams { _ = server.handle(datagram) }
        #expect(server.received == [Array("hello server".utf8)])
        var events: [DTLSEvent] = []
        for datagram in server.send(Array("hello client".utf8)) { events += client.handle(datagram: datagram, now: MonotonicTime.milliseconds(1)).events }
        #expect(events == [.applicationData(Array("hello client".utf8))])

        events = []
        for datagram in server.shutdown() { events += client.handle(datagram: datagram, now: MonotonicTime.milliseconds(2)).events }
        #expect(events == [.closed] && client.state == .closed)

        let server2 = try TestDTLSServer(profiles: SRTPProtectionProfile.allCases)
        let client2 = try DTLSEndpoint(certificate: try DTLSCertificate(), expectedFingerprints: [server2.fingerprint])
        pump(client2, server2, first: client2.start(now: MonotonicTime.milliseconds(0)))
        for datagram in client2.close().datagrams { _ = server2.handle(datagram) }
        #expect(server2.sawCloseNotify && client2.state == .closed)
    }
}
