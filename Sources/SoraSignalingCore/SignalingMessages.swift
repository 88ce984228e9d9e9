import Foundation

/// An ICE server from the offer's `config.iceServers` (or recbot's `--ice-servers`, same shape).
/// `description` never shows the credential.
public struct ICEServer: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var urls: [String]
    public var username: String?
    public var credential: String?

    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }

    public var description: String { urls.joined(separator: " ") + (username.map { " (user \($0))" } ?? "") }
    public var debugDescription: String { description }

    /// The RTCIceServer list shape: `[{"urls": "…" or ["…"], "username": "…", "credential": "…"}]`,
    /// at most 16 servers of 16 URLs each. Entries that are not objects are skipped.
    public static func list(from value: Any?) -> [ICEServer] {
        guard let list = value as? [[String: Any]] else { return [] }
        return list.prefix(16).map { entry in
            let urls = (entry["urls"] as? [String]) ?? ((entry["urls"] as? String).map { [$0] } ?? [])
            return ICEServer(urls: Array(urls.prefix(16)), username: entry["username"] as? String, credential: entry["credential"] as? String)
        }
    }

    /// Parses a JSON array of ICE servers (the `--ice-servers` override).
    public static func list(json text: String) throws(SignalingError) -> [ICEServer] {
        guard text.utf8.count <= 64 << 10,
              let value = try? JSONSerialization.jsonObject(with: Data(text.utf8)), value is [[String: Any]] else {
            throw .malformedMessage("ICE servers must be a JSON array of {urls, username, credential} objects")
        }
        return list(from: value)
    }
}

/// The fields of `offer` a recvonly client uses (sora-protocol.md §3.1).
public struct OfferMessage: Sendable, Equatable {
    public var sdp: String
    public var connectionID: String?
    public var clientID: String?
    public var bundleID: String?
    public var sessionID: String?
    public var channelID: String?
    public var iceServers: [ICEServer]
    /// `config.iceTransportPolicy`: "relay" asks for relayed candidates only.
    public var iceTransportPolicy: String?
    public var dataChannelSignaling: Bool?
    public var ignoreDisconnectWebsocket: Bool?
    /// Every data channel Sora opens, with its compress/header settings.
    public var dataChannels: [SoraDataChannelSettings]
    public var raw: String
    /// `rpc_methods`: the JSON-RPC methods the `rpc` channel accepts (at most 64 names kept).
    public var rpcMethods: [String] = []
}

/// A message from Sora, classified. `raw` is the text exactly as received.
public enum IncomingMessage: Sendable, Equatable {
    case offer(OfferMessage)
    case reOffer(sdp: String, raw: String)
    /// Legacy re-offer (servers before 2022.1.0); answer with type `update`.
    case update(sdp: String, raw: String)
    case ping(wantsStats: Bool)
    case notify(eventType: String?, raw: String)
    case push(raw: String)
    case redirect(location: String)
    case switched(ignoreDisconnectWebsocket: Bool?, raw: String)
    /// A trickled remote candidate (Sora does not send these today; handled if it does).
    case candidate(String)
    case other(type: String, raw: String)

    /// Parses untrusted text; anything unusable is a typed error, never a crash.
    public init(parsing text: String) throws(SignalingError) {
        guard text.utf8.count <= 4 << 20 else { throw .malformedMessage("message larger than 4 MiB") }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw .malformedMessage("not a JSON object")
        }
        guard let type = object["type"] as? String else { throw .malformedMessage("no \"type\"") }
        func string(_ key: String) -> String? { object[key] as? String }
        switch type {
        case "offer":
            guard let sdp = string("sdp") else { throw .malformedMessage("offer without sdp") }
            let config = object["config"] as? [String: Any]
            self = .offer(OfferMessage(
                sdp: sdp, connectionID: string("connection_id"), clientID: string("client_id"), bundleID: string("bundle_id"),
                sessionID: string("session_id"), channelID: string("channel_id"), iceServers: ICEServer.list(from: config?["iceServers"]),
                iceTransportPolicy: (config?["iceTransportPolicy"] as? String).map { String($0.prefix(16)) },
                dataChannelSignaling: object["data_channel_signaling"] as? Bool,
                ignoreDisconnectWebsocket: object["ignore_disconnect_websocket"] as? Bool,
                dataChannels: SoraDataChannelSettings.parse(object["data_channels"]), raw: text,
                rpcMethods: ((object["rpc_methods"] as? [Any]) ?? []).prefix(64).compactMap { ($0 as? String).map { String($0.prefix(128)) } }))
        case "re-offer":
            guard let sdp = string("sdp") else { throw .malformedMessage("re-offer without sdp") }
            self = .reOffer(sdp: sdp, raw: text)
        case "update":
            guard let sdp = string("sdp") else { throw .malformedMessage("update without sdp") }
            self = .update(sdp: sdp, raw: text)
        case "ping":
            self = .ping(wantsStats: object["stats"] as? Bool ?? false)
        case "notify":
            self = .notify(eventType: string("event_type"), raw: text)
        case "push":
            self = .push(raw: text)
        case "redirect":
            guard let location = string("location") else { throw .malformedMessage("redirect without location") }
            self = .redirect(location: location)
        case "candidate":
            guard let candidate = string("candidate") ?? (object["candidate"] as? [String: Any])?["candidate"] as? String else {
                throw .malformedMessage("candidate without candidate")
            }
            self = .candidate(candidate)
        case "switched":
            self = .switched(ignoreDisconnectWebsocket: object["ignore_disconnect_websocket"] as? Bool, raw: text)
        default:
            self = .other(type: type, raw: text)
        }
    }
}

/// Messages recbot sends.
public enum OutgoingMessage {
    public static func answer(sdp: String) -> String { encode(["type": "answer", "sdp": sdp]) }
    public static func reAnswer(sdp: String) -> String { encode(["type": "re-answer", "sdp": sdp]) }
    public static func update(sdp: String) -> String { encode(["type": "update", "sdp": sdp]) }
    public static func candidate(_ candidate: String) -> String { encode(["type": "candidate", "candidate": candidate]) }
    public static func disconnect(reason: String) -> String { encode(["type": "disconnect", "reason": reason]) }
    /// Reply to `req-stats` on the `stats` channel.
    public static func stats(reports: [[String: Any]]) -> String { encode(["type": "stats", "reports": reports]) }

    public static func pong(stats: [[String: Any]]?) -> String {
        var object: [String: Any] = ["type": "pong"]
        if let stats { object["stats"] = stats }
        return encode(object)
    }

    static func encode(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
