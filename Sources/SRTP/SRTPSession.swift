import CSRTP
import Keying

public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case setup(code: UInt32)
    /// The packet failed authentication (tampered, wrong key, or not SRTP).
    case authenticationFailed
    /// The packet was seen before, or is older than the replay window.
    case replayed
    case malformed(code: UInt32)
    /// An authenticated packet of one SSRC more than the session keeps state for.
    case tooManyStreams

    public var description: String {
        switch self {
        case .setup(let code): "SRTP setup failed (libsrtp status \(code))"
        case .authenticationFailed: "SRTP authentication failed"
        case .replayed: "SRTP replay"
        case .malformed(let code): "SRTP packet rejected (libsrtp status \(code))"
        case .tooManyStreams: "SRTP packet of one SSRC too many (\(GCMInbound.maximumStreams) kept)"
        }
    }
}

/// Counts of what the receive path dropped, by reason.
public struct SRTPCounters: Equatable, Sendable {
    public var rtpUnprotected = 0
    public var rtcpUnprotected = 0
    public var rtcpProtected = 0
    public var authenticationFailures = 0
    public var replays = 0
    public var otherFailures = 0

    /// What succeeded. (Not a key path: resolving one on every packet cost a per-packet
    /// allocation and a runtime lookup on the hot path.)
    enum Success { case rtpUnprotected, rtcpUnprotected, rtcpProtected }

    mutating func count(_ success: Success) {
        switch success {
        case .rtpUnprotected: rtpUnprotected += 1
        case .rtcpUnprotected: rtcpUnprotected += 1
        case .rtcpProtected: rtcpProtected += 1
        }
    }
}

/// SRTP/SRTCP for one DTLS-SRTP association: unprotects what the peer (DTLS server) sends and
/// protects the RTCP recbot sends. Replay protection is on. libsrtp2 does all of it but
/// unprotecting AES-GCM, the usual profile, which `GCMInbound` does (see there for why).
public final class SRTPSession {
    /// Wide enough for retransmissions that arrive late (libwebrtc uses the same).
    public static let replayWindow = 1_024

    public private(set) var counters = SRTPCounters()
    /// libsrtp finds a packet's stream by walking a list of every SSRC in the session, so with
    /// hundreds of senders the walk dominated unprotect. The SSRCs are spread over sessions
    /// with the same keys (each SSRC always lands in the same one, its RTP and RTCP together),
    /// made on first use, which keeps every walk short.
    static let shardCount = 64
    private var inbound: [srtp_t?]
    private var outbound: [srtp_t?]
    private let profile: SRTPProtectionProfile
    private let receiveKey: [UInt8], sendKey: [UInt8]
    /// Inbound AES-GCM (nil for the other profile, which libsrtp unprotects).
    private let gcm: GCMInbound?

    private static let initialised: Bool = srtp_init() == srtp_err_status_ok

    /// `keys` from the DTLS client: inbound uses the server's key, outbound the client's.
    public convenience init(keys: SRTPKeyingMaterial) throws(SRTPError) {
        try self.init(profile: keys.profile, receiveKey: keys.serverKey + keys.serverSalt, sendKey: keys.clientKey + keys.clientSalt)
    }

    /// For tests and tools: a session that sends with the server's keys (the peer's view).
    public convenience init(peerOf keys: SRTPKeyingMaterial) throws(SRTPError) {
        try self.init(profile: keys.profile, receiveKey: keys.clientKey + keys.clientSalt, sendKey: keys.serverKey + keys.serverSalt)
    }

    private init(profile: SRTPProtectionProfile, receiveKey: [UInt8], sendKey: [UInt8]) throws(SRTPError) {
        guard SRTPSession.initialised else { throw .setup(code: UInt32(srtp_err_status_init_fail.rawValue)) }
        self.profile = profile
        self.receiveKey = receiveKey
        self.sendKey = sendKey
        inbound = Array(repeating: nil, count: Self.shardCount)
        outbound = Array(repeating: nil, count: Self.shardCount)
        // The keys are checked now, not at the first packet.
        if profile == .aeadAES128GCM {
            gcm = try GCMInbound(masterKeyAndSalt: receiveKey)
        } else {
            gcm = nil
            inbound[0] = try SRTPSession.create(profile: profile, key: receiveKey, type: ssrc_any_inbound)
        }
        do {
            outbound[0] = try SRTPSession.create(profile: profile, key: sendKey, type: ssrc_any_outbound)
        } catch {
            if inbound[0] != nil { srtp_dealloc(inbound[0]) }
            throw error
        }
    }

