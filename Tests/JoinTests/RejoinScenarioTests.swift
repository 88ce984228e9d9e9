import Archive
import Foundation
import TestSupport
import Testing

/// A recording survives the network (issue 27): the test server breaks recbot's connection on
/// purpose (`--fault`), or a firewall blacks the network out, and recbot joins again within
/// the same session. Each case checks the one session, the outage in the catalog, and that
/// every publisher's parts verify and cover the window but for the outage and a little more.
/// Not serialized: each case has its own server, data directory and network namespace, and
/// `blocking` bounds how many run at once.
@Suite struct RejoinScenarioTests {
    struct Run {
        var status: Int32
        var stderr: String
        var session: SessionRecord
        var interruptions: [InterruptionRecord]
        var recordings: [RecordingRecord]
        /// The final metrics (`--metrics-textfile`), read with prometheus_client's parser.
        var metrics: [String: Double]
    }

    func record(_ scenario: Scenario, _ arguments: [String], launcher: [String] = []) throws -> Run {
        let textfile = scenario.directory.appendingPathComponent("recbot.prom").path
        let result = try scenario.join(arguments + ["--metrics-textfile", textfile], launcher: launcher)
        let catalog = try scenario.catalog()
        let sessions = try catalog.sessions()
        #expect(sessions.count == 1, "one session, whatever happened to its connections")
        let session = try #require(sessions.first, "\(result.stderr.suffix(3_000))")
        return Run(status: result.status, stderr: result.stderr, session: session,
                   interruptions: try catalog.interruptions(sessionID: session.id),
                   recordings: try catalog.recordings(RecordingFilter(sessionID: session.id)),
                   metrics: try MetricsScenarioTests.scrape(["--file", textfile]).samples)
    }

