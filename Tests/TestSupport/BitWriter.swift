/// Writes bits MSB first, and H.264's Exp-Golomb codes, to build bitstreams by hand: the
/// tests' one bit writer, the mirror of `Bitstreams.BitReader`.
public struct BitWriter {
    public init() {}

    public private(set) var bits: [Bool] = []

    public mutating func write(_ value: UInt64, _ count: Int) {
        for index in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> UInt64(index) & 1 == 1) }
    }

    public mutating func ue(_ value: UInt64) {
        let code = value + 1, length = 64 - code.leadingZeroBitCount
        write(0, length - 1)
        write(code, length)
    }

    public mutating func se(_ value: Int64) { ue(value > 0 ? UInt64(2 * value - 1) : UInt64(-2 * value)) }

    /// The bits, padded with zeros to whole bytes.
    public var bytes: [UInt8] {
        let padded = bits + Array(repeating: false, count: (8 - bits.count % 8) % 8)
        return stride(from: 0, to: padded.count, by: 8).map { start in padded[start..<(start + 8)].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) } }
    }

    /// An RBSP as a NAL unit carries it: the stop bit, zeros to a whole byte, and emulation
    /// prevention (no 00 00 0x inside a NAL unit).
    public func rbsp() -> [UInt8] {
        var padded = self
        padded.write(1, 1)
        var bytes: [UInt8] = []
        var zeros = 0
        for byte in padded.bytes {
            if zeros >= 2 && byte <= 3 {
                bytes.append(3)
                zeros = 0
            }
            bytes.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return bytes
    }
}
