import Archive
import Foundation
import Testing
import TestSupport

/// The timeline of real recordings as `recbot verify` and FFmpeg judge it: every block on its
/// sender's RTP clock (no step off the frame grid, nothing backwards or repeated), FFmpeg reads
/// the file without a complaint. Used by the codec scenarios. (Two senders lining up within and
/// across files, and bursty loss with jitter, are judged on the manual clock: SimulationTests.)
enum TimelineChecks {
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
            // Each decoded picture keeps the file's own timestamp, in the file's time base. By
            // default FFmpeg's output counts video in frames of the rate it guessed (1/30 s), so
            // two pictures closer than that (a keyframe recbot moved 1 ms past another of its
            // instant, a busy test server's encoder catching up) collide there and it complains
            // of its own output, not of the file. Equal timestamps in the file still fail.
            let complaints = try runChecked(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-i", path,
                                             "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null", "-"])
            let codecs = tracks.compactMap { $0["codec_id"] as? String }.joined(separator: "+")
            #expect(complaints.isEmpty, "ffmpeg on \(name) (\(codecs)): \(complaints.prefix(1_000))")
        }
    }
}
