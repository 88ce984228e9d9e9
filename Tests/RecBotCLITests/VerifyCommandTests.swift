import Archive
import CodecBindings
import Foundation
import Testing
import WebM

/// `recbot verify` against a data directory: results go into the catalog and `recordings list`.
@Suite struct VerifyCommandTests {
    let fixture: Fixture

    init() throws { fixture = try Fixture() }

    /// A finalized VP8 + Opus file; `breakFrame` cuts one video frame short.
    func writeFile(at path: String, breakFrame: Int? = nil) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .vp8, width: 96, height: 64), audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 1)), segmentUID: Array(1...16)))
        let writer = try WebMFileWriter(creatingAt: path)
        let video = try VPXEncoder(codec: .vp8, width: 96, height: 64, framesPerSecond: 25, keyframeInterval: 25)
        let audio = try OpusEncoder(channels: 1)
        for index in 0..<50 {
            let packet = try audio.encode(OpusEncoder.tone(frequency: 300, frame: index, channels: 1))
            try writer.apply(try muxer.write(WebMFrame(track: .audio, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: true, data: packet)))
            guard index % 2 == 0 else { continue }
            for frame in try video.encode(.testPattern(width: 96, height: 64, frame: index), pts: Int64(index)) {
                let data = index / 2 == breakFrame ? Array(frame.data.prefix(4)) : frame.data
                try writer.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: Int64(index) * 20_000_000, isKeyframe: frame.isKeyframe, data: data)))
            }
        }
        try writer.apply(try muxer.finalize())
        try writer.close()
    }

    var goodPath: String { fixture.directory + "/recordings/\(Fixture.s1)/archive-SENDER1.webm" }

    @Test func aSessionIsVerifiedAndTheVerdictIsCataloged() throws {
        try writeFile(at: goodPath)
        let result = try fixture.run(["verify", Fixture.s1, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let reports = try #require(try result.json() as? [[String: Any]])
        #expect(reports.count == 1 && reports.first?["verification"] as? String == "verified" && reports.first?["recording_id"] as? Int == 1)
        let report = try #require(reports.first?["report"] as? [String: Any])
        let tracks = try #require(report["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["frames"] as? Int } == [25, 50] && tracks.map { $0["decode_errors"] as? Int } == [0, 0])
        let listed = try fixture.jsonArray(["recordings", "list", "--session", Fixture.s1])
        #expect(listed.first?["verification"] as? String == "verified" && listed.first?["verified_at"] is String)
        // Nothing left for cron: the other recording is still `recording`.
        let pending = try fixture.run(["verify", "--pending", "--json"])
        let pendingReports = try pending.json() as? [Any]
        #expect(pending.status == 0 && pendingReports?.isEmpty == true)
        let table = try fixture.run(["recordings", "list"])
        #expect(table.stdout.contains("VERIFIED") && table.stdout.contains("verified") && table.stdout.contains("not verified"))
    }

    @Test func aBrokenFileFailsWithItsOwnExitStatus() throws {
        try writeFile(at: goodPath, breakFrame: 7)
        let result = try fixture.run(["verify", "1"])
        #expect(result.status == 65, "EX_DATAERR for a file that does not decode")
        #expect(result.stdout.contains("FAILED") && result.stderr.contains("track 1: at 280 ms"))
        #expect(try fixture.jsonArray(["recordings", "list", "--session", Fixture.s1]).first?["verification"] as? String == "failed")
    }

    /// `--jobs` reads files at once; the results keep the order the targets were given in.
    @Test func filesReadInParallelKeepTheirOrder() throws {
        let paths = (0..<5).map { fixture.directory + "/loose/file-\($0).webm" }
        for (index, path) in paths.enumerated() { try writeFile(at: path, breakFrame: index == 2 ? 7 : nil) }
        let result = try fixture.run(["verify"] + paths + ["--jobs", "3", "--json"])
        #expect(result.status == 65, "one file does not decode")
        let reports = try #require(try result.json() as? [[String: Any]])
        #expect(reports.map { $0["path"] as? String } == paths)
        #expect(reports.map { $0["verification"] as? String } == ["verified", "verified", "failed", "verified", "verified"])
        #expect(try fixture.run(["verify", paths[0], "--jobs", "0"]).status == 64)
    }

    @Test func aFileOutsideTheCatalogIsVerifiedButNotStored() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("loose-\(UUID()).webm").path
        try writeFile(at: path)
        let result = try fixture.run(["verify", path])
        #expect(result.status == 0 && result.stdout.contains("verified"))
        #expect(try fixture.run(["verify"]).status == 64, "no target")
        #expect(try fixture.run(["verify", "999"]).status == 66, "no such recording: not found, as in every command")
        #expect(try fixture.run(["verify", "/nonexistent.webm"]).status == 66, "EX_NOINPUT: missing, not failed")
    }

    /// A row naming a file outside its session's directory is not read (finding 10).
    @Test func aRowNamingAFileOutsideTheDataDirectoryIsRefused() throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("outside-\(UUID()).webm").path
        try writeFile(at: outside)
        let row = try fixture.catalog.insertRecording(RecordingRecord(sessionID: Fixture.s1, connectionID: "EVIL1", path: outside, videoCodec: "VP8",
                                                                      audioCodec: "OPUS", startedAt: Fixture.t0, status: .complete))
        let result = try fixture.run(["verify", String(row.id!)])
        #expect(result.status == 65 && result.stdout.contains("REFUSED"), "\(result.stdout)")
        #expect(try fixture.catalog.recording(id: row.id!)?.verification == nil)
    }

    /// A shared catalog: `--pending` takes this host's recordings only; a file not on its disk is
    /// `missing` (exit 66, beside any verdict), never `failed`; one deleted after its upload is
    /// `uploaded`; another host's is that host's business.
    @Test func pendingTakesThisHostsRecordingsAndAMissingFileIsNotFailed() throws {
        func finished(_ sender: String, host: String) throws -> RecordingRecord {
            var row = RecordingRecord(sessionID: Fixture.s1, connectionID: sender, path: "recordings/\(Fixture.s1)/archive-\(sender).webm",
                                      videoCodec: "VP8", audioCodec: "OPUS", startedAt: Fixture.t0 + 600, status: .complete)
            row.host = host
            return try fixture.catalog.insertRecording(row)
        }
        let here = try finished("HERE1", host: "host-a")
        let gone = try finished("GONE1", host: "host-a")
        let other = try finished("OTHER1", host: "host-b")
        try writeFile(at: fixture.directory + "/" + here.path)

        let pending = try fixture.run(["verify", "--pending", "--host", "host-a", "--json"])
        #expect(pending.status == 66, "a file missing from its host: \(pending.stderr)")
        let verdicts = Dictionary(uniqueKeysWithValues: try #require(try pending.json() as? [[String: Any]]).map {
            ($0["recording_id"] as? Int ?? 0, $0["verification"] as? String ?? "")
        })
        #expect(verdicts == [Int(here.id!): "verified", Int(gone.id!): "missing"])
        let stored = { (id: Int64?) throws in try #require(try self.fixture.catalog.recording(id: id!)) }
        #expect(try stored(gone.id).verification == nil && stored(gone.id).missingAt != nil, "missing is not a verdict")
        #expect(try stored(other.id).verification == nil && stored(other.id).missingAt == nil, "another host's row is not touched")

        let everyHost = try fixture.run(["verify", "--pending", "--all-hosts", "--host", "host-a", "--json"])
        let names = Dictionary(uniqueKeysWithValues: try #require(try everyHost.json() as? [[String: Any]]).map {
            ($0["recording_id"] as? Int ?? 0, $0["verification"] as? String ?? "")
        })
        #expect(names[Int(other.id!)] == "elsewhere" && names[Int(gone.id!)] == "missing" && names[Int(here.id!)] == nil)
        #expect(try stored(other.id).missingAt == nil)

        // Verified, uploaded and deleted: still verified, and nothing to alarm anyone.
        try fixture.catalog.recordVerification(recordingID: gone.id!, status: .verified, at: Fixture.t0, report: "{}")
        var upload = UploadRecord(sessionID: Fixture.s1, fileName: "archive-GONE1.webm", objectURL: "s3://b/GONE1.webm", endpoint: "http://s3",
                                  bytes: 1, startedAt: Fixture.t0, status: .uploaded)
        upload.localDeletedAt = Fixture.t0 + 1
        try fixture.catalog.saveUpload(upload)
        let uploaded = try fixture.run(["verify", String(gone.id!), "--host", "host-a"])
        #expect(uploaded.status == 0 && uploaded.stdout.contains("deleted here"), "\(uploaded.stdout)")
        #expect(try stored(gone.id).verification == .verified)
    }
}
