import Foundation
import WireCoding

/// Where a signaling message came from, and so where its reply goes.
public enum SignalingRoute: Sendable, Equatable {
    case webSocket
    case dataChannel(String)
}

/// A re-offer (or legacy `update`) to answer: the caller builds the SDP answer (that is the
/// transport's business) and hands it back as `SignalingSession.Input.renegotiated`.
public struct Renegotiation: Sendable, Equatable {
    public var sdp: String
    public var legacyUpdate: Bool
    public var route: SignalingRoute

    public init(sdp: String, legacyUpdate: Bool, route: SignalingRoute) {
        (self.sdp, self.legacyUpdate, self.route) = (sdp, legacyUpdate, route)
    }
}

/// A request for the stats report (a `ping` with `stats: true`, or `req-stats` on the `stats`
/// channel): the caller collects the counters and hands them back as `Input.stats`.
public struct StatsRequest: Sendable, Equatable {
    public enum Reply: Sendable, Equatable { case pong, stats }
    public var reply: Reply
    public var route: SignalingRoute

    public init(reply: Reply, route: SignalingRoute) {
        (self.reply, self.route) = (reply, route)
    }
}

/// Something the session wants stored in the catalog, exactly as received.
public enum SignalingRecord: Sendable, Equatable {
    case message(IncomingMessage, label: String?)
    case dataChannelMessage(label: String, sender: String?, isBinary: Bool, data: [UInt8])
    /// WebSocket text that is not a signaling message (kept, truncated, for the record).
    case malformed(String)
}

/// How and why the session ended.
public struct SignalingSessionEnd: Sendable, Equatable {
    public enum Cause: Sendable, Equatable {
        /// Asked for locally: a signal or the duration.
        case requested
        /// Sora ended it (close 1000, or `close` on the signaling data channel).
        case serverClosed
        /// The signaling connection went away without Sora saying so.
        case connectionLost
        /// ICE, DTLS or the socket failed.
        case transportFailed
    }

    public var cause: Cause
    public var reason: String

    public init(cause: Cause, reason: String) {
        self.cause = cause
        self.reason = reason
    }

    public var isFailure: Bool { cause == .connectionLost || cause == .transportFailed }
}

/// What the session refused or could not read, for the end-of-session summary.
public struct SignalingSessionCounters: Sendable, Equatable {
    public var undecodableDataChannelMessages = 0
    public var unknownLabelMessages = 0
    public var malformedMessages = 0
    public var unknownLabels: Set<String> = []
}

/// Sora signaling after the offer, as a recvonly client (sora-protocol.md), without I/O:
/// WebSocket and data-channel messages, closes and stop requests go in; messages to send,
/// renegotiations and stats to prepare, events to store and the end come out. The WebSocket,
/// the data channels and the catalog belong to the caller.
/// A line for the caller's log, from the session (which has no logger).
public struct SignalingLog: Sendable, Equatable {
    public enum Level: Sendable, Equatable { case info, warning }
    public var level: Level
    public var message: String
    public var metadata: [String: String]

    public init(level: Level, message: String, metadata: [String: String] = [:]) {
        (self.level, self.message, self.metadata) = (level, message, metadata)
    }
}

public struct SignalingSession {
    public enum Input: Sendable {
        case webSocketMessage(String)
        /// The WebSocket closed (after its last message); the close code, if any.
        case webSocketClosed(code: Int?)
        /// `receivedAt`: when it was read (Unix milliseconds), for what is stored of it; the
        /// session itself does not read it.
        case dataChannelMessage(label: String, isBinary: Bool, data: [UInt8], receivedAt: Int64? = nil)
        /// The `signaling` data channel closed, or the whole association failed.
        case signalingChannelLost(String)
        /// A local ICE candidate to trickle to Sora.
        case localCandidate(String)
        case stop(reason: String)
        case transportFailed(String)
        /// The answer the caller built for a renegotiation; nil when it could not build one.
        case renegotiated(Renegotiation, answerSDP: String?)
        /// Counters for a stats request. `timestamp` is Unix milliseconds (Sora's report wants the wall clock).
        case stats(StatsRequest, packetsReceived: Int, timestamp: Int64)
        /// The caller answered the offer: the answer and the local candidates go to Sora.
        case answered(sdp: String, candidates: [String])

