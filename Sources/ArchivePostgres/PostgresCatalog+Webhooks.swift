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

    public func updateWebhook(_ row: WebhookRecord) throws(CatalogError) {
        guard let id = row.id else { return }
        try link.withConnection { db in
            try db.query("""
                UPDATE webhook_outbox SET status = \(row.status.rawValue), attempts = \(Int64(row.attempts)),
                next_attempt_at = \(row.nextAttemptAt), expires_at = \(row.expiresAt), delivered_at = \(row.deliveredAt),
                last_error = \(row.lastError) WHERE id = \(id)
                """)
        }
    }

    public func webhooks(_ filter: WebhookFilter) throws(CatalogError) -> [WebhookRecord] {
        var query = FilteredQuery("SELECT \(WebhookRecord.selectColumns) FROM webhook_outbox")
        if let status = filter.status { query.require("status = ", status.rawValue) }
        if let session = filter.sessionID { query.require("session_id = ", session) }
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
        id, event_id, session_id, event_type, url, body, created_at, attempts, next_attempt_at, expires_at, status, delivered_at, last_error
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
        return columns
    }
}