    deinit {
        for session in inbound + outbound where session != nil { srtp_dealloc(session) }
    }

    /// The shard of the packet's SSRC: RTP's at offset 8, RTCP's (the sender's) at 4.
    private static func shard(_ bytes: UnsafeRawBufferPointer, ssrcOffset: Int) -> Int {
        guard bytes.count >= ssrcOffset + 4 else { return 0 }
        let ssrc = UInt32(bytes[ssrcOffset]) << 24 | UInt32(bytes[ssrcOffset + 1]) << 16 | UInt32(bytes[ssrcOffset + 2]) << 8 | UInt32(bytes[ssrcOffset + 3])
        return Int((ssrc &* 0x9E37_79B1) >> 26) % shardCount
    }

    private func inboundSession(_ bytes: [UInt8], ssrcOffset: Int) -> srtp_t? {
        bytes.withUnsafeBytes { inboundSession($0, ssrcOffset: ssrcOffset) }
    }

    private func inboundSession(_ bytes: UnsafeRawBufferPointer, ssrcOffset: Int) -> srtp_t? {
        let index = Self.shard(bytes, ssrcOffset: ssrcOffset)
        if inbound[index] == nil { inbound[index] = try? SRTPSession.create(profile: profile, key: receiveKey, type: ssrc_any_inbound) }
        return inbound[index]
    }

    private func outboundSession(_ bytes: [UInt8], ssrcOffset: Int) -> srtp_t? {
        let index = bytes.withUnsafeBytes { Self.shard($0, ssrcOffset: ssrcOffset) }
        if outbound[index] == nil { outbound[index] = try? SRTPSession.create(profile: profile, key: sendKey, type: ssrc_any_outbound) }
        return outbound[index]
    }

    private static func create(profile: SRTPProtectionProfile, key: [UInt8], type: srtp_ssrc_type_t) throws(SRTPError) -> srtp_t? {
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CMSHA1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = type
        policy.window_size = UInt(replayWindow)
        policy.allow_repeat_tx = 0
        var session: srtp_t?
        var keyCopy = key
        let status = keyCopy.withUnsafeMutableBufferPointer { buffer -> srtp_err_status_t in
            policy.key = buffer.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok else { throw .setup(code: UInt32(status.rawValue)) }
        return session
    }

    /// Decrypts and authenticates an SRTP packet in place; on success `packet` is plain RTP.
    public func unprotectRTP(_ packet: inout [UInt8]) throws(SRTPError) {
        if let gcm { return try unprotectGCM(&packet) { buffer, count throws(SRTPError) in try gcm.unprotectRTP(buffer, count: count) } }
        let session = inboundSession(packet, ssrcOffset: 8)
        let status = Self.run(&packet, extra: 0) { pointer, length in srtp_unprotect(session, pointer, length) }
        try record(status, success: .rtpUnprotected)
    }

    /// Decrypts the first `count` bytes of `buffer` in place, with no copy and no allocation;
    /// returns the plain RTP's length. For callers that own a reusable buffer.
    public func unprotectRTP(in buffer: UnsafeMutableRawBufferPointer, count: Int) throws(SRTPError) -> Int {
        if let gcm { return try counted(.rtpUnprotected) { () throws(SRTPError) in try gcm.unprotectRTP(buffer, count: count) } }
        return try unprotect(in: buffer, count: count, ssrcOffset: 8, success: .rtpUnprotected) { srtp_unprotect($0, $1, $2) }
    }

    public func unprotectRTCP(in buffer: UnsafeMutableRawBufferPointer, count: Int) throws(SRTPError) -> Int {
        if let gcm { return try counted(.rtcpUnprotected) { () throws(SRTPError) in try gcm.unprotectRTCP(buffer, count: count) } }
        return try unprotect(in: buffer, count: count, ssrcOffset: 4, success: .rtcpUnprotected) { srtp_unprotect_rtcp($0, $1, $2) }
    }

    private func unprotect(in buffer: UnsafeMutableRawBufferPointer, count: Int, ssrcOffset: Int, success: SRTPCounters.Success,
                           _ call: (srtp_t?, UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) throws(SRTPError) -> Int {
        guard count > 0, count <= buffer.count, count <= Int(Int32.max), let base = buffer.baseAddress else {
            try record(srtp_err_status_bad_param, success: success)
            return 0
        }
        let session = inboundSession(UnsafeRawBufferPointer(rebasing: buffer[..<count]), ssrcOffset: ssrcOffset)
        var length = Int32(count)
        try record(call(session, base, &length), success: success)
        return Int(length)
    }

    public func unprotectRTCP(_ packet: inout [UInt8]) throws(SRTPError) {
        if let gcm { return try unprotectGCM(&packet, rtcp: true) { buffer, count throws(SRTPError) in try gcm.unprotectRTCP(buffer, count: count) } }
        let session = inboundSession(packet, ssrcOffset: 4)
        let status = Self.run(&packet, extra: 0) { pointer, length in srtp_unprotect_rtcp(session, pointer, length) }
        try record(status, success: .rtcpUnprotected)
    }

    /// Encrypts an RTCP compound packet recbot sends (RR, NACK, PLI).
    public func protectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        var bytes = packet
        let session = outboundSession(bytes, ssrcOffset: 4)
        let status = Self.run(&bytes, extra: Int(SRTP_MAX_TRAILER_LEN) + 4) { pointer, length in srtp_protect_rtcp(session, pointer, length) }
        try record(status, success: .rtcpProtected)
        return bytes
    }

    /// Encrypts RTP (the peer's direction; used by tests and tools playing the sender).
    public func protectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        var bytes = packet
        let session = outboundSession(bytes, ssrcOffset: 8)
        let status = Self.run(&bytes, extra: Int(SRTP_MAX_TRAILER_LEN)) { pointer, length in srtp_protect(session, pointer, length) }
        guard status == srtp_err_status_ok else { throw .malformed(code: UInt32(status.rawValue)) }
        return bytes
    }