        /// When the input was read, if the caller knows: the time of what it stores.
        public var receivedAt: Int64? {
            if case .dataChannelMessage(_, _, _, let receivedAt) = self { return receivedAt }
            return nil
        }
    }

    public enum Action: Sendable, Equatable {
        case send(String, SignalingRoute)
        case renegotiate(Renegotiation)
        case collectStats(StatsRequest)
        case addRemoteCandidate(String)
        case store(SignalingRecord)
        case end(SignalingSessionEnd)
        /// Worth a line in the log (the session has no logger of its own).
        case log(SignalingLog)
    }

    /// The most one data-channel message may inflate to.
    public static let maximumDataChannelMessageBytes = 262_144

    public private(set) var counters = SignalingSessionCounters()
    public private(set) var ended: SignalingSessionEnd?
    /// Signaling moved onto the data channels (`switched`).
    public private(set) var switched = false
    public private(set) var webSocketOpen = true
    private var ignoreDisconnectWebsocket: Bool
    private var signalingChannelLost: String?
    private let channelSettings: [String: SoraDataChannelSettings]
    /// Log lines noted while handling the current input, handed out with its actions.
    private var notes: [SignalingLog] = []
    /// When the last input came. The session keeps no timers (pings and liveness are the
    /// connection watch's), so it has no deadline of its own.
    public private(set) var lastInputAt: MonotonicTime?
    public var nextDeadline: MonotonicTime? { nil }
    /// The layer requests to send on `rpc` once signaling has switched (sent once).
    private var layerRequests: [(id: Int, method: String, body: String)]

    public init(offer: OfferMessage, layers: LayerPreference = LayerPreference()) {
        ignoreDisconnectWebsocket = offer.ignoreDisconnectWebsocket ?? false
        channelSettings = Dictionary(offer.dataChannels.map { ($0.label, $0) }, uniquingKeysWith: { first, _ in first })
        layerRequests = channelSettings["rpc"] == nil ? [] : layers.requests(allowed: offer.rpcMethods)
    }

    /// Once ended, messages still arriving are only stored (nothing is answered or acted on).
    public mutating func handle(_ input: Input, now: MonotonicTime) -> [Action] {
        lastInputAt = now
        let actions = actions(for: input)
        defer { notes.removeAll() }
        return notes.map(Action.log) + actions
    }

    private mutating func actions(for input: Input) -> [Action] {
        switch input {
        case .webSocketMessage(let text): return webSocketMessage(text)
        case .webSocketClosed(let code): return webSocketClosed(code: code)
        case .dataChannelMessage(let label, let isBinary, let data, _): return dataChannelMessage(label: label, isBinary: isBinary, data: data)
        case .signalingChannelLost(let why): return channelLost(why)
        case .localCandidate(let candidate):
            return ended == nil && webSocketOpen ? [.send(OutgoingMessage.candidate(candidate), .webSocket)] : []
        case .stop(let reason): return end(.requested, reason)
        case .transportFailed(let detail): return end(.transportFailed, "transport: \(detail)")
        case .renegotiated(let request, let answer):
            guard ended == nil, let answer else { return [] }
            let text = request.legacyUpdate ? OutgoingMessage.update(sdp: answer) : OutgoingMessage.reAnswer(sdp: answer)
            return [.send(text, request.route)]
        case .stats(let request, let packets, let timestamp):
            guard ended == nil else { return [] }
            let report = Self.statsReport(packetsReceived: packets, timestamp: timestamp)
            let text = request.reply == .pong ? OutgoingMessage.pong(stats: report) : OutgoingMessage.stats(reports: report)
            return [.send(text, request.route)]
        case .answered(let sdp, let candidates):
            guard ended == nil else { return [] }
            return [.send(OutgoingMessage.answer(sdp: sdp), .webSocket)] + candidates.map { .send(OutgoingMessage.candidate($0), .webSocket) }
        }
    }

