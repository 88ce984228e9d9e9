import Archive
import Foundation
import Testing
import TestSupport
import WebMReader

/// `--split-duration` against the test server: aiortc publishers that send a keyframe only when
/// asked (VP8) or every 2 s (VP9), a split every 2 s, and the whole-file archive beside the parts.
@Suite struct SplitScenarioTests {
    @Test func partsTileEachSendersTimelineBesideTheWholeFile() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp9"])
            defer { scenario.stop() }
            let metadata = #"{"meeting":"weekly","n":12345678901234567890}"#
            let result = try scenario.join(["--duration", "7s", "--split-duration", "2", "--recording-metadata", metadata])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let directory = scenario.dataDirectory + "/recordings/" + session.id
            let recordings = try catalog.recordings(RecordingFilter(sessionID: session.id))
            let bySender = Dictionary(grouping: recordings, by: \.connectionID)
            #expect(bySender.count == 2)

            for (sender, files) in bySender {
                let parts = files.map(\.part).sorted()
                #expect(parts.first == 0, "\(sender): the whole-file archive")
                let splits = Array(parts.dropFirst())
                #expect(splits == Array(1...splits.count) && (3...5).contains(splits.count), "\(sender): parts \(parts)")
                // The sidecars: each part starts where the previous stopped (hisui drops an overlap).
                let sidecars = try splits.map { try json(directory + "/split-archive-\(sender)_" + String(format: "%04d", $0) + ".json") }
                for (previous, next) in zip(sidecars, sidecars.dropFirst()) {
                    #expect(previous["stop_time_offset"] as? Int == next["start_time_offset"] as? Int, "\(sender): \(previous) | \(next)")
                    #expect((next["start_time_offset"] as? Int ?? 1) % 2 == 0, "parts start on the 2 s grid")
                }
                #expect(sidecars.allSatisfy { ($0["recording_metadata"] as? [String: Any])?["meeting"] as? String == "weekly" })
                // Every part's video starts with a keyframe (VP8's asked for at its boundary).
                for part in splits {
                    let parsed = WebMReader.parse(path: directory + "/split-archive-\(sender)_" + String(format: "%04d", part) + ".webm")
                    #expect(parsed.isComplete && parsed.frames.first { $0.track == 1 }?.isKeyframe == true, "\(sender) part \(part)")
                }
                let end = try json(directory + "/split-archive-end-\(sender).json")
                #expect(end["split_last_index"] as? String == String(format: "%04d", splits.count))
                // The parts together hold the whole file's frames, give or take the frames around a cut.
                let whole = try #require(files.first { $0.part == 0 })
                let inParts = files.filter { $0.part > 0 }.reduce(Int64(0)) { $0 + $1.videoFrames }
                let wholeDrops = drops(try json(directory + "/archive-\(sender).json"))
                #expect(abs(inParts - whole.videoFrames) <= 2,
                        "\(sender): \(inParts) video frames in parts, \(whole.videoFrames) in the whole file; drops: whole \(wholeDrops), parts \(sidecars.map(drops))")
                // Each part counts the packets received while it ran, and the whole file counts them
                // all. Parts overlap while a cut waits for its keyframe (aiortc's VP8 answers the
                // request at its own pace, slower on a busy host: up to a third of a 2 s part), so the
                // sum may pass the whole by that much; parts that counted from the start would pass
                // it twice over.
                let received = files.filter { $0.part > 0 }.sorted { $0.part < $1.part }.map(\.packetsReceived)
                let all = whole.packetsReceived
                let sum = received.reduce(0, +)
                #expect(received.allSatisfy { $0 > 0 && $0 < all } && sum >= all * 99 / 100 && sum <= all * 3 / 2,
                        "\(sender): packets per part \(received), \(all) in the whole file")
            }

            let report = try json(directory + "/report-\(session.id).json")
            #expect(report["split_duration"] as? Int == 2 && report["split_only"] as? Bool == false)
            let archives = try #require(report["archives"] as? [[String: Any]])
            #expect(archives.count == 2 && archives.allSatisfy { $0["split_last_index"] is String })
            // Each entry describes the whole-file archive, as its sidecar does.
            for entry in archives {
                let sidecar = try json(directory + "/" + (entry["metadata_filename"] as? String ?? "-"))
                #expect(entry["filename"] as? String == sidecar["filename"] as? String
                        && entry["stop_time_offset"] as? Int == sidecar["stop_time_offset"] as? Int, "\(entry) | \(sidecar)")
            }
            // The operator's metadata comes back as written (the 20-digit number too).
            #expect(try String(contentsOfFile: directory + "/report-\(session.id).json", encoding: .utf8).contains("12345678901234567890"))
            let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, session.id])
            #expect(verify.status == 0, "\(verify.stdout.suffix(3_000))\(verify.stderr.suffix(2_000))")
        }
    }

    /// A split recording killed mid-part: `recbot repair` finishes the open part and writes
    /// what the join would have at its end, the end marker naming the last part and a report
    /// with the split options (kept in the catalog).
    @Test func aKilledSplitRecordingIsRepairedWithItsEndMarker() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let join = try scenario.startJoin(["--duration", "30s", "--split-duration", "1", "--split-only"])
            var parts = 0
            for _ in 0..<100 where parts < 3 {
                Thread.sleep(forTimeInterval: 0.1)
                parts = ((try? Catalog.openExisting(path: scenario.dataDirectory + "/catalog.sqlite")?.recordings()) ?? []).count
            }
            kill(join.processIdentifier, SIGKILL)
            join.waitUntilExit()
            let repair = try scenario.recbot(["repair", "--all", "--data-dir", scenario.dataDirectory])
            #expect(repair.status == 0, "\(repair.stderr)")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let recordings = try catalog.recordings(RecordingFilter(sessionID: session.id))
            let last = try #require(recordings.map(\.part).max())
            #expect(last >= 3 && !recordings.contains { $0.part == 0 }, "\(recordings.map(\.part))")
            let directory = scenario.dataDirectory + "/recordings/" + session.id
            let sender = try #require(recordings.first?.connectionID)
            let marker = try json(directory + "/split-archive-end-\(sender).json")
            #expect(marker["split_last_index"] as? String == String(format: "%04d", last))
            let report = try json(directory + "/report-\(session.id).json")
            #expect(report["split_duration"] as? Int == 1 && report["split_only"] as? Bool == true)
            let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, session.id])
            #expect(verify.status == 0, "\(verify.stdout.suffix(3_000))")
        }
    }

    /// Issue 39 item 1, as the issue reproduced it: a video-only VP9 sender that answers no
    /// keyframe request and sends one every 10 s, split every 2 s without the whole file, its
    /// WebSocket aborted at 7 s while the current part waits for the keyframe after a boundary.
    /// The rejoined sender's next part reuses no number: exit 0, every part verifies, and the
    /// media lost is the outage and at most a second more.
    @Test func aRejoinWhileAPartWaitsForItsKeyframeReusesNoPartNumber() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp9", "--video-only", "--keyframe-interval", "10",
                                                          "--ignore-keyframe-requests", "--fault", "ws-abort@7"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "14s", "--split-duration", "2", "--split-only"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let parts = try catalog.recordings(RecordingFilter(sessionID: session.id)).map(\.part).sorted()
            #expect(parts == Array(1...max(1, parts.count)) && parts.count >= 2, "each part number once, no hole: \(parts)")
            let outage = try #require(try catalog.interruptions(sessionID: session.id).first)
            let outageMs = (outage.endedAt ?? .max) - outage.startedAt
            #expect((outage.mediaLostMs ?? .max) <= outageMs + 1_000, "\(outage)")
            let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, session.id])
            #expect(verify.status == 0, "\(verify.stdout.suffix(3_000))")
        }
    }

    /// A sidecar's non-zero drop counters, to tell why two files of one sender differ.
    private func drops(_ sidecar: [String: Any]) -> [String: Int] {
        let stats = (sidecar["stats"] as? [String: Any]) ?? [:]
        return stats.compactMapValues { $0 as? Int }.filter { ($0.key.contains("dropped") || $0.key.contains("superseded")) && $0.value != 0 }
    }

    private func json(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any], "\(path)")
    }
}
