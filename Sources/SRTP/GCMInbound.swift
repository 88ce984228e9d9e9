import COpenSSL
import COpenSSLShim
import CSRTP

/// Unprotects inbound AEAD_AES_128_GCM SRTP and SRTCP (RFC 7714), the profile recbot and
/// every browser prefer.
///
/// Why not libsrtp, which does the rest: Debian builds libsrtp2 on NSS, and its GCM creates and
/// destroys an NSS crypto context for every packet (`PK11_Decrypt`): 18 % of recbot's CPU with
/// 256 audio publishers, more than the media core. The cipher here is still OpenSSL's AES-GCM,
/// keyed once per direction and reused; written here is only SRTP's framing around it: the key
/// derivation, the IVs, the rollover counter and the replay window. libsrtp still protects
/// what recbot sends and unprotects the other profile, and it is the independent peer the
/// tests check this against.
final class GCMInbound {
    static let tagBytes = 16
    /// SSRCs with state: more than any Sora session sends to one subscriber. Only a packet that
    /// authenticated (the peer holds the keys) creates one.
    static let maximumStreams = 4_096

    private let rtpContext: OpaquePointer
    private let rtcpContext: OpaquePointer
    private let rtpSalt: [UInt8]
    private let rtcpSalt: [UInt8]
    private var rtpWindows: [UInt32: ReplayWindow] = [:]
    private var rtcpWindows: [UInt32: ReplayWindow] = [:]
    /// The IV, rebuilt per packet in place (no allocation on the packet path).
    private var iv = [UInt8](repeating: 0, count: 12)

    /// `key`: the 16-byte master key then the 12-byte master salt.
    init(masterKeyAndSalt key: [UInt8]) throws(SRTPError) {
        let masterKey = Array(key.prefix(16)), masterSalt = Array(key.dropFirst(16))
        guard key.count == 28,
              let rtpKey = SRTPKeyDerivation.derive(.rtpKey, masterKey: masterKey, masterSalt: masterSalt, length: 16),
              let rtpSalt = SRTPKeyDerivation.derive(.rtpSalt, masterKey: masterKey, masterSalt: masterSalt, length: 12),
              let rtcpKey = SRTPKeyDerivation.derive(.rtcpKey, masterKey: masterKey, masterSalt: masterSalt, length: 16),
              let rtcpSalt = SRTPKeyDerivation.derive(.rtcpSalt, masterKey: masterKey, masterSalt: masterSalt, length: 12)
        else { throw .setup(code: UInt32(srtp_err_status_bad_param.rawValue)) }
        guard let rtp = recbot_aes_gcm_context(rtpKey) else { throw .setup(code: UInt32(srtp_err_status_init_fail.rawValue)) }
        guard let rtcp = recbot_aes_gcm_context(rtcpKey) else {
            EVP_CIPHER_CTX_free(rtp)
            throw .setup(code: UInt32(srtp_err_status_init_fail.rawValue))
        }
        (rtpContext, rtcpContext, self.rtpSalt, self.rtcpSalt) = (rtp, rtcp, rtpSalt, rtcpSalt)
    }

    deinit {
        EVP_CIPHER_CTX_free(rtpContext)
        EVP_CIPHER_CTX_free(rtcpContext)
    }

    /// Authenticates and decrypts the first `count` bytes of `buffer` in place; returns the
    /// plain RTP's length (the tag removed).
    func unprotectRTP(_ buffer: UnsafeMutableRawBufferPointer, count: Int) throws(SRTPError) -> Int {
        guard count <= buffer.count, let header = RTPHeaderBounds(buffer, count: count, trailer: Self.tagBytes) else {
            throw .malformed(code: UInt32(srtp_err_status_bad_param.rawValue))
        }
        let window = rtpWindows[header.ssrc]
        let index = window.map { Self.estimateIndex(sequence: header.sequence, highest: $0.highest) } ?? Int64(header.sequence)
        switch window?.check(index) ?? .fresh {
        case .fresh: break
        case .replayed, .tooOld: throw .replayed
        }
        guard index >> 16 <= Int64(UInt32.max) else { throw .malformed(code: UInt32(srtp_err_status_key_expired.rawValue)) }
        setRTPIV(ssrc: header.ssrc, rollover: UInt32(truncatingIfNeeded: index >> 16), sequence: UInt16(truncatingIfNeeded: index))
        let tagStart = count - Self.tagBytes
        try open(rtpContext, buffer, aad: 0..<header.length, extraAAD: nil, data: header.length..<tagStart, tagAt: tagStart)
        try accept(index, ssrc: header.ssrc, in: &rtpWindows, isNew: window == nil)
        return tagStart
    }

