import Archive
import Foundation
import Testing

@Suite struct QueryCommandTests {
    let fixture: Fixture

    init() throws { fixture = try Fixture() }

    @Test func sessionsListJSON() throws {
        let sessions = try fixture.jsonArray(["sessions", "list"])
        #expect(sessions.map { $0["id"] as? String } == [Fixture.s3, Fixture.s2, Fixture.s1])
        let first = try #require(sessions.last)
        for key in ["id", "channel_id", "connection_id", "started_at", "ended_at", "end_reason", "duration_ms", "exit_status"] {
            #expect(first.keys.contains(key), "missing key \(key)")
        }
        #expect(first["channel_id"] as? String == "lobby")
        #expect(first["connection_id"] as? String == "BOT1")
        #expect(first["started_at"] as? String == "2026-11-20T10:00:00.000Z")
        #expect(first["ended_at"] as? String == "2026-11-20T10:01:05.000Z")
        #expect(first["duration_ms"] as? Int == 65_000)
        #expect(first["end_reason"] as? String == "duration-elapsed")
        #expect(sessions[1]["ended_at"] is NSNull, "open session has null ended_at")
    }

    @Test func sessionsListFilters() throws {
        #expect(try fixture.jsonArray(["sessions", "list", "--channel", "lobby"]).map { $0["id"] as? String } == [Fixture.s2, Fixture.s1])
        #expect(try fixture.jsonArray(["sessions", "list", "--since", "2026-11-20T10:30:00Z"]).count == 2)
        #expect(try fixture.jsonArray(["sessions", "list", "--until", "2026-11-20T10:30:00Z"]).map { $0["id"] as? String } == [Fixture.s1])
        #expect(try fixture.jsonArray(["sessions", "list", "--since", "2026-11-20 11:00", "--until", "2026-11-20T11:00:01+00:00"]).count == 1)
        #expect(try fixture.jsonArray(["sessions", "list", "--limit", "1"]).map { $0["id"] as? String } == [Fixture.s3])
        #expect(try fixture.jsonArray(["sessions", "list", "--since", "1h"]).isEmpty, "nothing in the last hour")
        #expect(try fixture.jsonArray(["sessions", "list", "--channel", "nowhere"]).isEmpty)
    }

    /// Issue 12: extreme times in a damaged catalog overflowed the formatting and the duration.
    @Test func extremeCatalogTimesAreShownNotTrapped() throws {
        try fixture.catalog.insertSession(SessionRecord(id: "01JD2K0000DDDDDDDDDDDDDDDD", channelID: "edge", startedAt: .min))
        try fixture.catalog.endSession(id: "01JD2K0000DDDDDDDDDDDDDDDD", endedAt: .max, endReason: "x", exitStatus: 0)
        #expect(try fixture.run(["sessions", "list", "--channel", "edge"]).status == 0)
        #expect(try fixture.jsonArray(["sessions", "list", "--channel", "edge"]).first?["duration_ms"] is NSNull)
        #expect(try fixture.run(["sessions", "show", "01JD2K0000DDDDDDDDDDDDDDDD"]).status == 0)
    }

