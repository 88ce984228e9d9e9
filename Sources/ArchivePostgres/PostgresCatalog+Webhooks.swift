import Archive
import PostgresNIO

/// The webhook outbox in PostgreSQL: the same contract as the SQLite catalog's.
extension PostgresCatalog {
    public func enqueueWebhooks(_ rows: [WebhookRecord]) throws(CatalogError) {
        guard !rows.isEmpty else { return }
        try link.transaction { db in
            for row in rows {
                let columns = row.postgresColumns
                try db.query(PostgresQuery(unsafeSQL: "INSERT INTO webhook_outbox \(columns.insertClause) ON CONFLICT (event_id, url) DO NOTHING",
                                           binds: columns.binds))
            }
        }
    }

    public func pendingWebhooks(limit: Int) throws(CatalogError) -> [WebhookRecord] {
        var query = FilteredQuery("SELECT \(WebhookRecord.selectColumns) FROM webhook_outbox")
        query.require("status = ", WebhookStatus.pending.rawValue)
        query.finish(orderBy: "id", limit: limit)
        return try fetch(query, WebhookRecord.init(postgres:))
    }

    public func claimWebhooks(_ claim: WebhookClaim) throws(CatalogError) -> [WebhookRecord] {
        try link.transaction { db in
            var binds = PostgresBindings()
            binds.append(claim.now)
            binds.append(claim.credentials)
            binds.append(Int64(claim.perURL))
            binds.append(Int64(claim.limit))
            let sql = WebhookClaimSQL.candidates(placeholder: { "$\($0)" })
            let ids = try db.query(PostgresQuery(unsafeSQL: sql, binds: binds)).rows.map { try $0.decode(Int64.self) }
            guard !ids.isEmpty else { return [] }
            // Another process may have chosen the same rows: the row locks decide. A row it
            // holds is skipped, and one it leased meanwhile fails the lease test once locked.
            return try db.query("""
                UPDATE webhook_outbox SET lease_owner = \(claim.owner), lease_until = \(claim.leaseUntil)
                WHERE id IN (SELECT id FROM webhook_outbox WHERE id = ANY(\(ids)) AND status = 'pending' AND lease_until <= \(claim.now)
                             FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: WebhookRecord.selectColumns)
                """).rows.map(WebhookRecord.init(postgres:)).sorted { ($0.nextAttemptAt, $0.id ?? 0) < ($1.nextAttemptAt, $1.id ?? 0) }
        }
    }

    public func recordWebhookAttempt(_ row: WebhookRecord, owner: String) throws(CatalogError) -> Bool {
        guard let id = row.id else { return false }
        return try link.withConnection { db in
            try db.changes("""
                UPDATE webhook_outbox SET status = \(row.status.rawValue), attempts = \(Int64(row.attempts)),
                next_attempt_at = \(row.nextAttemptAt), delivered_at = \(row.deliveredAt), last_error = \(row.lastError),
                lease_owner = NULL, lease_until = 0 WHERE id = \(id) AND lease_owner = \(owner)
                """) == 1
        }
    }

    public func webhookLeaseOwners(now: Int64) throws(CatalogError) -> [String] {
        try link.withConnection { db in
            try db.query("SELECT DISTINCT lease_owner FROM webhook_outbox WHERE lease_until > \(now) AND lease_owner IS NOT NULL")
                .rows.map { try $0.decode(String.self) }
        }
    }

    public func releaseWebhookLeases(owner: String) throws(CatalogError) -> Int {
        try link.withConnection { db in
            try db.changes("UPDATE webhook_outbox SET lease_owner = NULL, lease_until = 0 WHERE lease_owner = \(owner)")
        }
    }

    public func nextWebhookDue(credentials: String) throws(CatalogError) -> Int64? {
        try link.withConnection { db in
            try db.query("""
                SELECT min(greatest(next_attempt_at, lease_until)) FROM webhook_outbox
                WHERE status = 'pending' AND (credentials IS NULL OR credentials = '' OR credentials = \(credentials))
                """).rows.first?.decode(Int64?.self) ?? nil
        }
    }

    public func pruneDeliveredWebhooks(before: Int64) throws(CatalogError) -> Int {
        try link.withConnection { db in
            try db.changes("DELETE FROM webhook_outbox WHERE status = 'delivered' AND delivered_at < \(before)")
        }
    }

    public func webhooks(_ filter: WebhookFilter) throws(CatalogError) -> [WebhookRecord] {
        var query = FilteredQuery("SELECT \(WebhookRecord.selectColumns) FROM webhook_outbox")
        if let status = filter.status { query.require("status = ", status.rawValue) }
        if let session = filter.sessionID { query.require("session_id = ", session) }
        if let ids = filter.ids { query.require("id = ANY(", ids, ")") }
        query.finish(orderBy: "id DESC", limit: filter.limit)
        return try fetch(query, WebhookRecord.init(postgres:))
    }

    public func webhookCounts() throws(CatalogError) -> WebhookCounts {
        try link.withConnection { db in
            var counts = WebhookCounts()
            for row in try db.query("SELECT status, count(*) FROM webhook_outbox GROUP BY status").rows {
                let (status, count) = try row.decode((String, Int64).self)
                switch WebhookStatus(rawValue: status) {
                case .pending: counts.pending = Int(count)
                case .delivered: counts.delivered = Int(count)
                case .failed: counts.failed = Int(count)
                case nil: break
                }
            }
            return counts
        }
    }

    public func retryFailedWebhooks(ids: [Int64]?, now: Int64, expiresAt: Int64) throws(CatalogError) -> Int {
        try link.withConnection { db in
            let failed = WebhookStatus.failed.rawValue, pending = WebhookStatus.pending.rawValue
            if let ids {
                return try db.changes("""
                    UPDATE webhook_outbox SET status = \(pending), attempts = 0, next_attempt_at = \(now), expires_at = \(expiresAt)
                    WHERE status = \(failed) AND id = ANY(\(ids))
                    """)
            }
            return try db.changes("""
                UPDATE webhook_outbox SET status = \(pending), attempts = 0, next_attempt_at = \(now), expires_at = \(expiresAt)
                WHERE status = \(failed)
                """)
        }
    }
}

extension WebhookRecord {
    static let selectColumns = """
        id, event_id, session_id, event_type, url, body, created_at, attempts, next_attempt_at, expires_at, status, delivered_at, last_error, credentials
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(eventID: try value("event_id"), sessionID: try value("session_id"), eventType: try value("event_type"), url: try value("url"),
                  body: try value("body"), createdAt: try value("created_at"), expiresAt: try value("expires_at"))
        id = try value("id")
        attempts = Int(try value("attempts", as: Int64.self))
        nextAttemptAt = try value("next_attempt_at")
        status = WebhookStatus(rawValue: try value("status")) ?? .pending
        deliveredAt = try value("delivered_at")
        lastError = try value("last_error")
        credentials = try value("credentials")
    }

    /// Without `id`: the server assigns it.
    var postgresColumns: ColumnValues {
        var columns = ColumnValues()
        columns.add("event_id", eventID)
        columns.add("session_id", sessionID)
        columns.add("event_type", eventType)
        columns.add("url", url)
        columns.add("body", body)
        columns.add("created_at", createdAt)
        columns.add("attempts", Int64(attempts))
        columns.add("next_attempt_at", nextAttemptAt)
        columns.add("expires_at", expiresAt)
        columns.add("status", status.rawValue)
        columns.add("delivered_at", deliveredAt)
        columns.add("last_error", lastError)
        columns.add("credentials", credentials)
        return columns
    }
}
