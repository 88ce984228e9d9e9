/// Video codecs a recording can carry (Sora does not transcode: we store what senders send).
public enum WebMVideoCodec: String, Sendable, CaseIterable {
    case vp8 = "VP8"
    case vp9 = "VP9"
    case av1 = "AV1"
    /// H.264 stored as Annex-B byte stream, Sora's convention (DocType stays `webm`).
    case h264 = "H264"

    public var codecID: String {
        switch self {
        case .vp8: "V_VP8"
        case .vp9: "V_VP9"
        case .av1: "V_AV1"
        case .h264: "V_MPEG4/ISO/AVC"
        }
    }
}

public enum WebMAudioCodec: String, Sendable, CaseIterable {
    case opus = "OPUS"

    public var codecID: String { "A_OPUS" }
}

public struct WebMVideoTrack: Sendable, Equatable {
    public var codec: WebMVideoCodec
    public var width: Int
    public var height: Int
    /// Required for AV1 (the av1C record, see `AV1CodecConfiguration`); absent otherwise.
    public var codecPrivate: [UInt8]?

    public init(codec: WebMVideoCodec, width: Int, height: Int, codecPrivate: [UInt8]? = nil) {
        self.codec = codec
        self.width = width
        self.height = height
        self.codecPrivate = codecPrivate
    }
}

public struct WebMAudioTrack: Sendable, Equatable {
    public var codec: WebMAudioCodec
    public var opusHead: OpusHead

    public init(opusHead: OpusHead) {
        self.codec = .opus
        self.opusHead = opusHead
    }

    /// Opus always decodes at 48 kHz in WebM.
    public var samplingFrequency: Double { 48_000 }
}

/// Which track a frame belongs to. Track numbers follow hisui's rule:
/// video is always track 1 and audio always track 2 (also in audio-only files).
public enum WebMTrackKind: Sendable, Equatable, CustomStringConvertible {
    case video
    case audio

    public var trackNumber: UInt8 {
        switch self {
        case .video: 1
        case .audio: 2
        }
    }

    public var description: String { self == .video ? "video" : "audio" }
}