    @Test func sessionsListTable() throws {
        let result = try fixture.run(["sessions", "list"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("ID ") && lines[0].contains("CHANNEL") && lines[0].contains("END REASON"))
        // Aligned columns: every row's channel starts where the header's does.
        let channelColumn = try #require(lines[0].range(of: "CHANNEL")).lowerBound.utf16Offset(in: lines[0])
        for line in lines.dropFirst() {
            #expect(line.count > channelColumn && line[line.index(line.startIndex, offsetBy: channelColumn - 1)] == " ")
        }
        let s1 = try #require(lines.first { $0.hasPrefix(Fixture.s1) })
        #expect(s1.contains("2026-11-20 10:00:00") && s1.contains("1m05s") && s1.contains("duration-elapsed"))
        #expect(try #require(lines.first { $0.hasPrefix(Fixture.s2) }).contains("(not ended)"))
    }

    /// Remote strings never reach the terminal raw: an escape sequence in a client id is shown, not run.
    @Test func controlCharactersAreMadeVisible() throws {
        try fixture.catalog.upsertConnection(ConnectionRecord(sessionID: Fixture.s1, connectionID: "EVIL1", firstSeenAt: Fixture.t0 + 900,
                                                              clientID: "cam\u{1B}[2J\u{202E}txt"))
        let text = try fixture.run(["sessions", "show", Fixture.s1])
        #expect(text.status == 0 && !text.stdout.contains("\u{1B}") && !text.stdout.contains("\u{202E}"))
        #expect(text.stdout.contains("cam\\u{1b}[2J\\u{202e}txt"))
    }

    @Test func sessionsShow() throws {
        let text = try fixture.run(["sessions", "show", Fixture.s1.lowercased()])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Channel:") && text.stdout.contains("lobby"))
        #expect(text.stdout.contains("Events:") && text.stdout.contains("5 (datachannel 3, notify 1, push 1)"))
        #expect(text.stdout.contains("SENDER1") && text.stdout.contains("camera-1"))
        #expect(text.stdout.contains("1.5 MiB"))

        let result = try fixture.run(["sessions", "show", Fixture.s1, "--json"])
        let object = try #require(try result.json() as? [String: Any])
        #expect(object["id"] as? String == Fixture.s1)
        let connections = try #require(object["connections"] as? [[String: Any]])
        #expect(connections.first?["client_id"] as? String == "camera-1")
        #expect((connections.first?["metadata"] as? [String: Any])?["room"] as? String == "a")
        #expect((object["recordings"] as? [[String: Any]])?.count == 1)
        let counts = try #require(object["event_counts"] as? [String: Int])
        #expect(counts == ["notify": 1, "push": 1, "datachannel": 3, "signaling": 0, "recbot": 0])

        let missing = try fixture.run(["sessions", "show", "01JD2K0000DDDDDDDDDDDDDDDD"])
        #expect(missing.status == 66 && missing.stderr.contains("not found"), "\(missing.status): \(missing.stderr)")
    }

    @Test func recordingsList() throws {
        let all = try fixture.jsonArray(["recordings", "list"])
        #expect(all.count == 2)
        let first = try #require(all.first)
        for key in ["id", "session_id", "connection_id", "path", "video_codec", "audio_codec", "started_at", "ended_at",
                    "duration_ms", "bytes", "video_frames", "audio_frames", "status"] {
            #expect(first.keys.contains(key), "missing key \(key)")
        }
        #expect(first["path"] as? String == fixture.directory + "/recordings/\(Fixture.s1)/archive-SENDER1.webm")
        #expect(first["bytes"] as? Int == 1_572_864 && first["video_frames"] as? Int == 1_920 && first["status"] as? String == "complete")
        #expect(try fixture.jsonArray(["recordings", "list", "--session", Fixture.s3]).map { $0["connection_id"] as? String } == ["SENDER9"])
        #expect(try fixture.jsonArray(["recordings", "list", "--connection", "SENDER1"]).count == 1)
        #expect(try fixture.jsonArray(["recordings", "list", "--channel", "studio"]).map { $0["session_id"] as? String } == [Fixture.s3])

        let table = try fixture.run(["recordings", "list"])
        #expect(table.stdout.contains("VP8+OPUS") && table.stdout.contains("1m04s") && table.stdout.contains("1920/3200"))
        #expect(table.stdout.contains("recording"), "status of the unfinished file")
    }

    @Test func recordingsShowPrintsTheReceptionCounters() throws {
        let id = try #require(try fixture.jsonArray(["recordings", "list", "--connection", "SENDER1"]).first?["id"] as? Int)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(fixture.run(["recordings", "show", String(id), "--json"]).stdout.utf8))
                                as? [String: Any])
        #expect(json["packets_recovered"] as? Int == 430 && json["pli_sent"] as? Int == 1 && json["jitter_ms"] as? Double == 4.5)
        #expect(json["video_sizes"] as? [String] == ["640x360", "1280x720"] && json["frames_dropped_incomplete"] as? Int == 1)
        let text = try fixture.run(["recordings", "show", String(id)]).stdout
        #expect(text.contains("9000 received, 430 recovered by retransmission, 3 lost"), "\(text)")
        #expect(text.contains("640x360, 1280x720") && text.contains("4.5 ms"))
        let missing = try fixture.run(["recordings", "show", "999999"])
        #expect(missing.status != 0 && !missing.stderr.isEmpty)
    }

