import Testing
import WireCoding
@testable import WebM
import WebMReader

/// Bad input to the muxer: a typed error, nothing written, and the file stays valid.
@Suite struct MuxerErrorTests {
    let configuration = WebMMuxerConfiguration(
        video: WebMVideoTrack(codec: .vp8, width: 64, height: 48), audio: nil, segmentUID: Array(repeating: 7, count: 16))

    func frame(_ ms: Int64, key: Bool = true, track: WebMTrackKind = .video) -> WebMFrame {
        WebMFrame(track: track, timestampNanoseconds: ms * 1_000_000, isKeyframe: key, data: [0x10, 0x02, 0x00, UInt8(ms & 0xFF)])
    }

    @Test func rejectedFramesLeaveAValidFile() throws {
        var muxer = try WebMMuxer(configuration: configuration)
        var file = MemoryFile()
        file.apply(try muxer.write(frame(0)))
        file.apply(try muxer.write(frame(40, key: false)))
        let before = muxer.statistics

        #expect(throws: WebMMuxerError.timestampDecreased(.video, previousMilliseconds: 40, milliseconds: 20)) {
            try muxer.write(frame(20, key: false))
        }
        #expect(throws: WebMMuxerError.trackNotConfigured(.audio)) { try muxer.write(frame(60, track: .audio)) }
        #expect(throws: WebMMuxerError.emptyFrame(.video)) {
            try muxer.write(WebMFrame(track: .video, timestampNanoseconds: 80_000_000, isKeyframe: false, data: []))
        }
        #expect(throws: WebMMuxerError.negativeTimestamp(.video, nanoseconds: -1)) {
            try muxer.write(WebMFrame(track: .video, timestampNanoseconds: -1, isKeyframe: true, data: [1]))
        }
        #expect(muxer.statistics == before)

        file.apply(try muxer.write(frame(80, key: false)))
        file.apply(try muxer.finalize())
        #expect(throws: WebMMuxerError.alreadyFinalized) { try muxer.finalize() }
        #expect(throws: WebMMuxerError.alreadyFinalized) { try muxer.write(frame(100)) }

        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete)
        #expect(parsed.frames.map(\.timecode) == [0, 40, 80])
        #expect(parsed.frames.map(\.data) == [frame(0).data, frame(40).data, frame(80).data])
    }

    @Test func invalidConfigurationsAreRejected() {
        #expect(throws: WebMMuxerError.noTracks) {
            try WebMMuxer(configuration: WebMMuxerConfiguration(video: nil, audio: nil, segmentUID: Array(repeating: 0, count: 16)))
        }
        #expect(throws: WebMMuxerError.invalidSegmentUID(length: 3)) {
            try WebMMuxer(configuration: WebMMuxerConfiguration(video: configuration.video, audio: nil, segmentUID: [1, 2, 3]))
        }
        #expect(throws: WebMMuxerError.invalidVideoSize(width: 0, height: 48)) {
            try WebMMuxer(configuration: WebMMuxerConfiguration(
                video: WebMVideoTrack(codec: .vp8, width: 0, height: 48), audio: nil, segmentUID: Array(repeating: 0, count: 16)))
        }
        #expect(throws: WebMMuxerError.missingCodecPrivate(.av1)) {
            try WebMMuxer(configuration: WebMMuxerConfiguration(
                video: WebMVideoTrack(codec: .av1, width: 64, height: 48), audio: nil, segmentUID: Array(repeating: 0, count: 16)))
        }
        #expect(throws: WebMMuxerError.invalidClusterLimits(maxDurationMilliseconds: 40_000, maxBytes: 1)) {
            try WebMMuxer(configuration: WebMMuxerConfiguration(
                video: configuration.video, audio: nil, segmentUID: Array(repeating: 0, count: 16),
                maxClusterDurationMilliseconds: 40_000, maxClusterBytes: 1))
        }
    }

    @Test func finalizingAnEmptyFileGivesAParsableHeader() throws {
        var muxer = try WebMMuxer(configuration: configuration)
        var file = MemoryFile()
        file.apply(try muxer.finalize())
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete)
        #expect(parsed.tracks.count == 1 && parsed.clusters.isEmpty)
        #expect(parsed.info?.duration == 0)
    }

    @Test func clustersCloseWhenTheyGrowTooLarge() throws {
        var config = configuration
        config.maxClusterBytes = 1_000
        var muxer = try WebMMuxer(configuration: config)
        var file = MemoryFile()
        for index in 0..<20 {
            let data = [UInt8](repeating: UInt8(index), count: 300)
            file.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: Int64(index) * 33_000_000, isKeyframe: index == 0, data: data)))
        }
        file.apply(try muxer.finalize())
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete)
        #expect(parsed.frames.count == 20)
        #expect(parsed.clusters.count == 5, "four 300-byte frames pass the 1000-byte bound")
    }
}

