import CodecBindings
import Foundation
import TestSupport
import WebMReader
@testable import WebM

/// Applies muxer writes to memory, like `WebMFileWriter` does to a file.
struct MemoryFile {
    var bytes: [UInt8] = []

    mutating func apply(_ writes: [WebMWrite]) {
        for write in writes {
            switch write {
            case .append(let data): bytes.append(contentsOf: data)
            case .overwrite(let offset, let data):
                bytes.replaceSubrange(Int(offset)..<(Int(offset) + data.count), with: data)
            }
        }
    }
}

/// A synthetic sender: frames from the real libvpx / libopus encoders, in timestamp order.
struct SyntheticStream {
    var frames: [WebMFrame] = []
    var video: WebMVideoTrack?
    var audio: WebMAudioTrack?

    static func make(video codec: VPXCodec?, audioChannels: Int?, seconds: Double, width: Int = 160, height: Int = 120,
                     fps: Int = 30, keyframeInterval: Int = 30) throws -> SyntheticStream {
        var stream = SyntheticStream()
        var videoFrames: [WebMFrame] = []
        var audioFrames: [WebMFrame] = []
        if let codec {
            let encoder = try VPXEncoder(codec: codec, width: width, height: height, framesPerSecond: fps, keyframeInterval: keyframeInterval)
            for index in 0..<Int(seconds * Double(fps)) {
                for frame in try encoder.encode(.testPattern(width: width, height: height, frame: index), pts: Int64(index)) {
                    videoFrames.append(WebMFrame(track: .video, timestampNanoseconds: frame.pts * 1_000_000_000 / Int64(fps),
                                                 isKeyframe: frame.isKeyframe, data: frame.data))
                }
            }
            stream.video = WebMVideoTrack(codec: codec == .vp8 ? .vp8 : .vp9, width: width, height: height)
        }
        if let audioChannels {
            let encoder = try OpusEncoder(channels: audioChannels)
            for index in 0..<Int(seconds * 50) {
                let packet = try encoder.encode(OpusEncoder.tone(frequency: 440, frame: index, channels: audioChannels))
                audioFrames.append(WebMFrame(track: .audio, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: true, data: packet))
            }
            stream.audio = WebMAudioTrack(opusHead: OpusHead(channelCount: UInt8(audioChannels), preSkip: UInt16(encoder.lookahead)))
        }
        // Merge by time; video first on ties, as a recorder's interleaver would.
        var v = 0, a = 0
        while v < videoFrames.count || a < audioFrames.count {
            if v < videoFrames.count && (a >= audioFrames.count || videoFrames[v].timestampNanoseconds <= audioFrames[a].timestampNanoseconds) {
                stream.frames.append(videoFrames[v]); v += 1
            } else {
                stream.frames.append(audioFrames[a]); a += 1
            }
        }
        return stream
    }

    func configuration(maxClusterDurationMilliseconds: Int64 = 5_000) -> WebMMuxerConfiguration {
        WebMMuxerConfiguration(video: video, audio: audio, segmentUID: Array(1...16),
                               maxClusterDurationMilliseconds: maxClusterDurationMilliseconds)
    }

    /// Muxes every frame; returns the file before finalizing (a live file) and after.
    func mux(maxClusterDurationMilliseconds: Int64 = 5_000) throws -> (live: [UInt8], final: [UInt8], muxer: WebMMuxer) {
        var muxer = try WebMMuxer(configuration: configuration(maxClusterDurationMilliseconds: maxClusterDurationMilliseconds))
        var file = MemoryFile()
        for frame in frames { file.apply(try muxer.write(frame)) }
        file.apply(muxer.flush())
        let live = file.bytes
        file.apply(try muxer.finalize())
        return (live, file.bytes, muxer)
    }
}

typealias ElementID = WebMElementID

/// Runs a command-line tool and returns its standard output.
func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
    let result = try runProcess("/usr/bin/env", [executable] + arguments)
    return (result.status, result.stdoutText, result.stderrText)
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-webm-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
