/// One `RECBOT_*` setting and the flag it stands in for: the one table that `join --help`, every
/// read of a setting and the documentation's option tables (checked by a test) come from.
struct SettingName: Hashable, Sendable {
    let variable: String
    /// The command-line flag that overrides it; nil for settings kept off the command line
    /// (secrets, and what applies before the command line is parsed).
    let flag: String?
    /// An on/off setting: `1` or `true` turns it on.
    let isSwitch: Bool
    /// How the value is written, for the help text ("space or comma separated").
    let format: String?

    private init(_ variable: String, flag: String?, isSwitch: Bool = false, format: String? = nil) {
        (self.variable, self.flag, self.isSwitch, self.format) = (variable, flag, isSwitch, format)
    }

    /// As `join --help` lists it.
    var helpEntry: String { variable + (isSwitch ? "=1" : "") + (format.map { " (\($0))" } ?? "") }
}

extension SettingName {
    // Where things are (every command).
    static let config = SettingName("RECBOT_CONFIG", flag: "--config")
    static let dataDirectory = SettingName("RECBOT_DATA_DIR", flag: "--data-dir")
    static let catalogURL = SettingName("RECBOT_CATALOG_URL", flag: "--catalog")
    static let host = SettingName("RECBOT_HOST", flag: "--host")
    // What to record.
    static let channel = SettingName("RECBOT_CHANNEL", flag: "--channel")
    static let urls = SettingName("RECBOT_URLS", flag: "--url", format: "space or comma separated")
    static let metadata = SettingName("RECBOT_METADATA", flag: "--metadata", format: "JSON or @file")
    static let duration = SettingName("RECBOT_DURATION", flag: "--duration")
    static let stopWhenIdle = SettingName("RECBOT_STOP_WHEN_IDLE", flag: "--stop-when-idle")
    static let waitForSenders = SettingName("RECBOT_WAIT_FOR_SENDERS", flag: "--wait-for-senders")
    static let clientID = SettingName("RECBOT_CLIENT_ID", flag: "--client-id")
    static let bundleID = SettingName("RECBOT_BUNDLE_ID", flag: "--bundle-id")
    // How to connect.
    static let insecure = SettingName("RECBOT_INSECURE", flag: "--insecure", isSwitch: true)
    static let connectTimeout = SettingName("RECBOT_CONNECT_TIMEOUT", flag: "--connect-timeout")
    static let allowAddresses = SettingName("RECBOT_ALLOW_ADDRESSES", flag: "--allow-address")
    static let denyAddresses = SettingName("RECBOT_DENY_ADDRESSES", flag: "--deny-address")
    static let iceServers = SettingName("RECBOT_ICE_SERVERS", flag: "--ice-servers", format: "JSON or @file")
    static let iceTransportPolicy = SettingName("RECBOT_ICE_TRANSPORT_POLICY", flag: "--ice-transport-policy")
    static let turnCAFile = SettingName("RECBOT_TURN_CA_FILE", flag: "--turn-ca-file")
    // Limits and recovery.
    static let maxRecoveryDelay = SettingName("RECBOT_MAX_RECOVERY_DELAY", flag: "--max-recovery-delay")
    static let shedVideoAfter = SettingName("RECBOT_SHED_VIDEO_AFTER", flag: "--shed-video-after")
    static let noVideoShedding = SettingName("RECBOT_NO_VIDEO_SHEDDING", flag: "--no-video-shedding", isSwitch: true)
    static let maxEvents = SettingName("RECBOT_MAX_EVENTS", flag: "--max-events")
    static let maxEventBytes = SettingName("RECBOT_MAX_EVENT_BYTES", flag: "--max-event-bytes")
    static let finalizeTimeout = SettingName("RECBOT_FINALIZE_TIMEOUT", flag: "--finalize-timeout")
    static let rejoinAttempts = SettingName("RECBOT_REJOIN_ATTEMPTS", flag: "--rejoin-attempts")
    static let rejoinMaxDelay = SettingName("RECBOT_REJOIN_MAX_DELAY", flag: "--rejoin-max-delay")
    static let noRejoin = SettingName("RECBOT_NO_REJOIN", flag: "--no-rejoin", isSwitch: true)
    static let failOnInterruption = SettingName("RECBOT_FAIL_ON_INTERRUPTION", flag: "--fail-on-interruption", isSwitch: true)
    // Metrics.
    static let metricsListen = SettingName("RECBOT_METRICS_LISTEN", flag: "--metrics-listen")
    static let metricsTextfile = SettingName("RECBOT_METRICS_TEXTFILE", flag: "--metrics-textfile")
    // Layout on disk.
    static let splitDuration = SettingName("RECBOT_SPLIT_DURATION", flag: "--split-duration")
    static let splitOnly = SettingName("RECBOT_SPLIT_ONLY", flag: "--split-only", isSwitch: true)
    static let recordingMetadata = SettingName("RECBOT_RECORDING_METADATA", flag: "--recording-metadata", format: "JSON or @file")
    // Webhooks.
    static let webhookURLs = SettingName("RECBOT_WEBHOOK_URL", flag: "--webhook-url", format: "space or comma separated")
    static let webhookCAFile = SettingName("RECBOT_WEBHOOK_CA_FILE", flag: "--webhook-ca-file")
    static let webhookRetryWindow = SettingName("RECBOT_WEBHOOK_RETRY_WINDOW", flag: "--webhook-retry-window")
    /// Secrets and headers: never on the command line.
    static let webhookSecret = SettingName("RECBOT_WEBHOOK_SECRET", flag: nil)
    static let webhookHeaders = SettingName("RECBOT_WEBHOOK_HEADERS", flag: nil, format: "JSON object")
    // Export.
    static let export = SettingName("RECBOT_EXPORT", flag: "--export", isSwitch: true)
    // Upload.
    static let uploadURL = SettingName("RECBOT_UPLOAD_URL", flag: "--upload")
    static let s3Endpoint = SettingName("RECBOT_S3_ENDPOINT", flag: "--s3-endpoint")
    static let s3Region = SettingName("RECBOT_S3_REGION", flag: "--s3-region")
    static let s3CAFile = SettingName("RECBOT_S3_CA_FILE", flag: "--s3-ca-file")
    static let uploadPartSize = SettingName("RECBOT_UPLOAD_PART_SIZE", flag: "--upload-part-size")
    static let uploadRetries = SettingName("RECBOT_UPLOAD_RETRIES", flag: "--upload-retries")
    static let deleteAfterUpload = SettingName("RECBOT_DELETE_AFTER_UPLOAD", flag: "--delete-after-upload", isSwitch: true)
    /// Secrets: never on the command line.
    static let s3AccessKeyID = SettingName("RECBOT_S3_ACCESS_KEY_ID", flag: nil)
    static let s3SecretAccessKey = SettingName("RECBOT_S3_SECRET_ACCESS_KEY", flag: nil)
    /// Read from the environment before the command line is parsed.
    static let umask = SettingName("RECBOT_UMASK", flag: nil)
    static let logLevel = SettingName("RECBOT_LOG_LEVEL", flag: nil)

