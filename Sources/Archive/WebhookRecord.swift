import GRDB

/// Where a webhook is in its delivery.
public enum WebhookStatus: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    /// Not delivered yet: waiting for its next attempt (or for an earlier one of its recording).
    case pending
    case delivered
    /// Given up on after its retry window; `recbot webhooks retry` queues it again.
    case failed
}

/// One event for one receiver URL in the outbox (`webhook_outbox`). Times are Unix milliseconds.
public struct WebhookRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "webhook_outbox"

    public var id: Int64?
    /// The payload's `id`: a write replayed from the spool is recognised by it (with the URL).
    public var eventID: String
    /// The recording (recbot session) the event is about: rows of one go out in order.
    public var sessionID: String?
    public var eventType: String
    public var url: String
    /// The JSON body, exactly as it is POSTed (and signed).
    public var body: String
    public var createdAt: Int64
    public var attempts: Int = 0
    public var nextAttemptAt: Int64
    /// After this a failing row is given up on (status `failed`).
    public var expiresAt: Int64
    public var status: WebhookStatus = .pending
    public var deliveredAt: Int64?
    /// The last attempt's failure ("HTTP 500", "timed out after 10 s", "connection refused").
    public var lastError: String?
    /// Which credentials (secret, headers) the row is sent with: a reference to them, '' for
    /// none, nil for a row queued before references were kept (sent with the sender's own).
    /// (Its lease, `lease_owner` and `lease_until`, lives in the table only: set and read by
    /// the claim's SQL, never written from a record.)
    public var credentials: String?

    public init(eventID: String, sessionID: String?, eventType: String, url: String, body: String, createdAt: Int64, expiresAt: Int64,
                credentials: String? = "") {
        (self.eventID, self.sessionID, self.eventType, self.url, self.body) = (eventID, sessionID, eventType, url, body)
        (self.createdAt, self.nextAttemptAt, self.expiresAt, self.credentials) = (createdAt, createdAt, expiresAt, credentials)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    enum CodingKeys: String, CodingKey {
        case id, url, body, attempts, status
        case eventID = "event_id", sessionID = "session_id", eventType = "event_type", createdAt = "created_at"
        case nextAttemptAt = "next_attempt_at", expiresAt = "expires_at", deliveredAt = "delivered_at", lastError = "last_error"
        case credentials
    }
}

/// What a dispatcher asks of the outbox when it claims rows to send.
public struct WebhookClaim: Sendable {
    /// This process (unique per dispatcher): the lease's owner.
    public var owner: String
    public var now: Int64
    /// The lease ends here: long enough for one request, so a live owner always finishes first.
    public var leaseUntil: Int64
    /// The sender's credentials reference: rows with '' or this one (or none recorded) are its.
    public var credentials: String
    /// At most this many rows of one URL under lease at once, across every process, so one
    /// receiver that hangs holds a few requests and never the whole queue.
    public var perURL: Int
    public var limit: Int

    public init(owner: String, now: Int64, leaseUntil: Int64, credentials: String, perURL: Int, limit: Int) {
        (self.owner, self.now, self.leaseUntil, self.credentials, self.perURL, self.limit) = (owner, now, leaseUntil, credentials, perURL, limit)
    }
}

/// Which outbox rows to list.
public struct WebhookFilter: Sendable {
    public var status: WebhookStatus?
    public var sessionID: String?
    /// Only these rows.
    public var ids: [Int64]?
    public var limit: Int?

    public init(status: WebhookStatus? = nil, sessionID: String? = nil, ids: [Int64]? = nil, limit: Int? = nil) {
        (self.status, self.sessionID, self.ids, self.limit) = (status, sessionID, ids, limit)
    }
}

/// Outbox rows by status, for the metrics and `webhooks list`.
public struct WebhookCounts: Sendable, Equatable {
    public var pending = 0
    public var delivered = 0
    public var failed = 0
    public init() {}
}
