/// Builds the AV1CodecConfigurationRecord ("av1C"), WebM's V_AV1 CodecPrivate, from a
/// sequence header OBU, and reports the sequence's maximum frame size.
///
/// Hand-written: no AV1 library is among recbot's declared dependencies, and only the
/// sequence header's leading fields are needed (AV1 spec §5.5, av1C in the AV1-ISOBMFF spec).
public struct AV1CodecConfiguration: Sendable, Equatable {
    public var seqProfile: UInt8
    public var seqLevelIdx0: UInt8
    public var seqTier0: UInt8
    public var highBitdepth: Bool
    public var twelveBit: Bool
    public var monochrome: Bool
    public var chromaSubsamplingX: Bool
    public var chromaSubsamplingY: Bool
    public var chromaSamplePosition: UInt8
    public var maxFrameWidth: Int
    public var maxFrameHeight: Int
    /// The sequence header OBU as it goes into configOBUs (with obu_has_size_field set).
    public var sequenceHeaderOBU: [UInt8]

    public enum ParseError: Error, Equatable {
        case truncated
        case noSequenceHeader
        case unsupportedOBU(reason: String)
    }

    /// The av1C record: 4 bytes of fields followed by the sequence header OBU.
    public var codecPrivate: [UInt8] {
        var out: [UInt8] = [0x81]  // marker 1, version 1
        out.append((seqProfile << 5) | (seqLevelIdx0 & 0x1F))
        var flags = seqTier0 << 7
        if highBitdepth { flags |= 0x40 }
        if twelveBit { flags |= 0x20 }
        if monochrome { flags |= 0x10 }
        if chromaSubsamplingX { flags |= 0x08 }
        if chromaSubsamplingY { flags |= 0x04 }
        flags |= chromaSamplePosition & 0x03
        out.append(flags)
        out.append(0)  // no initial_presentation_delay
        out.append(contentsOf: sequenceHeaderOBU)
        return out
    }

    /// Finds the first sequence header OBU in a temporal unit (low-overhead OBU format).
    public init(temporalUnit: [UInt8]) throws(ParseError) {
        var offset = 0
        while offset < temporalUnit.count {
            let obu = try AV1OBU(in: temporalUnit, at: offset)
            if obu.type == AV1OBU.sequenceHeader {
                let payload = Array(temporalUnit[obu.payloadRange])
                try self.init(sequenceHeaderPayload: payload)
                return
            }
            offset = obu.payloadRange.upperBound
        }
        throw .noSequenceHeader
    }

    /// Parses a sequence header OBU's payload (the bytes after its OBU header and size).
    public init(sequenceHeaderPayload payload: [UInt8]) throws(ParseError) {
        var bits = BitReader(payload)
        seqProfile = UInt8(try bits.read(3))
        guard seqProfile <= 2 else { throw .unsupportedOBU(reason: "seq_profile \(seqProfile)") }
        _ = try bits.read(1)  // still_picture
        let reducedStillPictureHeader = try bits.read(1) == 1
        seqTier0 = 0
        if reducedStillPictureHeader {
            seqLevelIdx0 = UInt8(try bits.read(5))
        } else {
            let timingInfoPresent = try bits.read(1) == 1
            var decoderModelInfoPresent = false
            var bufferDelayLength = 0
            if timingInfoPresent {
                _ = try bits.read(32)  // num_units_in_display_tick
                _ = try bits.read(32)  // time_scale
                if try bits.read(1) == 1 { _ = try bits.readUVLC() }  // equal_picture_interval
                decoderModelInfoPresent = try bits.read(1) == 1
                if decoderModelInfoPresent {
                    bufferDelayLength = Int(try bits.read(5)) + 1
                    _ = try bits.read(32)  // num_units_in_decoding_tick
                    _ = try bits.read(5)  // buffer_removal_time_length_minus_1
                    _ = try bits.read(5)  // frame_presentation_time_length_minus_1
                }
            }
            let initialDisplayDelayPresent = try bits.read(1) == 1
            let operatingPoints = Int(try bits.read(5)) + 1
            var level0: UInt8 = 0
            var tier0: UInt8 = 0
            for index in 0..<operatingPoints {
                _ = try bits.read(12)  // operating_point_idc
                let level = UInt8(try bits.read(5))
                let tier: UInt8 = level > 7 ? UInt8(try bits.read(1)) : 0
                if index == 0 { level0 = level; tier0 = tier }
                if decoderModelInfoPresent, try bits.read(1) == 1 {
                    _ = try bits.read(bufferDelayLength)  // decoder_buffer_delay
                    _ = try bits.read(bufferDelayLength)  // encoder_buffer_delay
                    _ = try bits.read(1)  // low_delay_mode_flag
                }
                if initialDisplayDelayPresent, try bits.read(1) == 1 { _ = try bits.read(4) }
            }
            seqLevelIdx0 = level0
            seqTier0 = tier0
        }
        let widthBits = Int(try bits.read(4)) + 1
        let heightBits = Int(try bits.read(4)) + 1
        maxFrameWidth = Int(try bits.read(widthBits)) + 1
        maxFrameHeight = Int(try bits.read(heightBits)) + 1
        var enableOrderHint = false
        if !reducedStillPictureHeader {
            if try bits.read(1) == 1 {  // frame_id_numbers_present_flag
                _ = try bits.read(4)
                _ = try bits.read(3)
            }
        }
        _ = try bits.read(3)  // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
        if !reducedStillPictureHeader {
            _ = try bits.read(4)  // interintra, masked compound, warped motion, dual filter
            enableOrderHint = try bits.read(1) == 1
            if enableOrderHint { _ = try bits.read(2) }  // jnt_comp, ref_frame_mvs
            var forceScreenContentTools: UInt64 = 2
            if try bits.read(1) == 0 { forceScreenContentTools = try bits.read(1) }
            if forceScreenContentTools > 0, try bits.read(1) == 0 { _ = try bits.read(1) }  // integer mv
            if enableOrderHint { _ = try bits.read(3) }
        }
        _ = try bits.read(3)  // enable_superres, enable_cdef, enable_restoration
        // color_config()
        highBitdepth = try bits.read(1) == 1
        twelveBit = (seqProfile == 2 && highBitdepth) ? try bits.read(1) == 1 : false
        monochrome = seqProfile == 1 ? false : try bits.read(1) == 1
        var colorPrimaries: UInt64 = 2, transfer: UInt64 = 2, matrix: UInt64 = 2
        if try bits.read(1) == 1 {
            colorPrimaries = try bits.read(8)
            transfer = try bits.read(8)
            matrix = try bits.read(8)
        }
        chromaSamplePosition = 0
        if monochrome {
            _ = try bits.read(1)  // color_range
            chromaSubsamplingX = true
            chromaSubsamplingY = true
        } else if colorPrimaries == 1 && transfer == 13 && matrix == 0 {  // sRGB
            chromaSubsamplingX = false
            chromaSubsamplingY = false
        } else {
            _ = try bits.read(1)  // color_range
            switch seqProfile {
            case 0: chromaSubsamplingX = true; chromaSubsamplingY = true
            case 1: chromaSubsamplingX = false; chromaSubsamplingY = false
            default:
                if twelveBit {
                    chromaSubsamplingX = try bits.read(1) == 1
                    chromaSubsamplingY = chromaSubsamplingX ? try bits.read(1) == 1 : false
                } else {
                    chromaSubsamplingX = true
                    chromaSubsamplingY = false
                }
            }
            if chromaSubsamplingX && chromaSubsamplingY { chromaSamplePosition = UInt8(try bits.read(2)) }
        }
        // configOBUs carry the OBU with its header and an explicit size field.
        var obu: [UInt8] = [AV1OBU.sequenceHeader << 3 | 0x02]
        obu.append(contentsOf: AV1OBU.leb128(UInt64(payload.count)))
        obu.append(contentsOf: payload)
        sequenceHeaderOBU = obu
    }
}