    /// The same for an SRTCP compound: its trailer is the tag, then the E flag and the 31-bit
    /// SRTCP index. Returns the plain RTCP's length.
    func unprotectRTCP(_ buffer: UnsafeMutableRawBufferPointer, count: Int) throws(SRTPError) -> Int {
        guard count <= buffer.count, count >= 8 + Self.tagBytes + 4, buffer[0] >> 6 == 2 else {
            throw .malformed(code: UInt32(srtp_err_status_bad_param.rawValue))
        }
        let trailerStart = count - 4
        let trailer = Self.readUInt32(buffer, at: trailerStart)
        let encrypted = trailer & 0x8000_0000 != 0
        let index = Int64(trailer & 0x7FFF_FFFF)
        let ssrc = Self.readUInt32(buffer, at: 4)
        let window = rtcpWindows[ssrc]
        switch window?.check(index) ?? .fresh {
        case .fresh: break
        case .replayed, .tooOld: throw .replayed
        }
        setRTCPIV(ssrc: ssrc, index: UInt32(index))
        let tagStart = trailerStart - Self.tagBytes
        // §9.2: the AAD is the first 8 octets and the E||index word when the rest is
        // encrypted; everything before the tag and that word when it is not.
        let aad = encrypted ? 0..<8 : 0..<tagStart
        try open(rtcpContext, buffer, aad: aad, extraAAD: trailerStart..<count, data: encrypted ? 8..<tagStart : tagStart..<tagStart, tagAt: tagStart)
        try accept(index, ssrc: ssrc, in: &rtcpWindows, isNew: window == nil)
        return tagStart
    }

    /// RFC 3711 §3.3.1: the packet's index, from its sequence number and the highest index
    /// accepted: the rollover counter that puts it nearest. Negative before the first rollover.
    static func estimateIndex(sequence: UInt16, highest: Int64) -> Int64 {
        let rollover = highest >> 16, highestSequence = highest & 0xFFFF, sequence = Int64(sequence)
        var estimated = rollover
        if highestSequence < 0x8000 {
            if sequence - highestSequence > 0x8000 { estimated = rollover - 1 }
        } else if highestSequence - 0x8000 > sequence {
            estimated = rollover + 1
        }
        return estimated << 16 | sequence
    }

    private func accept(_ index: Int64, ssrc: UInt32, in windows: inout [UInt32: ReplayWindow], isNew: Bool) throws(SRTPError) {
        guard !isNew || windows.count < Self.maximumStreams else { throw .tooManyStreams }
        windows[ssrc, default: ReplayWindow()].accept(index)
    }

    /// RFC 7714 §8.1: 00 00 || SSRC || ROC || SEQ, XOR the session salt.
    private func setRTPIV(ssrc: UInt32, rollover: UInt32, sequence: UInt16) {
        setSaltedPrefix(rtpSalt, ssrc: ssrc)
        setSalted(rtpSalt, rollover, at: 6)
        iv[10] = rtpSalt[10] ^ UInt8(truncatingIfNeeded: sequence >> 8)
        iv[11] = rtpSalt[11] ^ UInt8(truncatingIfNeeded: sequence)
    }

    /// RFC 7714 §9.1: 00 00 || SSRC || 00 00 || 0 || SRTCP index, XOR the session salt.
    private func setRTCPIV(ssrc: UInt32, index: UInt32) {
        setSaltedPrefix(rtcpSalt, ssrc: ssrc)
        iv[6] = rtcpSalt[6]
        iv[7] = rtcpSalt[7]
        setSalted(rtcpSalt, index, at: 8)
    }

    /// The two zero octets and the SSRC, both IVs' first six.
    private func setSaltedPrefix(_ salt: [UInt8], ssrc: UInt32) {
        iv[0] = salt[0]
        iv[1] = salt[1]
        setSalted(salt, ssrc, at: 2)
    }

    private func setSalted(_ salt: [UInt8], _ word: UInt32, at offset: Int) {
        for byte in 0..<4 { iv[offset + byte] = salt[offset + byte] ^ UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * byte)) }
    }

    private func open(_ context: OpaquePointer, _ buffer: UnsafeMutableRawBufferPointer, aad: Range<Int>, extraAAD: Range<Int>?,
                      data: Range<Int>, tagAt tag: Int) throws(SRTPError) {
        let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let extra = extraAAD ?? 0..<0
        let opened = iv.withUnsafeBufferPointer { iv in
            recbot_aes_gcm_open(context, iv.baseAddress, base + aad.lowerBound, Int32(aad.count), base + extra.lowerBound, Int32(extra.count),
                                base + data.lowerBound, Int32(data.count), base + tag)
        }
        guard opened == 1 else { throw .authenticationFailed }
    }

    static func readUInt32(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(buffer[offset]) << 24 | UInt32(buffer[offset + 1]) << 16 | UInt32(buffer[offset + 2]) << 8 | UInt32(buffer[offset + 3])
    }
}

/// Where an SRTP packet's header ends (the AAD) and what it names, checked against the bytes.
struct RTPHeaderBounds {
    let length: Int
    let ssrc: UInt32
    let sequence: UInt16

    /// Nil unless a version 2 header, its CSRCs and extension fit before a `trailer`-byte tag.
    init?(_ buffer: UnsafeMutableRawBufferPointer, count: Int, trailer: Int) {
        guard count >= 12 + trailer, buffer[0] >> 6 == 2 else { return nil }
        var length = 12 + 4 * Int(buffer[0] & 0x0F)
        if buffer[0] & 0x10 != 0 {
            guard length + 4 <= count - trailer else { return nil }
            length += 4 + 4 * (Int(buffer[length + 2]) << 8 | Int(buffer[length + 3]))
        }
        guard length <= count - trailer else { return nil }
        self.length = length
        ssrc = GCMInbound.readUInt32(buffer, at: 8)
        sequence = UInt16(buffer[2]) << 8 | UInt16(buffer[3])
    }
}
