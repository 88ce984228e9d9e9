/// DTLS-SRTP protection profiles (RFC 5764, RFC 7714) recbot offers, in preference order.
public enum SRTPProtectionProfile: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    case aeadAES128GCM = 0x0007
    case aes128CMSHA1_80 = 0x0001

    public var openSSLName: String {
        switch self {
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aes128CMSHA1_80: "SRTP_AES128_CM_SHA1_80"
        }
    }

    public var keyLength: Int { 16 }
    public var saltLength: Int { self == .aeadAES128GCM ? 12 : 14 }
    public var description: String { openSSLName }
}

/// Keys exported from the handshake (RFC 5764 §4.2). recbot is the DTLS client: it
/// receives with the server's keys and sends (RTCP) with the client's.
public struct SRTPKeyingMaterial: Sendable, Equatable {
    public var profile: SRTPProtectionProfile
    public var clientKey: [UInt8]
    public var clientSalt: [UInt8]
    public var serverKey: [UInt8]
    public var serverSalt: [UInt8]

    public init(profile: SRTPProtectionProfile, clientKey: [UInt8], clientSalt: [UInt8], serverKey: [UInt8], serverSalt: [UInt8]) {
        self.profile = profile
        self.clientKey = clientKey
        self.clientSalt = clientSalt
        self.serverKey = serverKey
        self.serverSalt = serverSalt
    }
}