    private mutating func note(_ level: SignalingLog.Level, _ message: String, _ metadata: [String: String] = [:]) {
        notes.append(SignalingLog(level: level, message: message, metadata: metadata))
    }

    /// The goodbye: `disconnect` where Sora still listens (not after its own close).
    public func leave() -> [Action] {
        let reason = ended?.isFailure == true ? "INTERNAL-ERROR" : "NO-ERROR"
        var actions: [Action] = []
        if switched && ended?.cause != .serverClosed && signalingChannelLost == nil {
            actions.append(.send(OutgoingMessage.disconnect(reason: reason), .dataChannel("signaling")))
        }
        if webSocketOpen { actions.append(.send(OutgoingMessage.disconnect(reason: reason), .webSocket)) }
        return actions
    }

    /// The report sent for `ping` with stats and for `req-stats`: built in one place.
    public static func statsReport(packetsReceived: Int, timestamp: Int64) -> [[String: Any]] {
        [["type": "transport", "id": "T01", "timestamp": Double(timestamp), "packetsReceived": packetsReceived]]
    }

    // MARK: - Inputs

    private mutating func end(_ cause: SignalingSessionEnd.Cause, _ reason: String) -> [Action] {
        guard ended == nil else { return [] }
        let end = SignalingSessionEnd(cause: cause, reason: reason)
        ended = end
        return [.end(end)]
    }

    private mutating func webSocketClosed(code: Int?) -> [Action] {
        webSocketOpen = false
        if switched && ignoreDisconnectWebsocket {
            // Data-channel signaling took over and Sora said the WebSocket may go; it only
            // ends the session when the signaling channel is gone too.
            if let lost = signalingChannelLost { return end(.connectionLost, "signaling-closed: data channel \(lost)") }
            note(.info, "WebSocket closed after the switch; signaling continues on data channels", ["code": code.map(String.init) ?? "-"])
            return []
        }
        if code == 1000 { return end(.serverClosed, "server-closed: 1000") }  // Sora ended it (API disconnect, lifetime)
        return end(.connectionLost, "signaling-closed: \(code.map(String.init) ?? "abruptly")")
    }

    private mutating func channelLost(_ why: String) -> [Action] {
        signalingChannelLost = signalingChannelLost ?? why
        // Only fatal once the data channels carry signaling alone: Sora says `close` before
        // it closes them, so losing them without one is an abnormal end.
        guard switched && ignoreDisconnectWebsocket && !webSocketOpen else { return [] }
        return end(.connectionLost, "signaling-closed: data channel \(why)")
    }

    private mutating func webSocketMessage(_ text: String) -> [Action] {
        let message: IncomingMessage
        do { message = try IncomingMessage(parsing: text) } catch {
            counters.malformedMessages += 1
            note(.warning, "malformed signaling message ignored", ["error": "\(error)"])
            return [.store(.malformed(String(text.prefix(65_536))))]
        }
        guard ended == nil else { return Self.isStored(message) ? [.store(.message(message, label: nil))] : [] }
        switch message {
        case .ping(let wantsStats):
            let request = StatsRequest(reply: .pong, route: .webSocket)
            return wantsStats ? [.collectStats(request)] : [.send(OutgoingMessage.pong(stats: nil), .webSocket)]
        case .candidate(let text): return [.addRemoteCandidate(text)]
        case .reOffer(let sdp, _): return [.renegotiate(Renegotiation(sdp: sdp, legacyUpdate: false, route: .webSocket))]
        case .update(let sdp, _): return [.renegotiate(Renegotiation(sdp: sdp, legacyUpdate: true, route: .webSocket))]
        case .switched(let ignore, _):
            switched = true
            if let ignore { ignoreDisconnectWebsocket = ignore }
            note(.info, "switched to data-channel signaling", ["ignore_disconnect_websocket": "\(ignoreDisconnectWebsocket)"])
            return [.store(.message(message, label: nil))] + sendLayerRequests()
        default:
            logLayerEvent(message)
            return [.store(.message(message, label: nil))]
        }
    }

