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
    /// How far the pictures must turn clockwise to show upright (a phone's sender tags it,
    /// `urn:3gpp:video-orientation`); nil writes no Projection element.
    public var rotation: VideoRotation?

    public init(codec: WebMVideoCodec, width: Int, height: Int, codecPrivate: [UInt8]? = nil, rotation: VideoRotation? = nil) {
        self.codec = codec
        self.width = width
        self.height = height
        self.codecPrivate = codecPrivate
        self.rotation = rotation
    }
}

/// A quarter-turn rotation of the pictures, clockwise, as RTP's video orientation tags it.
public enum VideoRotation: Int, Sendable, Equatable, CaseIterable, Codable {
    case none = 0
    case clockwise90 = 90
    case upsideDown = 180
    case clockwise270 = 270

    /// Matroska's ProjectionPoseRoll turns counter-clockwise, in −180…180 degrees; FFmpeg
    /// reads it as the display matrix that turns the picture back upright.
    public var projectionRoll: Double {
        switch self {
        case .none: 0
        case .clockwise90: -90
        case .upsideDown: 180
        case .clockwise270: 90
        }
    }

    public init?(projectionRoll roll: Double) {
        guard let match = Self.allCases.first(where: { $0.projectionRoll == roll }) else { return nil }
        self = match
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
    /// Text cues (a composition's chat as WebVTT).
    case subtitles

    public var trackNumber: UInt8 {
        switch self {
        case .video: 1
        case .audio: 2
        case .subtitles: 3
        }
    }

    public var description: String {
        switch self {
        case .video: "video"
        case .audio: "audio"
        case .subtitles: "subtitles"
        }
    }
}

/// A WebVTT text track as the WebM specification maps it (codec `D_WEBVTT/SUBTITLES`, track
/// type 17): each cue is a block holding the cue's text, with its duration.
public struct WebMSubtitleTrack: Sendable, Equatable {
    public static let codecID = "D_WEBVTT/SUBTITLES"
    /// The track's name as players list it.
    public var name: String
    /// An ISO 639-2 code ("und": undetermined).
    public var language: String

    public init(name: String, language: String = "und") {
        self.name = name
        self.language = language
    }
}
