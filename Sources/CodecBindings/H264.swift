import COpenH264

/// OpenH264 decoder (Debian libopenh264-dev): proves that recorded Annex-B access units decode.
public final class H264Decoder {
    private let decoder: UnsafeMutablePointer<ISVCDecoder?>

    public init() throws(CodecError) {
        guard let decoder = recbot_openh264_create() else {
            throw CodecError(codec: "H264", operation: "open", code: -1, detail: "WelsCreateDecoder/Initialize")
        }
        self.decoder = decoder
    }

    deinit { recbot_openh264_destroy(decoder) }

    /// Decodes one access unit (Annex-B); returns the size of each picture it produced.
    public func decode(_ accessUnit: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        guard accessUnit.count <= Int(Int32.max) else {
            throw CodecError(codec: "H264", operation: "decode", code: -1, detail: "access unit of \(accessUnit.count) bytes")
        }
        var width: Int32 = 0, height: Int32 = 0
        let state = accessUnit.withUnsafeBufferPointer { buffer in
            recbot_openh264_decode(decoder, buffer.baseAddress, Int32(buffer.count), &width, &height)
        }
        guard state == 0 else {
            throw CodecError(codec: "H264", operation: "decode", code: state, detail: "decoding state 0x\(String(state, radix: 16))")
        }
        return width > 0 && height > 0 ? [(Int(width), Int(height))] : []
    }
}
