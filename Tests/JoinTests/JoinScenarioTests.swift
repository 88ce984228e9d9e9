import Archive
import Foundation
import TestSupport
import Testing

/// Runs the bundled Sora-compatible test server and the real `recbot join` against it.
struct Scenario {
    let directory: URL
    let server = Process()
    let serverOutput = Pipe()
    var url = ""

    /// The independent peers (the test server among them) and the checkers that judge output files.
    static var peersDirectory: URL { testsDirectory.appendingPathComponent("Peers") }
    static var checkersDirectory: URL { testsDirectory.appendingPathComponent("Checkers") }
    private static var testsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    }

    static var recbot: String { builtProduct("recbot") }

    /// A scenario whose server runs elsewhere (e.g. the load generator): `join` needs its URL.
    init(existingDirectory: URL) {
        directory = existingDirectory
    }

    /// `server`: the bundled test server, or sora_janus_server.py (Janus and Chromium behind Sora's signaling).
    init(serverArguments: [String], server script: String = "sora_test_server.py") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-join-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", Scenario.peersDirectory.appendingPathComponent(script).path,
                            "--truth", directory.appendingPathComponent("truth.json").path] + serverArguments
        server.standardOutput = serverOutput
        server.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try IndependentPeer.run(server)
        // The first line says where it listens.
        let object = try JSONSerialization.jsonObject(with: readFirstLine(serverOutput.fileHandleForReading)) as? [String: Any]
        url = object?["url"] as? String ?? ""
    }

    var dataDirectory: String { directory.appendingPathComponent("data").path }

    struct Result { var status: Int32; var stdout: String; var stderr: String }

    /// `launcher`: a command that runs recbot for the test (e.g. `ip netns exec NAME`).
    func join(_ extra: [String], url: String? = nil, environment: [String: String] = [:], launcher: [String] = []) throws -> Result {
        try recbot(["join", "--channel", "sora", "--url", url ?? self.url, "--data-dir", dataDirectory, "--allow-address", "127.0.0.1/32"] + extra,
                   environment: environment, launcher: launcher)
    }

    /// Starts `recbot join` without waiting for it (to signal or kill it).
    func startJoin(_ extra: [String] = [], environment: [String: String] = [:]) throws -> Process {
        let join = Process()
        join.executableURL = URL(fileURLWithPath: Scenario.recbot)
        join.arguments = ["join", "--channel", "sora", "--url", url, "--data-dir", dataDirectory, "--allow-address", "127.0.0.1/32"] + extra
        if !environment.isEmpty { join.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        join.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        join.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try join.run()
        return join
    }

    /// The longest any recbot command of a scenario may run (the longest allow 90 s of
    /// recording): a hung one is killed and fails its test rather than stalling the suite.
    static let recbotTimeLimitSeconds = 240.0

    /// Runs any recbot command (the caller names the data directory where it needs one).
    func recbot(_ arguments: [String], environment extra: [String: String] = [:], launcher: [String] = []) throws -> Result {
        let argv = launcher + [Scenario.recbot] + arguments
        var environment: [String: String?] = ["RECBOT_LOG_LEVEL": "info"]
        for (key, value) in extra { environment[key] = value }
        let result = try runProcess(argv[0], Array(argv.dropFirst()), environment: environment, killAfterSeconds: Scenario.recbotTimeLimitSeconds)
        return Result(status: result.status, stdout: result.stdoutText, stderr: result.stderrText)
    }

    func truth() throws -> [String: Any] {
        // The server writes it when the session ends; give it a moment.
        // With rejoins served it is also written at each connection's end: wait for the final one.
        let path = directory.appendingPathComponent("truth.json").path
        for _ in 0..<50 {
            if let data = FileManager.default.contents(atPath: path), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
               object["final"] as? Bool != false {
                return object
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    func stop() {
        // A server that serves rejoins does not end by itself: SIGTERM, then SIGKILL.
        stopProcess(server)
    }

    func catalog() throws -> Catalog { try Catalog(path: dataDirectory + "/catalog.sqlite") }

    /// ffprobe's view: codec name and decoded frame count per stream, and the duration.
    static func probe(_ path: String) throws -> (streams: [(codec: String, frames: Int)], duration: Double) {
        let data = try runProcess("/usr/bin/env", ["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                                                   "stream=codec_name,nb_read_frames:format=duration", "-of", "json", path]).stdout
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { ($0["codec_name"] as? String ?? "", Int($0["nb_read_frames"] as? String ?? "") ?? 0) }
        let duration = Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        return (streams, duration)
    }
}

@Suite struct JoinScenarioTests {
    @Test func recordsEveryPublisherAndLogsEveryMessage() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--ping-interval", "1"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason == "duration-elapsed" && session.exitStatus == 0)
            #expect(session.soraSessionID == truth["session_id"] as? String && session.connectionID == truth["bot_connection_id"] as? String)

            // One playable file per publisher, with ≥ 90 % of the video frames and the right duration.
            let publishers = try #require(truth["publishers"] as? [[String: Any]])
            let recordings = try catalog.recordings()
            #expect(recordings.count == publishers.count)
            for publisher in publishers {
                let id = try #require(publisher["connection_id"] as? String)
                let recording = try #require(recordings.first { $0.connectionID == id }, "no recording for \(id)")
                #expect(recording.status == .complete)
                let probe = try Scenario.probe(scenario.dataDirectory + "/" + recording.path)
                let codec = publisher["codec"] as? String == "h264" ? "h264" : "vp8"
                let video = try #require(probe.streams.first { $0.codec == codec }, "streams: \(probe.streams)")
                let audio = try #require(probe.streams.first { $0.codec == "opus" })
                let sentVideo = try #require(publisher["video_frames_sent"] as? Int)
                let sentAudio = try #require(publisher["audio_frames_sent"] as? Int)
                #expect(Double(video.frames) >= 0.9 * Double(sentVideo), "\(codec): \(video.frames) of \(sentVideo) video frames")
                #expect(Double(audio.frames) >= 0.9 * Double(sentAudio), "\(audio.frames) of \(sentAudio) audio frames")
                let onAir = try #require(publisher["on_air_seconds"] as? Double)
                #expect(abs(probe.duration - onAir) <= 0.1 * onAir + 0.5, "duration \(probe.duration) vs \(onAir) on air")
            }

            // Every notify and push, byte for byte.
            let sent = try #require(truth["messages_sent"] as? [String])
            let stored = try catalog.events(EventFilter(sessionID: session.id)).compactMap { event -> String? in
                if case .json(let text) = event.payload { return text }
                return nil
            }
            #expect(sent.count >= 4)
            for message in sent { #expect(stored.contains(message), "missing in the catalog: \(message.prefix(120))") }
            #expect((truth["pongs_received"] as? Int ?? 0) >= 3, "every ping answered")
            #expect((truth["disconnect"] as? [String: Any])?["reason"] as? String == "NO-ERROR")
            // connection.created notifies kept the connections table current.
            let connections = try catalog.connections(sessionID: session.id)
            for publisher in publishers {
                #expect(connections.contains { $0.connectionID == publisher["connection_id"] as? String && $0.clientID == publisher["client_id"] as? String })
            }
            // …and so does every sidecar: the offer names no client id, the notify does.
            for recording in recordings {
                let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
                    scenario.dataDirectory + "/" + recording.path.replacingOccurrences(of: ".webm", with: ".json")))) as? [String: Any])
                let publisher = publishers.first { $0["connection_id"] as? String == recording.connectionID }
                #expect(sidecar["client_id"] as? String == publisher?["client_id"] as? String, "client_id in \(recording.path)")
            }
        }
    }

    /// A per-session cap on stored events (issue 12): past it events are counted, not stored,
    /// and the recording is untouched.
    @Test func theEventLimitStoresThatManyAndCountsTheRest() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "4s", "--max-events", "2"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(2_000))")
            #expect(result.stderr.components(separatedBy: "event limit reached").count == 2, "logged once")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(try catalog.events(EventFilter(sessionID: session.id)).count == 2)
            let sent = try #require(try scenario.truth()["messages_sent"] as? [String])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
                scenario.dataDirectory + "/recordings/\(session.id)/report-\(session.id).json"))) as? [String: Any])
            #expect(report["events_stored"] as? Int == 2 && (report["events_refused"] as? Int ?? 0) >= sent.count - 2)
            #expect(try catalog.recordings().count == 2)
        }
    }

    @Test func aLatePublisherArrivesThroughReOffer() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--late-publishers", "1", "--late-after", "2"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "6s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            #expect(truth["re_answers_received"] as? Int == 1)
            let recordings = try scenario.catalog().recordings()
            #expect(recordings.count == 2)
            let late = try #require((truth["publishers"] as? [[String: Any]])?.last?["connection_id"] as? String)
            let lateRecording = try #require(recordings.first { $0.connectionID == late })
            let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
                scenario.dataDirectory + "/" + lateRecording.path.replacingOccurrences(of: ".webm", with: ".json")))) as? [String: Any])
            #expect((sidecar["start_time_offset"] as? Int ?? 0) >= 2, "the late sender starts later in the recording")
            #expect(try Scenario.probe(scenario.dataDirectory + "/" + lateRecording.path).streams.count == 2)
        }
    }

    @Test func aLeavingPublishersFileEndsWhenItLeaves() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--leave-after", "2.5"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "6s"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            let publishers = try #require(truth["publishers"] as? [[String: Any]])
            let catalog = try scenario.catalog()
            let recordings = try catalog.recordings()
            #expect(recordings.count == 2)
            for publisher in publishers {
                let recording = try #require(recordings.first { $0.connectionID == publisher["connection_id"] as? String })
                let onAir = try #require(publisher["on_air_seconds"] as? Double)
                let probe = try Scenario.probe(scenario.dataDirectory + "/" + recording.path)
                #expect(abs(probe.duration - onAir) <= 0.1 * onAir + 0.5, "\(publisher["client_id"] ?? "?"): duration \(probe.duration) vs \(onAir) on air")
                #expect(probe.streams.count == 2 && probe.streams.allSatisfy { $0.frames > 0 })
            }
            let leaver = try #require(publishers.first?["connection_id"] as? String)
            let session = try #require(try catalog.sessions().first)
            #expect(try catalog.connections(sessionID: session.id).first { $0.connectionID == leaver }?.leftAt != nil)
            #expect(try catalog.events(EventFilter(sessionID: session.id, eventType: "connection.destroyed")).count == 1)
        }
    }

    @Test func aDeadURLLosesTheRace() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let result = try scenario.recbot(["join", "--channel", "sora", "--url", "ws://127.0.0.1:9/signaling", "--url", scenario.url,
                                              "--data-dir", scenario.dataDirectory, "--allow-address", "127.0.0.1/32", "--duration", "3s"])
            #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
            #expect(try scenario.catalog().sessions().first?.signalingURL == scenario.url)
        }
    }

    @Test func aHostileSenderIDIsNeverUsedAsAPath() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--first-publisher-id", "../../escaped"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "3s"])
            #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
            #expect(result.stderr.contains("not safe as a file name"))
            let recordings = try scenario.catalog().recordings()
            #expect(recordings.count == 1 && recordings[0].connectionID != "../../escaped")
            #expect(!FileManager.default.fileExists(atPath: scenario.directory.appendingPathComponent("escaped.webm").path))
            #expect(!FileManager.default.fileExists(atPath: scenario.directory.appendingPathComponent("data/escaped.webm").path))
            let contents = try FileManager.default.subpathsOfDirectory(atPath: scenario.directory.path)
            #expect(!contents.contains { $0.contains("escaped") }, "\(contents)")
        }
    }

    @Test func wssVerifiesCertificatesUnlessInsecure() async throws {
        try await blocking {
            let refused = try Scenario(serverArguments: ["--tls", "--publisher", "vp8", "--max-seconds", "5"])
            defer { refused.stop() }
            #expect(refused.url.hasPrefix("wss://"))
            let strict = try refused.join(["--duration", "3s", "--connect-timeout", "5s"])
            #expect(strict.status == 69, "a self-signed certificate must be refused by default: \(strict.stderr.suffix(1_000))")
            #expect(strict.stderr.contains("TLS: the certificate of 127.0.0.1 is not trusted"), "said in one line: \(strict.stderr.suffix(1_000))")

            let accepted = try Scenario(serverArguments: ["--tls", "--publisher", "vp8"])
            defer { accepted.stop() }
            let insecure = try accepted.join(["--duration", "3s", "--insecure"])
            #expect(insecure.status == 0, "\(insecure.stderr.suffix(2_000))")
            #expect(try accepted.catalog().recordings().count == 1)
        }
    }

    @Test func unresponsiveServerTimesOutWith69() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--silent", "--max-seconds", "8"])
            defer { scenario.stop() }
            let result = try scenario.join(["--connect-timeout", "2s"])
            #expect(result.status == 69, "\(result.stderr.suffix(1_000))")
            #expect(try scenario.catalog().sessions().first?.endReason?.contains("timed out") == true)
        }
    }

    @Test func anOfferThatCannotBeAnsweredExits76AndSaysWhy() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--bad-offer"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s"])
            #expect(result.status == 76, "\(result.stderr.suffix(1_000))")
            let reason = try #require(try scenario.catalog().sessions().first?.endReason)
            #expect(reason.hasPrefix("offer:") && reason.contains("line"), "\(reason)")
            #expect((try scenario.truth()["after_bad_offer"] as? [String: Any])?["type"] as? String == "disconnect")
        }
    }

    @Test func dataChannelSignalingAndMessagingChannels() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s", "--data-channel-signaling", "--ignore-disconnect-websocket",
                                            "--data-channel", "#chat:compress"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            #expect(truth["datachannels_open"] as? [String] == ["#chat", "notify", "push", "signaling", "stats"])
            #expect(truth["websocket_closed_after_switch"] as? Bool == true, "the WebSocket went away after the switch")
            #expect((truth["stats_replies"] as? Int ?? 0) >= 1, "req-stats answered on the stats channel")
            #expect(truth["end"] as? String == "client-disconnect-over-datachannel", "disconnect sent on the signaling channel")

            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason == "duration-elapsed", "the session outlived its WebSocket")
            let recording = try #require(try catalog.recordings().first)
            #expect(try Scenario.probe(scenario.dataDirectory + "/" + recording.path).duration > 3.5)

            try Scenario.expectStored(truth, in: try catalog.events(EventFilter(sessionID: session.id)))
            #expect(try catalog.events(EventFilter(sessionID: session.id, kind: .datachannel, label: "#chat")).count == 3)
            #expect(try catalog.events(EventFilter(sessionID: session.id, kind: .notify, label: "notify")).count == 1)
        }
    }

    @Test func theOffersChannelListIsAuthoritative() async throws {
        try await blocking {
            // recbot asks for #chat only; the offer also opens a compressed #ops, an unordered
            // partially reliable #lossy, e2ee / rpc, and "bogus", a label Sora never defines that
            // carries a ping and a req-stats. All are recorded, each with its settings; nothing on
            // "bogus" is answered.
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--offer-channel", "#ops:compress", "--offer-channel", "#lossy:unordered",
                                                          "--offer-channel", "e2ee", "--offer-channel", "rpc", "--offer-channel", "bogus"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "4s", "--data-channel-signaling", "--ignore-disconnect-websocket", "--data-channel", "#chat"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            #expect(truth["datachannels_open"] as? [String] == ["#chat", "#lossy", "#ops", "bogus", "e2ee", "notify", "push", "rpc", "signaling", "stats"])
            let replies = truth["datachannel_received"] as? [[String: Any]] ?? []
            #expect(!replies.contains { $0["label"] as? String == "bogus" }, "signaling-looking messages on an unknown label are not obeyed")
            #expect(replies.contains { $0["label"] as? String == "stats" }, "req-stats on stats still is")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            let messages = try catalog.events(EventFilter(sessionID: session.id, kind: .datachannel))
            for label in ["#chat", "#ops", "#lossy", "e2ee", "rpc"] {
                #expect(messages.filter { $0.label == label }.count == 3, "\(label)")
            }
            #expect(messages.filter { $0.label == "bogus" }.count == 5)
            try Scenario.expectStored(truth, in: try catalog.events(EventFilter(sessionID: session.id)))
        }
    }

    @Test func reOfferArrivesOnTheSignalingChannelAfterTheSwitch() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--late-publishers", "1", "--late-after", "2"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "6s", "--data-channel-signaling", "--ignore-disconnect-websocket"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            let truth = try scenario.truth()
            #expect(truth["re_offers_over_datachannel"] as? Int == 1 && truth["re_answers_received"] as? Int == 1)
            let recordings = try scenario.catalog().recordings()
            #expect(recordings.count == 2, "the late publisher was recorded after a data-channel re-offer")
            for recording in recordings {
                #expect(try Scenario.probe(scenario.dataDirectory + "/" + recording.path).streams.count == 2)
            }
        }
    }

    @Test func aCloseMessageOnTheSignalingChannelEndsTheSession() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--end-after", "3"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "30s", "--data-channel-signaling", "--ignore-disconnect-websocket"])
            #expect(result.status == 0, "a server-side end is a success: \(result.stderr.suffix(3_000))")
            #expect(try scenario.truth()["end"] as? String == "server-close-over-datachannel", "no disconnect sent after Sora's close")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason == "server-closed: 1000 DISCONNECTED-API")
            #expect(try catalog.events(EventFilter(sessionID: session.id, label: "signaling")).contains { $0.eventType == "close" })
            let recording = try #require(try catalog.recordings().first)
            #expect(recording.status == .complete)
            let duration = try Scenario.probe(scenario.dataDirectory + "/" + recording.path).duration
            #expect(duration > 1.5 && duration < 6, "ended with the close, not the 30 s duration: \(duration)")
        }
    }

    @Test func losingTheSignalingChannelWithoutACloseExits69WithoutRejoin() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--end-after", "3", "--end-without-close-message"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "30s", "--data-channel-signaling", "--ignore-disconnect-websocket", "--no-rejoin"])
            #expect(result.status == 69, "\(result.stderr.suffix(3_000))")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason?.hasPrefix("signaling-closed: data channel") == true, "\(session.endReason ?? "-")")
            #expect(try catalog.recordings().first?.status == .complete, "files finalized all the same")
        }
    }

    @Test func rejectionExits77() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--reject"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s"])
            #expect(result.status == 77, "\(result.stderr.suffix(2_000))")
            let session = try #require(try scenario.catalog().sessions().first)
            #expect(session.endReason == "rejected: close 4490" && session.exitStatus == 77)
        }
    }

    /// A redirect that would take a wss:// session to plain ws:// is refused (issue 12).
    @Test func aRedirectThatDropsTLSIsRefused() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--tls", "--redirect-to", "ws://127.0.0.1:9/signaling", "--max-seconds", "6"])
            defer { scenario.stop() }
            let result = try scenario.join(["--insecure"])
            #expect(result.status == 76 && result.stderr.contains("drop TLS"), "\(result.status): \(result.stderr.suffix(1_000))")
        }
    }

    @Test func redirectIsFollowed() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--redirect", "--publisher", "vp8"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "3s"])
            #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
            #expect(try scenario.truth()["connect"].flatMap { $0 as? [String: Any] }?["redirect"] as? Bool == true)
            #expect(try scenario.catalog().recordings().count == 1)
        }
    }

    @Test func abruptCloseExits69WithFilesFinalizedWithoutRejoin() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--abrupt-close-after", "3"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "30s", "--no-rejoin"])
            #expect(result.status == 69, "\(result.stderr.suffix(2_000))")
            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(session.endReason?.hasPrefix("signaling-closed") == true, "\(session.endReason ?? "-")")
            let recording = try #require(try catalog.recordings().first)
            #expect(recording.status == .complete)
            #expect(try Scenario.probe(scenario.dataDirectory + "/" + recording.path).streams.map(\.frames).allSatisfy { $0 > 30 })
        }
    }

    @Test func serverEndingTheSessionIsASuccess() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--end-after", "3"])
            defer { scenario.stop() }
            // The largest duration recbot takes (ten years): its timer once overflowed and trapped.
            let result = try scenario.join(["--duration", "3650d"])
            #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
            #expect(try scenario.catalog().sessions().first?.endReason == "server-closed: 1000")
        }
    }

    @Test func unreachableServerExits69AndBadConfigurationExits78() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--max-seconds", "1"])
            defer { scenario.stop() }
            let unreachable = try scenario.join(["--connect-timeout", "3s"], url: "ws://127.0.0.1:9/signaling")
            #expect(unreachable.status == 69, "\(unreachable.stderr.suffix(1_000))")
            let badMetadata = try scenario.join(["--metadata", "{not json"])
            #expect(badMetadata.status == 78 && badMetadata.stderr.contains("metadata"))
            let badURL = try scenario.join([], url: "http://127.0.0.1/signaling")
            #expect(badURL.status == 78 && badURL.stderr.contains("ws://"))
        }
    }
}

