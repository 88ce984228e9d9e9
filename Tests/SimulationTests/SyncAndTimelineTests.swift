import Foundation
@testable import LoadGen
import Recorder
import Testing
import WebMReader
import WireCoding

/// The archive keeps time, judged on the manual clock (moved from JoinTests, where the test
/// server's own timing under a busy host decided the result): every block of a track sits where
/// its sender's capture clock puts it, audio and video of a sender together, and the files of
/// different senders together on the session's timeline.
///
/// The truth is the load generator's log of what it sent: each frame's bytes and the schedule
/// instant it was captured at. A file's blocks are matched to it by their bytes and spacing, so
/// every track gets its *lag*: where the file puts a capture instant, minus that instant. One
/// lag for every track of every file is a session in sync.
@Suite struct SyncAndTimelineTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-sync-\(UUID())").path

    /// Two publishers on one capture clock, a clean path: within a file and across the files,
    /// the tracks line up to the millisecond the WebM timecodes allow; every block is on its
    /// track's frame grid.
    @Test func twoSteadySendersKeepTheirGridAndLineUpAcrossFiles() throws {
        var options = SimulatedSession.Options()
        options.plan.publishers = 2
        options.plan.rampSeconds = 1.3  // the second publisher starts off the first one's grid
        let session = try record(options, seconds: 12)
        let lags = try trackLags(session)
        #expect(lags.count == 4, "\(lags)")
        let spread = (lags.map(\.lag).max() ?? 0) - (lags.map(\.lag).min() ?? 0)
        #expect(spread <= 2, "lags (ms) per track: \(lags)")
    }

    /// Audio reaches recbot 300 ms after the video captured with it; its sender reports come on
    /// time. The file puts audio back beside its video (within 20 ms), from the first block on.
    @Test func audioDelayedOnTheWireIsAlignedBySenderReports() throws {
        var options = SimulatedSession.Options()
        options.plan.publishers = 1
        options.audioDelayMilliseconds = 300
        let session = try record(options, seconds: 10)
        let lags = try trackLags(session)
        let video = try #require(lags.first { $0.isVideo }), audio = try #require(lags.first { !$0.isVideo })
        #expect(abs(audio.lag - video.lag) <= 20, "audio − video = \(audio.lag - video.lag) ms")
    }

    // MARK: - Judging a file against what was sent

    struct TrackLag: CustomStringConvertible {
        var connectionID: String
        var isVideo: Bool
        /// Milliseconds from a capture instant to where the session's timeline has it.
        var lag: Double
        var description: String { "\(connectionID.prefix(6)) \(isVideo ? "video" : "audio"): \(lag)" }
    }

    func record(_ options: SimulatedSession.Options, seconds: Double) throws -> SimulatedSession {
        let session = try SimulatedSession(directory: root + "/\(UUID())", clip: SimulatedSessionTests.clip, options: options)
        try session.run(seconds: seconds)
        #expect(!session.finished.isEmpty && session.finished.allSatisfy { $0.error == nil }, "\(session.finished.map(\.filename))")
        return session
    }

    /// Each track's lag, after checking its blocks against the sender's log and its frame grid.
    func trackLags(_ session: SimulatedSession) throws -> [TrackLag] {
        var lags: [TrackLag] = []
        for file in session.finished {
            let publisher = try #require(session.server.publishers.first { $0.connectionID == file.connectionID })
            let sent = try #require(publisher.sentFrames)
            let path = session.layout.path(of: file.filename)
            let parsed = WebMReader.parse(path: path)
            #expect(parsed.isComplete && parsed.info?.timecodeScale == 1_000_000, "\(file.filename)")
            let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: session.layout.path(of: file.sidecarFilename))))
                                       as? [String: Any])
            let offsetMilliseconds = Double(try #require(sidecar["start_time_offset"] as? Int) * 1_000)
            for (track, isVideo) in [(UInt64(1), true), (UInt64(2), false)] {
                let blocks = parsed.frames.filter { $0.track == track }
                let log = sent.filter { $0.isVideo == isVideo }
                let anchor = try #require(Self.anchor(blocks, in: log), "\(file.filename) track \(track): no run of blocks matches what was sent")
                expectOnTheGrid(blocks, period: isVideo ? 1_000.0 / 30 : 20, file.filename)
                // Capture instants on the session's timeline: the recording started at the clock's start.
                let captured = Double(anchor.capturedAt.nanoseconds - SimulatedSession.start.monotonic.nanoseconds) / 1e6
                lags.append(TrackLag(connectionID: file.connectionID, isVideo: isVideo,
                                     lag: offsetMilliseconds + Double(blocks[0].timecode) - captured))
            }
        }
        return lags
    }

    /// The sent frame the track's first block is: of the frames with its bytes, the one from
    /// which the next blocks' spacing lands on frames with their bytes too (a clip loops, and a
    /// keyframe request restarts it, so bytes alone repeat).
    static func anchor(_ blocks: [WebMParsedFile.Frame], in log: [SyntheticPublisher.SentFrame]) -> SyntheticPublisher.SentFrame? {
        guard let first = blocks.first else { return nil }
        var byMillisecond: [Int64: [SyntheticPublisher.SentFrame]] = [:]
        for frame in log { byMillisecond[frame.capturedAt.nanoseconds / 1_000_000, default: []].append(frame) }
        let checked = blocks.prefix(30).dropFirst()
        var best: (frame: SyntheticPublisher.SentFrame, matches: Int)?
        for candidate in log where candidate.data == first.data {
            let matches = checked.filter { block in
                let due = candidate.capturedAt.nanoseconds / 1_000_000 + (block.timecode - first.timecode)
                return (due - 1...due + 1).contains { byMillisecond[$0]?.contains { $0.data == block.data } == true }
            }.count
            if matches > best?.matches ?? -1 { best = (candidate, matches) }
        }
        // Nearly all of them: a lost frame leaves a gap the spacing steps over.
        guard let best, best.matches * 10 >= checked.count * 9 else { return nil }
        return best.frame
    }

    /// Every block a whole number of frame periods after the first (timecodes are whole
    /// milliseconds, each rounded down from the sender's finer ticks: two of them differ by up
    /// to 1 ms more or less than their true distance; a step is a frame).
    func expectOnTheGrid(_ blocks: [WebMParsedFile.Frame], period: Double, _ name: String) {
        guard let first = blocks.first else { return }
        let offGrid = blocks.filter { block in
            let periods = Double(block.timecode - first.timecode) / period
            return abs(periods - periods.rounded()) * period > 1.5
        }
        let where_ = "from \(first.timecode) ms, first at \(offGrid.prefix(5).map(\.timecode)); blocks \(blocks.prefix(12).map(\.timecode))"
        #expect(offGrid.count == 0, "\(name): \(offGrid.count) of \(blocks.count) blocks off the \(period) ms grid \(where_)")
    }
}
