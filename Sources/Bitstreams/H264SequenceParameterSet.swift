/// Reads the picture size from an H.264 sequence parameter set (ITU-T H.264 §7.3.2.1.1).
public enum H264SPS {
    /// The profiles whose SPS carries chroma format, bit depths and scaling matrices.
    private static let highProfiles: Set<UInt64> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// `nal`: the whole NAL unit, header byte included. Nil for a truncated or invalid SPS, or
    /// a size outside 1…16384.
    public static func pictureSize(_ nal: [UInt8]) -> (width: Int, height: Int)? {
        var bits = BitReader(rbsp(nal))
        return try? size(&bits)
    }

    /// The payload without emulation prevention bytes (00 00 03).
    private static func rbsp(_ nal: [UInt8]) -> [UInt8] {
        var rbsp: [UInt8] = []
        rbsp.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal.dropFirst() {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        return rbsp
    }

    private static func size(_ bits: inout BitReader) throws(BitstreamError) -> (width: Int, height: Int)? {
        let profile = try bits.read(8)
        try bits.skip(16)  // constraint flags, level
        _ = try bits.readUnsignedExpGolomb()  // seq_parameter_set_id
        let chromaFormat = highProfiles.contains(profile) ? try chromaAndScaling(&bits) : 1
        _ = try bits.readUnsignedExpGolomb()  // log2_max_frame_num_minus4
        try skipPictureOrderCount(&bits)
        _ = try bits.readUnsignedExpGolomb()  // max_num_ref_frames
        try bits.skip(1)  // gaps_in_frame_num_value_allowed_flag
        let widthMbs = Int(try bits.readUnsignedExpGolomb())
        let heightUnits = Int(try bits.readUnsignedExpGolomb())
        let frameMbsOnly = Int(try bits.read(1))
        if frameMbsOnly == 0 { try bits.skip(1) }  // mb_adaptive_frame_field_flag
        try bits.skip(1)  // direct_8x8_inference_flag
        var width = (widthMbs + 1) * 16
        var height = (heightUnits + 1) * 16 * (2 - frameMbsOnly)
        if try bits.flag() {  // frame_cropping_flag
            let (left, right) = (Int(try bits.readUnsignedExpGolomb()), Int(try bits.readUnsignedExpGolomb()))
            let (top, bottom) = (Int(try bits.readUnsignedExpGolomb()), Int(try bits.readUnsignedExpGolomb()))
            let cropX = chromaFormat == 0 || chromaFormat == 3 ? 1 : 2
            let cropY = (chromaFormat == 1 ? 2 : 1) * (2 - frameMbsOnly)
            width -= (left + right) * cropX
            height -= (top + bottom) * cropY
        }
        guard (1...16_384).contains(width), (1...16_384).contains(height) else { return nil }
        return (width, height)
    }

    /// chroma_format_idc through the scaling matrices; returns chroma_format_idc.
    private static func chromaAndScaling(_ bits: inout BitReader) throws(BitstreamError) -> Int {
        let format = try bits.readUnsignedExpGolomb()
        if format == 3 { try bits.skip(1) }  // separate_colour_plane_flag
        _ = try bits.readUnsignedExpGolomb()  // bit_depth_luma_minus8
        _ = try bits.readUnsignedExpGolomb()  // bit_depth_chroma_minus8
        try bits.skip(1)  // qpprime_y_zero_transform_bypass_flag
        if try bits.flag() {  // seq_scaling_matrix_present_flag
            for index in 0..<(format == 3 ? 12 : 8) {
                if try bits.flag() { try skipScalingList(&bits, size: index < 6 ? 16 : 64) }  // seq_scaling_list_present_flag
            }
        }
        return Int(format)
    }

    private static func skipPictureOrderCount(_ bits: inout BitReader) throws(BitstreamError) {
        let pocType = try bits.readUnsignedExpGolomb()
        if pocType == 0 {
            _ = try bits.readUnsignedExpGolomb()  // log2_max_pic_order_cnt_lsb_minus4
        } else if pocType == 1 {
            try bits.skip(1)  // delta_pic_order_always_zero_flag
            _ = try bits.readSignedExpGolomb()  // offset_for_non_ref_pic
            _ = try bits.readSignedExpGolomb()  // offset_for_top_to_bottom_field
            let cycle = try bits.readUnsignedExpGolomb()
            guard cycle <= 255 else { throw .invalid("num_ref_frames_in_pic_order_cnt_cycle \(cycle)") }
            for _ in 0..<cycle { _ = try bits.readSignedExpGolomb() }
        }
    }

    /// scaling_list() (§7.3.2.1.1.1), read only to get past it.
    private static func skipScalingList(_ bits: inout BitReader, size: Int) throws(BitstreamError) {
        var (last, next): (Int32, Int32) = (8, 8)
        for _ in 0..<size {
            if next != 0 {
                // delta_scale is −128…127 (§7.4.2.1.1.1); a crafted one must not overflow.
                let delta = try bits.readSignedExpGolomb()
                guard (-128...127).contains(delta) else { throw .invalid("delta_scale \(delta)") }
                next = (last + delta + 256) % 256
            }
            last = next == 0 ? last : next
        }
    }
}
