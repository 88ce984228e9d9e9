import CodecBindings
import Foundation
import Testing

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
        var sps = ExpGolombWriter()
        sps.bits(66, 8); sps.bits(0xC0, 8); sps.bits(52, 8)  // profile, constraints, level 5.2
        for value in [0, 0, 2, 1] { sps.unsigned(value) }   // id, log2_max_frame_num-4, poc type 2, refs
        sps.bits(0, 1)
        sps.unsigned(macroblocksPerSide - 1); sps.unsigned(macroblocksPerSide - 1)
        sps.bits(0b1100, 4)                                  // frame_mbs_only, direct_8x8, no crop, no VUI
        var pps = ExpGolombWriter()
        for value in [0, 0] { pps.unsigned(value) }
        pps.bits(0, 2)
        for value in [0, 0, 0] { pps.unsigned(value) }
        pps.bits(0, 3)
        for _ in 0..<3 { pps.unsigned(0) }                   // qp, qs, chroma offsets (se(0) == ue(0))
        pps.bits(0b100, 3)
        var slice = ExpGolombWriter()
        for value in [0, 7, 0] { slice.unsigned(value) }     // first MB, I slice, PPS 0
        slice.bits(0, 4); slice.unsigned(0); slice.bits(0, 2); slice.unsigned(0); slice.unsigned(1)
        for _ in 0..<400 { slice.bits(0x55, 8) }
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

/// Bits, and unsigned Exp-Golomb codes, for hand-made H.264 headers.
struct ExpGolombWriter {
    private var bitsWritten: [UInt8] = []

    mutating func bits(_ value: Int, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) { bitsWritten.append(UInt8((value >> shift) & 1)) }
    }

    mutating func unsigned(_ value: Int) {
        let coded = value + 1
        let length = Int.bitWidth - coded.leadingZeroBitCount
        bits(0, length - 1)
        bits(coded, length)
    }

    /// The RBSP with its stop bit, and emulation prevention (no 00 00 0x inside a NAL unit).
    func rbsp() -> [UInt8] {
        var all = bitsWritten + [1]
        while all.count % 8 != 0 { all.append(0) }
        var bytes: [UInt8] = []
        var zeros = 0
        for index in stride(from: 0, to: all.count, by: 8) {
            let byte = all[index..<index + 8].reduce(UInt8(0)) { $0 << 1 | $1 }
            if zeros >= 2 && byte <= 3 { bytes.append(3); zeros = 0 }
            bytes.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return bytes
    }
}
