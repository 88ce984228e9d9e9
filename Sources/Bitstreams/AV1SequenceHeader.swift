/// The fields of an AV1 sequence header OBU (AV1 spec §5.5) that recording needs: what the
/// av1C record carries, the maximum frame size, and what reading a frame header depends on.
///
/// Hand-written: none of recbot's declared system libraries parses AV1 headers, and only
/// the sequence header and the start of a key frame's header are needed.
public struct AV1SequenceHeader: Sendable, Equatable {
    public var profile: UInt8 = 0
    public var stillPicture = false
    public var reducedStillPictureHeader = false
    public var levelIndex0: UInt8 = 0
    public var tier0: UInt8 = 0
    public var maxFrameWidth = 0
    public var maxFrameHeight = 0
    public var highBitdepth = false
    public var twelveBit = false
    public var monochrome = false
    public var chromaSubsamplingX = true
    public var chromaSubsamplingY = true
    public var chromaSamplePosition: UInt8 = 0

    // Read by frame headers.
    public var frameWidthBits = 0
    public var frameHeightBits = 0
    public var equalPictureInterval = false
    public var decoderModelInfoPresent = false
    public var bufferRemovalTimeLength = 0
    public var framePresentationTimeLength = 0
    /// Per operating point: its idc and whether it has decoder model parameters.
    public var operatingPoints: [(idc: UInt16, decoderModelPresent: Bool)] = []
    public var frameIDNumbersPresent = false
    public var frameIDLength = 0
    public var orderHintBits = 0
    public var enableOrderHint = false
    /// 0, 1, or 2 (SELECT: each frame says).
    public var forceScreenContentTools: UInt8 = 2
    public var forceIntegerMV: UInt8 = 2
    public var enableSuperres = false

    public static func == (lhs: AV1SequenceHeader, rhs: AV1SequenceHeader) -> Bool {
        lhs.profile == rhs.profile && lhs.levelIndex0 == rhs.levelIndex0 && lhs.tier0 == rhs.tier0
            && lhs.maxFrameWidth == rhs.maxFrameWidth && lhs.maxFrameHeight == rhs.maxFrameHeight
            && lhs.highBitdepth == rhs.highBitdepth && lhs.twelveBit == rhs.twelveBit && lhs.monochrome == rhs.monochrome
            && lhs.chromaSubsamplingX == rhs.chromaSubsamplingX && lhs.chromaSubsamplingY == rhs.chromaSubsamplingY
    }

    /// Parses a sequence header OBU's payload (the bytes after its header and size field).
    public init(payload: ArraySlice<UInt8>) throws(BitstreamError) {
        var bits = BitReader(payload)
        profile = UInt8(try bits.read(3))
        guard profile <= 2 else { throw .invalid("seq_profile \(profile)") }
        stillPicture = try bits.flag()
        reducedStillPictureHeader = try bits.flag()
        if reducedStillPictureHeader {
            levelIndex0 = UInt8(try bits.read(5))
            operatingPoints = [(0, false)]
        } else {
            try readTimingAndOperatingPoints(&bits)
        }
        frameWidthBits = Int(try bits.read(4)) + 1
        frameHeightBits = Int(try bits.read(4)) + 1
        maxFrameWidth = Int(try bits.read(frameWidthBits)) + 1
        maxFrameHeight = Int(try bits.read(frameHeightBits)) + 1
        if !reducedStillPictureHeader, try bits.flag() {  // frame_id_numbers_present_flag
            frameIDNumbersPresent = true
            let deltaLength = Int(try bits.read(4)) + 2
            frameIDLength = Int(try bits.read(3)) + 1 + deltaLength
        }
        _ = try bits.read(3)  // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
        if !reducedStillPictureHeader { try readInterTools(&bits) }
        enableSuperres = try bits.flag()
        _ = try bits.read(2)  // enable_cdef, enable_restoration
        try readColorConfig(&bits)
    }

