/// Encodes EBML (RFC 8794) elements into a byte buffer.
///
/// Hand-written: Debian ships no libwebm muxer headers, and the Sora-compatible
/// layout needs control over every element (see recording-format.md).
struct EBMLWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Appends an element ID as written in the spec (the marker bits are part of the ID).
    mutating func writeID(_ id: UInt32) {
        if id > 0xFF_FFFF { bytes.append(UInt8(truncatingIfNeeded: id >> 24)) }
        if id > 0xFFFF { bytes.append(UInt8(truncatingIfNeeded: id >> 16)) }
        if id > 0xFF { bytes.append(UInt8(truncatingIfNeeded: id >> 8)) }
        bytes.append(UInt8(truncatingIfNeeded: id))
    }

    /// Appends an element data size as a variable-length integer.
    /// `width` forces a fixed width (1...8), used where a size is patched later.
    mutating func writeSize(_ size: UInt64, width: Int? = nil) {
        let length = width ?? EBMLWriter.minimalSizeWidth(size)
        precondition((1...8).contains(length), "EBML size width out of range")
        let marker = UInt64(1) << UInt64(7 * length)
        let value = marker | size
        for index in stride(from: length - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index)))
        }
    }

    /// The 8-byte "unknown size" marker (all value bits set).
    mutating func writeUnknownSize() {
        bytes.append(0x01)
        bytes.append(contentsOf: repeatElement(0xFF, count: 7))
    }

    /// Smallest width whose value bits can hold `size` without being the all-ones (unknown) pattern.
    static func minimalSizeWidth(_ size: UInt64) -> Int {
        var width = 1
        while width < 8 && size >= (UInt64(1) << UInt64(7 * width)) - 1 { width += 1 }
        return width
    }

    static func minimalUIntWidth(_ value: UInt64) -> Int {
        var width = 1
        while width < 8 && value >> UInt64(8 * width) != 0 { width += 1 }
        return width
    }

    mutating func writeBigEndian(_ value: UInt64, width: Int) {
        for index in stride(from: width - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index)))
        }
    }

    mutating func writeUInt(_ id: UInt32, _ value: UInt64, width: Int? = nil) {
        let length = width ?? EBMLWriter.minimalUIntWidth(value)
        writeID(id)
        writeSize(UInt64(length))
        writeBigEndian(value, width: length)
    }

    mutating func writeFloat(_ id: UInt32, _ value: Double) {
        writeID(id)
        writeSize(8)
        writeBigEndian(value.bitPattern, width: 8)
    }

    mutating func writeString(_ id: UInt32, _ value: String) {
        writeBinary(id, Array(value.utf8))
    }

    mutating func writeBinary(_ id: UInt32, _ value: [UInt8]) {
        writeID(id)
        writeSize(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends a master element whose body is produced by `body` into a scratch writer.
    mutating func writeMaster(_ id: UInt32, _ body: (inout EBMLWriter) -> Void) {
        var inner = EBMLWriter()
        body(&inner)
        writeID(id)
        writeSize(UInt64(inner.count))
        bytes.append(contentsOf: inner.bytes)
    }

    /// A Void element occupying exactly `totalLength` bytes (header included), `totalLength >= 2`.
    mutating func writeVoid(totalLength: Int) {
        precondition(totalLength >= 2, "a Void element needs at least two bytes")
        // One ID byte; the size field takes one byte up to 126 and more beyond.
        var sizeWidth = 1
        while EBMLWriter.minimalSizeWidth(UInt64(totalLength - 1 - sizeWidth)) > sizeWidth { sizeWidth += 1 }
        writeID(WebMElementID.void)
        writeSize(UInt64(totalLength - 1 - sizeWidth), width: sizeWidth)
        bytes.append(contentsOf: repeatElement(0, count: totalLength - 1 - sizeWidth))
    }

    mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }
    mutating func append(_ byte: UInt8) { bytes.append(byte) }
}
