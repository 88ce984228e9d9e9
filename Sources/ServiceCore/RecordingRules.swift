import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which channels `recbot serve` records when Sora says their session started, and how: the
/// rules file (JSON). The first rule that matches a session decides; a channel no rule
/// matches is never recorded.
///
/// ```json
/// {"rules": [{"name": "meetings", "channel": {"prefix": "meet-"}, "metadata": {"record": true},
///             "options": {"split_duration": 600, "stop_when_idle": 300, "data_channels": ["#chat"]}}]}
/// ```
public struct RecordingRules: Sendable, Equatable {
    public var rules: [RecordingRule]

    public init(rules: [RecordingRule]) { self.rules = rules }

    /// Reads and checks a rules file's text: every rule named once, one way to match its
    /// channel, valid options.
    public init(json: [UInt8]) throws(RecordingRulesError) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let file: RulesFile
        do {
            file = try decoder.decode(RulesFile.self, from: Data(json))
        } catch {
            throw .unreadable(String(describing: error).prefix(300).description)
        }
        try Self.checkKeys(json)
        var names = Set<String>()
        for rule in file.rules {
            guard !rule.name.isEmpty, names.insert(rule.name).inserted else { throw .badRule(rule.name, "the name is empty or used twice") }
            let ways = [rule.channel.exact, rule.channel.prefix, rule.channel.pattern].compactMap { $0 }
            guard ways.count == 1 else { throw .badRule(rule.name, "channel needs exactly one of exact, prefix, pattern") }
            do { try (rule.options ?? JobOptions()).validate() } catch { throw .badRule(rule.name, "options: \(error)") }
        }
        rules = file.rules
    }

    /// The first rule that matches the session, or nil (not recorded).
    public func match(_ session: SoraSessionInfo) -> RecordingRule? {
        rules.first { $0.matches(session) }
    }

    private struct RulesFile: Decodable {
        var rules: [RecordingRule]
    }

    static let ruleKeys: Set<String> = ["name", "channel", "metadata", "options"]
    static let channelKeys: Set<String> = ["exact", "prefix", "pattern"]
    static let optionKeys: Set<String> = [
        "duration", "split_duration", "split_only", "recording_metadata", "data_channels", "simulcast_rid", "stop_when_idle",
        "wait_for_senders", "upload", "webhook_urls", "export", "retention_days",
    ]

    /// A misspelt key would otherwise be ignored, and a rule record other than what its
    /// author meant: every key must be one recbot knows.
    private static func checkKeys(_ json: [UInt8]) throws(RecordingRulesError) {
        guard let file = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any] else { throw .unreadable("not a JSON object") }
        if let unknown = Set(file.keys).subtracting(["rules"]).sorted().first { throw .unreadable("unknown key \(unknown)") }
        for case let rule as [String: Any] in file["rules"] as? [Any] ?? [] {
            let name = rule["name"] as? String ?? "?"
            if let unknown = Set(rule.keys).subtracting(ruleKeys).sorted().first { throw .badRule(name, "unknown key \(unknown)") }
            if let channel = rule["channel"] as? [String: Any], let unknown = Set(channel.keys).subtracting(channelKeys).sorted().first {
                throw .badRule(name, "unknown channel key \(unknown)")
            }
            if let options = rule["options"] as? [String: Any], let unknown = Set(options.keys).subtracting(optionKeys).sorted().first {
                throw .badRule(name, "unknown option \(unknown)")
            }
        }
    }
}

public struct RecordingRule: Codable, Sendable, Equatable {
    public struct ChannelMatch: Codable, Sendable, Equatable {
        public var exact: String?
        public var prefix: String?
        /// A shell-style pattern: `*`, `?`, `[…]` (fnmatch).
        public var pattern: String?

        public init(exact: String? = nil, prefix: String? = nil, pattern: String? = nil) {
            (self.exact, self.prefix, self.pattern) = (exact, prefix, pattern)
        }
    }

    public var name: String
    public var channel: ChannelMatch
    /// Keys the session's `session_metadata` must have, with these values (compared as JSON).
    /// A session webhook without metadata matches no rule that asks for some.
    public var metadata: [String: JSONScalar]?
    public var options: JobOptions?

    public init(name: String, channel: ChannelMatch, metadata: [String: JSONScalar]? = nil, options: JobOptions? = nil) {
        (self.name, self.channel, self.metadata, self.options) = (name, channel, metadata, options)
    }

    public func matches(_ session: SoraSessionInfo) -> Bool {
        guard matchesChannel(session.channelID) else { return false }
        guard let wanted = metadata, !wanted.isEmpty else { return true }
        // JSONDecoder, not JSONSerialization: on Linux the latter's booleans cast to numbers and back.
        guard let text = session.metadata, let object = try? JSONDecoder().decode([String: MetadataValue].self, from: Data(text.utf8)) else { return false }
        return wanted.allSatisfy { key, value in object[key]?.scalar == value }
    }

    func matchesChannel(_ channel: String) -> Bool {
        if let exact = self.channel.exact { return channel == exact }
        if let prefix = self.channel.prefix { return channel.hasPrefix(prefix) }
        if let pattern = self.channel.pattern { return fnmatch(pattern, channel, 0) == 0 }
        return false
    }
}

/// A metadata value: a scalar, or nil for an array, object or null (which no rule matches).
private struct MetadataValue: Decodable {
    let scalar: JSONScalar?
    init(from decoder: any Decoder) throws { scalar = try? JSONScalar(from: decoder) }
}

/// A value a rule compares metadata with: a string, a number or a boolean.
public enum JSONScalar: Codable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }

}

public enum RecordingRulesError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    case badRule(String, String)

    public var description: String {
        switch self {
        case .unreadable(let why): "the rules file is not valid: \(why)"
        case .badRule(let name, let why): "rule \"\(name)\": \(why)"
        }
    }
}
