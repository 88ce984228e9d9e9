import Foundation

/// A webhook Sora POSTs to `recbot serve`, as far as the service acts on it: session webhooks
/// (`session.created`, `session.destroyed`) and event webhooks (`connection.created`,
/// `connection.destroyed`). The field names are those of Sora's server SDKs
/// (sora-server-sdk-ts/-go: `channel_id`, `session_id`, `connection_id`, `session_metadata`);
/// Sora routes on the body's `type`, and so does recbot. Every other type is `.ignored`:
/// Sora adds types over time, and a receiver that refused them would make Sora retry.
public enum SoraWebhookEvent: Sendable, Equatable {
    case sessionCreated(SoraSessionInfo)
    case sessionDestroyed(SoraSessionInfo)
    case connectionCreated(SoraConnectionInfo)
    case connectionDestroyed(SoraConnectionInfo)
    case ignored(type: String)

    /// The largest body read: Sora's `session.destroyed` lists every connection of the session,
    /// so a big meeting's is tens of kilobytes; a megabyte is far past any real one.
    public static let maximumBodyBytes = 1 << 20

    /// Parses a body; a body that is not a JSON object with a string `type`, or whose known
    /// type lacks `channel_id` or `session_id`, is refused with the reason.
    public init(body: [UInt8]) throws(SoraWebhookError) {
        guard body.count <= Self.maximumBodyBytes else { throw .tooLarge(body.count) }
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { throw SoraWebhookError.notAnObject }
            object = parsed
        } catch let error as SoraWebhookError {
            throw error
        } catch {
            throw .notJSON
        }
        guard let type = object["type"] as? String, !type.isEmpty, type.utf8.count <= 128 else { throw .missing("type") }
        switch type {
        case "session.created": self = .sessionCreated(try SoraSessionInfo(object))
        case "session.destroyed": self = .sessionDestroyed(try SoraSessionInfo(object))
        case "connection.created": self = .connectionCreated(try SoraConnectionInfo(object))
        case "connection.destroyed": self = .connectionDestroyed(try SoraConnectionInfo(object))
        default: self = .ignored(type: type)
        }
    }
}

/// What a session webhook says of its session.
public struct SoraSessionInfo: Sendable, Equatable {
    public var channelID: String
    public var sessionID: String
    /// `session_metadata`, as JSON text, when Sora sent one (after an earlier webhook's answer set it).
    public var metadata: String?

    init(_ object: [String: Any]) throws(SoraWebhookError) {
        channelID = try SoraWebhookError.identifier(object, "channel_id")
        sessionID = try SoraWebhookError.identifier(object, "session_id")
        metadata = JSONText.render(object["session_metadata"])
    }

    public init(channelID: String, sessionID: String, metadata: String? = nil) {
        (self.channelID, self.sessionID, self.metadata) = (channelID, sessionID, metadata)
    }
}

/// What an event webhook says of a connection.
public struct SoraConnectionInfo: Sendable, Equatable {
    public var channelID: String
    public var sessionID: String
    public var connectionID: String
    public var role: String?

    init(_ object: [String: Any]) throws(SoraWebhookError) {
        channelID = try SoraWebhookError.identifier(object, "channel_id")
        sessionID = try SoraWebhookError.identifier(object, "session_id")
        connectionID = try SoraWebhookError.identifier(object, "connection_id")
        role = object["role"] as? String
    }
}

/// Why a webhook body was refused (answered 400).
public enum SoraWebhookError: Error, Equatable, CustomStringConvertible {
    case tooLarge(Int)
    case notJSON
    case notAnObject
    case missing(String)
    case invalid(String)

    /// Sora's ids are short printable strings: a channel id is at most 255 bytes.
    static func identifier(_ object: [String: Any], _ key: String) throws(SoraWebhookError) -> String {
        guard let value = object[key] as? String, !value.isEmpty else { throw .missing(key) }
        guard value.utf8.count <= 255, value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { throw .invalid(key) }
        return value
    }

    public var description: String {
        switch self {
        case .tooLarge(let bytes): "body of \(bytes) bytes is over \(SoraWebhookEvent.maximumBodyBytes)"
        case .notJSON: "body is not JSON"
        case .notAnObject: "body is not a JSON object"
        case .missing(let key): "\(key) is missing or not a string"
        case .invalid(let key): "\(key) is too long or has control characters"
        }
    }
}

/// JSON values the service passes on as text (metadata).
enum JSONText {
    static func render(_ value: Any?) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        guard JSONSerialization.isValidJSONObject([value]),
              let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
