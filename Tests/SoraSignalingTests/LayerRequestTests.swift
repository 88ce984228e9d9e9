import Foundation
import SoraSignalingCore
import Testing

/// Layer requests over Sora's `rpc` channel: sent once, after the switch, only for methods the
/// offer lists and only when the offer opens `rpc`.
@Suite struct LayerRequestTests {
    func session(channels: String, methods: String, layers: LayerPreference) throws -> SignalingSession {
        let text = #"{"type":"offer","sdp":"v=0","connection_id":"BOT","data_channels":"# + channels + #","rpc_methods":"# + methods + "}"
        guard case .offer(let offer) = try IncomingMessage(parsing: text) else { throw CancellationError() }
        return SignalingSession(offer: offer, layers: layers)
    }

    func sentOnRPC(_ actions: [SignalingSession.Action]) -> [[String: Any]] {
        actions.compactMap { action in
            guard case .send(let text, .dataChannel("rpc")) = action else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        }
    }

    let switched = SignalingSession.Input.webSocketMessage(#"{"type":"switched","ignore_disconnect_websocket":true}"#)

    @Test func theAllowedRequestsGoOutOnceAfterTheSwitch() throws {
        var session = try self.session(channels: #"[{"label":"signaling"},{"label":"rpc"}]"#,
                                       methods: #"["2025.2.0/RequestSimulcastRid","2025.2.0/RequestSpotlightRid"]"#,
                                       layers: LayerPreference(simulcastRID: "r2", spotlightFocusRID: "r1"))
        let requests = sentOnRPC(session.handle(switched))
        #expect(requests.map { $0["method"] as? String } == ["2025.2.0/RequestSimulcastRid", "2025.2.0/RequestSpotlightRid"])
        #expect(requests.map { $0["id"] as? Int } == [1, 2] && requests.allSatisfy { $0["jsonrpc"] as? String == "2.0" })
        #expect((requests.first?["params"] as? [String: Any])?["rid"] as? String == "r2")
        #expect(sentOnRPC(session.handle(switched)).isEmpty, "once")
    }

    @Test func nothingIsAskedThatSoraDoesNotAllow() throws {
        var noMethod = try session(channels: #"[{"label":"rpc"}]"#, methods: #"["2025.2.0/PutSignalingNotifyMetadata"]"#,
                                   layers: LayerPreference(simulcastRID: "r1"))
        #expect(sentOnRPC(noMethod.handle(switched)).isEmpty)
        var noChannel = try session(channels: #"[{"label":"signaling"}]"#, methods: #"["2025.2.0/RequestSimulcastRid"]"#,
                                    layers: LayerPreference(simulcastRID: "r1"))
        #expect(sentOnRPC(noChannel.handle(switched)).isEmpty)
        var noPreference = try session(channels: #"[{"label":"rpc"}]"#, methods: #"["2025.2.0/RequestSimulcastRid"]"#, layers: LayerPreference())
        #expect(sentOnRPC(noPreference.handle(switched)).isEmpty)
    }

    @Test func repliesAreDescribedAndHostileOnesIgnored() {
        #expect(LayerPreference.describeReply(#"{"jsonrpc":"2.0","id":1,"result":{"rid":"r1"}}"#)?.outcome == "ok rid r1")
        #expect(LayerPreference.describeReply(#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params"}}"#)?.outcome
                == "error -32602: Invalid params")
        #expect(LayerPreference.describeReply("not json") == nil && LayerPreference.describeReply(#"{"id":1}"#) == nil)
    }
}
