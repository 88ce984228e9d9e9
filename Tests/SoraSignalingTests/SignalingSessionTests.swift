import Foundation
import SoraSignalingCore
import Testing
import WireCoding

/// The sans-IO signaling session, driven message by message: no sockets, no Python.
@Suite struct SignalingSessionTests {
    static func offer(_ extra: String = "") throws -> OfferMessage {
        let channels = extra.isEmpty ? ##","data_channels":[{"label":"signaling"},{"label":"stats"},{"label":"#chat"}]"## : extra
        let text = #"{"type":"offer","sdp":"v=0","connection_id":"BOT""# + channels + "}"
        guard case .offer(let offer) = try IncomingMessage(parsing: text) else { throw CancellationError() }
        return offer
    }

    static func session(_ extra: String = "") throws -> SignalingSession {
        SignalingSession(offer: try offer(extra))
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func sent(_ actions: [SignalingSession.Action]) -> [(type: String, route: SignalingRoute)] {
        actions.compactMap { action in
            guard case .send(let text, let route) = action,
                  let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let type = object["type"] as? String else { return nil }
            return (type, route)
        }
    }

    @Test func notifyAndPushAreStoredAndPingIsAnswered() throws {
        var session = try Self.session()
        let notify = session.handle(.webSocketMessage(#"{"type":"notify","event_type":"connection.created","connection_id":"A"}"#))
        guard case .store(.message(.notify(let type, _), nil)) = notify.first else { Issue.record("\(notify)"); return }
        #expect(type == "connection.created")
        #expect(session.handle(.webSocketMessage(#"{"type":"push","data":{}}"#)).count == 1)
        let pong = session.handle(.webSocketMessage(#"{"type":"ping"}"#))
        #expect(Self.sent(pong).map(\.type) == ["pong"])
        #expect(session.ended == nil)
    }

    @Test func statsAreCollectedThenReportedOnceForPingAndReqStats() throws {
        var session = try Self.session()
        let ping = session.handle(.webSocketMessage(#"{"type":"ping","stats":true}"#))
        guard case .collectStats(let request) = ping.first else { Issue.record("\(ping)"); return }
        #expect(request == StatsRequest(reply: .pong, route: .webSocket))
        let pong = session.handle(.stats(request, packetsReceived: 42, timestamp: 1_000))
        guard case .send(let text, .webSocket) = pong.first else { Issue.record("\(pong)"); return }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let report = try #require((object["stats"] as? [[String: Any]])?.first)
        #expect(report["packetsReceived"] as? Int == 42 && report["type"] as? String == "transport")

        let reqStats = session.handle(.dataChannelMessage(label: "stats", isBinary: false, data: Self.bytes(#"{"type":"req-stats"}"#)))
        guard case .collectStats(let statsRequest) = reqStats.first else { Issue.record("\(reqStats)"); return }
        #expect(statsRequest == StatsRequest(reply: .stats, route: .dataChannel("stats")))
        #expect(Self.sent(session.handle(.stats(statsRequest, packetsReceived: 1, timestamp: 2))).map(\.type) == ["stats"])
    }

    @Test func aReOfferIsAnsweredWhereItCameFrom() throws {
        var session = try Self.session()
        let overWebSocket = session.handle(.webSocketMessage(#"{"type":"re-offer","sdp":"v=0"}"#))
        let request = Renegotiation(sdp: "v=0", legacyUpdate: false, route: .webSocket)
        #expect(overWebSocket == [.renegotiate(request)])
        #expect(Self.sent(session.handle(.renegotiated(request, answerSDP: "answer"))).map(\.type) == ["re-answer"])
        #expect(session.handle(.renegotiated(request, answerSDP: nil)).isEmpty)  // cannot answer: nothing sent

        let legacy = session.handle(.webSocketMessage(#"{"type":"update","sdp":"v=1"}"#))
        guard case .renegotiate(let update) = legacy.first else { Issue.record("\(legacy)"); return }
        #expect(update.legacyUpdate)
        #expect(Self.sent(session.handle(.renegotiated(update, answerSDP: "a"))).map(\.type) == ["update"])

        let onChannel = session.handle(.dataChannelMessage(label: "signaling", isBinary: false, data: Self.bytes(#"{"type":"re-offer","sdp":"v=2"}"#)))
        guard case .renegotiate(let channelRequest) = onChannel.first else { Issue.record("\(onChannel)"); return }
        #expect(channelRequest.route == .dataChannel("signaling"))
    }

    @Test func signalingOnTheWrongChannelIsStoredNotObeyed() throws {
        var session = try Self.session()
        for label in ["#chat", "notify", "stats"] {
            let actions = session.handle(.dataChannelMessage(label: label, isBinary: false, data: Self.bytes(#"{"type":"re-offer","sdp":"x"}"#)))
            #expect(actions.count == 1)
            guard case .store = actions.first else { Issue.record("\(label): \(actions)"); continue }
        }
        let unknown = session.handle(.dataChannelMessage(label: "bogus", isBinary: true, data: [1, 2, 3]))
        #expect(unknown == [.store(.dataChannelMessage(label: "bogus", sender: nil, isBinary: true, data: [1, 2, 3]))])
        #expect(session.counters.unknownLabelMessages == 1 && session.counters.unknownLabels == ["bogus"])
    }

    @Test func closeCodesDecideTheEnd() throws {
        var server = try Self.session()
        #expect(server.handle(.webSocketClosed(code: 1000)) == [.end(SignalingSessionEnd(cause: .serverClosed, reason: "server-closed: 1000"))])
        #expect(server.leave().isEmpty)  // the WebSocket is gone and nothing else was used
        var abrupt = try Self.session()
        #expect(abrupt.handle(.webSocketClosed(code: nil)) == [.end(SignalingSessionEnd(cause: .connectionLost, reason: "signaling-closed: abruptly"))])
        #expect(abrupt.ended?.isFailure == true)
        var stopped = try Self.session()
        #expect(stopped.handle(.stop(reason: "duration-elapsed")) == [.end(SignalingSessionEnd(cause: .requested, reason: "duration-elapsed"))])
        #expect(stopped.handle(.transportFailed("x")).isEmpty)  // the first end wins
        #expect(Self.sent(stopped.leave()).map(\.type) == ["disconnect"])
    }

    @Test func afterTheSwitchTheWebSocketMayGo() throws {
        var session = try Self.session()
        _ = session.handle(.webSocketMessage(#"{"type":"switched","ignore_disconnect_websocket":true}"#))
        #expect(session.switched)
        #expect(session.handle(.webSocketClosed(code: 1000)).isEmpty)  // signaling goes on over data channels
        let close = session.handle(.dataChannelMessage(label: "signaling", isBinary: false,
                                                       data: Self.bytes(#"{"type":"close","code":1000,"reason":"API"}"#)))
        #expect(close.last == .end(SignalingSessionEnd(cause: .serverClosed, reason: "server-closed: 1000 API")))
        #expect(session.leave().isEmpty)  // after Sora's own close nobody listens
    }

    @Test func losingTheSignalingChannelEndsOnlyWhenNothingElseCarriesSignaling() throws {
        var beforeSwitch = try Self.session()
        #expect(beforeSwitch.handle(.signalingChannelLost("closed")).isEmpty)
        // Lost first, WebSocket closed second (either order ends the session once both are gone).
        var session = try Self.session()
        _ = session.handle(.webSocketMessage(#"{"type":"switched","ignore_disconnect_websocket":true}"#))
        #expect(session.handle(.signalingChannelLost("closed")).isEmpty)
        #expect(session.handle(.webSocketClosed(code: 1000)) == [.end(SignalingSessionEnd(cause: .connectionLost, reason: "signaling-closed: data channel closed"))])
        var other = try Self.session()
        _ = other.handle(.webSocketMessage(#"{"type":"switched","ignore_disconnect_websocket":true}"#))
        _ = other.handle(.webSocketClosed(code: 1000))
        #expect(other.handle(.signalingChannelLost("association failed")).first == .end(SignalingSessionEnd(cause: .connectionLost, reason: "signaling-closed: data channel association failed")))
        #expect(other.leave().isEmpty)
    }

    @Test func afterTheEndMessagesAreStoredButNotActedOn() throws {
        var session = try Self.session()
        _ = session.handle(.stop(reason: "signal: SIGTERM"))
        #expect(session.handle(.webSocketMessage(#"{"type":"ping"}"#)).isEmpty)
        #expect(session.handle(.webSocketMessage(#"{"type":"re-offer","sdp":"v=0"}"#)).isEmpty)
        #expect(session.handle(.localCandidate("candidate:1 1 udp 1 127.0.0.1 9 typ host")).isEmpty)
        #expect(session.handle(.webSocketMessage(#"{"type":"notify","event_type":"x"}"#)).count == 1)
        #expect(session.handle(.dataChannelMessage(label: "#chat", isBinary: false, data: Self.bytes("hi"))).count == 1)
    }

    @Test func hostileInputIsCountedNeverFatal() throws {
        var session = try Self.session()
        let malformed = session.handle(.webSocketMessage("{not json"))
        #expect(malformed == [.store(.malformed("{not json"))] && session.counters.malformedMessages == 1)
        // A compressed channel's payload that does not inflate is dropped and counted.
        var compressed = try Self.session(##","data_channels":[{"label":"#z","compress":true}]"##)
        #expect(compressed.handle(.dataChannelMessage(label: "#z", isBinary: true, data: [0xFF, 0x00, 0x13])).isEmpty)
        #expect(compressed.counters.undecodableDataChannelMessages == 1)
        for label in (0..<200).map({ "x\($0)" }) { _ = session.handle(.dataChannelMessage(label: label, isBinary: false, data: [])) }
        #expect(session.counters.unknownLabelMessages == 200 && session.counters.unknownLabels.count == 64)  // the set stays bounded
        #expect(session.ended == nil)
    }
}

extension SignalingSession {
    /// The actions other than log lines, at a fixed time: most of these tests are about neither.
    mutating func handle(_ input: Input) -> [Action] {
        handle(input, now: .milliseconds(0)).filter { action in
            if case .log = action { return false }
            return true
        }
    }
}

/// The session joins the cores' dialect: time comes with every input, the answer goes out as
/// an action like every other message, and what is worth logging comes back as actions too.
@Suite struct SignalingSessionDialectTests {
    @Test func theAnswerAndCandidatesGoOutAsActions() throws {
        var session = try SignalingSessionTests.session()
        let actions = session.handle(.answered(sdp: "v=0", candidates: ["candidate:1 1 udp 1 10.0.0.1 9 typ host"]), now: .milliseconds(5))
        #expect(SignalingSessionTests.sent(actions).map(\.type) == ["answer", "candidate"])
        #expect(SignalingSessionTests.sent(actions).allSatisfy { $0.route == .webSocket })
        #expect(session.lastInputAt == .milliseconds(5) && session.nextDeadline == nil)
    }

    @Test func whatIsWorthALogLineComesBackAsAnAction() throws {
        var session = try SignalingSessionTests.session()
        let actions = session.handle(.webSocketMessage("{not json"), now: .milliseconds(1))
        guard case .log(let line)? = actions.first else {
            Issue.record("no log line first: \(actions)")
            return
        }
        #expect(line.level == .warning && line.message == "malformed signaling message ignored" && line.metadata["error"] != nil)
        #expect(actions.dropFirst().elementsEqual([.store(.malformed("{not json"))]))
        #expect(session.handle(.webSocketMessage(#"{"type":"push","data":{}}"#), now: .milliseconds(2)).allSatisfy { action in
            if case .log = action { return false }
            return true
        }, "a line is noted once, with its input's actions")
    }
}
