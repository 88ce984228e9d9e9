/// The start of an AV1 frame header (AV1 spec §5.9.2), read far enough to tell a key frame
/// and its displayed size.
public struct AV1FrameHeader: Sendable, Equatable {
    public enum FrameType: UInt8, Sendable { case key = 0, inter, intraOnly, switchFrame }

    public var showExistingFrame: Bool
    public var frameType: FrameType?
    public var showFrame: Bool
    /// The render size of a key frame (what a player displays); nil for other frames.
    public var renderWidth: Int?
    public var renderHeight: Int?

    /// A key frame that is shown: where decoding can start.
    public var isShownKeyFrame: Bool { !showExistingFrame && frameType == .key && showFrame }

    /// Parses a frame header or frame OBU's payload; `obu` gives the temporal and spatial id.
    public init(payload: ArraySlice<UInt8>, obu: AV1OBUHeader, sequence: AV1SequenceHeader) throws(BitstreamError) {
        var bits = BitReader(payload)
        if sequence.reducedStillPictureHeader {
            (showExistingFrame, frameType, showFrame) = (false, .key, true)
        } else {
            showExistingFrame = try bits.flag()
            guard !showExistingFrame else {
                (frameType, showFrame) = (nil, true)
                return
            }
            frameType = FrameType(rawValue: UInt8(try bits.read(2)))
            showFrame = try bits.flag()
        }
        guard frameType == .key else { return }
        try readKeyFrameSize(&bits, obu: obu, sequence: sequence)
    }

    private mutating func readKeyFrameSize(_ bits: inout BitReader, obu: AV1OBUHeader, sequence: AV1SequenceHeader) throws(BitstreamError) {
        // A shown key frame is error resilient by definition; an unshown one says.
        var errorResilient = true
        if !sequence.reducedStillPictureHeader {
            if showFrame && sequence.decoderModelInfoPresent && !sequence.equalPictureInterval {
                _ = try bits.read(sequence.framePresentationTimeLength)  // temporal_point_info
            }
            if !showFrame {
                _ = try bits.read(1)  // showable_frame
                errorResilient = try bits.flag()
            }
        }
        _ = try bits.read(1)  // disable_cdf_update
        let screenContentTools = sequence.forceScreenContentTools == 2 ? try bits.flag() : sequence.forceScreenContentTools == 1
        if screenContentTools && sequence.forceIntegerMV == 2 { _ = try bits.read(1) }  // force_integer_mv
        if sequence.frameIDNumbersPresent { _ = try bits.read(sequence.frameIDLength) }  // current_frame_id
        let frameSizeOverride = sequence.reducedStillPictureHeader ? false : try bits.flag()
        _ = try bits.read(sequence.orderHintBits)  // order_hint
        // primary_ref_frame is not coded for intra frames.
        if sequence.decoderModelInfoPresent, try bits.flag() {  // buffer_removal_time_present_flag
            for point in sequence.operatingPoints where point.decoderModelPresent {
                let inTemporal = (point.idc >> UInt16(obu.temporalID)) & 1 == 1
                let inSpatial = (point.idc >> UInt16(obu.spatialID + 8)) & 1 == 1
                if point.idc == 0 || (inTemporal && inSpatial) { _ = try bits.read(sequence.bufferRemovalTimeLength) }
            }
        }
        if !showFrame {
            let refresh = try bits.read(8)  // refresh_frame_flags
            if refresh != 0xFF && errorResilient && sequence.enableOrderHint {
                for _ in 0..<8 { _ = try bits.read(sequence.orderHintBits) }  // ref_order_hint
            }
        }
        var frameWidth = sequence.maxFrameWidth
        var frameHeight = sequence.maxFrameHeight
        if frameSizeOverride {
            frameWidth = Int(try bits.read(sequence.frameWidthBits)) + 1
            frameHeight = Int(try bits.read(sequence.frameHeightBits)) + 1
        }
        if sequence.enableSuperres, try bits.flag() { _ = try bits.read(3) }  // use_superres, coded_denom: upscaled width stays
        if try bits.flag() {  // render_and_frame_size_different
            renderWidth = Int(try bits.read(16)) + 1
            renderHeight = Int(try bits.read(16)) + 1
        } else {
            renderWidth = frameWidth
            renderHeight = frameHeight
        }
    }
}
