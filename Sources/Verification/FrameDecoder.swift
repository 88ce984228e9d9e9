import CodecBindings

/// One track's decoder: a frame in, the pictures (or one audio packet's worth) out.
protocol FrameDecoder {
    /// Pictures produced (video sizes), or one entry per decoded audio packet.
    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)]
}

extension VPXDecoder: FrameDecoder {}
extension AV1Decoder: FrameDecoder {}
extension H264Decoder: FrameDecoder {}

/// Opus packets carry no picture: a decoded packet counts as one output.
struct OpusPacketDecoder: FrameDecoder {
    let decoder: OpusDecoder

    mutating func decode(_ frame: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        _ = try decoder.decode(frame)
        return [(0, 0)]
    }
}

enum FrameDecoders {
    /// The decoder for a WebM CodecID, or nil when recbot has none for it.
    static func make(codecID: String, channels: Int) throws(CodecError) -> (any FrameDecoder)? {
        switch codecID {
        case "V_VP8": try VPXDecoder(codec: .vp8)
        case "V_VP9": try VPXDecoder(codec: .vp9)
        case "V_AV1": try AV1Decoder()
        case "V_MPEG4/ISO/AVC": try H264Decoder()
        case "A_OPUS": OpusPacketDecoder(decoder: try OpusDecoder(channels: min(2, max(1, channels))))
        default: nil
        }
    }
}
