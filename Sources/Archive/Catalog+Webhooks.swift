import GRDB

/// The webhook outbox in SQLite.
extension Catalog {
    public func enqueueWebhooks(_ rows: [WebhookRecord]) throws(CatalogError) {
        guard !rows.isEmpty else { return }
        try write { db in
            for row in rows {
                var stored = row
                try stored.insert(db, onConflict: .ignore)
            }
        }
    }

    public func pendingWebhooks(limit: Int) throws(CatalogError) -> [WebhookRecord] {
        try read { db in
            try WebhookRecord.filter(Column("status") == WebhookStatus.pending.rawValue).order(Column("id")).limit(limit).fetchAll(db)
        }
    }

    public func updateWebhook(_ row: WebhookRecord) throws(CatalogError) {
        try write { db in try row.update(db) }
    }

    public func webhooks(_ filter: WebhookFilter) throws(CatalogError) -> [WebhookRecord] {
        try read { db in
            var request = WebhookRecord.all()
            if let status = filter.status { request = request.filter(Column("status") == status.rawValue) }
            if let session = filter.sessionID { request = request.filter(Column("session_id") == session) }
            request = request.order(Column("id").desc)
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db)
        }
    }

    public func webhookCounts() throws(CatalogError) -> WebhookCounts {
        try read { db in
            var counts = WebhookCounts()
            for row in try Row.fetchAll(db, sql: "SELECT status, count(*) AS n FROM webhook_outbox GROUP BY status") {
                let (status, count): (String, Int) = (row["status"], row["n"])
                switch WebhookStatus(rawValue: status) {
                case .pending: counts.pending = count
                case .delivered: counts.delivered = count
                case .failed: counts.failed = count
                case nil: break
                }
            }
            return counts
        }
    }

    public func retryFailedWebhooks(ids: [Int64]?, now: Int64, expiresAt: Int64) throws(CatalogError) -> Int {
        try write { db in
            var request = WebhookRecord.filter(Column("status") == WebhookStatus.failed.rawValue)
            if let ids { request = request.filter(ids.contains(Column("id"))) }
            return try request.updateAll(db, Column("status").set(to: WebhookStatus.pending.rawValue), Column("attempts").set(to: 0),
                                         Column("next_attempt_at").set(to: now), Column("expires_at").set(to: expiresAt))
        }
    }
}