    /// Runs a libsrtp call on the bytes, with `extra` writable room for a trailer; resizes to the result.
    private static func run(_ bytes: inout [UInt8], extra: Int, _ body: (UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) -> srtp_err_status_t {
        guard !bytes.isEmpty, bytes.count <= Int(Int32.max) - extra else { return srtp_err_status_bad_param }
        let original = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: extra))
        var length = Int32(original)
        let status = bytes.withUnsafeMutableBytes { buffer in body(buffer.baseAddress!, &length) }
        bytes.removeLast(bytes.count - (status == srtp_err_status_ok ? Int(length) : original))
        return status
    }

    /// In place; the array keeps the plain packet (its trailer cut off).
    private func unprotectGCM(_ packet: inout [UInt8], rtcp: Bool = false,
                              _ body: (UnsafeMutableRawBufferPointer, Int) throws(SRTPError) -> Int) throws(SRTPError) {
        let count = packet.count
        let length = try counted(rtcp ? .rtcpUnprotected : .rtpUnprotected) { () throws(SRTPError) in
            // withUnsafeMutableBytes rethrows untyped: the result carries the typed error out.
            let result = packet.withUnsafeMutableBytes { buffer in Result { () throws(SRTPError) in try body(buffer, count) } }
            return try result.get()
        }
        packet.removeLast(count - length)
    }

    /// Counts the outcome of a GCM unprotect the way `record` counts libsrtp's.
    private func counted(_ success: SRTPCounters.Success, _ body: () throws(SRTPError) -> Int) throws(SRTPError) -> Int {
        do {
            let length = try body()
            counters.count(success)
            return length
        } catch {
            switch error {
            case .authenticationFailed: counters.authenticationFailures += 1
            case .replayed: counters.replays += 1
            default: counters.otherFailures += 1
            }
            throw error
        }
    }

    private func record(_ status: srtp_err_status_t, success: SRTPCounters.Success) throws(SRTPError) {
        switch status {
        case srtp_err_status_ok:
            counters.count(success)
        case srtp_err_status_auth_fail:
            counters.authenticationFailures += 1
            throw .authenticationFailed
        case srtp_err_status_replay_fail, srtp_err_status_replay_old:
            counters.replays += 1
            throw .replayed
        default:
            counters.otherFailures += 1
            throw .malformed(code: UInt32(status.rawValue))
        }
    }
}