    /// Every publisher recorded in split parts that verify (libwebm's reader and the decoders),
    /// the last named by its end marker, and holding at least `minimumSeconds` of media.
    func expectContinuousArchive(_ run: Run, _ scenario: Scenario, publishers: Int, parts: Int, minimumSeconds: Double,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bySender = Dictionary(grouping: run.recordings, by: \.connectionID)
        #expect(bySender.count == publishers, "\(bySender.keys.sorted())", sourceLocation: sourceLocation)
        let directory = scenario.dataDirectory + "/recordings/" + run.session.id
        for (sender, recordings) in bySender {
            #expect(recordings.map(\.part).sorted() == Array(1...parts), "\(sender): \(recordings.map(\.path))", sourceLocation: sourceLocation)
            #expect(recordings.allSatisfy { $0.status == .complete }, sourceLocation: sourceLocation)
            let seconds = Double(recordings.compactMap(\.durationMs).reduce(0, +)) / 1000
            #expect(seconds >= minimumSeconds, "\(sender): \(seconds) s of media, at least \(minimumSeconds) s expected", sourceLocation: sourceLocation)
            let marker = directory + "/split-archive-end-\(sender).json"
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: marker))) as? [String: Any]
            #expect(object?["split_last_index"] as? String == String(format: "%04d", parts), sourceLocation: sourceLocation)
        }
        let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, run.session.id])
        #expect(verify.status == 0, "\(verify.stdout.suffix(3_000))\(verify.stderr.suffix(2_000))", sourceLocation: sourceLocation)
    }

    func expectRejoined(_ run: Run, outages: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.status == 0, "\(run.stderr.suffix(3_000))", sourceLocation: sourceLocation)
        #expect(run.interruptions.count == outages, "\(run.interruptions)", sourceLocation: sourceLocation)
        #expect(run.interruptions.allSatisfy { $0.endedAt != nil && $0.attempts >= 1 && $0.connectionID != nil }, sourceLocation: sourceLocation)
        let plural = outages == 1 ? "" : "s"
        #expect(run.session.endReason?.hasPrefix("duration-elapsed (\(outages) interruption\(plural), ") == true,
                "\(run.session.endReason ?? "-")", sourceLocation: sourceLocation)
        #expect(run.session.exitStatus == 0, sourceLocation: sourceLocation)
        // The metrics tell the same story.
        #expect(run.metrics["recbot_interruptions_total{channel=\"sora\"}"] == Double(outages)
                && run.metrics["recbot_rejoins_total{channel=\"sora\"}"] == Double(outages)
                && run.metrics["recbot_rejoining{channel=\"sora\"}"] == 0,
                "\(run.metrics.filter { $0.key.contains("rejoin") || $0.key.contains("interrupt") })", sourceLocation: sourceLocation)
        #expect((run.metrics["recbot_interrupted_seconds_total{channel=\"sora\"}"] ?? 0) > 0, sourceLocation: sourceLocation)
    }

    /// The WebSocket goes without a close frame: recbot notices at once, joins again within a
    /// second or two, and each publisher continues in its next part.
    @Test func anAbruptSignalingDropIsRiddenOutInTheSameSession() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--fault", "ws-abort@4"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "14s"])
            expectRejoined(run, outages: 1)
            let outage = try #require(run.interruptions.first)
            #expect(outage.cause == "signaling-closed: abruptly" && outage.attempts == 1)
            #expect((outage.endedAt ?? 0) - outage.startedAt < 2_500, "rejoined within 2.5 s: \(outage)")
            #expect((outage.mediaLostMs ?? .max) < 3_000, "\(outage)")
            let truth = try scenario.truth()
            let connections = try #require(truth["connections"] as? [[String: Any]])
            #expect(connections.count == 2 && connections.last?["bot_connection_id"] as? String == outage.connectionID)
            #expect(run.session.connectionID == outage.connectionID, "the session shows recbot's current connection")
            try expectContinuousArchive(run, scenario, publishers: 2, parts: 2, minimumSeconds: 14 - 2 - 1)
            // The session's JSON and its report say it too.
            let shown = try scenario.recbot(["sessions", "show", run.session.id, "--data-dir", scenario.dataDirectory, "--json"])
            let json = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
            let rows = json?["interruptions"] as? [[String: Any]]
            #expect(rows?.count == 1 && rows?.first?["cause"] as? String == "signaling-closed: abruptly", "\(shown.stdout.suffix(2_000))")
            let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
                scenario.dataDirectory + "/recordings/\(run.session.id)/report-\(run.session.id).json"))) as? [String: Any]
            #expect((report?["interruptions"] as? [[String: Any]])?.count == 1)
        }
    }

    /// Sora restarts: the server goes away (connections dropped, the port closed) for 4 s and
    /// comes back with the same publishers. The joins in between are refused; the probe sees
    /// the port open again and recbot is back within about a second of it.
    @Test func aServerRestartIsRiddenOut() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "restart@4:4"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "16s"])
            expectRejoined(run, outages: 1)
            let outage = try #require(run.interruptions.first)
            let seconds = Double((outage.endedAt ?? 0) - outage.startedAt) / 1000
            #expect(seconds >= 3.5 && seconds < 4 + 2, "the outage is the restart, give or take: \(seconds) s (\(outage))")
            try expectContinuousArchive(run, scenario, publishers: 1, parts: 2, minimumSeconds: 16 - 4 - 2 - 1)
        }
    }

    /// The WebSocket stays open but nothing comes back while the media path is fine: recbot's
    /// pings go unanswered, the server answers a TCP probe, and 15 s later (what TCP's backoff
    /// after a real outage may take) recbot ends the connection and joins again. Media flowed
    /// meanwhile, so little is lost.
    @Test func aWebSocketThatStopsAnsweringIsNoticedByItsPings() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "ws-silence@3"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "32s"])
            expectRejoined(run, outages: 1)
            let outage = try #require(run.interruptions.first)
            #expect(outage.cause.contains("this WebSocket does not (nothing on the WebSocket for"), "\(outage)")
            try expectContinuousArchive(run, scenario, publishers: 1, parts: 2, minimumSeconds: 32 - 2 - 1)
        }
    }

    /// ICE consent goes unanswered while media still arrives: the connection delivers, so it
    /// is kept until consent runs out (RFC 7675's 30 s after the last answer); then recbot
    /// joins again (the media went on until then).
    @Test func lostICEConsentIsNoticedAndRejoined() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "consent-stop@3"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "40s"])
            expectRejoined(run, outages: 1)
            let outage = try #require(run.interruptions.first)
            #expect(outage.cause.contains("consent"), "\(outage)")
            #expect(outage.startedAt - run.session.startedAt > 30_000, "consent lost 30 s after the last response: \(outage)")
            try expectContinuousArchive(run, scenario, publishers: 1, parts: 2, minimumSeconds: 40 - 2 - 1)
        }
    }

    /// Issue 39 item 7: an 8 s blackout (a firewall dropping everything) costs no more than
    /// itself: the connection is kept while the network is dark and records again when it is
    /// back (or, if it cannot, a rejoin does), with no more than the blackout and a second lost.
    @Test(.enabled(if: FirewalledNetwork.isAvailable, "needs root and nftables for a network namespace with a firewall"))
    func anEightSecondBlackoutIsRiddenThrough() async throws {
        try await blocking {
            let network = try FirewalledNetwork(blockingUDP: false)
            defer { network.remove() }
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--listen-host", network.hostAddress, "--serve-rejoins",
                                                          "--max-seconds", "90"])
            defer { scenario.stop() }
            network.scheduleBlackout(after: 10, for: 8)
            let run = try record(scenario, ["--duration", "30s", "--allow-address", "\(network.clientAddress)/32"], launcher: network.launcher)
            #expect(run.status == 0, "\(run.session.endReason ?? "-") \(run.stderr.suffix(3_000))")
            #expect(run.interruptions.count == 1 && run.interruptions.allSatisfy { $0.endedAt != nil }, "\(run.interruptions)")
            #expect((run.interruptions.first?.mediaLostMs ?? .max) <= 9_000, "the blackout and at most a second: \(run.interruptions)")
            let bySender = Dictionary(grouping: run.recordings, by: \.connectionID)
            for (sender, parts) in bySender {
                let seconds = Double(parts.compactMap(\.durationMs).reduce(0, +)) / 1000
                // The first second goes to the join, the keyframe and the sync hold.
                #expect(seconds >= 30 - 8 - 1 - 1, "\(sender): \(seconds) s of media in \(parts.count) part(s)")
            }
            let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, run.session.id])
            #expect(verify.status == 0, "\(verify.stdout.suffix(2_000))")
        }
    }

    /// Signaling on data channels only (the WebSocket gone after the switch): the signaling
    /// channel closes without Sora's `close`, and recbot joins again.
    @Test func theSignalingChannelClosingWithoutCloseIsRejoined() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "dc-close@4"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "14s", "--data-channel-signaling", "--ignore-disconnect-websocket"])
            expectRejoined(run, outages: 1)
            #expect(run.interruptions.first?.cause.hasPrefix("signaling-closed: data channel") == true, "\(run.interruptions)")
            try expectContinuousArchive(run, scenario, publishers: 1, parts: 2, minimumSeconds: 14 - 2 - 1)
            // The data-channel messages of both connections are stored.
            let events = try scenario.catalog().events(EventFilter(sessionID: run.session.id, label: "push"))
            #expect(events.count >= 2, "a push from each connection's switch: \(events.count)")
        }
    }

    /// No rejoin succeeds before the window ends: exit 69 as before rejoining existed, with
    /// the outage open in the catalog and the files that were recorded finished.
    @Test func aWindowThatEndsWhileRejoiningExits69() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "restart@3:60", "--max-seconds", "30"])
            defer { scenario.stop() }
            let run = try record(scenario, ["--duration", "10s"])
            #expect(run.status == 69, "\(run.stderr.suffix(3_000))")
            let outage = try #require(run.interruptions.first)
            #expect(outage.endedAt == nil && outage.attempts >= 1, "\(outage)")
            #expect(run.metrics["recbot_interruptions_total{channel=\"sora\"}"] == 1 && (run.metrics["recbot_rejoins_total{channel=\"sora\"}"] ?? 0) == 0,
                    "\(run.metrics.filter { $0.key.contains("rejoin") || $0.key.contains("interrupt") })")
            #expect(run.session.endReason?.hasPrefix("duration-elapsed (still rejoining after signaling-closed") == true, "\(run.session.endReason ?? "-")")
            try expectContinuousArchive(run, scenario, publishers: 1, parts: 1, minimumSeconds: 2)
        }
    }

    /// `--fail-on-interruption`: the window is recorded all the same, but the exit says it had a gap;
    /// `--no-rejoin`: the first failure ends the session, as before.
    @Test func failOnInterruptionAndNoRejoin() async throws {
        try await blocking {
            let strict = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "ws-abort@3"])
            defer { strict.stop() }
            let run = try record(strict, ["--duration", "8s", "--fail-on-interruption"])
            #expect(run.status == 69 && run.interruptions.count == 1 && run.session.exitStatus == 69, "\(run.stderr.suffix(2_000))")
            try expectContinuousArchive(run, strict, publishers: 1, parts: 2, minimumSeconds: 8 - 2 - 1)

            let off = try Scenario(serverArguments: ["--publisher", "vp8", "--fault", "ws-abort@3"])
            defer { off.stop() }
            let ended = try record(off, ["--duration", "8s", "--no-rejoin"])
            #expect(ended.status == 69 && ended.interruptions.isEmpty && ended.session.endReason == "signaling-closed: abruptly")
            #expect(ended.recordings.map(\.part) == [0], "one file, not split: \(ended.recordings.map(\.path))")
        }
    }

    /// On a real network: a 52 s recording with an abrupt signaling drop at 8 s and a 20 s
    /// blackout (a firewall dropping everything) at 16 s. recbot runs in a network namespace;
    /// the server listens on the host's end of its link. The drop is rejoined; the blackout,
    /// within the consent window, is ridden through on the same connection; and the server may
    /// close the WebSocket after it (its own keepalive gave up while TCP retransmitted on its
    /// backoff), which is rejoined in turn: the window leaves 15 s for that.
    @Test(.enabled(if: FirewalledNetwork.isAvailable, "needs root and nftables for a network namespace with a firewall"))
    func anAbruptDropAndATwentySecondBlackoutCostOnlyTheirOwnTime() async throws {
        try await blocking {
            let network = try FirewalledNetwork(blockingUDP: false)
            defer { network.remove() }
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8", "--listen-host", network.hostAddress,
                                                          "--fault", "ws-abort@8", "--serve-rejoins", "--max-seconds", "100"])
            defer { scenario.stop() }
            network.scheduleBlackout(after: 16, for: 20)
            let run = try record(scenario, ["--duration", "52s", "--allow-address", "\(network.clientAddress)/32"], launcher: network.launcher)
            let outages = run.interruptions
            #expect(run.status == 0 && (2...3).contains(outages.count) && outages.allSatisfy { $0.endedAt != nil },
                    "\(outages) \(run.stderr.suffix(6_000))")
            let parts = Set(run.recordings.map(\.part)).count
            try expectContinuousArchive(run, scenario, publishers: 2, parts: parts, minimumSeconds: 52 - 20 - 2 * Double(outages.count) - 1)
            #expect(parts == outages.count || parts == outages.count + 1, "a part per rejoin: \(parts) parts, \(outages.count) outages")
        }
    }
}
