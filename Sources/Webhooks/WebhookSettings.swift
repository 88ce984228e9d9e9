import Crypto

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

    /// The outbox's name for these credentials (the secret and the headers): '' when there are
    /// none, else an HMAC-SHA256 of the headers keyed by the secret, 16 bytes in hex. A row
    /// keeps it so that only a process holding the same credentials sends it with them; the
    /// catalog never holds the secret or a header's value.
    public var credentialsReference: String {
        guard secret != nil || !headers.isEmpty else { return "" }
        var message = Array("recbot webhook credentials v1".utf8)
        for header in headers.sorted(by: { ($0.name.lowercased(), $0.value) < ($1.name.lowercased(), $1.value) }) {
            message += [0] + Array(header.name.lowercased().utf8) + [0] + Array(header.value.utf8)
        }
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret ?? []))
        return "hmac-sha256:" + code.prefix(16).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    public init(urls: [String], secret: [UInt8]? = nil, headers: [(name: String, value: String)] = [], caFile: String? = nil,
                retryWindowMilliseconds: Int64 = WebhookSettings.defaultRetryWindowMilliseconds, requestTimeoutSeconds: Int64 = 10) {
        (self.urls, self.secret, self.headers, self.caFile) = (urls, secret, headers, caFile)
        (self.retryWindowMilliseconds, self.requestTimeoutSeconds) = (retryWindowMilliseconds, requestTimeoutSeconds)
    }
}
