import Foundation

/// What a recvonly client may put in `connect` (sora-protocol.md §2).
public struct ConnectOptions: Sendable, Equatable {
    public var channelID: String
    public var clientID: String?
    public var bundleID: String?
    /// JSON text (any JSON value), sent as `metadata`.
    public var metadataJSON: String?
    public var signalingNotifyMetadataJSON: String?
    public var multistream: Bool?
    public var spotlight: Bool?
    public var spotlightNumber: Int?
    public var spotlightFocusRID: String?
    public var spotlightUnfocusRID: String?
    public var simulcast: Bool?
    public var simulcastRID: String?
    public var audio = true
    public var video = true
    public var audioCodecType: String?
    public var videoCodecType: String?
    public var dataChannelSignaling: Bool?
    public var ignoreDisconnectWebsocket: Bool?
    /// JSON text of the `data_channels` array (messaging channels to ask for).
    public var dataChannelsJSON: String?
    /// JSON text of the `forwarding_filters` array.
    public var forwardingFiltersJSON: String?
    public var soraClient: String
    public var environment: String

    public init(channelID: String, soraClient: String, environment: String) {
        self.channelID = channelID
        self.soraClient = soraClient
        self.environment = environment
    }
}

public enum SignalingError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidJSON(field: String)
    case malformedMessage(String)
    /// The server closed the WebSocket before an offer with a code that means "no" (4xxx), e.g. 4490.
    case rejected(code: Int, reason: String)
    case closedBeforeOffer(code: Int?, reason: String)
    case connectFailed(url: String, detail: String)
    case timeout(String)
    case invalidURL(String)

    public var description: String {
        switch self {
        case .invalidJSON(let field): "\(field) is not valid JSON"
        case .malformedMessage(let detail): "malformed signaling message: \(detail)"
        case .rejected(let code, let reason): "Sora rejected the connection (close \(code) \(reason))"
        case .closedBeforeOffer(let code, let reason): "signaling closed before the offer (close \(code.map(String.init) ?? "-") \(reason))"
        case .connectFailed(let url, let detail): "cannot reach \(url): \(detail)"
        case .timeout(let what): "timed out \(what)"
        case .invalidURL(let url): "invalid signaling URL \(url) (ws:// or wss:// expected)"
        }
    }
}

extension ConnectOptions {
    /// The `connect` message text. `redirect` is set when re-sending after a redirect.
    public func connectMessage(redirect: Bool = false) throws(SignalingError) -> String {
        var object: [String: Any] = [
            "type": "connect", "role": "recvonly", "channel_id": channelID,
            "audio": audioCodecType.map { ["codec_type": $0] as Any } ?? audio,
            "video": videoCodecType.map { ["codec_type": $0] as Any } ?? video,
            "sora_client": soraClient, "environment": environment,
        ]
        if !audio { object["audio"] = false }
        if !video { object["video"] = false }
        func put(_ key: String, _ value: Any?) { if let value { object[key] = value } }
        put("client_id", clientID)
        put("bundle_id", bundleID)
        put("multistream", multistream)
        put("spotlight", spotlight)
        put("spotlight_number", spotlightNumber)
        put("spotlight_focus_rid", spotlightFocusRID)
        put("spotlight_unfocus_rid", spotlightUnfocusRID)
        put("simulcast", simulcast)
        put("simulcast_rid", simulcastRID)
        put("data_channel_signaling", dataChannelSignaling)
        put("ignore_disconnect_websocket", ignoreDisconnectWebsocket)
        if redirect { object["redirect"] = true }
        for (key, text) in [("metadata", metadataJSON), ("signaling_notify_metadata", signalingNotifyMetadataJSON),
                            ("data_channels", dataChannelsJSON), ("forwarding_filters", forwardingFiltersJSON)] {
            guard let text else { continue }
            guard let value = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
                throw .invalidJSON(field: key)
            }
            object[key] = value
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            throw .malformedMessage("connect")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
