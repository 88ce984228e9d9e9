import DiskLayout
import Foundation
import Media
import SystemClock
import Testing
import WireCoding
@testable import Recorder

/// Every recorder's queue is bounded, and so is their sum: behind one hung disk, many senders
/// together hold at most the shared budget, and what does not fit is dropped and counted.
@Suite struct WriteBudgetTests {
    @Test func theSharedBudgetBoundsEveryQueueTogether() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-budget-\(UUID())").path
        let layout = ArchiveLayout(recordingsRoot: root, recordingID: "01JD0000000000000000000000")
        let budget = WriteBudget(limitBytes: 64 << 10)
        let release = DispatchSemaphore(value: 0)
        let recorders = try ["A", "B", "C"].map { id in
            let recorder = try SenderRecorder(connectionID: id, tracks: SenderTracks(videoCodec: nil, audioChannels: 1), layout: layout,
                                              recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16),
                                              writeBudget: budget, clock: SystemTimeSource())
            recorder.file.queue.async { release.wait() }  // the disk stops answering
            return recorder
        }
        let payload = [UInt8](repeating: 0xFC, count: 1_000)
        // 200 kB per sender, 600 kB in all: far past the 64 kB budget. A file's first second waits
        // in memory (the file is created with its first whole cluster); the rest meets the budget.
        for index in 0..<200 {
            let t = MonotonicTime.milliseconds(Int64(index) * 20)
            for recorder in recorders {
                recorder.add(EncodedFrame(data: payload, rtpTimestamp: UInt32(index * 960), isKeyframe: true), video: false, mediaTime: t, arrival: t)
            }
            #expect(budget.reservedBytes <= budget.limitBytes)
        }
        let dropped = recorders.map { $0.statistics.framesDroppedForBackpressure }
        #expect(dropped.reduce(0, +) >= 3 * 145 - budget.limitBytes / payload.count, "what did not fit was dropped and counted: \(dropped)")
        for _ in recorders { release.signal() }
        for recorder in recorders { recorder.file.flush(); recorder.file.queue.sync {} }
        #expect(budget.reservedBytes == 0, "every reservation is given back once written")
    }
}
