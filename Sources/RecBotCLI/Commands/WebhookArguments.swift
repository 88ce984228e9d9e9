import ArgumentParser
import Foundation
import Webhooks

/// Where webhooks go and how they are sent (join), and how queued ones are sent (repair,
/// upload, `webhooks retry`). The secret and extra headers come from the environment or the
/// config file only: on the command line `ps` would show them.
struct WebhookArguments: ParsableArguments {
    @Option(name: .customLong("webhook-url"), help: ArgumentHelp(
        "POST Sora-compatible webhooks here (repeatable; also RECBOT_WEBHOOK_URL, space or comma separated).", valueName: "url"))
    var urls: [String] = []
    @Option(name: .customLong("webhook-ca-file"), help: ArgumentHelp("PEM certificates to verify an https receiver with.", valueName: "path"))
    var caFile: String?
    @Option(name: .customLong("webhook-retry-window"), help: ArgumentHelp(
        "How long an undelivered webhook is retried before it is given up on (default 24h).", valueName: "duration"))
    var retryWindow: DurationArgument?

    static let retryWindowRange: ClosedRange<Int64> = 1_000...(366 * 86_400_000)
    /// How long `webhooks retry --seconds` and `repair --webhook-seconds` may keep sending.
    static let sendingSecondsRange = 0...86_400

    /// The settings for recording: nil without a URL.
    func recordingSettings(_ settings: Settings) throws -> WebhookSettings? {
        let urls = !self.urls.isEmpty ? self.urls : settings.list(.webhookURLs)
        guard !urls.isEmpty else { return nil }
        for url in urls {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
                throw ValidationError("--webhook-url \(url) is not an http:// or https:// URL")
            }
        }
        var webhooks = try deliverySettings(settings)
        webhooks.urls = urls
        return webhooks
    }

    /// The settings for sending what is queued (each row names its own URL).
    func deliverySettings(_ settings: Settings) throws -> WebhookSettings {
        var webhooks = WebhookSettings(urls: [], secret: settings[.webhookSecret].map { Array($0.utf8) },
                                       headers: try Self.headers(settings[.webhookHeaders]), caFile: caFile ?? settings[.webhookCAFile])
        if let caFile = webhooks.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--webhook-ca-file \(caFile) cannot be read")
        }
        if let window = try settings.duration(retryWindow, .webhookRetryWindow, range: Self.retryWindowRange) {
            webhooks.retryWindowMilliseconds = window
        }
        return webhooks
    }

    /// `RECBOT_WEBHOOK_HEADERS`: a JSON object of header names to values (e.g. an Authorization bearer token).
    static func headers(_ text: String?) throws -> [(name: String, value: String)] {
        guard let text, !text.isEmpty else { return [] }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else {
            throw ValidationError("\(SettingName.webhookHeaders.variable) must be a JSON object of header names to string values")
        }
        for (name, value) in object where name.isEmpty || name.contains(where: { !$0.isLetter && !$0.isNumber && $0 != "-" }) || value.contains(where: \.isNewline) {
            throw ValidationError("\(SettingName.webhookHeaders.variable): header \(name.debugDescription) is not a valid header")
        }
        return object.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
    }
}
