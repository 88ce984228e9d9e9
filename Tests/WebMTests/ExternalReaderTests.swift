import CodecBindings
import Foundation
import Testing
@testable import WebM
import WebMReader

/// ffprobe/ffmpeg as a second independent reader, and as the source of H.264 and AV1
/// bitstreams (no encoder for those is among recbot's declared libraries).
@Suite(.serialized) struct ExternalReaderTests {
    struct Probe {
        var streams: [[String: Any]]
        var duration: Double
    }

    func probe(_ path: String) throws -> Probe {
        let result = try run("ffprobe", ["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", path])
        #expect(result.status == 0, "ffprobe: \(result.error)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        let streams = try #require(json["streams"] as? [[String: Any]])
        let format = try #require(json["format"] as? [String: Any])
        return Probe(streams: streams, duration: Double(format["duration"] as? String ?? "") ?? -1)
    }

    /// ffmpeg decodes every frame and reports no error.
    func expectCleanDecode(_ path: String) throws {
        let result = try run("ffmpeg", ["-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
        #expect(result.status == 0 && result.error.isEmpty, "ffmpeg decode: \(result.error)")
    }

    func write(_ bytes: [UInt8], name: String) throws -> String {
        let path = try temporaryDirectory().appendingPathComponent(name).path
        let writer = try WebMFileWriter(creatingAt: path)
        try writer.apply([.append(bytes)])
        try writer.close()
        return path
    }

    @Test(arguments: [VPXCodec.vp8, VPXCodec.vp9])
    func ffprobeReadsVPXAndOpus(codec: VPXCodec) throws {
        let stream = try SyntheticStream.make(video: codec, audioChannels: 2, seconds: 2)
        let (_, bytes, _) = try stream.mux()
        let path = try write(bytes, name: "vpx.webm")
        let probe = try probe(path)
        #expect(probe.streams.count == 2)
        let video = try #require(probe.streams.first { $0["codec_type"] as? String == "video" })
        #expect(video["codec_name"] as? String == (codec == .vp8 ? "vp8" : "vp9"))
        #expect(video["width"] as? Int == 160 && video["height"] as? Int == 120)
        #expect(Int(video["nb_read_frames"] as? String ?? "") == stream.frames.filter { $0.track == .video }.count)
        let audio = try #require(probe.streams.first { $0["codec_type"] as? String == "audio" })
        #expect(audio["codec_name"] as? String == "opus" && audio["channels"] as? Int == 2)
        #expect(Int(audio["nb_read_frames"] as? String ?? "") == stream.frames.filter { $0.track == .audio }.count)
        #expect(abs(probe.duration - 2.0) < 0.1, "duration \(probe.duration)")
        try expectCleanDecode(path)
    }

    /// A text track of WebVTT cues (a composition's chat): FFmpeg reads each cue back at its
    /// time, with its duration and text, and libwebm's parser still reads the file whole.
    @Test func webVTTCuesReadBackWithTheirTimesAndText() throws {
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: 2, seconds: 2)
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .vp8, width: 160, height: 120), audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 2, preSkip: 312)),
            segmentUID: Array(1...16), subtitles: WebMSubtitleTrack(name: "chat")))
        let cues: [(Int64, Int64, String)] = [(250, 1_000, "<v alice>#chat: こんにちは</v>"), (1_500, 400, "<v bob>#chat: second</v>")]
        var file = MemoryFile()
        var next = 0
        for frame in stream.frames {
            while next < cues.count, cues[next].0 * 1_000_000 <= frame.timestampNanoseconds {
                file.apply(try muxer.write(.cue(cues[next].2, start: cues[next].0 * 1_000_000, duration: cues[next].1 * 1_000_000)))
                next += 1
            }
            file.apply(try muxer.write(frame))
        }
        file.apply(try muxer.finalize(durationMilliseconds: 2_000))
        #expect(muxer.statistics.subtitleCues == 2)
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete && parsed.tracks.contains { $0.codecID == "D_WEBVTT/SUBTITLES" }, "\(parsed.tracks)")
        let path = try write(file.bytes, name: "cues.webm")
        // The blocks hold WebM's cue layout: empty identifier and settings lines, then the cue text, voice spans and all.
        #expect(parsed.frames.filter { $0.track == 3 }.map { String(decoding: $0.data, as: UTF8.self) } == cues.map { "\n\n" + $0.2 })
        // FFmpeg (keeping the file's times: without -copyts it would shift them by the Opus codec delay) reads
        // each cue at its time for its duration; its WebVTT writer drops the voice spans.
        let extracted = try run("ffmpeg", ["-v", "error", "-copyts", "-i", path, "-map", "0:s:0", "-f", "webvtt", "-"])
        #expect(extracted.status == 0, "\(extracted.error)")
        #expect(extracted.output.contains("00:00.250 --> 00:01.250\n#chat: こんにちは"), "\(extracted.output)")
        #expect(extracted.output.contains("00:01.500 --> 00:01.900\n#chat: second"), "\(extracted.output)")
        try expectCleanDecode(path)
    }

    @Test func h264AnnexBRoundTrip() throws {
        let directory = try temporaryDirectory()
        let source = directory.appendingPathComponent("in.h264").path
        let encode = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=15", "-t", "2",
                                        "-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-bf", "0",
                                        "-x264-params", "aud=1", "-pix_fmt", "yuv420p", "-f", "h264", source])
        #expect(encode.status == 0, "ffmpeg: \(encode.error)")
        let accessUnits = AnnexB.accessUnits(try [UInt8](Data(contentsOf: URL(fileURLWithPath: source))))
        #expect(accessUnits.count == 30)

        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .h264, width: 160, height: 120), audio: nil, segmentUID: Array(1...16)))
        var file = MemoryFile()
        for (index, unit) in accessUnits.enumerated() {
            file.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: Int64(index) * 1_000_000_000 / 15,
                                                 isKeyframe: AnnexB.isIDR(unit), data: unit)))
        }
        file.apply(try muxer.finalize(durationMilliseconds: 2_000))
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete && parsed.tracks.first?.codecID == "V_MPEG4/ISO/AVC")
        #expect(parsed.frames.map(\.data) == accessUnits)
        #expect(parsed.frames.first.map { Array($0.data.prefix(4)) == [0, 0, 0, 1] } == true, "Annex-B start code")
        #expect(parsed.cuePoints.count == 3)

        let path = try write(file.bytes, name: "h264.webm")
        let probe = try probe(path)
        #expect(probe.streams.first?["codec_name"] as? String == "h264")
        #expect(Int(probe.streams.first?["nb_read_frames"] as? String ?? "") == 30)
        try expectCleanDecode(path)
    }

    @Test func av1RoundTripWithCodecConfiguration() throws {
        let directory = try temporaryDirectory()
        let source = directory.appendingPathComponent("in.obu").path
        let encode = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=15", "-t", "1",
                                        "-c:v", "libaom-av1", "-cpu-used", "8", "-g", "8", "-usage", "realtime", "-pix_fmt", "yuv420p",
                                        "-f", "obu", source])
        #expect(encode.status == 0, "ffmpeg: \(encode.error)")
        let units = try AV1Stream.temporalUnits([UInt8](Data(contentsOf: URL(fileURLWithPath: source))))
        #expect(units.count == 15)
        let configuration = try AV1CodecConfiguration(temporalUnit: units[0].data)
        #expect(configuration.maxFrameWidth == 160 && configuration.maxFrameHeight == 120)
        #expect(configuration.seqProfile == 0 && configuration.chromaSubsamplingX && configuration.chromaSubsamplingY)

        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .av1, width: configuration.maxFrameWidth, height: configuration.maxFrameHeight,
                                  codecPrivate: configuration.codecPrivate),
            audio: nil, segmentUID: Array(1...16)))
        var file = MemoryFile()
        for (index, unit) in units.enumerated() {
            file.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: Int64(index) * 1_000_000_000 / 15,
                                                 isKeyframe: unit.isKeyframe, data: unit.data)))
        }
        file.apply(try muxer.finalize(durationMilliseconds: 1_000))
        let path = try write(file.bytes, name: "av1.webm")

        // Our av1C equals the one ffmpeg's own muxer derives from the same stream.
        let reference = directory.appendingPathComponent("reference.webm").path
        let remux = try run("ffmpeg", ["-v", "error", "-i", source, "-c", "copy", reference])
        #expect(remux.status == 0, "ffmpeg remux: \(remux.error)")
        let referenceTrack = try #require(WebMReader.parse(path: reference).tracks.first)
        #expect(WebMReader.parse(path: path).tracks.first?.codecPrivate == referenceTrack.codecPrivate)

        let probe = try probe(path)
        #expect(probe.streams.first?["codec_name"] as? String == "av1")
        #expect(Int(probe.streams.first?["nb_read_frames"] as? String ?? "") == 15)
        try expectCleanDecode(path)
    }
}

