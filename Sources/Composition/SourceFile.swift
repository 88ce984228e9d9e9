import Foundation
import WebMReader

/// One recorded file, read for composing: its frames on the session's timeline.
public struct SourceFile: Sendable {
    public struct Frame: Sendable {
        /// Milliseconds on the session's timeline.
        public var at: Int64
        public var data: [UInt8]
    }

    public enum VideoCodec: String, Sendable { case vp8 = "V_VP8", vp9 = "V_VP9", av1 = "V_AV1", h264 = "V_MPEG4/ISO/AVC" }
    /// What the composition decodes to pictures (H.264 not yet: its tile is grey).
    static let drawable: Set<VideoCodec> = [.vp8, .vp9, .av1, .h264]

    public var path: String
    /// Where the file's time zero falls on the session's timeline (ms).
    public var start: Int64
    public var end: Int64
    public var videoCodec: VideoCodec?
    public var unsupportedVideo: String?
    public var video: [Frame] = []
    public var audio: [Frame] = []
    public var audioChannels = 0

    /// Reads a file recbot wrote. What does not parse is an error; a file cut short (killed and
    /// not repaired) gives the frames before the cut.
    public init(path: String, start: Int64, durationMilliseconds: Int64?) throws(CompositionError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(path) }
        let parsed = WebMReader.parse(Array(data))
        guard !parsed.isParseError, let info = parsed.info else { throw .notWebM(path, status: parsed.status) }
        self.path = path
        self.start = start
        let scale = Int64(clamping: info.timecodeScale)
        let videoTrack = parsed.tracks.first { $0.type == 1 }
        let audioTrack = parsed.tracks.first { $0.type == 2 && $0.codecID == "A_OPUS" }
        if let videoTrack {
            if let codec = VideoCodec(rawValue: videoTrack.codecID) { videoCodec = codec } else { unsupportedVideo = videoTrack.codecID }
        }
        audioChannels = Int(audioTrack?.channels ?? 0)
        var last: Int64 = 0
        for frame in parsed.frames {
            let (product, overflow) = frame.timecode.multipliedReportingOverflow(by: scale)
            guard !overflow, product >= 0 else { continue }
            let at = start + product / 1_000_000
            last = max(last, at)
            if frame.track == videoTrack?.number { video.append(Frame(at: at, data: frame.data)) }
            if frame.track == audioTrack?.number { audio.append(Frame(at: at, data: frame.data)) }
        }
        end = durationMilliseconds.map { start + $0 } ?? (last + 20)
    }
}

public enum CompositionError: Error, CustomStringConvertible, Equatable {
    case unreadable(String)
    case notWebM(String, status: Int32)
    case noSession(String)
    case nothingToCompose(String)
    case codec(String)
    case output(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read \(path)"
        case .notWebM(let path, let status): "\(path) is not a WebM file recbot can read (libwebm status \(status))"
        case .noSession(let id): "no session \(id) in the catalog"
        case .nothingToCompose(let why): "nothing to compose: \(why)"
        case .codec(let detail): "codec: \(detail)"
        case .output(let detail): "writing the composition: \(detail)"
        }
    }
}
