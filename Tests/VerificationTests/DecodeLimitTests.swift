import CodecBindings
import Foundation
import Testing
import TestSupport

/// Keyframes that declare an enormous picture are refused before the decoder allocates for it
/// (found by fuzzing `recbot verify`: a 16383x16383 VP8 keyframe cost about a second and 360 MB
/// per frame, so a crafted recording could keep an hourly `verify --pending` busy for hours).
@Suite struct DecodeLimitTests {
    /// A VP8 keyframe header (frame tag, start code, 14-bit width and height), then filler.
    static func vp8Keyframe(width: Int, height: Int) -> [UInt8] {
        [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8)]
            + [UInt8](repeating: 0, count: 64)
    }

    /// A VP9 profile-0 keyframe's uncompressed header: marker, sync code, colour space, and the
    /// 16-bit width and height minus one (65536 x 65536 here).
    static let vp9HugeKeyframe: [UInt8] = [0x82, 0x49, 0x83, 0x42, 0x0F, 0xFF, 0xFF, 0xFF, 0xF0] + [UInt8](repeating: 0, count: 64)

    @Test func aHugeVP8KeyframeIsRefusedAtOnce() throws {
        let decoder = try VPXDecoder(codec: .vp8)
        let started = Date()
        #expect { try decoder.decode(Self.vp8Keyframe(width: 16_383, height: 16_383)) } throws: { error in
            "\(error)".contains("16383x16383 keyframe is larger than the verifier decodes")
        }
        #expect(Date().timeIntervalSince(started) < 0.2)
    }

    @Test func aHugeVP9KeyframeIsRefusedAtOnce() throws {
        let decoder = try VPXDecoder(codec: .vp9)
        #expect { try decoder.decode(Self.vp9HugeKeyframe) } throws: { error in
            "\(error)".contains("65536x65536 keyframe is larger than the verifier decodes")
        }
    }

    /// H.264 needs no check of ours: OpenH264 refuses a sequence parameter set beyond its own
    /// level limits as it parses it, before allocating (state 0x10, "no parameter sets"), while
    /// an ordinary size goes on to the slice and fails there (0x4, a bitstream error).
    @Test func aHugeH264SequenceIsRefusedByOpenH264Itself() throws {
        for (macroblocks, refused) in [(1_024, true), (256, true), (40, false)] {
            let decoder = try H264Decoder()
            let started = Date()
            #expect { try decoder.decode(Self.h264AccessUnit(macroblocksPerSide: macroblocks)) } throws: { error in
                (error as? CodecError)?.code == (refused ? 0x10 : 0x4)
            }
            #expect(Date().timeIntervalSince(started) < 0.2, "\(macroblocks * 16) pixels a side")
        }
    }

    /// An IDR access unit (Annex B): a baseline SPS for a square picture of `macroblocksPerSide`
    /// macroblocks a side, a PPS, and an I slice whose macroblocks are filler.
    static func h264AccessUnit(macroblocksPerSide: Int) -> [UInt8] {
        var sps = BitWriter()
        sps.write(66, 8); sps.write(0xC0, 8); sps.write(52, 8)  // profile, constraints, level 5.2
        for value: UInt64 in [0, 0, 2, 1] { sps.ue(value) }  // id, log2_max_frame_num-4, poc type 2, refs
        sps.write(0, 1)
        sps.ue(UInt64(macroblocksPerSide - 1)); sps.ue(UInt64(macroblocksPerSide - 1))
        sps.write(0b1100, 4)  // frame_mbs_only, direct_8x8, no crop, no VUI
        var pps = BitWriter()
        for value: UInt64 in [0, 0] { pps.ue(value) }
        pps.write(0, 2)
        for value: UInt64 in [0, 0, 0] { pps.ue(value) }
        pps.write(0, 3)
        for _ in 0..<3 { pps.ue(0) }  // qp, qs, chroma offsets (se(0) == ue(0))
        pps.write(0b100, 3)
        var slice = BitWriter()
        for value: UInt64 in [0, 7, 0] { slice.ue(value) }  // first MB, I slice, PPS 0
        slice.write(0, 4); slice.ue(0); slice.write(0, 2); slice.ue(0); slice.ue(1)
        for _ in 0..<400 { slice.write(0x55, 8) }
        let start: [UInt8] = [0, 0, 0, 1]
        return start + [0x67] + sps.rbsp() + start + [0x68] + pps.rbsp() + start + [0x65] + slice.rbsp()
    }

    @Test func anOrdinaryKeyframeSizeIsNotRefused() throws {
        // 1920x1080 passes the size check; the filler then fails to decode as a corrupt frame.
        let decoder = try VPXDecoder(codec: .vp8)
        #expect { try decoder.decode(Self.vp8Keyframe(width: 1920, height: 1080)) } throws: { error in
            !"\(error)".contains("larger than the verifier decodes")
        }
    }
}