extension Scenario {
    /// Every data-channel message the test server sent is in the catalog, payload identical, with its sender.
    static func expectStored(_ truth: [String: Any], in events: [EventRecord]) throws {
        let sent = try #require(truth["datachannel_sent"] as? [[String: Any]])
        for message in sent {
            let label = try #require(message["label"] as? String)
            let payload = try #require(message["payload"] as? String)
            let stored = events.filter { $0.label == label }.map { event -> String in
                switch event.payload {
                case .json(let text), .text(let text): return text
                case .binary(let bytes): return String(decoding: bytes, as: UTF8.self)
                }
            }
            #expect(stored.contains(payload), "\(label): \(payload.prefix(40)) not in \(stored.map { $0.prefix(40) })")
            if let sender = message["sender"] as? String {
                #expect(events.contains { $0.label == label && $0.senderConnectionID == sender })
            }
        }
    }

    /// A 5 s session of one VP8 publisher whose #chat carries a message 2 s in, joined with
    /// `--export`: what the export, search and web tests read. The caller stops the scenario.
    static func exportedChatSession() throws -> Scenario {
        let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--late-chat", "2"])
        do {
            let result = try scenario.join(["--duration", "5s", "--data-channel-signaling", "--ignore-disconnect-websocket",
                                            "--data-channel", "#chat", "--export"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            return scenario
        } catch {
            scenario.stop()
            throw error
        }
    }
}
