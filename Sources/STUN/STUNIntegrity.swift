import COpenSSL
import CZlib
import MessageAuthentication

/// The cryptographic checks of STUN: HMAC-SHA1 (shared helper), MD5 (OpenSSL) and CRC-32 (zlib).
public enum STUNIntegrity {
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        MessageAuthentication.hmacSHA1(key: key, message: message)
    }

    /// CRC-32 of the message XORed with "STUN" (RFC 8489 §14.7).
    public static func fingerprint(of message: [UInt8]) -> UInt32 {
        let crc = message.withUnsafeBufferPointer { buffer in
            crc32(0, buffer.baseAddress, UInt32(buffer.count))
        }
        return UInt32(truncatingIfNeeded: crc) ^ 0x5354_554E
    }

    /// The long-term credential key MD5(username ":" realm ":" password) (RFC 8489 §9.2.2).
    /// The password must already be SASLprep'd (or OpaqueString-prepared).
    public static func longTermKey(username: String, realm: String, password: String) -> [UInt8] {
        let input = Array("\(username):\(realm):\(password)".utf8)
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        input.withUnsafeBufferPointer { buffer in
            _ = EVP_Digest(buffer.baseAddress, buffer.count, &digest, &length, EVP_md5(), nil)
        }
        return digest
    }
}
