import Archive
import ArgumentParser
import Foundation
import RecBot
import SoraSignalingCore
import Transport

/// `join`'s flags and `RECBOT_*` settings turned into the session's options, checked: every
/// mistake is a clear error before anything connects.
extension JoinCommand {
    func makeOptions(environment: [String: String]) throws -> JoinOptions {
        let settings = try common.settings(environment: environment)
        guard let channel = channel ?? settings[.channel], !channel.isEmpty else {
            throw ValidationError("--channel (or RECBOT_CHANNEL) is required")
        }
        let urls = !self.urls.isEmpty ? self.urls : settings.list(.urls)
        guard !urls.isEmpty else { throw ValidationError("--url (or RECBOT_URLS) is required") }
        for url in urls where !(url.prefix(5).lowercased() == "ws://" || url.prefix(6).lowercased() == "wss://") {
            throw ValidationError("signaling URL \(url) must start with ws:// or wss://")
        }
        let connect = try connectOptions(channel: channel, settings: settings)
        var options = JoinOptions(urls: urls, connect: connect, dataDirectory: common.dataDirectory, recbotVersion: RecBotCommand.version)
        let catalog = try common.catalogLocation(settings: settings)  // SQLite or PostgreSQL: chosen here, opened by the session
        options.openCatalog = { logger in try catalog.open(logger: logger) }
        options.host = try hostOptions.name(settings: settings)
        if let milliseconds = try settings.duration(duration, .duration, range: 1...DurationArgument.maximumMilliseconds) {
            options.durationMilliseconds = milliseconds
        }
        options.stopWhenIdleMilliseconds = try settings.duration(stopWhenIdle, .stopWhenIdle, range: 1_000...DurationArgument.maximumMilliseconds)
        options.waitForSendersMilliseconds = try settings.duration(waitForSenders, .waitForSenders, range: 1_000...DurationArgument.maximumMilliseconds)
        try applyTimingAndLimits(to: &options, settings: settings)
        func prefixes(_ flags: [String], _ name: SettingName) throws -> [IPPrefix] {
            let texts = !flags.isEmpty ? flags : settings.list(name)
            return try texts.map { text in
                guard let prefix = IPPrefix(text) else { throw ValidationError("\(text) is not an address prefix (e.g. 10.0.0.0/8)") }
                return prefix
            }
        }
        options.hostPolicy = HostAddressPolicy(allow: try prefixes(allowAddresses, .allowAddresses),
                                               deny: try prefixes(denyAddresses, .denyAddresses))
        options.relay = try relayArguments.settings(settings)
        try splitArguments.apply(to: &options, settings: settings)
        options.webhooks = try webhookArguments.recordingSettings(settings)
        return options
    }

    /// What `connect` tells Sora: the channel, ids, metadata, codecs, layers and data channels.
    private func connectOptions(channel: String, settings: Settings) throws -> ConnectOptions {
        var connect = ConnectOptions(channelID: channel, soraClient: "recbot \(RecBotCommand.version)", environment: "[\(Self.architecture)] Linux")
        connect.clientID = clientID ?? settings[.clientID]
        connect.bundleID = bundleID ?? settings[.bundleID]
        connect.metadataJSON = try Self.jsonArgument(metadata ?? settings[.metadata], name: "metadata")
        connect.signalingNotifyMetadataJSON = try Self.jsonArgument(signalingNotifyMetadata, name: "signaling-notify-metadata")
        for (name, value) in [("metadata", metadata), ("signaling-notify-metadata", signalingNotifyMetadata)] {
            guard let value, !value.hasPrefix("@"), let why = InlineSecret.reason(inJSON: value) else { continue }
            Console.note("warning: --\(name) on the command line holds \(why), which `ps` and shell history show to anyone on this machine: "
                         + "use --\(name) @file" + (name == "metadata" ? " or RECBOT_METADATA" : ""))
        }
        connect.forwardingFiltersJSON = try Self.jsonArgument(forwardingFilters, name: "forwarding-filters")
        connect.audio = !noAudio
        connect.video = !noVideo
        connect.videoCodecType = videoCodecType?.uppercased()
        connect.audioCodecType = audioCodecType?.uppercased()
        if let simulcastRID { connect.simulcast = true; connect.simulcastRID = simulcastRID }
        if let spotlightNumber { connect.spotlight = true; connect.spotlightNumber = spotlightNumber }
        if spotlightFocusRID != nil || spotlightUnfocusRID != nil {
            connect.spotlight = true
            connect.spotlightFocusRID = spotlightFocusRID
            connect.spotlightUnfocusRID = spotlightUnfocusRID
        }
        connect.multistream = multistream
        connect.dataChannelSignaling = dataChannelSignaling
        connect.ignoreDisconnectWebsocket = ignoreDisconnectWebsocket
        if !dataChannels.isEmpty {
            var entries: [[String: Any]] = []
            for spec in dataChannels {
                let parts = spec.split(separator: ":", maxSplits: 1).map(String.init)
                guard let label = parts.first, label.hasPrefix("#"), label.count > 1 else {
                    throw ValidationError("--data-channel \(spec): messaging labels start with #")
                }
                var entry: [String: Any] = ["label": label, "direction": "recvonly", "header": [["type": "sender_connection_id"]]]
                if parts.count == 2 {
                    guard parts[1] == "compress" else { throw ValidationError("--data-channel \(spec): the only setting is :compress") }
                    entry["compress"] = true
                }
                entries.append(entry)
            }
            let data = try JSONSerialization.data(withJSONObject: entries, options: [.sortedKeys])
            connect.dataChannelsJSON = String(decoding: data, as: UTF8.self)
        }
        return connect
    }