    /// Asks Sora over `rpc` for the configured layers (the connect message asked already;
    /// this holds for senders that join later and overrides Sora's automatic choice).
    private mutating func sendLayerRequests() -> [Action] {
        defer { layerRequests.removeAll() }
        for request in layerRequests { note(.info, "asking for a layer", ["method": request.method, "id": "\(request.id)"]) }
        return layerRequests.map { .send($0.body, .dataChannel("rpc")) }
    }

    /// Simulcast and spotlight changes in the log, beside the catalog's copy.
    private mutating func logLayerEvent(_ message: IncomingMessage) {
        guard case .notify(let type?, let raw) = message, type.hasPrefix("simulcast.") || type.hasPrefix("spotlight.") else { return }
        let object = (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) as? [String: Any]
        var metadata = ["event": type]
        for key in ["sender_connection_id", "connection_id", "current_rid", "previous_rid", "request_rid", "trigger"] {
            if let value = object?[key] as? String { metadata[key] = String(value.prefix(64)) }
        }
        note(.info, "layer event", metadata)
    }

    private mutating func dataChannelMessage(label: String, isBinary: Bool, data raw: [UInt8]) -> [Action] {
        let decoded: SoraDataChannelMessage
        do {
            decoded = try SoraDataChannelMessage(raw: raw, settings: channelSettings[label], maximumSize: Self.maximumDataChannelMessageBytes)
        } catch {
            counters.undecodableDataChannelMessages += 1
            note(.warning, "data-channel message dropped", ["label": label, "error": "\(error)",
                                                            "dropped": "\(counters.undecodableDataChannelMessages)"])
            return []
        }
        let verbatim = SignalingRecord.dataChannelMessage(label: label, sender: decoded.senderConnectionID, isBinary: isBinary, data: decoded.data)
        let role = DataChannelRole(label: label)
        if role.isLoggedVerbatim {
            if role == .rpc, let reply = LayerPreference.describeReply(String(decoding: decoded.data, as: UTF8.self)) {
                note(.info, "rpc reply", ["id": reply.id.map(String.init) ?? "-", "outcome": "\(reply.outcome)"])
            }
            if role == .unknown {
                counters.unknownLabelMessages += 1
                if counters.unknownLabels.count < 64, counters.unknownLabels.insert(label).inserted {
                    note(.warning, "message on a data channel Sora does not define; stored, not interpreted", ["label": label])
                }
            }
            return [.store(verbatim)]
        }
        guard let message = try? IncomingMessage(parsing: String(decoding: decoded.data, as: UTF8.self)) else { return [.store(verbatim)] }
        guard ended == nil else { return [.store(.message(message, label: label))] }
        // Signaling is acted on only on the channel that carries it; elsewhere it is stored.
        switch (role, message) {
        case (.signaling, .reOffer(let sdp, _)):
            return [.renegotiate(Renegotiation(sdp: sdp, legacyUpdate: false, route: .dataChannel(label)))]
        case (.signaling, .other("close", let text)):
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            let reason = "server-closed: \(object?["code"] as? Int ?? 1000) \(object?["reason"] as? String ?? "")"
            return [.store(.message(message, label: label))] + end(.serverClosed, reason)
        case (.stats, .other("req-stats", _)):
            return [.collectStats(StatsRequest(reply: .stats, route: .dataChannel(label)))]
        case (.signaling, .ping(let wantsStats)):
            let request = StatsRequest(reply: .pong, route: .dataChannel(label))
            return wantsStats ? [.collectStats(request)] : [.send(OutgoingMessage.pong(stats: nil), .dataChannel(label))]
        default:
            logLayerEvent(message)
            return [.store(.message(message, label: label))]
        }
    }

    /// After the end, what is still worth keeping: everything but requests to act.
    private static func isStored(_ message: IncomingMessage) -> Bool {
        switch message {
        case .ping, .candidate, .reOffer, .update, .redirect, .offer: false
        default: true
        }
    }
}
