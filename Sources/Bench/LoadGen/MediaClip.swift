import Foundation
import WebMReader

/// The media the synthetic publishers replay: a VP8+Opus WebM encoded once (by `ClipMaker`
/// with ffmpeg) and read with libwebm, so sending costs no encoding at all.
public struct MediaClip: Sendable {
    public struct Frame: Sendable {
        /// From the clip's start.
        public var timeNanoseconds: Int64
        /// How long until the next frame (the last frame's is the median gap).
        public var durationNanoseconds: Int64
        public var isKeyframe: Bool
        public var data: [UInt8]
    }

    public var video: [Frame]
    public var audio: [Frame]
    public var width: Int
    public var height: Int
    public var audioChannels: Int

    public enum LoadError: Error, CustomStringConvertible {
        case unreadable(String)
        case missingTrack(String)
        case noKeyframeFirst

        public var description: String {
            switch self {
            case .unreadable(let path): "the clip \(path) is not a complete WebM file"
            case .missingTrack(let codec): "the clip has no \(codec) track"
            case .noKeyframeFirst: "the clip's video does not start with a keyframe"
            }
        }
    }

    public init(video: [Frame], audio: [Frame], width: Int, height: Int, audioChannels: Int) {
        self.video = video
        self.audio = audio
        self.width = width
        self.height = height
        self.audioChannels = audioChannels
    }

    public init(path: String) throws(LoadError) {
        let parsed = WebMReader.parse(path: path)
        guard parsed.isComplete, let info = parsed.info else { throw .unreadable(path) }
        guard let videoTrack = parsed.tracks.first(where: { $0.codecID == "V_VP8" }) else { throw .missingTrack("VP8") }
        guard let audioTrack = parsed.tracks.first(where: { $0.codecID == "A_OPUS" }) else { throw .missingTrack("Opus") }
        let scale = Int64(info.timecodeScale)
        func frames(of track: UInt64) -> [Frame] {
            let blocks = parsed.frames.filter { $0.track == track }.sorted { $0.timecode < $1.timecode }
            guard let first = blocks.first?.timecode else { return [] }
            var result = blocks.map { Frame(timeNanoseconds: ($0.timecode - first) * scale, durationNanoseconds: 0, isKeyframe: $0.isKeyframe, data: $0.data) }
            var gaps: [Int64] = []
            for index in result.indices.dropLast() {
                let gap = max(1, result[index + 1].timeNanoseconds - result[index].timeNanoseconds)
                result[index].durationNanoseconds = gap
                gaps.append(gap)
            }
            if !result.isEmpty { result[result.count - 1].durationNanoseconds = gaps.sorted().dropFirst(gaps.count / 2).first ?? 20_000_000 }
            return result
        }
        video = frames(of: videoTrack.number)
        audio = frames(of: audioTrack.number)
        guard video.first?.isKeyframe == true else { throw .noKeyframeFirst }
        width = Int(videoTrack.pixelWidth)
        height = Int(videoTrack.pixelHeight)
        audioChannels = Int(max(1, audioTrack.channels))
    }
}

/// Makes the clip once with ffmpeg (a test pattern and a tone) and caches it by its parameters.
public enum ClipMaker {
    public struct Parameters: Sendable, Hashable {
        public var width = 640, height = 360, framesPerSecond = 30, videoKilobits = 600, seconds = 10, keyframeSeconds = 2
        public init() {}
        var fileName: String { "clip-\(width)x\(height)-\(framesPerSecond)fps-\(videoKilobits)k-\(seconds)s-g\(keyframeSeconds).webm" }
    }

    public enum MakeError: Error, CustomStringConvertible {
        case ffmpegFailed(status: Int32, command: String)
        public var description: String {
            switch self {
            case .ffmpegFailed(let status, let command): "ffmpeg exited \(status) making the clip: \(command)"
            }
        }
    }

    /// The clip's path in `directory`, made now if it is not there yet.
    public static func clip(_ parameters: Parameters, in directory: String) throws -> String {
        let path = directory + "/" + parameters.fileName
        if FileManager.default.fileExists(atPath: path) { return path }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let partial = path + ".partial.webm"
        let p = parameters
        let arguments = [
            "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc2=size=\(p.width)x\(p.height):rate=\(p.framesPerSecond)",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            "-t", "\(p.seconds)",
            "-c:v", "libvpx", "-b:v", "\(p.videoKilobits)k", "-g", "\(p.framesPerSecond * p.keyframeSeconds)",
            "-deadline", "realtime", "-cpu-used", "8", "-auto-alt-ref", "0", "-lag-in-frames", "0",
            "-c:a", "libopus", "-b:a", "32k", "-frame_duration", "20", "-ac", "1",
            partial,
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg"] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw MakeError.ffmpegFailed(status: process.terminationStatus, command: "ffmpeg " + arguments.joined(separator: " "))
        }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        return path
    }
}
