import CodecBindings
import DiskLayout
import Foundation
import Media
@testable import Recorder
import Testing
import WireCoding

/// A process that continues a session another recorded (a failover, issue 43): each sender's
/// parts are numbered on from the catalog's, so no name the dead process used is taken again,
/// and without split part 1 stays free for the dead process's part 0, which becomes it.
@Suite struct ContinuedRecordingsTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-continued-\(UUID())").path
    var layout: ArchiveLayout { ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000") }

    /// Audio of `sender` for `count` frames from frame `start`; returns its current recorder.
    func sendAudio(_ set: RecordingsProbe, _ sender: String, from start: Int = 0, count: Int = 10) throws -> SenderRecorder? {
        let audio = try OpusEncoder(channels: 1)
        for index in start..<(start + count) {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            let opus = EncodedFrame(data: try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1)), rtpTimestamp: 0, isKeyframe: true)
            set.add(ReceivedFrame(ssrc: 2, sender: sender, kind: .audio, codec: "OPUS", frame: opus, mediaTime: t, completedAt: t), now: t)
        }
        return set.recorders[sender]
    }

    let audioOnly = SenderLayout(videoCodec: nil, audioChannels: 1)

    @Test func withoutSplitASenderThePreviousProcessRecordedGoesOnFromPartTwo() throws {
        let set = RecordingsProbe(archive: layout, continuing: PriorParts(parts: [("OLD", 0), ("MANY", 0), ("MANY", 3)]))
        _ = set.update(senders: ["OLD": audioOnly, "MANY": audioOnly, "NEW": audioOnly])
        #expect(try sendAudio(set, "OLD")?.part == 2, "part 1 is the dead process's part 0, renamed")
        #expect(try sendAudio(set, "MANY")?.part == 4)
        #expect(try sendAudio(set, "NEW")?.part == 0, "a sender the catalog never saw starts as usual")
        #expect(set.counters.returningSenders == 2)
        // A part that ends before any media gives its number back, never below the catalog's.
        let lost = set.endForInterruption(boundary: .milliseconds(400))
        #expect(Set(lost.map(\.filename)) == ["split-archive-OLD_0002.webm", "split-archive-MANY_0004.webm", "split-archive-NEW_0001.webm"])
        _ = set.update(senders: ["OLD": audioOnly])
        _ = set.update(senders: [:])
        _ = set.update(senders: ["OLD": audioOnly])
        #expect(try sendAudio(set, "OLD", from: 100)?.part == 3)
    }

    @Test func withSplitThePartsGoOnAndTheEndedWholeFileIsNotStartedAgain() throws {
        let set = RecordingsProbe(archive: layout, split: SplitPolicy(seconds: 2, only: false),
                                  continuing: PriorParts(parts: [("OLD", 0), ("OLD", 1), ("OLD", 2)]))
        _ = set.update(senders: ["OLD": audioOnly, "NEW": audioOnly])
        #expect(try sendAudio(set, "OLD")?.part == 3)
        #expect(try sendAudio(set, "NEW")?.part == 1)
        let ended = set.endAll()
        #expect(Set(ended.map(\.filename)) == ["split-archive-OLD_0003.webm", "split-archive-NEW_0001.webm", "archive-NEW.webm"],
                "OLD's whole-file archive ended with the process that wrote it")
    }

    @Test func priorPartsTakeTheNewestNumberOfEachSender() {
        let prior = PriorParts(parts: [("A", 2), ("A", 0), ("A", 1), ("B", 1)])
        #expect(prior.newest == ["A": 2, "B": 1] && prior.hadWholeFile == ["A"])
        var numbers = PartNumbers(first: 0, continuing: PriorParts(parts: [("A", 0)]))
        #expect(numbers.hasNumbered("A") && numbers.take("A") == 2)
        numbers.giveBack("A", part: 2)
        #expect(numbers.take("A") == 2, "given back to the catalog's")
    }
}