    /// Timeouts, the recovery window, rejoining and the event limits, each checked against its range.
    private func applyTimingAndLimits(to options: inout JoinOptions, settings: Settings) throws {
        if let timeout = try settings.duration(connectTimeout, .connectTimeout, range: 100...600_000) {
            options.connectTimeoutSeconds = Double(timeout) / 1000
        }
        options.insecure = insecure || settings.isOn(.insecure)
        if let delay = try settings.duration(maxRecoveryDelay, .maxRecoveryDelay, range: 200...10_000) {
            options.recovery.maximumRecoveryDelayNanoseconds = delay * 1_000_000
        }
        if let wait = try settings.duration(shedVideoAfter, .shedVideoAfter, range: 50...10_000) {
            options.overload.shedAboveNanoseconds = wait * 1_000_000
            options.overload.calmBelowNanoseconds = min(options.overload.calmBelowNanoseconds, wait * 1_000_000 / 4)
        }
        options.overload.enabled = !(noVideoShedding || settings.isOn(.noVideoShedding))
        if let timeout = try settings.duration(finalizeTimeout, .finalizeTimeout, range: 1_000...86_400_000) {
            options.finalizeTimeoutSeconds = Double(timeout) / 1000
        }
        options.capturePath = captureRTP
        if let sessionID {
            guard ULID(sessionID) != nil else { throw ValidationError("--session-id \(sessionID.prefix(40)) is not a ULID (26 characters of Crockford base32)") }
            options.sessionID = sessionID
        }
        if let retention {
            guard retention.milliseconds >= 3_600_000 else { throw ValidationError("--retention must be at least an hour") }
            options.retentionMilliseconds = retention.milliseconds
        }
        if continueSession {
            guard options.sessionID != nil else { throw ValidationError("--continue-session needs --session-id: the session to go on with") }
            options.continuation = SessionContinuation(jobFence: jobFence)
        } else if jobFence != nil {
            throw ValidationError("--job-fence only goes with --continue-session")
        }
        if noRejoin && rejoinAttempts != nil { throw ValidationError("--no-rejoin and --rejoin-attempts contradict each other") }
        if let count = rejoinAttempts ?? settings[.rejoinAttempts].flatMap({ Int($0) }) {
            guard count >= 0 else { throw ValidationError("--rejoin-attempts must not be negative") }
            options.rejoin.maximumAttempts = count
        }
        if let delay = try settings.duration(rejoinMaxDelay, .rejoinMaxDelay, range: 1_000...3_600_000) {
            options.rejoin.maximumDelayNanoseconds = delay * 1_000_000
        }
        if noRejoin || settings.isOn(.noRejoin) { options.rejoin.maximumAttempts = 0 }
        options.failOnInterruption = failOnInterruption || settings.isOn(.failOnInterruption)
        if let count = maxEvents ?? settings[.maxEvents].flatMap({ Int($0) }) {
            guard count >= 0 else { throw ValidationError("--max-events must not be negative") }
            options.eventLimits.maximumCount = count
        }
        if let bytes = maxEventBytes ?? settings[.maxEventBytes].flatMap({ Int($0) }) {
            guard bytes >= 0 else { throw ValidationError("--max-event-bytes must not be negative") }
            options.eventLimits.maximumBytes = bytes
        }
    }

    /// JSON text, or `@path` to read it from a file; validated here so a typo is a configuration error.
    static func jsonArgument(_ value: String?, name: String) throws -> String? {
        guard var text = value else { return nil }
        if text.hasPrefix("@") {
            let path = String(text.dropFirst())
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else { throw ValidationError("cannot read --\(name) file \(path)") }
            text = contents
        }
        guard (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil else {
            throw ValidationError("--\(name) is not valid JSON")
        }
        return text
    }

    static var architecture: String {
        #if arch(x86_64)
        "x86_64"
        #elseif arch(arm64)
        "arm64"
        #else
        "unknown"
        #endif
    }
}
