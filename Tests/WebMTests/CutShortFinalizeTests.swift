import Testing
@testable import WebM
import WebMReader

/// A write that fails mid-file (a full disk): the file is cut back to its last whole append
/// and finalized there, with Cues and Duration that describe only what it holds.
@Suite struct CutShortFinalizeTests {
    /// Muxes the stream, recording the file after each append; the append at `failAt` fails.
    static func fileFailingAt(_ failAt: Int, stream: SyntheticStream) throws -> (file: [UInt8], muxer: WebMMuxer, framesWritten: Int) {
        var muxer = try WebMMuxer(configuration: stream.configuration(maxClusterDurationMilliseconds: 1_000))
        var file = MemoryFile()
        var appends = 0
        var failed = false
        var frames = 0
        for frame in stream.frames {
            for write in try muxer.write(frame) {
                if case .append = write { appends += 1; if appends > failAt { failed = true } }
                if !failed { file.apply([write]) }
            }
            frames += 1
        }
        return (file.bytes, muxer, frames)
    }

    @Test func aFileWithOnlyItsHeaderIsFinalizedEmpty() throws {
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: 1, seconds: 3, width: 64, height: 48, fps: 15, keyframeInterval: 15)
        var (bytes, muxer, _) = try Self.fileFailingAt(1, stream: stream)
        var file = MemoryFile(bytes: bytes)
        file.apply(try muxer.finalizeTruncated(toLength: UInt64(bytes.count)))
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete && parsed.frames.isEmpty && parsed.info?.duration == 0)
    }

    /// The muxer forgets clusters further back than its writer can lag; a length before them
    /// is refused (the writer broke its promise), not finalized wrongly.
    @Test func aCutFurtherBackThanTheWriterCanLagIsRefused() throws {
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: 1, seconds: 12, width: 64, height: 48, fps: 15, keyframeInterval: 15)
        var configuration = stream.configuration(maxClusterDurationMilliseconds: 1_000)
        (configuration.maxClusterBytes, configuration.maximumWriterLagBytes) = (2_000, 1_000)
        var muxer = try WebMMuxer(configuration: configuration)
        var file = MemoryFile()
        for frame in stream.frames { file.apply(try muxer.write(frame)) }
        var late = muxer
        file.apply(try late.finalizeTruncated(toLength: UInt64(file.bytes.count)))
        #expect(WebMReader.parse(file.bytes).isComplete, "a cut at the end is within the lag")
        #expect { try muxer.finalizeTruncated(toLength: 700) } throws: { error in
            if case .truncatedBeyondWriterLag = error as? WebMMuxerError { true } else { false }
        }
    }

    @Test(arguments: [2, 5, 9]) func theFileEndsAtItsLastWholeClusterAndReadsToTheEnd(failAt: Int) throws {
        let stream = try SyntheticStream.make(video: .vp8, audioChannels: 1, seconds: 12, width: 64, height: 48, fps: 15, keyframeInterval: 15)
        var (bytes, muxer, _) = try Self.fileFailingAt(failAt, stream: stream)
        let before = WebMReader.parse(bytes)
        var file = MemoryFile(bytes: bytes)
        file.apply(try muxer.finalizeTruncated(toLength: UInt64(bytes.count)))
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete, "status \(parsed.status)")
        #expect(parsed.frames == before.completeClusters.flatMap(\.frames))  // every whole cluster, nothing more
        let lastFrame = try #require(parsed.frames.last)
        #expect(parsed.info?.duration == Double(lastFrame.timecode))
        #expect(!parsed.cuePoints.isEmpty)
        // Cues name only clusters that are in the file (none of the lost ones).
        #expect(parsed.cuePoints.count <= parsed.clusters.count)
        #expect(parsed.cuePoints.allSatisfy { cue in cue.time <= UInt64(lastFrame.timecode) })
        #expect(muxer.statistics.bytes == UInt64(file.bytes.count))
    }

    @Test func withoutCuesOnlyInPlacePatchesAreWritten() throws {
        let stream = try SyntheticStream.make(video: nil, audioChannels: 1, seconds: 6)
        var (bytes, muxer, _) = try Self.fileFailingAt(3, stream: stream)
        let writes = try muxer.finalizeTruncated(toLength: UInt64(bytes.count), includeCues: false)
        #expect(!writes.contains { if case .append = $0 { true } else { false } })
        var file = MemoryFile(bytes: bytes)
        file.apply(writes)
        #expect(file.bytes.count == bytes.count)
        let parsed = WebMReader.parse(file.bytes)
        #expect(parsed.isComplete && parsed.cuePoints.isEmpty && parsed.frames.count > 0)
    }

    @Test func aFileWithoutItsHeaderCannotBeKept() throws {
        let stream = try SyntheticStream.make(video: nil, audioChannels: 1, seconds: 2)
        var (_, muxer, _) = try Self.fileFailingAt(0, stream: stream)
        #expect(throws: WebMMuxerError.self) { try muxer.finalizeTruncated(toLength: 10) }
    }
}
