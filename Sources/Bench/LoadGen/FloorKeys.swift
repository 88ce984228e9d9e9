import DTLS
import Keying
import SRTP
import WireCoding

/// The SRTP keys of the floor benchmark: `recbot-loadgen --floor` protects with them and
/// `recbot-floor` unprotects, so the floor pays for SRTP exactly as recbot does without a
/// handshake. Fixed and public on purpose: only ever used on loopback for measurements.
public enum FloorKeys {
    public static let material: SRTPKeyingMaterial = {
        var random = SplitMix64(seed: 0x666C_6F6F_72)  // "floor"
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        let profile = SRTPProtectionProfile.aeadAES128GCM  // what recbot and the generator negotiate
        return SRTPKeyingMaterial(profile: profile, clientKey: bytes(profile.keyLength), clientSalt: bytes(profile.saltLength),
                                  serverKey: bytes(profile.keyLength), serverSalt: bytes(profile.saltLength))
    }()
}
