/// CRC-32C (Castagnoli), SCTP's checksum (RFC 9260 Appendix A).
///
/// Hand-written: none of recbot's libraries has it (zlib is CRC-32, OpenSSL has none), and a
/// table-driven loop is small and well understood.
public enum CRC32c {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
