/// AV1's leb128(): little-endian base-128, at most 8 bytes, value below 2^32 (AV1 spec §4.10.5).
public enum LEB128 {
    /// The value and the bytes it took, or nil when the bytes end first or the value is out of range.
    public static func read(_ bytes: ArraySlice<UInt8>) -> (value: Int, length: Int)? {
        var value: UInt64 = 0
        var index = bytes.startIndex
        for position in 0..<8 {
            guard index < bytes.endIndex else { return nil }
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << UInt64(7 * position)
            if byte & 0x80 == 0 {
                guard value <= UInt64(UInt32.max) else { return nil }
                return (Int(value), position + 1)
            }
        }
        return nil
    }

    public static func append(_ value: Int, to out: inout [UInt8]) {
        var value = UInt64(value)
        repeat {
            let byte = UInt8(value & 0x7F)
            value >>= 7
            out.append(value == 0 ? byte : byte | 0x80)
        } while value != 0
    }

    public static func encode(_ value: Int) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }
}
