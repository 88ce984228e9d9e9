import CodecBindings
import Foundation
import Testing
@testable import WebM
@testable import WebMReader

/// Muxes real libvpx/libopus output and reads it back with libwebm's parser.
@Suite struct MuxerParseBackTests {
    @Test(arguments: [VPXCodec.vp8, VPXCodec.vp9])
    func videoAndAudioRoundTrip(codec: VPXCodec) throws {
        let stream = try SyntheticStream.make(video: codec, audioChannels: 2, seconds: 3, keyframeInterval: 30)
        let (_, bytes, muxer) = try stream.mux()
        let parsed = WebMReader.parse(bytes)
        #expect(parsed.isComplete, "libwebm status \(parsed.status)")
        try expectSoraLayout(parsed, fileSize: bytes.count)

        // EBML header values hisui requires.
        let header = try #require(parsed.ebmlHeader)
        #expect(header == .init(version: 1, readVersion: 1, maxIDLength: 4, maxSizeLength: 8, docType: "webm",
                                docTypeVersion: 4, docTypeReadVersion: 2))
        let info = try #require(parsed.info)
        #expect(info.timecodeScale == 1_000_000)
        #expect(info.muxingApp == "WebRTC SFU Sora" && info.writingApp == "WebRTC SFU Sora")
        #expect(info.duration == Double(muxer.statistics.lastTimestampMilliseconds ?? -1))

        // Tracks: video 1, audio 2, as configured.
        #expect(parsed.tracks.count == 2)
        let video = try #require(parsed.tracks.first { $0.number == 1 })
        #expect(video.type == 1 && video.codecID == (codec == .vp8 ? "V_VP8" : "V_VP9"))
        #expect(video.pixelWidth == 160 && video.pixelHeight == 120 && !video.usesLacing)
        let audio = try #require(parsed.tracks.first { $0.number == 2 })
        #expect(audio.type == 2 && audio.codecID == "A_OPUS" && audio.channels == 2 && audio.samplingFrequency == 48_000)
        #expect(audio.codecPrivate == stream.audio?.opusHead.bytes && audio.codecPrivate.count == 19)
        #expect(audio.seekPreRoll == 80_000_000)
        #expect(audio.codecDelay == stream.audio?.opusHead.codecDelayNanoseconds)

        // Every frame, byte for byte, in order, on its track, at its millisecond, with its keyframe flag.
        let frames = parsed.frames
        #expect(frames.count == stream.frames.count)
        for (written, read) in zip(stream.frames, frames) {
            #expect(read.track == UInt64(written.track.trackNumber))
            #expect(read.timecode == written.timestampNanoseconds / 1_000_000)
            #expect(read.isSimpleBlock)
            #expect(read.isKeyframe == (written.track == .audio || written.isKeyframe))
            #expect(read.data == written.data)
        }
        #expect(muxer.statistics.videoFrames + muxer.statistics.audioFrames == frames.count)
        #expect(muxer.statistics.bytes == UInt64(bytes.count))

        // Clusters begin at each video keyframe; cues point at exactly those clusters.
        let keyframeTimes = stream.frames.filter { $0.track == .video && $0.isKeyframe }.map { UInt64($0.timestampNanoseconds / 1_000_000) }
        #expect(keyframeTimes.count >= 3)
        for cluster in parsed.clusters {
            let firstVideo = cluster.frames.first { $0.track == 1 }
            if let firstVideo, firstVideo.isKeyframe { #expect(cluster.frames.first?.track == 1) }
            #expect(cluster.frames.filter { $0.track == 1 && $0.isKeyframe }.count <= 1)
        }
        let segmentData = try #require(parsed.segmentDataOffset)
        #expect(parsed.cuePoints.map(\.time) == keyframeTimes)
        for cue in parsed.cuePoints {
            #expect(cue.track == 1)
            let cluster = try #require(parsed.clusters.first { $0.position - segmentData == cue.clusterPosition })
            #expect(cluster.timecode == cue.time && cluster.frames.first?.isKeyframe == true)
        }

        // Decode every frame with the real decoders.
        let videoDecoder = try VPXDecoder(codec: codec)
        let audioDecoder = try OpusDecoder(channels: 2)
        var pictures = 0, samples = 0
        for frame in frames {
            if frame.track == 1 {
                for picture in try videoDecoder.decode(frame.data) {
                    #expect(picture.width == 160 && picture.height == 120)
                    pictures += 1
                }
            } else {
                samples += try audioDecoder.decode(frame.data)
            }
        }
        #expect(pictures == stream.frames.filter { $0.track == .video }.count)
        #expect(samples == 960 * stream.frames.filter { $0.track == .audio }.count)
    }

    /// Audio that leads the first video keyframe (a sender whose video comes late, or never, or
    /// a kill before it came) is cued on the audio track, so the file still has its Cues; from
    /// the first keyframe on, only video keyframes are cued.
    @Test func audioBeforeTheFirstVideoFrameIsCuedOnTheAudioTrack() throws {
        var stream = try SyntheticStream.make(video: .vp8, audioChannels: 1, seconds: 4)
        let lead = try SyntheticStream.make(video: nil, audioChannels: 1, seconds: 2)
        stream.frames = lead.frames + stream.frames.filter { $0.track == .video }.map {
            var later = $0
            later.timestampNanoseconds += 2_000_000_000
            return later
        }
        let (_, bytes, _) = try stream.mux(maxClusterDurationMilliseconds: 1_000)
        let parsed = WebMReader.parse(bytes)
        #expect(parsed.isComplete)
        try expectSoraLayout(parsed, fileSize: bytes.count)
        #expect(parsed.cuePoints.prefix(2).map(\.track) == [2, 2] && parsed.cuePoints.dropFirst(2).allSatisfy { $0.track == 1 })
        #expect(parsed.cuePoints.map(\.time) == [0, 1_000, 2_000, 3_000, 4_000, 5_000])

        // The video never came: the file is all lead-in, every cluster cued.
        var audioOnly = stream
        audioOnly.frames = lead.frames
        let (_, alone, _) = try audioOnly.mux(maxClusterDurationMilliseconds: 1_000)
        let parsedAlone = WebMReader.parse(alone)
        try expectSoraLayout(parsedAlone, fileSize: alone.count)
        #expect(parsedAlone.cuePoints.count == parsedAlone.clusters.count && parsedAlone.cuePoints.allSatisfy { $0.track == 2 })
    }

    @Test func audioOnlyUsesTrackTwoAndCuesEveryCluster() throws {
        let stream = try SyntheticStream.make(video: nil, audioChannels: 1, seconds: 4)
        let (_, bytes, _) = try stream.mux(maxClusterDurationMilliseconds: 1_000)
        let parsed = WebMReader.parse(bytes)
        #expect(parsed.isComplete)
        try expectSoraLayout(parsed, fileSize: bytes.count)
        #expect(parsed.tracks.map(\.number) == [2])
        #expect(parsed.frames.count == 200 && parsed.frames.allSatisfy { $0.track == 2 && $0.isKeyframe })
        #expect(parsed.clusters.count == 4)
        #expect(parsed.cuePoints.count == parsed.clusters.count)
        #expect(parsed.cuePoints.map(\.time) == parsed.clusters.map(\.timecode))
        for cluster in parsed.clusters {
            let span = (cluster.frames.last?.timecode ?? 0) - Int64(cluster.timecode)
            #expect(span < 1_000)
        }
    }

    @Test func videoOnlyFileWithLongGopStillSplitsClusters() throws {
        // One keyframe in 6 s: clusters must still close every 5 s (bounded loss on a crash).
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: nil, seconds: 6, fps: 10, keyframeInterval: 1000)
        let (_, bytes, _) = try stream.mux()
        let parsed = WebMReader.parse(bytes)
        #expect(parsed.isComplete)
        try expectSoraLayout(parsed, fileSize: bytes.count)
        #expect(parsed.tracks.map(\.number) == [1])
        #expect(parsed.clusters.count == 2)
        #expect(parsed.cuePoints.count == 1, "only the keyframe cluster is cued")
    }

    /// The layout of recording-format.md, checked on libwebm's view of the file.
    func expectSoraLayout(_ parsed: WebMParsedFile, fileSize: Int) throws {
        let segment = try #require(parsed.elements.first { $0.id == ElementID.segment })
        #expect(parsed.elements.first?.id == 0x1A45_DFA3)
        let size = try #require(segment.size, "finalized Segment has a known size")
        #expect(segment.position + UInt64(segment.headerSize) + size == UInt64(fileSize))
        let children = parsed.segmentChildren.map(\.id)
        #expect(Array(children.prefix(4)) == [ElementID.seekHead, ElementID.void, ElementID.info, ElementID.tracks])
        #expect(children.last == ElementID.cues)
        #expect(children.dropFirst(4).dropLast().allSatisfy { $0 == ElementID.cluster })
        #expect(parsed.elements.allSatisfy { $0.size != nil }, "no unknown sizes once finalized")
        // SeekHead entries resolve to the elements they name, relative to the Segment's data.
        let dataStart = segment.position + UInt64(segment.headerSize)
        #expect(Set(parsed.seeks.map(\.id)) == [ElementID.info, ElementID.tracks, ElementID.cues])
        for seek in parsed.seeks {
            #expect(parsed.segmentChildren.contains { $0.id == seek.id && $0.position - dataStart == seek.position })
        }
        // Blocks never go back in time across tracks.
        let times = parsed.frames.map(\.timecode)
        #expect(times == times.sorted())
    }
}
