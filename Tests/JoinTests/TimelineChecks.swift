import Archive
import Foundation
import Testing
import TestSupport

/// The timeline of real recordings: every block on its sender's RTP clock (no step off the frame
/// grid, nothing backwards or repeated, FFmpeg reads the file without a complaint), audio and
/// video of a sender together, the files of different senders together, on a clean path and on
/// a harsh one.
@Suite(.serialized) struct TimelineScenarioTests {
    /// Each file of the session with its tracks as `recbot verify --json` reports them.
    static func verifiedTracks(_ scenario: Scenario) throws -> [(path: String, tracks: [[String: Any]])] {
        let session = try #require(try scenario.catalog().sessions().first)
        let verify = try scenario.recbot(["verify", session.id, "--json", "--data-dir", scenario.dataDirectory])
        #expect(verify.status == 0, "verify: \(verify.stderr.suffix(2_000))")
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [[String: Any]])
        return try reports.map { item in
            let report = try #require(item["report"] as? [String: Any])
            return (try #require(item["path"] as? String), try #require(report["tracks"] as? [[String: Any]]))
        }
    }

    /// Every track of every file keeps its frame grid; FFmpeg decodes every file and says nothing.
    static func expectTimelinesOnTheGrid(_ scenario: Scenario) throws {
        let files = try verifiedTracks(scenario)
        #expect(!files.isEmpty)
        for (path, tracks) in files {
            let name = (path as NSString).lastPathComponent
            for track in tracks {
                let timeline = try #require(track["timeline"] as? [String: Any], "\(name): \(track)")
                #expect(timeline["off_grid_steps"] as? Int == 0 && timeline["backward_steps"] as? Int == 0
                        && timeline["repeated_timestamps"] as? Int == 0, "\(name) \(track["kind"] ?? ""): \(timeline)")
            }
            let complaints = try runChecked(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
            #expect(complaints.isEmpty, "ffmpeg on \(name): \(complaints.prefix(1_000))")
        }
    }

    /// Two publishers capture on one clock (their once-a-second markers leave together). In each
    /// file audio and video line up from the first marker on, and placed by their sidecars'
    /// start offsets the two files line up with each other.
    @Test func twoSteadySendersKeepTheirGridAndLineUpAcrossFiles() throws {
        let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--shared-clock"])
        defer { scenario.stop() }
        let result = try scenario.join(["--duration", "20s"])
        #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
        try Self.expectTimelinesOnTheGrid(scenario)
        let recordings = try scenario.catalog().recordings()
        #expect(recordings.count == 2)
        var placed: [[Double]] = []  // per file: video marker times on the session's timeline (s)
        for recording in recordings {
            let path = scenario.dataDirectory + "/" + recording.path
            let markers = try syncMarkers(path)
            #expect(markers.video.count >= 15, "\(recording.path): \(markers.video.count) video markers")
            for time in markers.video {
                guard let audio = markers.audio.min(by: { abs($0 - time) < abs($1 - time) }), abs(audio - time) < 0.5 else { continue }
                #expect(abs(audio - time) <= 0.020, "\(recording.path): audio − video = \(Int((audio - time) * 1000)) ms at \(time) s")
            }
            let sidecarPath = (path as NSString).deletingPathExtension + ".json"
            let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sidecarPath))) as? [String: Any])
            let offset = try #require(sidecar["start_time_offset"] as? Int)
            placed.append(markers.video.map { Double(offset) + $0 })
        }
        var compared = 0
        for time in placed[0] {
            guard let other = placed[1].min(by: { abs($0 - time) < abs($1 - time) }), abs(other - time) < 0.5 else { continue }
            #expect(abs(other - time) <= 0.020, "the two files' markers differ by \(Int((other - time) * 1000)) ms at \(time) s")
            compared += 1
        }
        #expect(compared >= 15)
    }

    // Bursty loss and jitter (20 s of real time per case) moved to SimulationTests
    // (aHarshNetworkKeepsTheFramesAndTheGrid), where they run on the manual clock.
}
