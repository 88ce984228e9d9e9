/// Where and how recbot's webhooks go (`--webhook-url`, `RECBOT_WEBHOOK_*`).
public struct WebhookSettings: Sendable {
    /// Every event goes to each of these (a row per URL in the outbox).
    public var urls: [String]
    /// `RECBOT_WEBHOOK_SECRET`: each body is signed with HMAC-SHA256 (`X-Recbot-Signature`).
    public var secret: [UInt8]?
    /// Extra request headers (a bearer token), from the config file.
    public var headers: [(name: String, value: String)]
    /// PEM certificates to check an https receiver with, instead of the system's.
    public var caFile: String?
    /// How long a failing event is retried before it is given up on (`failed`).
    public var retryWindowMilliseconds: Int64
    /// One request's limit: a receiver that never answers costs this, then a retry later.
    public var requestTimeoutSeconds: Int64

    public static let defaultRetryWindowMilliseconds: Int64 = 24 * 3_600_000

    public init(urls: [String], secret: [UInt8]? = nil, headers: [(name: String, value: String)] = [], caFile: String? = nil,
                retryWindowMilliseconds: Int64 = WebhookSettings.defaultRetryWindowMilliseconds, requestTimeoutSeconds: Int64 = 10) {
        (self.urls, self.secret, self.headers, self.caFile) = (urls, secret, headers, caFile)
        (self.retryWindowMilliseconds, self.requestTimeoutSeconds) = (retryWindowMilliseconds, requestTimeoutSeconds)
    }
}
