/// Why a codec bitstream could not be read.
public enum BitstreamError: Error, Equatable, Sendable {
    case truncated
    case invalid(String)
}

/// MSB-first bit reader over untrusted bytes: every read is bounds-checked.
public struct BitReader: Sendable {
    private let bytes: ArraySlice<UInt8>
    private var bitOffset = 0

    public init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    public var bitsLeft: Int { bytes.count * 8 - bitOffset }

    public mutating func read(_ count: Int) throws(BitstreamError) -> UInt64 {
        guard count >= 0, count <= 64 else { throw .invalid("read of \(count) bits") }
        guard count <= bitsLeft else { throw .truncated }
        var value: UInt64 = 0
        for _ in 0..<count {
            let byte = bytes[bytes.startIndex + bitOffset >> 3]
            value = value << 1 | UInt64(byte >> (7 - UInt8(bitOffset & 7)) & 1)
            bitOffset += 1
        }
        return value
    }

    public mutating func flag() throws(BitstreamError) -> Bool { try read(1) == 1 }

    /// AV1 uvlc(): leading zeros, a one, then as many value bits.
    public mutating func readUVLC() throws(BitstreamError) -> UInt64 {
        var leadingZeros = 0
        while try read(1) == 0 {
            leadingZeros += 1
            if leadingZeros >= 32 { throw .invalid("uvlc longer than 32 bits") }
        }
        return try read(leadingZeros) + (UInt64(1) << UInt64(leadingZeros)) - 1
    }
}

extension BitReader {
    /// H.264's ue(v) (ITU-T H.264 §9.1): leading zeros, a one, then as many value bits. Values
    /// are 32-bit in every syntax element recbot reads, so a longer prefix is invalid.
    public mutating func readUnsignedExpGolomb() throws(BitstreamError) -> UInt32 {
        var leadingZeros = 0
        while try read(1) == 0 {
            leadingZeros += 1
            if leadingZeros > 31 { throw .invalid("Exp-Golomb code longer than 32 bits") }
        }
        return UInt32(try read(leadingZeros) + (UInt64(1) << UInt64(leadingZeros)) - 1)
    }

    /// H.264's se(v) (§9.1.1): ue(v) mapped to 0, 1, −1, 2, −2…
    public mutating func readSignedExpGolomb() throws(BitstreamError) -> Int32 {
        let code = Int64(try readUnsignedExpGolomb())
        return Int32(code & 1 == 1 ? (code + 1) / 2 : -(code / 2))
    }

    /// Reads and discards `count` bits.
    public mutating func skip(_ count: Int) throws(BitstreamError) {
        var left = count
        while left > 0 {
            let step = min(left, 64)
            _ = try read(step)
            left -= step
        }
    }
}
