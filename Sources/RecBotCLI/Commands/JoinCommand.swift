import Archive
import ArgumentParser
import Foundation
import Logging
import Outcomes
import RecBot
import RecBotMetrics
import SessionExport
import Webhooks

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a Sora channel as a recvonly client and record every sender.",
        discussion: """
            Every option can also come from an environment variable or a config file of RECBOT_NAME=value
            lines (--config, or RECBOT_CONFIG): \(SettingName.all.filter { $0.flag != nil && $0 != .config }.map(\.helpEntry).joined(separator: ", ")),
            and S3 credentials (see `recbot upload --help`).
            Precedence: flag, then environment, then config file.

            """ + ExitStatus.helpLine([.success, .network, .storage, .protocolError, .rejected, .configuration, .noSenders,
                                 .relayUnavailable, .relayCredentials, .catalogUnavailable, .catalogCredentials,
                                 .uploadFailed, .uploadCredentials]))

    @OptionGroup var common: CommonOptions
    @OptionGroup var hostOptions: HostOptions
    @OptionGroup(title: "Metrics") var metricsArguments: MetricsArguments
    @OptionGroup(title: "TURN relays") var relayArguments: RelayArguments
    @OptionGroup(title: "Split recordings") var splitArguments: SplitArguments
    @OptionGroup(title: "Webhooks") var webhookArguments: WebhookArguments
    @Flag(help: "When the session ends, write its events.jsonl and WebVTT captions into its directory (see `recbot export`).")
    var export = false
    @OptionGroup(title: "Upload when the session ends") var uploadArguments: UploadArguments
    @Option(name: .customLong("upload"), help: ArgumentHelp(
        "When the session ends, upload it to s3://bucket[/prefix] (see `recbot upload`; also RECBOT_UPLOAD_URL).", valueName: "url"))
    var uploadDestination: String?
    @Option(help: "Channel id to record.") var channel: String?
    @Option(name: .customLong("url"), help: "Signaling URL (ws:// or wss://); repeat to race several.") var urls: [String] = []
    @Option(help: ArgumentHelp("Metadata for authentication: JSON text, or @file.", valueName: "json|@file")) var metadata: String?
    @Option(help: ArgumentHelp("Stop after this long (45s, 15m, 2h; a bare number is seconds).", valueName: "duration"))
    var duration: DurationArgument?
    @Option(name: .customLong("stop-when-idle"), help: ArgumentHelp(
        "Stop once no sender has been in the channel for this long (from the join, until the first comes).", valueName: "duration"))
    var stopWhenIdle: DurationArgument?
    @Option(name: .customLong("wait-for-senders"), help: ArgumentHelp(
        "Stop with exit 79 when no sender came this long after the join (a job started before its meeting).", valueName: "duration"))
    var waitForSenders: DurationArgument?
    @Option(name: .customLong("client-id")) var clientID: String?
    @Option(name: .customLong("bundle-id")) var bundleID: String?
    @Option(name: .customLong("signaling-notify-metadata"), help: ArgumentHelp("JSON text or @file.", valueName: "json|@file"))
    var signalingNotifyMetadata: String?
    @Option(name: .customLong("video-codec-type"), help: "Preferred video codec (VP8, VP9, AV1, H264).") var videoCodecType: String?
    @Option(name: .customLong("audio-codec-type"), help: "Preferred audio codec (OPUS).") var audioCodecType: String?
    @Flag(name: .customLong("no-audio"), help: "Do not receive audio.") var noAudio = false
    @Flag(name: .customLong("no-video"), help: "Do not receive video.") var noVideo = false
    @Option(name: .customLong("simulcast-rid"), help: "Simulcast layer to receive (r0, r1, r2).") var simulcastRID: String?
    @Option(name: .customLong("spotlight-number")) var spotlightNumber: Int?
    @Option(name: .customLong("spotlight-focus-rid"), help: "Layer for focused senders (r0, r1, r2, none).") var spotlightFocusRID: String?
    @Option(name: .customLong("spotlight-unfocus-rid"), help: "Layer for unfocused senders (r0, r1, r2, none).") var spotlightUnfocusRID: String?
    @Flag(inversion: .prefixedNo, help: "Ask for multistream (old Sora servers; new ones always are).") var multistream: Bool?
    @Option(name: .customLong("forwarding-filters"), help: ArgumentHelp("JSON array or @file.", valueName: "json|@file"))
    var forwardingFilters: String?
    @Flag(inversion: .prefixedNo, help: "Ask Sora to move signaling onto data channels.") var dataChannelSignaling: Bool?
    @Flag(inversion: .prefixedNo, help: "With data-channel signaling: closing the WebSocket does not end the session.")
    var ignoreDisconnectWebsocket: Bool?
    @Option(name: .customLong("data-channel"), help: ArgumentHelp(
        "Subscribe to a messaging channel, e.g. '#chat' or '#chat:compress' (repeatable); messages go into the catalog.", valueName: "#label[:compress]"))
    var dataChannels: [String] = []
    @Flag(help: "Accept any TLS certificate (self-signed test servers only).") var insecure = false
    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Give up when no offer arrived in this long.", valueName: "duration"))
    var connectTimeout: DurationArgument?
    @Option(name: .customLong("allow-address"), help: ArgumentHelp("Only gather ICE candidates on these prefixes (repeatable).", valueName: "cidr"))
    var allowAddresses: [String] = []
    @Option(name: .customLong("deny-address"), help: ArgumentHelp("Never gather ICE candidates on these prefixes (repeatable).", valueName: "cidr"))
    var denyAddresses: [String] = []
    @Option(name: .customLong("max-recovery-delay"), help: ArgumentHelp(
        "How long a lost packet is asked for again (NACK) before it counts as lost (default 1s; 200ms…10s).", valueName: "duration"))
    var maxRecoveryDelay: DurationArgument?
    @Option(name: .customLong("shed-video-after"), help: ArgumentHelp(
        "Past capacity: pause some senders' video in turn once media waits this long to be handled (default 200ms; 50ms…10s).",
        valueName: "duration"))
    var shedVideoAfter: DurationArgument?
    @Flag(name: .customLong("no-video-shedding"), help: "Never pause video past capacity (media then waits, and is dropped when the backlog is full).")
    var noVideoShedding = false
    @Option(name: .customLong("max-events"), help: ArgumentHelp(
        "Store at most this many events (notify, push, data-channel messages) per session; more are counted, not stored (default 1000000).",
        valueName: "count"))
    var maxEvents: Int?
    @Option(name: .customLong("max-event-bytes"), help: ArgumentHelp(
        "Store at most this many bytes of event payloads per session (default 1073741824, 1 GiB).", valueName: "bytes"))
    var maxEventBytes: Int?
    @Option(name: .customLong("rejoin-attempts"), help: ArgumentHelp(
        "After a lost connection (network, Sora restarting), join again at most this often per outage (default: until --duration ends).",
        valueName: "n"))
    var rejoinAttempts: Int?
    @Option(name: .customLong("rejoin-max-delay"), help: ArgumentHelp(
        "The longest wait between join attempts (the backoff starts within 1s and doubles up to this; default 30s).", valueName: "duration"))
    var rejoinMaxDelay: DurationArgument?
    @Flag(name: .customLong("no-rejoin"), help: "End the session at the first lost connection (exit 69), as before rejoining existed.")
    var noRejoin = false
    @Flag(name: .customLong("fail-on-interruption"), help: "Exit 69 when the connection was lost at all, even if a rejoin recorded the rest.")
    var failOnInterruption = false
    @Option(name: .customLong("finalize-timeout"), help: ArgumentHelp(
        "How long finishing the files may take at the end (default 60s); past it recbot exits 74 and `recbot repair` finalizes the rest.",
        valueName: "duration"))
    var finalizeTimeout: DurationArgument?
    @Option(name: .customLong("capture-rtp"), help: ArgumentHelp(
        "Debugging: write every RTP/RTCP packet as received (after SRTP) to this pcap file, the offers to FILE.offers.jsonl.",
        valueName: "file"))
    var captureRTP: String?
    @Option(name: .customLong("session-id"), help: ArgumentHelp(
        "The new session's id (a ULID; `recbot serve` gives each job's recording the job's id). Default: a fresh one.", valueName: "ulid"))
    var sessionID: String?
    @Option(name: .customLong("retention"), help: ArgumentHelp(
        "Keep the session this long (30d…); then `recbot prune --expired` (or `recbot serve`) removes its files, once verified and uploaded.",
        valueName: "duration"))
    var retention: DurationArgument?
    @Flag(name: .customLong("continue-session"), help: ArgumentHelp(
        "Go on recording the session --session-id names, which a process that died recorded: a new segment of it, parts numbered on, the gap an interruption with cause failover. Refused while that session is open, unless --job-fence is the job's current token."))
    var continueSession = false
    @Option(name: .customLong("job-fence"), help: ArgumentHelp(
        "The fencing token `recbot serve` claimed the session's job under: the catalog refuses the continuation once another worker holds a newer one.",
        valueName: "n", visibility: .hidden))
    var jobFence: Int64?
    @Flag(name: .customLong("exit-with-parent"), help: ArgumentHelp(
        "End the recording (files finished, end reason worker-lost) when the process that started it is gone; `recbot serve` sets it.",
        visibility: .hidden))
    var exitWithParent = false

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let options: JoinOptions
        let metricsOptions: MetricsOptions
        let upload: UploadConfiguration?
        let exportAtEnd: Bool
        do {
            options = try makeOptions(environment: environment)
            let settings = try common.settings(environment: environment)
            metricsOptions = try metricsArguments.options(settings: settings)
            upload = try uploadArguments.configuration(destination: uploadDestination, settings: settings, environment: environment)
            exportAtEnd = export || settings.isOn(.export)
        } catch {
            throw Console.fail(error, cause: .invalidConfiguration)
        }
        let logger = Logger(label: "recbot.join")
        let session = JoinSession(options: options, logger: logger)
        var metrics: MetricsReporter?
        if metricsOptions.isEnabled {
            do {
                metrics = try await MetricsReporter(options: metricsOptions, channel: options.connect.channelID, session: session, logger: logger)
            } catch {
                throw Console.fail("--metrics-listen \(metricsArguments.listen ?? ""): \(error)", cause: .invalidConfiguration)
            }
        }
        let signals = SignalForwarder { name in session.stop(reason: "signal: \(name)") }
        let parentWatch = exitWithParent ? ParentWatch { session.stop(reason: "worker-lost: the recbot serve that started it is gone") } : nil
        let status = LiveStatus()
        status.start(session: session, channel: options.connect.channelID, logger: logger)
        let outcome = await session.run()
        status.stop()
        signals.cancel()
        parentWatch?.cancel()
        await metrics?.finish(session: session, outcome: outcome)
        await metrics?.close()
        if outcome.result != .success {
            StandardStreams.err("recbot: \(outcome.endReason)\n")
        }
        if let id = outcome.sessionID { Console.print("session \(id): \(outcome.endReason)") }
        var cause = outcome.cause
        if let id = outcome.sessionID, exportAtEnd {
            let exported = exportSession(id)
            // The recording's own failure says more than the export's.
            if cause.isSuccess && !exported.isSuccess { cause = exported }
        }
        guard let upload, let id = outcome.sessionID else { throw CommandEnd(cause: cause) }
        let uploaded = await uploadSession(id, configuration: upload, webhooks: options.webhooks)
        throw CommandEnd(cause: cause.isSuccess ? uploaded : cause)
    }

    /// `--export`: the session's events and captions beside its files, before any upload takes them.
    private func exportSession(_ id: String) -> EndCause {
        do {
            guard let catalog = try common.openCatalogForQuery() else { return .notFound }
            let written = try SessionExporter(catalog: catalog, dataDirectory: common.dataDirectory)
                .export(id, formats: Set(ExportFormat.allCases), into: nil)
            Console.print("session \(id): exported \(written.count) files")
            return .completed
        } catch {
            Console.note("session \(id) not exported now: `recbot export \(id)` can do it later")
            return (error as? CommandEnd)?.cause ?? .storageFailed
        }
    }

    /// `--upload`: the session just recorded, once its files are final. A catalog that cannot
    /// be reached now (the session's writes wait in the spool) leaves it to `recbot upload --pending`.
    private func uploadSession(_ id: String, configuration: UploadConfiguration, webhooks: WebhookSettings?) async -> EndCause {
        let catalog: (any CatalogStore)?
        let session: SessionRecord?
        do {
            catalog = try common.openCatalogForWriting()
            session = try catalog?.query { c throws(CatalogError) in try c.session(id: id) }
        } catch {
            Console.note("not uploading session \(id) now: the catalog is unavailable; `recbot upload --pending` will")
            return (error as? CommandEnd)?.cause ?? .uploadFailed
        }
        guard let catalog, let session, session.endedAt != nil else {
            Console.note("not uploading session \(id) now: the catalog has not recorded its end; `recbot upload --pending` will")
            return .uploadFailed
        }
        let report = await SessionUploads(configuration: configuration, catalog: catalog, directory: common.dataDirectory,
                                          logger: Logger(label: "recbot.upload"), webhooks: webhooks).run([session])
        for result in report.results {
            let bytes = result.files.reduce(Int64(0)) { $0 + $1.record.bytes }
            Console.print("session \(id): uploaded \(result.files.count) files (\(bytes) bytes) to \(configuration.options.destination)"
                + (result.deletedLocalFiles ? "; local copies removed" : "")
                + (result.keptLocalFiles.map { "; local copies kept: \($0)" } ?? ""))
        }
        return report.cause
    }
}
