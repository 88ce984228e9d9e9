import Foundation
import Media
import Prometheus
import RecBot
import Testing
@testable import RecBotMetrics

@Suite struct SessionMetricsTests {
    static func lines(_ registry: PrometheusCollectorRegistry) -> Set<String> {
        Set(registry.emitToString().split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") })
    }

    static func totals(packets: Int, bytes: UInt64, ice: String) -> SessionTotals {
        var totals = SessionTotals(phase: .recording, startedAtUnixSeconds: 1_700_000_000, uptimeSeconds: 12.5)
        totals.iceState = ice
        totals.dtlsState = "connected"
        totals.sendersRecording = 3
        totals.transport.rtpPackets = packets
        totals.received.lost = packets / 100
        totals.received.framesDropped.waitingForKeyframe = 4
        totals.recording.bytes = bytes
        totals.receiver.feedback.nacksDeferred = 7
        return totals
    }

    @Test func countersAdvanceBySamplesAndStatesAreOneHot() {
        let registry = PrometheusCollectorRegistry()
        let metrics = SessionMetrics(factory: PrometheusMetricsFactory(registry: registry), channel: "room-1")
        metrics.update(Self.totals(packets: 1_000, bytes: 50_000, ice: "checking"))
        metrics.update(Self.totals(packets: 2_500, bytes: 80_000, ice: "connected"))
        var lines = Self.lines(registry)
        #expect(lines.contains(#"recbot_rtp_packets_received_total{channel="room-1"} 2500"#), "\(lines.sorted())")
        #expect(lines.contains(#"recbot_rtp_packets_lost_total{channel="room-1"} 25"#))
        #expect(lines.contains(#"recbot_bytes_written_total{channel="room-1"} 80000"#))
        #expect(lines.contains(#"recbot_frames_dropped_total{channel="room-1",reason="waiting_for_keyframe"} 4"#))
        #expect(lines.contains(#"recbot_feedback_deferred_total{channel="room-1",type="nack"} 7"#))
        #expect(lines.contains(#"recbot_ice_state{channel="room-1",state="connected"} 1.0"#))
        #expect(lines.contains(#"recbot_ice_state{channel="room-1",state="checking"} 0.0"#))
        #expect(lines.contains(#"recbot_senders_recording{channel="room-1"} 3.0"#))
        #expect(lines.contains(#"recbot_session_uptime_seconds{channel="room-1"} 12.5"#))
        // A total that went down (never expected) does not make a counter go backwards.
        metrics.update(Self.totals(packets: 10, bytes: 80_000, ice: "connected"))
        metrics.ended(JoinOutcome(cause: .connectionLost, endReason: "network: ICE failed", sessionID: nil))
        lines = Self.lines(registry)
        #expect(lines.contains(#"recbot_rtp_packets_received_total{channel="room-1"} 2500"#))
        #expect(lines.contains(#"recbot_session_end_reason{channel="room-1",reason="network"} 1.0"#))
        #expect(lines.contains(#"recbot_session_end_reason{channel="room-1",reason="success"} 0.0"#))
        #expect(lines.contains(#"recbot_session_exit_code{channel="room-1"} 69.0"#))
        #expect(lines.contains(#"recbot_session_ended{channel="room-1"} 1.0"#))
    }

    @Test func theTextfileIsReplacedWholeAndMustBeAPromFile() throws {
        #expect(throws: MetricsTextfile.Failure.self) { try MetricsTextfile(path: "/tmp/metrics.txt") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-metrics-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let textfile = try MetricsTextfile(path: directory.appendingPathComponent("recbot.prom").path)
        let registry = PrometheusCollectorRegistry()
        SessionMetrics(factory: PrometheusMetricsFactory(registry: registry), channel: "c").update(Self.totals(packets: 5, bytes: 9, ice: "new"))
        try textfile.write(registry)
        let text = try String(contentsOfFile: textfile.path, encoding: .utf8)
        #expect(text.hasSuffix("\n") && text.contains(#"recbot_rtp_packets_received_total{channel="c"} 5"#))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["recbot.prom"], "no temporary file left behind")
        // Unwritable: a clear error naming the path.
        let blocked = try MetricsTextfile(path: "/proc/recbot-cannot-write-here.prom")
        #expect(throws: MetricsTextfile.Failure.self) { try blocked.write(registry) }
    }
}

@Suite struct GrafanaDashboardTests {
    /// deploy/grafana/recbot.json is JSON, and every recbot metric its queries name is one recbot exports.
    @Test func everyMetricTheDashboardQueriesIsExported() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/grafana/recbot.json")
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= 10)
        let named = Set(expressions.flatMap { expression in
            expression.matches(of: /recbot_[a-z_]+/).map { String($0.output) }
        })

        let registry = PrometheusCollectorRegistry()
        let metrics = SessionMetrics(factory: PrometheusMetricsFactory(registry: registry), channel: "c")
        metrics.update(SessionMetricsTests.totals(packets: 1, bytes: 1, ice: "connected"))
        metrics.ended(JoinOutcome(cause: .completed, endReason: "done", sessionID: nil))
        let exported = Set(registry.emitToString().split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("# TYPE ") else { return nil }
            return line.split(separator: " ").dropFirst(2).first.map(String.init)
        })
        #expect(!named.isEmpty && named.isSubset(of: exported), "not exported: \(named.subtracting(exported).sorted())")
    }
}