    /// Every setting, in the order `join --help` lists them.
    static let all: [SettingName] = [
        config, dataDirectory, catalogURL, host, channel, urls, metadata, duration, stopWhenIdle, waitForSenders, clientID, bundleID, insecure, connectTimeout,
        allowAddresses, denyAddresses, iceServers, iceTransportPolicy, turnCAFile, maxRecoveryDelay, shedVideoAfter, noVideoShedding, maxEvents, maxEventBytes,
        finalizeTimeout, rejoinAttempts, rejoinMaxDelay, noRejoin, failOnInterruption, metricsListen, metricsTextfile, splitDuration, splitOnly, recordingMetadata, webhookURLs, webhookCAFile,
        webhookRetryWindow, webhookSecret, webhookHeaders, export, uploadURL,
        s3Endpoint, s3Region, s3CAFile, uploadPartSize, uploadRetries, deleteAfterUpload, s3AccessKeyID, s3SecretAccessKey, umask,
        logLevel,
    ]
}

// `recbot serve`'s own settings: never passed on to the recordings it starts.
extension SettingName {
    static let serveListen = SettingName("RECBOT_SERVE_LISTEN", flag: "--listen")
    static let serveRules = SettingName("RECBOT_SERVE_RULES", flag: "--rules")
    static let serveCapacity = SettingName("RECBOT_SERVE_CAPACITY", flag: "--capacity")
    static let serveLease = SettingName("RECBOT_SERVE_LEASE", flag: "--lease")
    static let serveCapacityPublishers = SettingName("RECBOT_SERVE_CAPACITY_PUBLISHERS", flag: "--capacity-publishers")
    static let servePruneEvery = SettingName("RECBOT_SERVE_PRUNE_EVERY", flag: "--prune-every")
    static let serveTLSCertificate = SettingName("RECBOT_SERVE_TLS_CERT", flag: "--tls-cert")
    static let serveTLSKey = SettingName("RECBOT_SERVE_TLS_KEY", flag: "--tls-key")
    static let serveTLSClientCA = SettingName("RECBOT_SERVE_TLS_CLIENT_CA", flag: "--tls-client-ca")
    /// Secrets: never on the command line.
    static let serveWebhookSecret = SettingName("RECBOT_SERVE_WEBHOOK_SECRET", flag: nil)
    static let serveWebhookSecretHeader = SettingName("RECBOT_SERVE_WEBHOOK_SECRET_HEADER", flag: nil)
    static let serveWebhookBasicAuth = SettingName("RECBOT_SERVE_WEBHOOK_BASIC_AUTH", flag: nil, format: "user:password")
    static let serveAPIToken = SettingName("RECBOT_SERVE_API_TOKEN", flag: nil)
    static let serveWebBasicAuth = SettingName("RECBOT_SERVE_WEB_BASIC_AUTH", flag: nil, format: "user:password")

    /// As `serve --help` lists them.
    static let serve: [SettingName] = [
        serveListen, serveRules, serveCapacity, serveCapacityPublishers, serveLease, servePruneEvery, serveTLSCertificate, serveTLSKey, serveTLSClientCA,
        serveWebhookSecret, serveWebhookSecretHeader, serveWebhookBasicAuth, serveAPIToken, serveWebBasicAuth,
    ]
}
