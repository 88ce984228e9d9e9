import Archive
import Foundation
import Testing
import TestSupport

/// Layer control (issue 30): recbot asks Sora for its simulcast layer over the `rpc` channel
/// when the offer allows the method, logs Sora's layer events, and a layer change mid-stream
/// (a new resolution on the same SSRC) continues in the same file with both sizes recorded.
@Suite(.serialized) struct LayerScenarioTests {
    @Test func theLayerIsAskedForAndASwitchContinuesInTheSameFile() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "h264", "--rpc", "--layer-switch-after", "2"])
            defer { scenario.stop() }
            let result = try scenario.join(["--duration", "5s", "--data-channel-signaling", "--ignore-disconnect-websocket", "--simulcast-rid", "r1"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            #expect(result.stderr.contains("asking for a layer") && result.stderr.contains("rpc reply") && result.stderr.contains("simulcast.switched"),
                    "the request, Sora's answer and the switch are in the log")

            let truth = try scenario.truth()
            let requests = try #require(truth["rpc_requests"] as? [[String: Any]])
            #expect(requests.count == 1 && requests.first?["method"] as? String == "2025.2.0/RequestSimulcastRid")
            #expect((requests.first?["params"] as? [String: Any])?["rid"] as? String == "r1")

            let catalog = try scenario.catalog()
            let session = try #require(try catalog.sessions().first)
            #expect(try catalog.events(EventFilter(sessionID: session.id, kind: .notify, eventType: "simulcast.switched")).count == 2)
            let rpc = try catalog.events(EventFilter(sessionID: session.id, kind: .datachannel, label: "rpc"))
            #expect(rpc.contains { if case .json(let text) = $0.payload { text.contains(#""rid": "r1""#) } else { false } }, "Sora's reply is kept")
            let recordings = try catalog.recordings(RecordingFilter(sessionID: session.id))
            #expect(recordings.count == 2 && recordings.allSatisfy { $0.part == 0 }, "one file per sender through the switch")
            #expect(recordings.allSatisfy { $0.videoSizes == "320x240,480x272" }, "\(recordings.map(\.videoSizes))")
            let verify = try scenario.recbot(["verify", "--data-dir", scenario.dataDirectory, session.id])
            #expect(verify.status == 0, "\(verify.stdout.suffix(3_000))")
        }
    }
}