    @Test func eventsList() throws {
        let events = try fixture.jsonArray(["events", "list", "--session", Fixture.s1])
        #expect(events.count == 5)
        for key in ["id", "session_id", "kind", "event_type", "label", "received_at", "payload"] {
            #expect(events[0].keys.contains(key), "missing key \(key)")
        }
        let notify = try #require(events[0]["payload"] as? [String: Any])
        #expect(notify["event_type"] as? String == "connection.created" && (notify["n"] as? [Any])?.count == 3)
        let utf8 = try #require(events[2]["payload"] as? [String: Any])
        #expect(utf8["base64"] as? String == "aGkgdGhlcmU=" && utf8["text"] as? String == "hi there")
        let raw = try #require(events[3]["payload"] as? [String: Any])
        #expect(raw["base64"] as? String == "/wCA" && raw["text"] == nil)
        #expect((events[4]["payload"] as? [String: Any])?["text"] as? String == "not json")

        #expect(try fixture.jsonArray(["events", "list", "--session", Fixture.s1, "--kind", "notify"]).count == 1)
        #expect(try fixture.jsonArray(["events", "list", "--session", Fixture.s1, "--type", "connection.created"]).count == 1)
        #expect(try fixture.jsonArray(["events", "list", "--session", Fixture.s1, "--label", "#chat"]).count == 2)
        #expect(try fixture.jsonArray(["events", "list", "--session", Fixture.s1, "--kind", "datachannel", "--label", "#raw"]).count == 1)

        let table = try fixture.run(["events", "list", "--session", Fixture.s1])
        #expect(table.stdout.contains("connection.created") && table.stdout.contains("#chat") && table.stdout.contains("(8 bytes) hi there"))
    }

    @Test func dataDirectoryFromEnvironmentAndFlagPrecedence() throws {
        let viaEnvironment = try RecBotBinary.run(["sessions", "list", "--json"], environment: ["RECBOT_DATA_DIR": fixture.directory])
        #expect(viaEnvironment.status == 0)
        #expect((try viaEnvironment.json() as? [Any])?.count == 3)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-empty-\(UUID().uuidString)").path
        let flagWins = try RecBotBinary.run(["sessions", "list", "--json", "--data-dir", empty], environment: ["RECBOT_DATA_DIR": fixture.directory])
        #expect(flagWins.status == 0 && flagWins.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(flagWins.stderr.contains("no catalog"))
        #expect(!FileManager.default.fileExists(atPath: empty), "a query creates nothing")
    }

    /// A data directory set only in the config file that `join` reads sends the queries there
    /// too (--config or RECBOT_CONFIG); the environment and the flag still win over it.
    @Test func dataDirectoryFromTheConfigFileIsSharedByTheQueries() throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-config-\(UUID().uuidString).env").path
        try "# recbot\nRECBOT_DATA_DIR=\(fixture.directory)\n".write(toFile: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: config) }
        for result in [try RecBotBinary.run(["sessions", "list", "--json", "--config", config]),
                       try RecBotBinary.run(["sessions", "list", "--json"], environment: ["RECBOT_CONFIG": config])] {
            #expect(result.status == 0, "\(result.stderr)")
            #expect((try result.json() as? [Any])?.count == 3)
        }
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-empty-\(UUID().uuidString)").path
        let environmentWins = try RecBotBinary.run(["sessions", "list", "--json", "--config", config], environment: ["RECBOT_DATA_DIR": empty])
        #expect(environmentWins.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }
}