/// Splits an Annex-B H.264 stream (with access unit delimiters) into access units.
enum AnnexB {
    static func nalUnitStarts(_ bytes: [UInt8]) -> [(start: Int, payload: Int)] {
        var starts: [(Int, Int)] = []
        var index = 0
        while index + 3 <= bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                let start = index > 0 && bytes[index - 1] == 0 ? index - 1 : index
                starts.append((start, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        return starts
    }

    static func accessUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        let starts = nalUnitStarts(bytes).filter { bytes[$0.payload] & 0x1F == 9 }.map(\.start)
        return starts.enumerated().map { index, start in
            Array(bytes[start..<(index + 1 < starts.count ? starts[index + 1] : bytes.count)])
        }
    }

    static func isIDR(_ unit: [UInt8]) -> Bool {
        nalUnitStarts(unit).contains { unit[$0.payload] & 0x1F == 5 }
    }
}

/// Splits a low-overhead AV1 OBU stream into temporal units, dropping temporal delimiters
/// as the AV1-in-Matroska mapping asks.
enum AV1Stream {
    struct Unit { var data: [UInt8]; var isKeyframe: Bool }

    static func temporalUnits(_ bytes: [UInt8]) throws -> [Unit] {
        var units: [Unit] = []
        var offset = 0
        while offset < bytes.count {
            let header = bytes[offset]
            let type = (header >> 3) & 0x0F
            let extensionLength = header & 0x04 != 0 ? 1 : 0
            var cursor = offset + 1 + extensionLength
            var size = 0, shift = 0
            while true {
                let byte = bytes[cursor]; cursor += 1
                size |= Int(byte & 0x7F) << shift; shift += 7
                if byte & 0x80 == 0 { break }
            }
            let end = cursor + size
            if type == 2 {
                units.append(Unit(data: [], isKeyframe: false))
            } else if !units.isEmpty {
                units[units.count - 1].data += bytes[offset..<end]
                if type == 1 { units[units.count - 1].isKeyframe = true }  // libaom repeats the sequence header on keyframes
            }
            offset = end
        }
        return units
    }
}
