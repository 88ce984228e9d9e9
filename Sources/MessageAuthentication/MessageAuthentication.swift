import COpenSSL

/// HMAC on OpenSSL and a constant-time comparison, shared by STUN (MESSAGE-INTEGRITY) and
/// SCTP (state cookies).
public enum MessageAuthentication {
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] { hmac(EVP_sha1(), size: 20, key: key, message: message) }
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] { hmac(EVP_sha256(), size: 32, key: key, message: message) }

    /// Compares MACs without leaking where they differ through timing.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    private static func hmac(_ digest: OpaquePointer?, size: Int, key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                _ = HMAC(digest, k.baseAddress, Int32(k.count), m.baseAddress, m.count, &output, &length)
            }
        }
        return output
    }
}
