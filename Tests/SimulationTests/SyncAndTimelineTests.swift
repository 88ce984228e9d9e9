import Foundation
import LoadGen
import Recorder
import Testing
import WebMReader

/// The archive keeps time, judged on the manual clock (moved from JoinTests, where the test
/// server's own timing under a busy host decided the result): every block of a track sits where
/// its sender's capture clock puts it, audio and video of a sender together, and the files of
/// different senders together on the session's timeline.
///
/// The truth is the load generator's log of what it sent (`ArchiveTiming`).
@Suite final class SyncAndTimelineTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-sync-\(UUID())").path

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Two publishers on one capture clock, a clean path: within a file and across the files,
    /// the tracks line up to the millisecond the WebM timecodes allow; every block is on its
    /// track's frame grid.
    @Test func twoSteadySendersKeepTheirGridAndLineUpAcrossFiles() throws {
        var options = SimulatedSession.Options()
        options.plan.publishers = 2
        options.plan.rampSeconds = 1.3  // the second publisher starts off the first one's grid
        let session = try record(options, seconds: 12)
        let lags = try ArchiveTiming.trackLags(session)
        #expect(lags.count == 4, "\(lags)")
        let spread = ArchiveTiming.spread(lags)
        #expect(spread <= 2, "lags (ms) per track: \(lags)")
    }

    /// Audio reaches recbot 300 ms after the video captured with it; its sender reports come on
    /// time. The file puts audio back beside its video (within 20 ms), from the first block on.
    @Test func audioDelayedOnTheWireIsAlignedBySenderReports() throws {
        var options = SimulatedSession.Options()
        options.plan.publishers = 1
        options.audioDelayMilliseconds = 300
        try expectAudioBesideVideo(try record(options, seconds: 10))
    }

    /// Video reaches recbot 700 ms after the audio captured with it (a congested libwebrtc
    /// sender's pacer queues video, never audio), from the start: its first frames come before
    /// its first SR. They wait for it, as the sender's first frames wait for theirs, so video
    /// starts beside its audio instead of 700 ms late on arrival time (and sliding 1 ms a second
    /// back into line for the next 12 minutes).
    @Test func videoQueuedBehindAudioIsKeptBesideIt() throws {
        try expectVideoQueuedBehindAudioKept(from: 0, seconds: 10)
    }

    /// The same 700 ms of queueing, coming 4 s into the session, after the file started: the
    /// file holds each track for the other as long as a frame may wait for retransmissions plus
    /// 400 ms, so no picture is lost at the onset either, and each stays beside its audio.
    @Test func videoQueuedBehindAudioMidSessionLosesNoPicture() throws {
        try expectVideoQueuedBehindAudioKept(from: 4, seconds: 12)
    }

    /// One publisher whose video is 700 ms behind its audio on the wire from `from` seconds on.
    func expectVideoQueuedBehindAudioKept(from: Double, seconds: Double) throws {
        var options = SimulatedSession.Options()
        options.plan.publishers = 1
        options.videoDelayMilliseconds = 700
        options.videoDelayFromSeconds = from
        let session = try record(options, seconds: seconds)
        let file = try #require(session.finished.first)
        let parsed = WebMReader.parse(path: session.layout.path(of: file.filename))
        let sent = try #require(session.server.publishers.first?.sentFrames)
        let videoSent = sent.count { $0.isVideo }, videoKept = parsed.frames.count { $0.track == 1 }
        // The last 700 ms of video is still on its way when the session ends.
        #expect(videoKept >= videoSent - 24, "video: \(videoKept) of \(videoSent) sent; stats \(file.statistics)")
        try expectAudioBesideVideo(session)
    }

    /// The sender's audio and video have one lag (within 20 ms): they sit where they were captured together.
    func expectAudioBesideVideo(_ session: SimulatedSession) throws {
        let lags = try ArchiveTiming.trackLags(session)
        let video = try #require(lags.first { $0.isVideo }), audio = try #require(lags.first { !$0.isVideo })
        #expect(abs(audio.lag - video.lag) <= 20, "audio − video = \(audio.lag - video.lag) ms")
    }

    func record(_ options: SimulatedSession.Options, seconds: Double) throws -> SimulatedSession {
        let session = try SimulatedSession.recorded(options, seconds: seconds, under: root)
        #expect(!session.finished.isEmpty && session.finished.allSatisfy { $0.error == nil }, "\(session.finished.map(\.filename))")
        return session
    }
}