    private mutating func readTimingAndOperatingPoints(_ bits: inout BitReader) throws(BitstreamError) {
        var bufferDelayLength = 0
        if try bits.flag() {  // timing_info_present_flag
            _ = try bits.read(32)  // num_units_in_display_tick
            _ = try bits.read(32)  // time_scale
            equalPictureInterval = try bits.flag()
            if equalPictureInterval { _ = try bits.readUVLC() }
            decoderModelInfoPresent = try bits.flag()
            if decoderModelInfoPresent {
                bufferDelayLength = Int(try bits.read(5)) + 1
                _ = try bits.read(32)  // num_units_in_decoding_tick
                bufferRemovalTimeLength = Int(try bits.read(5)) + 1
                framePresentationTimeLength = Int(try bits.read(5)) + 1
            }
        }
        let initialDisplayDelayPresent = try bits.flag()
        let count = Int(try bits.read(5)) + 1
        for index in 0..<count {
            let idc = UInt16(try bits.read(12))
            let level = UInt8(try bits.read(5))
            let tier: UInt8 = level > 7 ? UInt8(try bits.read(1)) : 0
            if index == 0 { levelIndex0 = level; tier0 = tier }
            var modelPresent = false
            if decoderModelInfoPresent, try bits.flag() {
                modelPresent = true
                _ = try bits.read(bufferDelayLength)  // decoder_buffer_delay
                _ = try bits.read(bufferDelayLength)  // encoder_buffer_delay
                _ = try bits.read(1)  // low_delay_mode_flag
            }
            if initialDisplayDelayPresent, try bits.flag() { _ = try bits.read(4) }
            operatingPoints.append((idc, modelPresent))
        }
    }

    private mutating func readInterTools(_ bits: inout BitReader) throws(BitstreamError) {
        _ = try bits.read(4)  // interintra, masked compound, warped motion, dual filter
        enableOrderHint = try bits.flag()
        if enableOrderHint { _ = try bits.read(2) }  // jnt_comp, ref_frame_mvs
        forceScreenContentTools = try bits.flag() ? 2 : UInt8(try bits.read(1))
        if forceScreenContentTools > 0 {
            forceIntegerMV = try bits.flag() ? 2 : UInt8(try bits.read(1))
        } else {
            forceIntegerMV = 2
        }
        if enableOrderHint { orderHintBits = Int(try bits.read(3)) + 1 }
    }

    private mutating func readColorConfig(_ bits: inout BitReader) throws(BitstreamError) {
        highBitdepth = try bits.flag()
        twelveBit = profile == 2 && highBitdepth ? try bits.flag() : false
        monochrome = profile == 1 ? false : try bits.flag()
        var primaries: UInt64 = 2, transfer: UInt64 = 2, matrix: UInt64 = 2
        if try bits.flag() {  // color_description_present_flag
            primaries = try bits.read(8)
            transfer = try bits.read(8)
            matrix = try bits.read(8)
        }
        chromaSamplePosition = 0
        if monochrome {
            _ = try bits.read(1)  // color_range
            chromaSubsamplingX = true
            chromaSubsamplingY = true
            return
        }
        if primaries == 1 && transfer == 13 && matrix == 0 {  // sRGB: 4:4:4, full range
            chromaSubsamplingX = false
            chromaSubsamplingY = false
            return
        }
        _ = try bits.read(1)  // color_range
        switch profile {
        case 0: (chromaSubsamplingX, chromaSubsamplingY) = (true, true)
        case 1: (chromaSubsamplingX, chromaSubsamplingY) = (false, false)
        default:
            if twelveBit {
                chromaSubsamplingX = try bits.flag()
                chromaSubsamplingY = chromaSubsamplingX ? try bits.flag() : false
            } else {
                (chromaSubsamplingX, chromaSubsamplingY) = (true, false)
            }
        }
        if chromaSubsamplingX && chromaSubsamplingY { chromaSamplePosition = UInt8(try bits.read(2)) }
    }
}
