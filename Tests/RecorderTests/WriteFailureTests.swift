import CodecBindings
import DiskLayout
import Foundation
import Media
import SystemClock
import Testing
import TestSupport
import WebMReader
import WireCoding
@testable import Recorder

/// Write errors are loud and lose nothing already written: a file that cannot be created is
/// an error with its errno; a disk that fills mid-file leaves a finalized file that ends at
/// its last whole cluster.
@Suite struct WriteFailureTests {
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ text: String) { lock.withLock { items.append(text) } }
        var all: [String] { lock.withLock { items } }
    }

    static let context = SidecarContext(recordingID: "01JD0000000000000000000000", channelID: "lobby", soraSessionID: "S", clientIDs: [:],
                                        botConnectionID: "BOT", recbotVersion: "test")

    static func recordAudio(_ recorder: SenderRecorder, seconds: Int) throws {
        let audio = try OpusEncoder(channels: 1)
        for index in 0..<(seconds * 50) {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: index, channels: 1))
            recorder.add(EncodedFrame(data: packet, rtpTimestamp: UInt32(index * 960), isKeyframe: true), video: false, mediaTime: t, arrival: t)
        }
    }

    @Test func aFileThatCannotBeCreatedIsAnErrorWithItsErrno() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-wf-\(UUID())").path
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        try layout.createDirectory()
        // A file of the same name already exists (e.g. a sender that came back under its id).
        #expect(FileManager.default.createFile(atPath: layout.directory + "/archive-SENDER01.webm", contents: Data("keep me".utf8)))
        let recorder = try SenderRecorder(connectionID: "SENDER01", tracks: SenderTracks(videoCodec: nil, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let failures = Failures()
        recorder.onWriteFailed = { _, error in failures.add(error) }
        try Self.recordAudio(recorder, seconds: 3)
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 3_000, now: .milliseconds(3_000), context: Self.context))
        #expect(finished.error?.contains("errno 17") == true, "\(finished.error ?? "-")")
        #expect(failures.all.count == 1 && failures.all[0].contains("File exists"))
        #expect(try String(contentsOfFile: layout.directory + "/archive-SENDER01.webm", encoding: .utf8) == "keep me")  // never overwritten
        #expect(recorder.statistics.framesDroppedAfterWriteError > 0)  // frames after the failure are counted, not muxed
    }

    /// Needs a small tmpfs: root, and a system that lets it mount one (otherwise nothing to check here;
    /// `dev/faults.sh` runs the same end to end).
    @Test(.enabled(if: getuid() == 0)) func aFullDiskEndsTheFileAtItsLastWholeCluster() throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-full-\(UUID())").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=48k", "tmpfs", mountPoint]) == 0 else { return }
        defer { _ = Self.run("/bin/umount", [mountPoint]) }
        let layout = ArchiveLayout(recordingsRoot: mountPoint, recordingID: "01JD0000000000000000000000")
        let recorder = try SenderRecorder(connectionID: "SENDER01", tracks: SenderTracks(videoCodec: nil, audioChannels: 1), layout: layout,
                                          recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
        let failures = Failures()
        recorder.onWriteFailed = { _, error in failures.add(error) }
        try Self.recordAudio(recorder, seconds: 60)  // far more than 48 kB
        let finished = try #require(recorder.finish(stoppedAtMilliseconds: 60_000, now: .milliseconds(60_000), context: Self.context))
        #expect(failures.all.count == 1 && failures.all.first?.contains("errno 28") == true, "\(failures.all)")
        #expect(finished.interruption?.contains("No space left on device") == true, "\(finished.interruption ?? "-") / \(finished.error ?? "-")")
        let path = layout.directory + "/archive-SENDER01.webm"
        let parsed = WebMReader.parse(path: path)
        #expect(parsed.isComplete, "status \(parsed.status)")
        #expect(parsed.frames.count > 50 && parsed.frames.count < 3_000)
        #expect(parsed.info?.duration == Double(parsed.frames.last?.timecode ?? -1))
        #expect(finished.durationMilliseconds == parsed.frames.last?.timecode)
        #expect(finished.statistics.audioFrames == parsed.frames.count, "frame counts describe the file, not what was lost")
        #expect(finished.statistics.framesDroppedAfterWriteError > 0)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64
        #expect(finished.size == size, "the catalog's bytes are the file's real size")
    }

    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        (try? runProcess(tool, arguments))?.status ?? -1
    }
}
