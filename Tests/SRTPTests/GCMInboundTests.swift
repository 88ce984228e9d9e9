import Keying
import Testing
import WireCoding
@testable import SRTP

/// recbot's AES-GCM unprotect against libsrtp's protect (an independent implementation of
/// RFC 7714), and the key derivation against RFC 3711's own vector.
@Suite struct GCMInboundTests {
    static func keys(seed: UInt64 = 1) -> SRTPKeyingMaterial {
        var random = SplitMix64(seed: seed)
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        return SRTPKeyingMaterial(profile: .aeadAES128GCM, clientKey: bytes(16), clientSalt: bytes(12), serverKey: bytes(16), serverSalt: bytes(12))
    }

    /// A version 2 RTP packet with CSRCs, a header extension and padding as asked.
    static func rtp(sequence: UInt16, ssrc: UInt32, payload: Int, csrcs: Int = 0, extensionWords: Int? = nil, padding: UInt8 = 0) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | (padding > 0 ? 0x20 : 0) | (extensionWords != nil ? 0x10 : 0) | UInt8(csrcs), 111,
                              UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x12, 0x34]
        bytes += [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
        for csrc in 0..<csrcs { bytes += [0, 0, 0, UInt8(csrc)] }
        if let words = extensionWords {
            bytes += [0xBE, 0xDE, 0, UInt8(words)] + [UInt8](repeating: 0x11, count: 4 * words)
        }
        bytes += (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        if padding > 0 { bytes += [UInt8](repeating: 0, count: Int(padding) - 1) + [padding] }
        return bytes
    }

    /// RFC 3711 Appendix B.3.
    @Test func keyDerivationMatchesRFC3711() {
        let key = hex("E1F97A0D3E018BE0D64FA32C06DE4139"), salt = hex("0EC675AD498AFEEBB6960B3AABE6")
        #expect(SRTPKeyDerivation.derive(.rtpKey, masterKey: key, masterSalt: salt, length: 16) == hex("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(SRTPKeyDerivation.derive(.rtpSalt, masterKey: key, masterSalt: salt, length: 14) == hex("30CBBC08863D8C85D49DB34A9AE1"))
        #expect(SRTPKeyDerivation.derive(.rtpKey, masterKey: Array(key.prefix(15)), masterSalt: salt, length: 16) == nil)
    }

    /// Every shape of packet, from several SSRCs, through two rollovers of the sequence number.
    @Test func libsrtpsPacketsOpenThroughRollovers() throws {
        let keys = Self.keys()
        let sender = try SRTPSession(peerOf: keys), receiver = try SRTPSession(keys: keys)
        var random = SplitMix64(seed: 9)
        // The first SSRC wraps twice; the others start at random, just before a wrap or not.
        let runs: [(ssrc: UInt32, start: UInt16, count: Int)] = [(1, 65_000, 67_000), (0xFFFF_FFFF, 65_535, 2_000),
                                                                 (0x8000_1234, UInt16(truncatingIfNeeded: random.next()), 2_000)]
        for (ssrc, start, count) in runs {
            for step in 0..<count {
                let sequence = start &+ UInt16(truncatingIfNeeded: step)
                let choice = random.next()
                let plain = Self.rtp(sequence: sequence, ssrc: ssrc, payload: Int(choice % 300), csrcs: Int(choice >> 9 % 3),
                                     extensionWords: choice & 0x100 != 0 ? Int(choice >> 12 % 4) : nil,
                                     padding: choice & 0x1000 != 0 ? UInt8(1 + choice >> 20 % 8) : 0)
                var packet = try sender.protectRTP(plain)
                try receiver.unprotectRTP(&packet)
                guard packet == plain else {
                    Issue.record("SSRC \(ssrc) sequence \(sequence) (step \(step)) opened wrong")
                    return
                }
            }
        }
        #expect(receiver.counters.rtpUnprotected == 71_000 && receiver.counters.authenticationFailures == 0)
    }

    /// Reordered within the window: each packet opens once; a copy is a replay; a packet older
    /// than the window is refused (its rollover counter is still right across the wrap).
    @Test func reorderedPacketsOpenOnceAndReplaysAreRefused() throws {
        let keys = Self.keys(seed: 2)
        let sender = try SRTPSession(peerOf: keys), receiver = try SRTPSession(keys: keys)
        let sequences = (0..<3_000).map { UInt16(truncatingIfNeeded: 64_000 + $0) }
        let protected = try sequences.map { try sender.protectRTP(Self.rtp(sequence: $0, ssrc: 7, payload: 40)) }
        // Blocks of 64 delivered backwards: every packet late by up to 63 within its block.
        var order: [Int] = []
        for block in stride(from: 0, to: protected.count, by: 64) { order += (block..<min(block + 64, protected.count)).reversed() }
        for index in order {
            var packet = protected[index]
            try receiver.unprotectRTP(&packet)
        }
        #expect(receiver.counters.rtpUnprotected == protected.count)
        var copy = protected[2_990]
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(&copy) }
        var old = protected[100]
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(&old) }
        #expect(receiver.counters.replays == 2)
    }

    @Test func anyChangedByteFailsAuthentication() throws {
        let keys = Self.keys(seed: 3)
        let sender = try SRTPSession(peerOf: keys), receiver = try SRTPSession(keys: keys)
        let original = try sender.protectRTP(Self.rtp(sequence: 10, ssrc: 5, payload: 30, csrcs: 1, extensionWords: 1))
        for position in original.indices {
            var tampered = original
            tampered[position] ^= 0x01
            do {
                try receiver.unprotectRTP(&tampered)
                Issue.record("byte \(position) changed and the packet opened")
            } catch {
                #expect(error == .authenticationFailed || error == .malformed(code: 2), "byte \(position): \(error)")
            }
        }
        // Truncations: too short for a header and tag, or a header that runs past the tag.
        for length in [0, 1, 12, 27, 40] {
            var short = Array(original.prefix(length))
            #expect(throws: SRTPError.self) { try receiver.unprotectRTP(&short) }
        }
        var intact = original
        try receiver.unprotectRTP(&intact)  // nothing above was accepted, so this is no replay
        #expect(receiver.counters.rtpUnprotected == 1)
    }

    @Test func rtcpOpensBothWaysAndReplaysAreRefused() throws {
        let keys = Self.keys(seed: 4)
        let recbot = try SRTPSession(keys: keys), publisher = try SRTPSession(peerOf: keys)
        // A receiver report with one block, then a PLI: what recbot sends.
        let report: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0xAB, 0xCD] + [UInt8](repeating: 3, count: 24)
        let pli: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0xAB, 0xCD, 0, 0, 0, 9]
        for _ in 0..<3 {
            var packet = try recbot.protectRTCP(report + pli)
            let sent = packet
            try publisher.unprotectRTCP(&packet)
            #expect(packet == report + pli)
            var again = sent
            #expect(throws: SRTPError.replayed) { try publisher.unprotectRTCP(&again) }
        }
        // The other direction: a sender report from the publisher.
        let senderReport: [UInt8] = [0x80, 200, 0, 6, 0, 0, 0, 7] + [UInt8](repeating: 9, count: 20)
        var packet = try publisher.protectRTCP(senderReport)
        try recbot.unprotectRTCP(&packet)
        #expect(packet == senderReport)
        var tampered = try publisher.protectRTCP(senderReport)
        tampered[tampered.count - 5] ^= 1  // the tag's last byte
        #expect(throws: SRTPError.authenticationFailed) { try recbot.unprotectRTCP(&tampered) }
    }

    @Test func theIndexEstimateFollowsRFC3711() {
        #expect(GCMInbound.estimateIndex(sequence: 5, highest: 65_530) == 65_536 + 5)
        #expect(GCMInbound.estimateIndex(sequence: 65_530, highest: 65_536 + 5) == 65_530)
        #expect(GCMInbound.estimateIndex(sequence: 65_530, highest: 3) == 65_530 - 65_536)  // before the first: refused
        #expect(GCMInbound.estimateIndex(sequence: 40_000, highest: 10) == 40_000 - 65_536)
        #expect(GCMInbound.estimateIndex(sequence: 20_000, highest: 10) == 20_000)
    }

    private func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
        }
    }
}
