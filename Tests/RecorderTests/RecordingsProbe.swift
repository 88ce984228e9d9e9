import DiskLayout
import Media
import Recorder
import SystemClock
import WireCoding

/// Drives a `Recordings` core the way a connection's pipeline does, keeping what it asks for
/// so a test can look: parts another follows (`takeRetired`), a sender's last parts (returned by
/// `update` and `endAll`), keyframes wanted and frames lost downstream.
final class RecordingsProbe {
    let recordings: Recordings
    private var retired: [SenderRecorder] = []
    private var keyframesWanted: [UInt32] = []
    private(set) var framesLost: [FrameSource] = []
    private(set) var events: [RecordingsEvent] = []

    init(archive: ArchiveLayout, split: SplitPolicy? = nil, continuing prior: PriorParts = PriorParts()) {
        recordings = Recordings(archive: archive, recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0),
                                interleaveNanoseconds: 400_000_000, split: split, clock: SystemTimeSource(), random: SeededRandom(seed: 5),
                                continuing: prior)
    }

    var recorders: [String: SenderRecorder] { recordings.recorders }
    var counters: RecordingsCounters { recordings.counters }
    var totals: RecordingTotals { recordings.totals }

    /// The last parts the output names; the parts another follows wait for `takeRetired`.
    private func absorb(_ output: RecordingsOutput) -> [SenderRecorder] {
        retired += output.finish.filter { !$0.isLastPart }.map(\.recorder)
        keyframesWanted += output.keyframesWanted
        framesLost += output.framesLost
        events += output.events
        return output.finish.filter(\.isLastPart).map(\.recorder)
    }

    /// The senders that are gone (their last parts).
    func update(senders: [String: SenderLayout], refusedVideo: [String: String] = [:]) -> [SenderRecorder] {
        absorb(recordings.update(senders: senders, refusedVideo: refusedVideo, now: .milliseconds(0)))
    }

    func add(_ frame: ReceivedFrame, now: MonotonicTime) {
        _ = absorb(recordings.add([frame]))
    }

    /// Every part the lost connection ended (none is a sender's last).
    func endForInterruption(boundary: MonotonicTime) -> [SenderRecorder] {
        _ = absorb(recordings.endForInterruption(boundary: boundary, now: boundary))
        return takeRetired()
    }

    func endAll() -> [SenderRecorder] { absorb(recordings.endAll(now: .milliseconds(0))) }

    func takeRetired() -> [SenderRecorder] {
        defer { retired = [] }
        return retired
    }

    func takeKeyframesWanted() -> [UInt32] {
        defer { keyframesWanted = [] }
        return keyframesWanted
    }

    func finished(_ recorder: ObjectIdentifier, totals: RecordingTotals) { recordings.finished(recorder, totals: totals) }
}