/// One OBU header in a low-overhead bitstream.
struct AV1OBU {
    static let sequenceHeader: UInt8 = 1
    static let temporalDelimiter: UInt8 = 2

    var type: UInt8
    var payloadRange: Range<Int>

    init(in bytes: [UInt8], at offset: Int) throws(AV1CodecConfiguration.ParseError) {
        guard offset < bytes.count else { throw .truncated }
        let header = bytes[offset]
        guard header & 0x80 == 0 else { throw .unsupportedOBU(reason: "forbidden bit set") }
        type = (header >> 3) & 0x0F
        let hasExtension = header & 0x04 != 0
        let hasSize = header & 0x02 != 0
        var cursor = offset + 1 + (hasExtension ? 1 : 0)
        guard cursor <= bytes.count else { throw .truncated }
        guard hasSize else {
            // Without a size field the OBU runs to the end of the buffer.
            payloadRange = cursor..<bytes.count
            return
        }
        var size: UInt64 = 0
        for index in 0..<8 {
            guard cursor < bytes.count else { throw .truncated }
            let byte = bytes[cursor]
            cursor += 1
            size |= UInt64(byte & 0x7F) << UInt64(7 * index)
            if byte & 0x80 == 0 { break }
            if index == 7 { throw .unsupportedOBU(reason: "leb128 size too long") }
        }
        guard size <= UInt64(bytes.count - cursor) else { throw .truncated }
        payloadRange = cursor..<(cursor + Int(size))
    }

    static func leb128(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            out.append(byte)
        } while value != 0
        return out
    }
}

/// MSB-first bit reader over untrusted bytes: every read is bounds-checked.
struct BitReader {
    private let bytes: [UInt8]
    private var bitOffset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func read(_ count: Int) throws(AV1CodecConfiguration.ParseError) -> UInt64 {
        precondition(count <= 64)
        guard bitOffset + count <= bytes.count * 8 else { throw .truncated }
        var value: UInt64 = 0
        for _ in 0..<count {
            let bit = (bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7))) & 1
            value = (value << 1) | UInt64(bit)
            bitOffset += 1
        }
        return value
    }

    mutating func readUVLC() throws(AV1CodecConfiguration.ParseError) -> UInt64 {
        var leadingZeros = 0
        while try read(1) == 0 {
            leadingZeros += 1
            if leadingZeros >= 32 { throw .unsupportedOBU(reason: "uvlc too long") }
        }
        return try read(leadingZeros) + (UInt64(1) << UInt64(leadingZeros)) - 1
    }
}
