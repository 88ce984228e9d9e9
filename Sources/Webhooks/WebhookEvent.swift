import Archive
import DiskLayout
import Foundation

/// One event, as its JSON body: Sora's envelope (`type`, `id`, `timestamp`, `label`,
/// `node_name`, `version`, the channel, session, client and connection ids) with the event's
/// `data`, and recbot's own facts under `recbot` (receivers ignore keys they do not know).
public struct WebhookEvent: Sendable {
    public let eventID: String
    public let type: String
    /// The recording (recbot session id) it is about.
    public let sessionID: String?
    public let body: String

    /// Sora's own events (as its recorder sends them); the uploader's are `uploaded`.
    public init(type: String, sessionID: String?, envelope: [String: Any], data: [String: Any]?, recbot: [String: Any]?,
                timestampMilliseconds: Int64, nodeName: String, version: String) {
        let id = ULID.generate(now: UInt64(max(0, timestampMilliseconds))).string
        var object = envelope
        object["type"] = type
        object["id"] = id
        object["timestamp"] = rfc3339(milliseconds: timestampMilliseconds)
        object["label"] = "recbot"
        object["node_name"] = nodeName
        object["version"] = version
        if let data { object["data"] = data }
        if let recbot { object["recbot"] = recbot }
        (self.eventID, self.type, self.sessionID, self.body) = (id, type, sessionID, Self.serialize(object))
    }

    /// sora-archive-uploader's events are flat: `id`, `type`, `timestamp` and the file's fields.
    /// `id`: given when the event must keep one identity across runs (an upload run again).
    public init(uploaded type: String, sessionID: String?, fields: [String: Any], timestampMilliseconds: Int64, id given: String? = nil) {
        let id = given ?? ULID.generate(now: UInt64(max(0, timestampMilliseconds))).string
        var object = fields
        object["type"] = type
        object["id"] = id
        object["timestamp"] = rfc3339(milliseconds: timestampMilliseconds)
        (self.eventID, self.type, self.sessionID, self.body) = (id, type, sessionID, Self.serialize(object))
    }

    /// The outbox rows: one per receiver URL.
    public func rows(settings: WebhookSettings, now: Int64) -> [WebhookRecord] {
        let credentials = settings.credentialsReference
        return settings.urls.map { url in
            WebhookRecord(eventID: eventID, sessionID: sessionID, eventType: type, url: url, body: body, createdAt: now,
                          expiresAt: now + settings.retryWindowMilliseconds, credentials: credentials)
        }
    }

    /// Uploader events carry their own type header, Sora's theirs.
    public static func typeHeader(for type: String) -> String {
        type.hasSuffix(".uploaded") ? "sora-archive-uploader-webhook-type" : "sora-event-webhook-type"
    }

    static func serialize(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
