import Archive
import Foundation
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// A running `recbot serve`, started with the test server's URL as every recording's, and
/// its standard error in a file (the children write there too).
final class ServeProcess {
    let process = Process()
    let logPath: String
    let port: Int
    static let webhookSecret = "hook-secret"
    static let apiToken = "api-token"

    init(scenario: Scenario, arguments: [String] = [], environment extra: [String: String] = [:], name: String = "serve",
         dataDirectory: String? = nil, listen: String = "127.0.0.1:0") throws {
        logPath = scenario.directory.appendingPathComponent("\(name).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: Scenario.recbot)
        process.arguments = ["serve", "--data-dir", dataDirectory ?? scenario.dataDirectory, "--listen", listen] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment.merge([
            "RECBOT_LOG_LEVEL": "info", "RECBOT_URLS": scenario.url, "RECBOT_ALLOW_ADDRESSES": "127.0.0.1/32",
            "RECBOT_SERVE_WEBHOOK_SECRET": Self.webhookSecret, "RECBOT_SERVE_API_TOKEN": Self.apiToken,
        ]) { $1 }
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        var found: Int?
        for _ in 0..<200 where found == nil {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = log.range(of: #"listening on [0-9.]+:(\d+)"#, options: .regularExpression) {
                found = Int(log[range].split(separator: ":").last ?? "")
            } else if !process.isRunning {
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        guard let found else {
            stopProcess(process)
            throw ServeError.didNotStart((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
        }
        port = found
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() { stopProcess(process, graceSeconds: 20) }

    struct Reply { var status: Int; var body: String }

    /// One request, answered or failed within 10 s (async-http-client, waited for on the
    /// test's own thread: scenario bodies run off the cooperative pool).
    func request(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]) throws -> Reply {
        var request = try HTTPClient.Request(url: "http://127.0.0.1:\(port)\(path)", method: HTTPMethod(rawValue: method))
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .string(body) }
        let response = try HTTPClient.shared.execute(request: request, deadline: .now() + .seconds(10)).wait()
        return Reply(status: Int(response.status.code), body: response.body.map { String(buffer: $0) } ?? "")
    }

    func webhook(_ json: String, secret: String = ServeProcess.webhookSecret) throws -> Reply {
        try request("POST", "/webhooks/sora", body: json, headers: ["x-recbot-webhook-secret": secret, "content-type": "application/json"])
    }

    func api(_ method: String, _ path: String, body: String? = nil, token: String = ServeProcess.apiToken) throws -> Reply {
        try request(method, path, body: body, headers: ["authorization": "Bearer \(token)"])
    }

    enum ServeError: Error { case didNotStart(String), noAnswer(String) }
}

/// `recbot serve` against the test server (issue 43): Sora's webhooks start and stop
/// recordings, the API does too, bad calls change nothing.
@Suite struct ServeScenarioTests {
    static func sessionWebhook(_ type: String, channel: String, session: String) -> String {
        #"{"type":"\#(type)","id":"W\#(UUID().uuidString.prefix(8))","label":"WebRTC SFU Sora","version":"2025.1.0","node_name":"sora@127.0.0.1","#
            + #""timestamp":"2026-12-01T00:00:00.000000Z","channel_id":"\#(channel)","session_id":"\#(session)","multistream":true,"spotlight":false}"#
    }

    static func rules(_ scenario: Scenario, _ json: String) throws -> String {
        let path = scenario.directory.appendingPathComponent("rules.json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Polls the catalog until `condition` holds for the job, or 30 s pass.
    static func waitForJob(_ scenario: Scenario, _ condition: (JobRecord) -> Bool) throws -> JobRecord? {
        for _ in 0..<300 {
            if let job = try? scenario.catalog().jobs(JobFilter()).first, condition(job) { return job }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try scenario.catalog().jobs(JobFilter()).first
    }

    @Test func sessionWebhooksStartAndStopARecording() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let rules = try Self.rules(scenario, #"{"rules": [{"name": "all", "channel": {"pattern": "*"}, "options": {"duration": 60}}]}"#)
            let serve = try ServeProcess(scenario: scenario, arguments: ["--rules", rules])
            defer { serve.stop() }

            let created = Date()
            let reply = try serve.webhook(Self.sessionWebhook("session.created", channel: "sora", session: "SORASESSION1"))
            #expect(reply.status == 200 && reply.body.contains("{}"))
            #expect(try serve.webhook(Self.sessionWebhook("session.created", channel: "sora", session: "SORASESSION1")).status == 200, "Sora sending it again")
            let running = try #require(try Self.waitForJob(scenario) { $0.state == .running })
            let startedAfter = Double(try #require(running.startedAt) - running.createdAt) / 1000
            #expect(startedAfter <= 2, "the job started \(startedAfter) s after the webhook")
            #expect(try scenario.catalog().jobs(JobFilter()).count == 1, "one job for one Sora session")
            // Let it record 4 s from its first file (connecting on a busy machine can take a
            // second or more, which a sleep from the job's start would eat into), then end the Sora session.
            let deadline = Date().addingTimeInterval(20)
            while try scenario.catalog().recordings(RecordingFilter(sessionID: running.id)).isEmpty && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.1)
            }
            Thread.sleep(forTimeInterval: 4)
            let destroyed = Date()
            #expect(try serve.webhook(Self.sessionWebhook("session.destroyed", channel: "sora", session: "SORASESSION1")).status == 200)
            let ended = try #require(try Self.waitForJob(scenario) { $0.state == .ended })
            #expect(ended.state == .ended, "\(serve.log.suffix(3_000))")
            let session = try #require(try scenario.catalog().session(id: ended.id), "the job's recording has the job's id")
            let stoppedAfter = Double(try #require(session.endedAt)) / 1000 - destroyed.timeIntervalSince1970
            #expect(stoppedAfter <= 2, "the recording ended \(stoppedAfter) s after session.destroyed")
            print("serve: started \(startedAfter) s after session.created, ended \(stoppedAfter) s after session.destroyed")
            #expect(ended.stopReason == "session.destroyed" && ended.exitStatus == 0 && ended.endReason == session.endReason)
            let recordings = try scenario.catalog().recordings(RecordingFilter(sessionID: ended.id))
            #expect(recordings.count == 1 && recordings.allSatisfy { $0.status == .complete })
            let probe = try Scenario.probe(scenario.dataDirectory + "/" + #require(recordings.first).path)
            #expect(probe.duration >= 3 && probe.duration <= Date().timeIntervalSince(created), "\(probe.duration) s recorded")
        }
    }

    @Test func theAPIStartsListsAndStopsRecordingsAndBadCallsChangeNothing() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let serve = try ServeProcess(scenario: scenario)
            defer { serve.stop() }
            // Refused, and nothing queued: no token, a wrong token, bad bodies, an oversized one, a webhook without its secret.
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora"}"#, token: "wrong").status == 401)
            #expect(try serve.request("GET", "/recordings").status == 401)
            #expect(try serve.api("POST", "/recordings", body: #"{"channel":"sora"}"#).status == 400)
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","split_duration":-1}"#).status == 400)
            #expect(try serve.api("POST", "/recordings", body: "{" + String(repeating: " ", count: 200_000) + "}").status == 413)
            #expect(try serve.webhook(Self.sessionWebhook("session.created", channel: "sora", session: "S"), secret: "nope").status == 401)
            #expect(try serve.webhook("{not json").status == 400)
            #expect(try serve.webhook(Self.sessionWebhook("session.created", channel: "sora", session: "S")).status == 200, "no rule matches: not recorded")
            #expect(try serve.webhook(#"{"type":"recording.report","channel_id":"sora"}"#).status == 200, "unknown types are ignored")
            #expect(try scenario.catalog().jobs(JobFilter()).isEmpty, "nothing above queued a job")
            #expect(try serve.request("GET", "/healthz").status == 200)

            let created = try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":60,"split_duration":2,"metadata":{"k":"v"}}"#)
            #expect(created.status == 201, "\(created.body)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])?["id"] as? String)
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora"}"#).status == 409, "one recording per channel")
            _ = try #require(try Self.waitForJob(scenario) { $0.state == .running })
            let listed = try serve.api("GET", "/recordings?state=running")
            #expect(listed.status == 200 && listed.body.contains(id))
            #expect(try serve.api("GET", "/recordings?state=bogus").status == 400)
            #expect(try serve.api("GET", "/recordings/\(id)").status == 200 && serve.api("GET", "/recordings/NOPE").status == 404)
            Thread.sleep(forTimeInterval: 5)
            #expect(try serve.api("DELETE", "/recordings/\(id)").status == 202)
            #expect(try serve.api("DELETE", "/recordings/\(id)").status == 409, "stopping already")
            let ended = try #require(try Self.waitForJob(scenario) { $0.state == .ended })
            #expect(ended.stopReason == "api" && ended.exitStatus == 0, "\(serve.log.suffix(2_000))")
            let recordings = try scenario.catalog().recordings(RecordingFilter(sessionID: id))
            #expect(recordings.count >= 2, "2 s parts: \(recordings.map(\.path))")
            #expect(try scenario.catalog().session(id: id)?.recordingMetadata == #"{"k":"v"}"#)

            // `recbot jobs` sees the same.
            let list = try scenario.recbot(["jobs", "list", "--data-dir", scenario.dataDirectory, "--json"])
            #expect(list.status == 0 && list.stdout.contains(id) && list.stdout.contains("\"state\" : \"ended\""))
            #expect(try scenario.recbot(["jobs", "stop", id, "--data-dir", scenario.dataDirectory]).stdout.contains("nothing to stop"))
        }
    }

    /// SIGTERM (a deploy, `systemctl stop`): the service stops taking jobs, ends every
    /// recording the way a signal ends a join, stores their results, and exits 0.
    /// A recording asked for with `retention_days` keeps that long; once verified and past it,
    /// the service's retention pass removes its files and marks the catalog (its clock is
    /// days long, so the test moves the session's `retain_until` into the past).
    @Test func theRetentionPassRemovesAVerifiedRecordingPastItsRetention() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let serve = try ServeProcess(scenario: scenario, arguments: ["--prune-every", "1s"])
            defer { serve.stop() }
            let created = try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","duration":3,"retention_days":1}"#)
            #expect(created.status == 201, "\(created.body)")
            let job = try #require(try Self.waitForJob(scenario) { $0.state == .ended }, "\(serve.log.suffix(2_000))")
            let session = try #require(try scenario.catalog().session(id: job.id))
            let retention = try #require(session.retainUntil) - session.startedAt
            #expect(abs(retention - 86_400_000) < 5_000, "one day from its start: \(retention) ms")
            let folder = scenario.dataDirectory + "/recordings/\(job.id)"
            Thread.sleep(forTimeInterval: 2)
            #expect(FileManager.default.fileExists(atPath: folder), "within its retention, kept")
            let script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('UPDATE sessions SET retain_until = 1 WHERE id = ?', (sys.argv[2],)); c.commit()"
            #expect(try runProcess("/usr/bin/env", ["python3", "-c", script, scenario.dataDirectory + "/catalog.sqlite", job.id]).status == 0)
            Thread.sleep(forTimeInterval: 2)
            #expect(FileManager.default.fileExists(atPath: folder), "past it but not verified: kept")
            #expect(serve.log.contains("retention: kept past its retention"), "\(serve.log.suffix(1_500))")
            #expect(try scenario.recbot(["verify", job.id, "--data-dir", scenario.dataDirectory]).status == 0)
            var gone = false
            for _ in 0..<50 where !gone {
                gone = !FileManager.default.fileExists(atPath: folder)
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(gone, "\(serve.log.suffix(1_500))")
            #expect(try scenario.catalog().session(id: job.id)?.prunedAt != nil)
            #expect(try scenario.catalog().recordings(RecordingFilter(sessionID: job.id)).allSatisfy { $0.prunedAt != nil })
        }
    }

    /// Sora unreachable when the job starts (a restart, a network down): the job is tried
    /// again after a backoff, and once Sora answers it records, in the same session.
    @Test func aJobWhoseStartFailsIsTriedAgainAndRecordsOnceSoraAnswers() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let port = try #require(URLComponents(string: scenario.url)?.port)
            let relay = try TCPRelay(targetPort: port)
            defer { relay.close() }
            relay.refuse()
            let serve = try ServeProcess(scenario: scenario, environment: ["RECBOT_URLS": "ws://127.0.0.1:\(relay.port)/signaling"])
            defer { serve.stop() }
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            let failed = try #require(try Self.waitForJob(scenario) { $0.state == .running && $0.leaseOwner == nil && $0.endReason != nil },
                                      "\(serve.log.suffix(2_000))")
            #expect(failed.exitStatus == 69 && failed.endReason?.contains("cannot reach") == true, "\(failed)")
            relay.heal()
            let recording = try #require(try Self.waitForJob(scenario) { job in
                job.state == .running && job.leaseOwner != nil && ((try? scenario.catalog().recordings(RecordingFilter(sessionID: job.id)).isEmpty) == false)
            }, "\(serve.log.suffix(3_000))")
            #expect(recording.fence >= 2 && recording.endReason == nil, "claimed again, its last failure cleared: \(recording)")
            Thread.sleep(forTimeInterval: 2)
            #expect(try serve.api("DELETE", "/recordings/\(recording.id)").status == 202)
            let ended = try #require(try Self.waitForJob(scenario) { $0.state == .ended })
            #expect(ended.exitStatus == 0 && ended.fence == recording.fence, "\(ended)")
            let session = try #require(try scenario.catalog().session(id: ended.id))
            #expect((session.segment ?? 1) >= 2 && session.endedAt != nil, "the same session, continued")
            #expect(serve.log.contains("job failed; trying again"))
        }
    }

    /// `--capacity-publishers`: a worker whose recordings take its publisher budget claims no
    /// more, however many sessions it may run; the queued job starts once one ends.
    @Test func aPublisherBudgetHoldsTheNextJobUntilThereIsRoom() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let serve = try ServeProcess(scenario: scenario, arguments: ["--capacity", "4", "--capacity-publishers", "1"])
            defer { serve.stop() }
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            let first = try #require(try Self.waitForJob(scenario) { job in
                job.state == .running && ((try? scenario.catalog().connections(sessionID: job.id).isEmpty) == false)
            }, "\(serve.log.suffix(2_000))")
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"other","expire_time":120}"#).status == 201)
            Thread.sleep(forTimeInterval: 3)
            let waiting = try scenario.catalog().jobs(JobFilter(states: [.queued]))
            #expect(waiting.map(\.channelID) == ["other"], "one publisher recorded: the budget is spent")
            #expect(try serve.api("DELETE", "/recordings/\(first.id)").status == 202)
            let second = try #require(try Self.waitForJob(scenario) { $0.channelID == "other" && $0.state == .running }, "\(serve.log.suffix(2_000))")
            #expect(second.fence == 1)
        }
    }

    @Test func aStoppedServiceEndsItsRecordingsAndStoresTheirResults() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--serve-rejoins"])
            defer { scenario.stop() }
            let serve = try ServeProcess(scenario: scenario)
            defer { serve.stop() }
            #expect(try serve.api("POST", "/recordings", body: #"{"channel_id":"sora","expire_time":120}"#).status == 201)
            _ = try #require(try Self.waitForJob(scenario) { $0.state == .running })
            Thread.sleep(forTimeInterval: 3)
            serve.process.terminate()
            let deadline = Date().addingTimeInterval(60)
            while serve.process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            #expect(!serve.process.isRunning && serve.process.terminationStatus == 0, "\(serve.log.suffix(2_000))")
            let job = try #require(try scenario.catalog().jobs(JobFilter()).first)
            #expect(job.state == .ended && job.exitStatus == 0 && job.endReason == "signal: SIGTERM", "\(job)")
            let recordings = try scenario.catalog().recordings(RecordingFilter(sessionID: job.id))
            #expect(recordings.count == 1 && recordings.allSatisfy { $0.status == .complete })
        }
    }

    @Test func serveRefusesToStartWithoutCredentialsOrWithABadRulesFile() throws {
        let scenario = Scenario(existingDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("recbot-serve-\(UUID())"))
        try FileManager.default.createDirectory(at: scenario.directory, withIntermediateDirectories: true)
        // Beyond loopback, someone must be able to get in (on loopback it is an open archive browser).
        let open = try scenario.recbot(["serve", "--data-dir", scenario.dataDirectory, "--listen", "0.0.0.0:0"])
        #expect(open.status == 78 && open.stderr.contains("RECBOT_SERVE_WEBHOOK_SECRET") && open.stderr.contains("RECBOT_SERVE_WEB_BASIC_AUTH"),
                "\(open.stderr)")
        let rules = try Self.rules(scenario, #"{"rules": [{"name": "a", "channel": {"exact": "x", "prefix": "y"}}]}"#)
        let bad = try scenario.recbot(["serve", "--data-dir", scenario.dataDirectory, "--rules", rules], environment: ["RECBOT_SERVE_API_TOKEN": "t"])
        #expect(bad.status == 78 && bad.stderr.contains("exactly one of exact, prefix, pattern"), "\(bad.stderr)")
    }
}
