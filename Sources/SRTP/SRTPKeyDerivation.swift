import COpenSSLShim

/// RFC 3711 §4.3: session keys from the master key and salt, with AES-CM as the PRF and a key
/// derivation rate of 0 (what DTLS-SRTP uses: the keys never change within an association).
enum SRTPKeyDerivation {
    enum Label: UInt8 {
        case rtpKey = 0, rtpSalt = 2, rtcpKey = 3, rtcpSalt = 5
    }

    /// `length` bytes of the PRF's keystream for `label`, or nil for keys of the wrong size.
    /// The PRF takes a 112-bit salt; a 96-bit one (AES-GCM) is multiplied by 2^16 first
    /// (RFC 7714, erratum 4938), which is what libsrtp and libwebrtc do.
    static func derive(_ label: Label, masterKey: [UInt8], masterSalt: [UInt8], length: Int) -> [UInt8]? {
        guard masterKey.count == 16, masterSalt.count == 12 || masterSalt.count == 14, (1...64).contains(length) else { return nil }
        // The input block: (label || index DIV kdr) XOR salt in its top 112 bits, AES-CM's
        // block counter in the low 16.
        var block = [UInt8](repeating: 0, count: 16)
        block.replaceSubrange(0..<masterSalt.count, with: masterSalt)
        block[7] ^= label.rawValue
        var output: [UInt8] = []
        var counter: UInt8 = 0
        while output.count < length {
            block[15] = counter
            var encrypted = [UInt8](repeating: 0, count: 16)
            guard recbot_aes128_encrypt_block(masterKey, block, &encrypted) == 1 else { return nil }
            output += encrypted
            counter += 1
        }
        return Array(output.prefix(length))
    }
}
