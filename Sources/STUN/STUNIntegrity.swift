import COpenSSL
import CZlib

/// The cryptographic checks of STUN, on OpenSSL (HMAC-SHA1, MD5) and zlib (CRC-32).
public enum STUNIntegrity {
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                _ = HMAC(EVP_sha1(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, &digest, &length)
            }
        }
        return digest
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

    /// Compares MACs without leaking where they differ through timing.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
