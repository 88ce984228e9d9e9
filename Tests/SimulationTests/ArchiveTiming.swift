import Foundation
@testable import LoadGen
import Recorder
import Testing
import WebMReader
import WireCoding

/// Where a simulated session's files put time, judged against what the load generator sent.
/// Each frame it sent is logged with its bytes and capture instant; a file's blocks are matched
/// to that log by their bytes and spacing, so each track gets its *lag*: where the session's
/// timeline (the sidecar's start offset plus the block's time) puts a capture instant, minus
/// that instant. One lag for every track of every file is an archive that keeps time: in sync,
/// files against each other, and gaps as long as they were.
enum ArchiveTiming {
    struct TrackLag: CustomStringConvertible {
        var connectionID: String
        var part: Int
        var isVideo: Bool
        /// Milliseconds from a capture instant to where the session's timeline has it.
        var lag: Double
        var description: String { "\(connectionID.suffix(4)) part \(part) \(isVideo ? "video" : "audio"): \(lag)" }
    }

    /// How far apart the lags are (milliseconds): 0 is one timeline for every track.
    static func spread(_ lags: [TrackLag]) -> Double {
        (lags.map(\.lag).max() ?? 0) - (lags.map(\.lag).min() ?? 0)
    }

    /// Each track's lag, after checking its blocks against the sender's log and its frame grid.
    static func trackLags(_ session: SimulatedSession) throws -> [TrackLag] {
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
                // Where the file says the first block was captured, give or take the lag (under a second).
                let placed = SimulatedSession.start.monotonic.nanoseconds / 1_000_000 + Int64(offsetMilliseconds) + (blocks.first?.timecode ?? 0)
                let anchor = try #require(Self.anchor(blocks, in: log, near: placed), "\(file.filename) track \(track): no run of blocks matches what was sent")
                expectOnTheGrid(blocks, period: isVideo ? 1_000.0 / 30 : 20, file.filename)
                // Capture instants on the session's timeline: the recording started at the clock's start.
                let captured = Double(anchor.capturedAt.nanoseconds - SimulatedSession.start.monotonic.nanoseconds) / 1e6
                lags.append(TrackLag(connectionID: file.connectionID, part: file.part, isVideo: isVideo,
                                     lag: offsetMilliseconds + Double(blocks[0].timecode) - captured))
            }
        }
        return lags
    }

    /// The sent frame the track's first block is: of the frames with its bytes, the one from
    /// which the next blocks' spacing lands on frames with their bytes too (a clip loops, and a
    /// keyframe request restarts it, so bytes alone repeat); of those that match as well, the one
    /// captured nearest `near` (milliseconds on the manual clock; the clip's 2 s loop is far
    /// longer than any lag).
    static func anchor(_ blocks: [WebMParsedFile.Frame], in log: [SyntheticPublisher.SentFrame], near: Int64) -> SyntheticPublisher.SentFrame? {
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
            let distance = abs(candidate.capturedAt.nanoseconds / 1_000_000 - near)
            if let current = best, matches < current.matches
                || matches == current.matches && distance >= abs(current.frame.capturedAt.nanoseconds / 1_000_000 - near) { continue }
            best = (candidate, matches)
        }
        // Nearly all of them: a lost frame leaves a gap the spacing steps over.
        guard let best, best.matches * 10 >= checked.count * 9 else { return nil }
        return best.frame
    }

    /// Every block a whole number of frame periods after the first (timecodes are whole
    /// milliseconds, each rounded down from the sender's finer ticks: two of them differ by up
    /// to 1 ms more or less than their true distance; a step is a frame).
    static func expectOnTheGrid(_ blocks: [WebMParsedFile.Frame], period: Double, _ name: String) {
        guard let first = blocks.first else { return }
        let offGrid = blocks.filter { block in
            let periods = Double(block.timecode - first.timecode) / period
            return abs(periods - periods.rounded()) * period > 1.5
        }
        let where_ = "from \(first.timecode) ms, first at \(offGrid.prefix(5).map(\.timecode)); blocks \(blocks.prefix(12).map(\.timecode))"
        #expect(offGrid.count == 0, "\(name): \(offGrid.count) of \(blocks.count) blocks off the \(period) ms grid \(where_)")
    }
}
