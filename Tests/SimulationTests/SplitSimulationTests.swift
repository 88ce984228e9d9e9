import CodecBindings
import Foundation
import LoadGen
import Recorder
import Testing
import WebMReader

/// `--split-duration` on the manual clock (moved from JoinTests' SplitScenarioTests, which keeps
/// the catalog, report and verify checks against aiortc): two publishers that send a keyframe
/// every second and when asked, a split every 2 s, some loss and jitter, the whole-file archive
/// beside the parts. On real time the parts' frame count once differed from the whole file's
/// by eleven; here the same seed gives the same cut every run, so the check is exact.
@Suite final class SplitSimulationTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-sim-split-\(UUID())").path

    deinit { try? FileManager.default.removeItem(atPath: root) }

    @Test(arguments: [UInt64(3), 4])
    func partsTileEachSendersTimelineBesideTheWholeFile(seed: UInt64) throws {
        var options = SimulatedSession.Options()
        (options.plan.publishers, options.plan.burstLossPercent, options.plan.jitterMilliseconds, options.plan.seed) = (2, 5, 30, seed)
        options.split = SplitPolicy(seconds: 2, only: false)
        let session = try SimulatedSession.recorded(options, seconds: 11, under: root)
        let bySender = Dictionary(grouping: session.finished, by: \.connectionID)
        #expect(bySender.count == 2)
        for (sender, files) in bySender {
            let sorted = files.sorted { $0.part < $1.part }
            let whole = try #require(sorted.first, "\(sender)")
            let parts = Array(sorted.dropFirst())
            #expect(whole.part == 0 && parts.map(\.part) == Array(1...max(1, parts.count)) && (4...6).contains(parts.count),
                    "\(sender): parts \(sorted.map(\.part))")
            // Each part starts where the previous stopped (hisui drops an overlap), on the 2 s grid.
            for (previous, next) in zip(parts, parts.dropFirst()) {
                #expect(previous.stopOffsetSeconds == next.startOffsetSeconds && next.startOffsetSeconds % 2 == 0,
                        "\(sender): part \(previous.part) stops at \(previous.stopOffsetSeconds) s, part \(next.part) starts at \(next.startOffsetSeconds) s")
            }
            let wholeFile = WebMReader.parse(path: session.layout.path(of: whole.filename))
            let partFiles = parts.map { WebMReader.parse(path: session.layout.path(of: $0.filename)) }
            for (part, parsed) in zip(parts, partFiles) {
                let video = parsed.frames.filter { $0.track == 1 }
                #expect(parsed.isComplete && video.first?.isKeyframe == true, "\(sender) part \(part.part) starts with a keyframe")
                let decoder = try VPXDecoder(codec: .vp8)
                let errors = video.reduce(0) { errors, frame in errors + ((try? decoder.decode(frame.data)) == nil ? 1 : 0) }
                #expect(errors == 0, "\(sender) part \(part.part): \(errors) of \(video.count) frames failed to decode")
            }
            // The parts hold exactly the whole file's pictures and sound, in order: video moves to
            // the next part at its keyframe, audio at the boundary, and nothing is lost or doubled.
            for track in [UInt64(1), 2] {
                let inWhole = wholeFile.frames.filter { $0.track == track }.map(\.data)
                let inParts = partFiles.flatMap { $0.frames.filter { $0.track == track }.map(\.data) }
                #expect(inParts == inWhole, "\(sender) track \(track): \(inParts.count) frames in the parts, \(inWhole.count) in the whole file")
            }
            // Each part counts the packets received while it ran; parts overlap only while a cut
            // waits for its keyframe, so together they count the whole file's once, and a little more.
            let received = parts.map(\.reception.packets)
            let sum = received.reduce(0, +)
            #expect(received.allSatisfy { $0 > 0 && $0 < whole.reception.packets }
                    && sum >= whole.reception.packets && sum <= whole.reception.packets * 5 / 4,
                    "\(sender): packets per part \(received), \(whole.reception.packets) in the whole file")
        }
    }
}
