/// AV1 OBU types recbot looks at (AV1 spec §6.2.2).
public enum AV1OBUType: UInt8, Sendable {
    case sequenceHeader = 1
    case temporalDelimiter = 2
    case frameHeader = 3
    case tileGroup = 4
    case metadata = 5
    case frame = 6
    case redundantFrameHeader = 7
    case tileList = 8
    case padding = 15
}

/// An OBU header (AV1 spec §5.3.1): type, optional extension, optional size field.
public struct AV1OBUHeader: Sendable, Equatable {
    public var type: UInt8
    /// The extension byte (temporal and spatial id), when present.
    public var extensionByte: UInt8?
    public var hasSizeField: Bool

    public var temporalID: Int { Int((extensionByte ?? 0) >> 5) }
    public var spatialID: Int { Int(((extensionByte ?? 0) >> 3) & 0x03) }
    /// Bytes of the header itself (one, or two with the extension).
    public var length: Int { extensionByte == nil ? 1 : 2 }

    public init(type: UInt8, extensionByte: UInt8? = nil, hasSizeField: Bool) {
        self.type = type
        self.extensionByte = extensionByte
        self.hasSizeField = hasSizeField
    }

    public init(parsing bytes: ArraySlice<UInt8>) throws(BitstreamError) {
        guard let first = bytes.first else { throw .truncated }
        guard first & 0x80 == 0 else { throw .invalid("OBU forbidden bit set") }
        type = (first >> 3) & 0x0F
        hasSizeField = first & 0x02 != 0
        if first & 0x04 != 0 {
            guard bytes.count >= 2 else { throw .truncated }
            extensionByte = bytes[bytes.startIndex + 1]
        }
    }

    /// The header with obu_has_size_field set, as the low-overhead bitstream format wants it.
    public func appendSized(to out: inout [UInt8]) {
        out.append(type << 3 | (extensionByte == nil ? 0 : 0x04) | 0x02)
        if let extensionByte { out.append(extensionByte) }
    }
}

/// One OBU of a low-overhead bitstream: header and payload range within the buffer.
public struct AV1OBU: Sendable {
    public var header: AV1OBUHeader
    public var payload: Range<Int>

    /// Reads the OBU at `offset`; without a size field it runs to the end of `bytes`.
    public init(in bytes: ArraySlice<UInt8>, at offset: Int) throws(BitstreamError) {
        guard offset >= bytes.startIndex, offset < bytes.endIndex else { throw .truncated }
        header = try AV1OBUHeader(parsing: bytes[offset...])
        let cursor = offset + header.length
        guard header.hasSizeField else {
            payload = cursor..<bytes.endIndex
            return
        }
        guard let (size, sizeLength) = LEB128.read(bytes[cursor...]) else { throw .invalid("OBU size field truncated or too large") }
        let start = cursor + sizeLength
        guard size <= bytes.endIndex - start else { throw .truncated }
        payload = start..<(start + size)
    }

    /// Every OBU of a low-overhead temporal unit, in order.
    public static func split(_ bytes: ArraySlice<UInt8>) throws(BitstreamError) -> [AV1OBU] {
        var obus: [AV1OBU] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let obu = try AV1OBU(in: bytes, at: offset)
            obus.append(obu)
            offset = obu.payload.upperBound
        }
        return obus
    }
}
