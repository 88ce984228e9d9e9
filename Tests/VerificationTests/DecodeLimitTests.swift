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

    @Test func anOrdinaryKeyframeSizeIsNotRefused() throws {
        // 1920x1080 passes the size check; the filler then fails to decode as a corrupt frame.
        let decoder = try VPXDecoder(codec: .vp8)
        #expect { try decoder.decode(Self.vp8Keyframe(width: 1920, height: 1080)) } throws: { error in
            !"\(error)".contains("larger than the verifier decodes")
        }
    }
}
