import Foundation
import Logging

/// Sets up swift-log for the process: human-readable lines on a terminal, `key=value`
/// lines (one per event, fit for journald and cron mail) otherwise. Quiet by default:
/// the level comes from RECBOT_LOG_LEVEL (trace, debug, info, notice, warning, error).
public enum RecBotLogging {
    public static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let level = environment[SettingName.logLevel.variable].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .warning
        let structured = isatty(STDERR_FILENO) == 0
        LoggingSystem.bootstrap { label in
            var handler = StructuredLogHandler(label: label, structured: structured)
            handler.logLevel = level
            return handler
        }
    }
}

/// Writes one line per log event to standard error.
struct StructuredLogHandler: LogHandler {
    let label: String
    let structured: Bool
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let fields = merged.sorted { $0.key < $1.key }
        let line: String
        if structured {
            var parts = ["level=\(event.level)", "logger=\(label)", "msg=\(Self.quote(event.message.description))"]
            parts += fields.map { "\($0.key)=\(Self.quote($0.value.description))" }
            line = parts.joined(separator: " ")
        } else {
            let details = fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            line = TerminalText.escaped("recbot: \(event.level): \(event.message)" + (details.isEmpty ? "" : " (\(details))"))
        }
        StandardStreams.err(line + "\n")
    }

    /// logfmt quoting: bare when safe, otherwise a JSON-escaped quoted string.
    static func quote(_ value: String) -> String {
        let safe = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "=" && $0 != "\\" }
        if safe { return value }
        var out = ""
        JSONValue.writeString(value, to: &out)
        return out
    }
}
