import Foundation
import TestSupport
import Testing

/// `recbot join --metrics-listen` and `--metrics-textfile` against the bundled test server,
/// read back with prometheus_client's parser (an independent reader of the text format).
@Suite(.serialized) struct MetricsScenarioTests {
    typealias Scrape = (status: Int, contentType: String, notFound: Int, types: [String: String], samples: [String: Double])

    static func scrape(_ arguments: [String]) throws -> Scrape {
        let result = try runProcess("/usr/bin/env", ["python3", Scenario.checkersDirectory.appendingPathComponent("scrape_metrics.py").path] + arguments)
        let data = result.stdout, problem = result.stderrText
        #expect(result.status == 0, "scrape_metrics: \(problem)")
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "scrape_metrics: \(problem)")
        return (json["status"] as? Int ?? 0, json["content_type"] as? String ?? "", json["not_found_status"] as? Int ?? 0,
                json["types"] as? [String: String] ?? [:], json["samples"] as? [String: Double] ?? [:])
    }

    /// Reads a child's standard error as it arrives, to find what it logged.
    final class ErrorLog: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""

        init(_ pipe: Pipe) {
            pipe.fileHandleForReading.readabilityHandler = { [self] handle in
                let chunk = String(decoding: handle.availableData, as: UTF8.self)
                lock.withLock { text += chunk }
            }
        }

        var contents: String { lock.withLock { text } }

        /// The metrics endpoint's address from the "serving metrics" line, waiting up to `seconds`.
        func metricsAddress(seconds: Double) -> String? {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                for line in contents.split(separator: "\n") where line.contains("serving metrics") {
                    if let field = line.split(separator: " ").first(where: { $0.hasPrefix("address=") }) { return String(field.dropFirst(8)) }
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return nil
        }
    }

    @Test func metricsAreServedWhileRecordingAndWrittenAsATextfileAtTheEnd() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let textfile = scenario.directory.appendingPathComponent("recbot.prom").path
            let join = Process()
            join.executableURL = URL(fileURLWithPath: Scenario.recbot)
            join.arguments = ["join", "--channel", "sora", "--url", scenario.url, "--data-dir", scenario.dataDirectory, "--allow-address", "127.0.0.1/32",
                              "--duration", "8s", "--metrics-listen", "127.0.0.1:0", "--metrics-textfile", textfile]
            var environment = ProcessInfo.processInfo.environment
            environment["RECBOT_LOG_LEVEL"] = "info"
            join.environment = environment
            let err = Pipe()
            join.standardError = err
            join.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            let log = ErrorLog(err)
            try join.run()
            defer { if join.isRunning { join.terminate() } }
            let address = try #require(log.metricsAddress(seconds: 10), "no 'serving metrics' line: \(log.contents.suffix(2_000))")

            // Scraped mid-session, once media flows.
            var live = try Self.scrape(["--url", "http://\(address)"])
            for _ in 0..<40 where (live.samples[#"recbot_frames_recorded_total{channel="sora",kind="video"}"#] ?? 0) < 30 {
                Thread.sleep(forTimeInterval: 0.2)
                live = try Self.scrape(["--url", "http://\(address)"])
            }
            #expect(live.status == 200 && live.contentType.hasPrefix("text/plain; version=0.0.4") && live.notFound == 404)
            #expect(live.samples[#"recbot_ice_state{channel="sora",state="connected"}"#] == 1)
            #expect(live.samples[#"recbot_ice_state{channel="sora",state="checking"}"#] == 0)
            #expect(live.samples[#"recbot_dtls_state{channel="sora",state="connected"}"#] == 1)
            #expect(live.samples[#"recbot_senders_recording{channel="sora"}"#] == 1)
            #expect(live.samples[#"recbot_session_ended{channel="sora"}"#] == 0)
            #expect((live.samples[#"recbot_rtp_packets_received_total{channel="sora"}"#] ?? 0) > 100)
            #expect((live.samples[#"recbot_frames_recorded_total{channel="sora",kind="video"}"#] ?? 0) >= 30)
            #expect(live.types["recbot_bytes_written"] == "counter" && live.types["recbot_queue_depth"] == "gauge", "\(live.types)")

            join.waitUntilExit()
            #expect(join.terminationStatus == 0, "recbot: \(log.contents.suffix(3_000))")
            // At the end: the textfile holds the final totals, which agree with the catalog.
            let final = try Self.scrape(["--file", textfile])
            let recording = try #require(try scenario.catalog().recordings().first)
            #expect(final.samples[#"recbot_session_ended{channel="sora"}"#] == 1)
            #expect(final.samples[#"recbot_session_end_reason{channel="sora",reason="success"}"#] == 1)
            #expect(final.samples[#"recbot_session_end_reason{channel="sora",reason="network"}"#] == 0)
            #expect(final.samples[#"recbot_session_exit_code{channel="sora"}"#] == 0)
            #expect(final.samples[#"recbot_frames_recorded_total{channel="sora",kind="video"}"#] == Double(recording.videoFrames), "\(recording)")
            #expect(final.samples[#"recbot_frames_recorded_total{channel="sora",kind="audio"}"#] == Double(recording.audioFrames), "\(recording)")
            let written = try #require(final.samples[#"recbot_bytes_written_total{channel="sora"}"#])
            // Counted as produced; the file also holds what finishing it added (cues, sizes).
            #expect(written > 0.9 * Double(recording.bytes) && written <= Double(recording.bytes), "\(written) counted, \(recording.bytes) in the file")
            #expect(final.samples[#"recbot_recordings_started_total{channel="sora"}"#] == 1)
            #expect(!FileManager.default.fileExists(atPath: textfile + ".tmp.\(join.processIdentifier)"))
        }
    }

    @Test func aMetricsAddressInUseOrATextfileNotEndingInPromIsAConfigurationError() async throws {
        try await blocking {
            // Both are refused before anything is contacted: the signaling URL is never dialled.
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-metrics-\(UUID())")
            let scenario = Scenario(existingDirectory: directory)
            defer { try? FileManager.default.removeItem(at: directory) }
            let listener = try #require(LoopbackSocket(listening: true))
            defer { close(listener.descriptor) }
            let occupied = listener.port
            let url = "ws://127.0.0.1:9/signaling"
            let inUse = try scenario.join(["--duration", "2s", "--metrics-listen", "127.0.0.1:\(occupied)"], url: url)
            #expect(inUse.status == 78 && inUse.stderr.contains("--metrics-listen 127.0.0.1:\(occupied)") && inUse.stderr.contains("in use"), "\(inUse.stderr)")
            let notProm = try scenario.join(["--duration", "2s", "--metrics-textfile", directory.appendingPathComponent("m.txt").path], url: url)
            #expect(notProm.status == 78 && notProm.stderr.contains(".prom"), "\(notProm.stderr)")
        }
    }
}
