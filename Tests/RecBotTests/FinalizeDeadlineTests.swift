import Archive
import DiskLayout
import Foundation
import Logging
import Media
import SystemClock
import Testing
import WireCoding
@testable import RecBot
@testable import Recorder

/// Finishing files has a deadline: a disk that hangs must not hang a cron job for ever. What
/// is not finished by then is named, and its catalog row stays `recording` for `recbot repair`.
@Suite struct FinalizeDeadlineTests {
    @Test func aHungWriterIsLeftBehindAtTheDeadline() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-deadline-\(UUID())").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        let layout = DataDirectory(path: root).layout(session: "01JD0000000000000000000000")
        let writer = CatalogWriter(catalog: catalog, clock: SystemTimeSource(), logger: Logger(label: "test"))
        let finisher = RecordingFinisher(sessionID: layout.recordingID, host: "test-host", segment: 1, writer: writer, clock: SystemTimeSource())
        let context = SidecarContext(recordingID: layout.recordingID, channelID: "c", soraSessionID: nil, botConnectionID: nil, recbotVersion: "t")
        func recorder(_ id: String) throws -> SenderRecorder {
            let recorder = try SenderRecorder(connectionID: id, tracks: SenderTracks(videoCodec: nil, audioChannels: 1), layout: layout,
                                              recordingStartMilliseconds: 0, recordingStartTime: .milliseconds(0), segmentUID: Array(1...16), clock: SystemTimeSource())
            for index in 0..<100 {
                let t = MonotonicTime.milliseconds(Int64(index) * 20)
                recorder.add(EncodedFrame(data: [0xF8, 0xFF, 0xFE], rtpTimestamp: UInt32(index * 960), isKeyframe: true), video: false,
                             mediaTime: t, arrival: t)
            }
            return recorder
        }
        let healthy = try recorder("HEALTHY"), hung = try recorder("HUNG")
        let release = DispatchSemaphore(value: 0)
        hung.file.queue.async { release.wait() }  // its disk stops answering
        finisher.finish(healthy, counts: ReceiveCounters(), context: context)
        finisher.finish(hung, counts: ReceiveCounters(), context: context)
        // Returning while HUNG is still blocked is the deadline at work (it cannot finish before `release`).
        let unfinished = await finisher.waitForAll(timeoutSeconds: 1)
        #expect(unfinished == ["HUNG"])
        #expect(finisher.all.map(\.connectionID) == ["HEALTHY"] && finisher.all.first?.error == nil)
        release.signal()
        #expect(await finisher.waitForAll(timeoutSeconds: 10).isEmpty)  // the disk came back: it finishes after all
    }
}
