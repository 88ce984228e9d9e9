import COpenH264

/// OpenH264 decoder (Debian libopenh264-dev): proves that recorded Annex-B access units decode.
public final class H264Decoder {
    private let decoder: UnsafeMutablePointer<ISVCDecoder?>
    private let concealsErrors: Bool

    /// `concealingErrors`: draw what arrived of a damaged picture (a player's choice) rather
    /// than report it (a verifier's).
    public init(concealingErrors: Bool = false) throws(CodecError) {
        concealsErrors = concealingErrors
        guard let decoder = recbot_openh264_create(concealingErrors ? 1 : 0) else {
            throw CodecError(codec: "H264", operation: "open", code: -1, detail: "WelsCreateDecoder/Initialize")
        }
        self.decoder = decoder
    }

    deinit { recbot_openh264_destroy(decoder) }

    /// Decodes one access unit (Annex-B); returns the size of each picture it produced.
    public func decode(_ accessUnit: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        try decode(accessUnit) { picture in (Int(picture.width), Int(picture.height)) }
    }

    /// Decodes one access unit and hands the picture (in OpenH264's buffers, which the next
    /// decode reuses) to `collect`.
    func decode<Result>(_ accessUnit: [UInt8], collect: (recbot_openh264_picture) -> Result?) throws(CodecError) -> [Result] {
        guard accessUnit.count <= Int(Int32.max) else {
            throw CodecError(codec: "H264", operation: "decode", code: -1, detail: "access unit of \(accessUnit.count) bytes")
        }
        var picture = recbot_openh264_picture()
        let state = accessUnit.withUnsafeBufferPointer { buffer in
            recbot_openh264_decode_picture(decoder, buffer.baseAddress, Int32(buffer.count), &picture)
        }
        guard state == 0 || (concealsErrors && picture.width > 0) else {
            throw CodecError(codec: "H264", operation: "decode", code: state, detail: "decoding state 0x\(String(state, radix: 16))")
        }
        guard picture.width > 0, picture.height > 0, let result = collect(picture) else { return [] }
        return [result]
    }
}
