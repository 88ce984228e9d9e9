import CodecBindings

/// One track's decoder: a frame in, the pictures (or one audio packet's worth) out.
protocol FrameDecoder {
    /// Pictures produced (video sizes), or one entry per decoded audio packet.
    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)]
}

extension VPXDecoder: FrameDecoder {}
extension AV1Decoder: FrameDecoder {}
extension H264Decoder: FrameDecoder {}

/// H.264 as other muxers store it in Matroska: length-prefixed NAL units with the parameter
/// sets in an avcC CodecPrivate. recbot writes Annex-B (Sora's convention, and what hisui
/// reads; the reader rules say so); this lets `verify` still decode such a file.
struct LengthPrefixedH264Decoder: FrameDecoder {
    let decoder: H264Decoder
    let lengthSize: Int
    var parameterSets: [UInt8]?

    /// nil when `codecPrivate` is not an avcC record.
    init?(decoder: H264Decoder, codecPrivate: [UInt8]) {
        guard codecPrivate.count >= 7, codecPrivate[0] == 1 else { return nil }
        self.decoder = decoder
        lengthSize = Int(codecPrivate[4] & 0x03) + 1
        var sets: [UInt8] = []
        var index = 5
        for round in 0..<2 {  // SPS then PPS: a count, then 16-bit lengths
            guard index < codecPrivate.count else { return nil }
            let count = Int(codecPrivate[index] & (round == 0 ? 0x1F : 0xFF))
            index += 1
            for _ in 0..<count {
                guard index + 2 <= codecPrivate.count else { return nil }
                let length = Int(codecPrivate[index]) << 8 | Int(codecPrivate[index + 1])
                guard index + 2 + length <= codecPrivate.count else { return nil }
                sets += [0, 0, 0, 1] + codecPrivate[(index + 2)..<(index + 2 + length)]
                index += 2 + length
            }
        }
        parameterSets = sets
    }

    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        var annexB = parameterSets ?? []
        parameterSets = nil
        var index = 0
        while index < frame.count {
            guard index + lengthSize <= frame.count else { throw CodecError(codec: "H264", operation: "decode", code: -1, detail: "truncated NAL length") }
            let length = frame[index..<(index + lengthSize)].reduce(0) { $0 << 8 | Int($1) }
            index += lengthSize
            guard length <= frame.count - index else { throw CodecError(codec: "H264", operation: "decode", code: -1, detail: "NAL unit past the frame") }
            annexB += [0, 0, 0, 1] + frame[index..<(index + length)]
            index += length
        }
        return try decoder.decode(annexB)
    }
}

/// Opus packets carry no picture: a decoded packet counts as one output.
struct OpusPacketDecoder: FrameDecoder {
    let decoder: OpusDecoder

    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        _ = try decoder.decode(frame)
        return [(0, 0)]
    }
}

/// A composition's chat cue, as WebM's WebVTT mapping lays it out: an identifier line and a
/// settings line (either empty), then the cue's text; all UTF-8, and no line that would end
/// the cue or start a new one in a .vtt (`-->`, an empty line inside the text).
struct WebVTTCueCheck: FrameDecoder {
    static let codecID = "D_WEBVTT/SUBTITLES"

    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        guard let text = String(validating: frame, as: UTF8.self) else { throw Self.bad("not UTF-8") }
        let lines = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count == 3 else { throw Self.bad("no identifier and settings lines before the text") }
        guard !lines[0].contains("-->"), !lines[2].isEmpty, !lines[2].contains("-->"), !lines[2].contains("\n\n") else {
            throw Self.bad("a cue line that would break a WebVTT file")
        }
        return [(0, 0)]
    }

    static func bad(_ why: String) -> CodecError { CodecError(codec: "WebVTT", operation: "cue", code: -1, detail: why) }
}

enum FrameDecoders {
    private static func lengthPrefixedOrAnnexB(_ decoder: H264Decoder, codecPrivate: [UInt8]) -> any FrameDecoder {
        LengthPrefixedH264Decoder(decoder: decoder, codecPrivate: codecPrivate) ?? decoder
    }

    /// The decoder for a WebM CodecID, or nil when recbot has none for it.
    static func make(codecID: String, channels: Int, codecPrivate: [UInt8]) throws(CodecError) -> (any FrameDecoder)? {
        switch codecID {
        case "V_VP8": try VPXDecoder(codec: .vp8)
        case "V_VP9": try VPXDecoder(codec: .vp9)
        case "V_AV1": try AV1Decoder()
        case "V_MPEG4/ISO/AVC":
            try lengthPrefixedOrAnnexB(H264Decoder(), codecPrivate: codecPrivate)
        case "A_OPUS": OpusPacketDecoder(decoder: try OpusDecoder(channels: min(2, max(1, channels))))
        case WebVTTCueCheck.codecID: WebVTTCueCheck()
        default: nil
        }
    }
}