@Suite struct EBMLEncodingTests {
    @Test func voidElementsHaveExactLengths() {
        // The SeekHead area is rewritten in place, so Void must fill any gap exactly.
        for length in 2...300 {
            var writer = EBMLWriter()
            writer.writeVoid(totalLength: length)
            let bytes = writer.bytes
            #expect(bytes.count == length && bytes[0] == 0xEC)
            let width = bytes[1].leadingZeroBitCount + 1
            var size = UInt64(bytes[1]) & ((1 << (8 - width)) - 1)
            for byte in bytes[2..<(1 + width)] { size = size << 8 | UInt64(byte) }
            #expect(1 + width + Int(size) == length, "Void of \(length) bytes")
        }
    }

    @Test func sizesUseTheSmallestWidthAndAvoidTheUnknownPattern() {
        #expect(EBMLWriter.minimalSizeWidth(0) == 1)
        #expect(EBMLWriter.minimalSizeWidth(126) == 1)
        #expect(EBMLWriter.minimalSizeWidth(127) == 2, "0xFF would mean unknown size")
        #expect(EBMLWriter.minimalSizeWidth(16_382) == 2)
        #expect(EBMLWriter.minimalSizeWidth(16_383) == 3)
        var writer = EBMLWriter()
        writer.writeSize(127)
        #expect(writer.bytes == [0x40, 0x7F])
    }

    @Test func opusHeadLayout() {
        let head = OpusHead(channelCount: 2, preSkip: 312, inputSampleRate: 48_000, outputGain: -256)
        #expect(head.bytes == Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0xFF, 0])
        #expect(head.codecDelayNanoseconds == 6_500_000)
    }
}

/// The AV1 sequence header parser reads bytes from the network: hostile input must give
/// a typed error or a value, never a crash or a hang.
@Suite struct AV1ParserRobustnessTests {
    @Test func randomAndTruncatedInputNeverCrashes() {
        var generator = SplitMix64(seed: 0x5EED)
        var values = 0
        for round in 0..<20_000 {
            let length = Int(generator.next() % 64)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if round % 2 == 0, !bytes.isEmpty { bytes[0] = 0x0A }  // make it look like a sequence header OBU
            if (try? AV1CodecConfiguration(temporalUnit: bytes)) != nil { values += 1 }
            _ = try? AV1CodecConfiguration(sequenceHeaderPayload: bytes)
        }
        #expect(values < 20_000)
    }

    @Test func truncatedRealSequenceHeaderIsATypedError() throws {
        // The sequence header OBU libaom wrote for a 160x120 4:2:0 stream, cut at every length.
        let header: [UInt8] = [0x0A, 0x0A, 0x00, 0x00, 0x00, 0x03, 0xB4, 0xFF, 0x73, 0x6B, 0xE4, 0x01]
        let full = try AV1CodecConfiguration(temporalUnit: header)
        #expect(full.seqProfile == 0 && full.maxFrameWidth == 160 && full.maxFrameHeight == 120)
        #expect(full.chromaSubsamplingX && full.chromaSubsamplingY && !full.sequence.highBitdepth)
        for cut in 0..<header.count - 1 {
            #expect(throws: AV1CodecConfiguration.ParseError.self) { try AV1CodecConfiguration(temporalUnit: Array(header.prefix(cut))) }
        }
    }
}
