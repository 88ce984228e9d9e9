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

    public func claimWebhooks(_ claim: WebhookClaim) throws(CatalogError) -> [WebhookRecord] {
        // One IMMEDIATE transaction (GRDB's for a pool's writes): the choice and the lease are
        // atomic against every other process on this file.
        try write { db in
            let ids = try Int64.fetchAll(db, sql: WebhookClaimSQL.candidates(placeholder: { "?\($0)" }),
                                         arguments: [claim.now, claim.credentials, claim.perURL, claim.limit])
            guard !ids.isEmpty else { return [] }
            let request = WebhookRecord.filter(ids.contains(Column("id")))
            try request.updateAll(db, Column("lease_owner").set(to: claim.owner), Column("lease_until").set(to: claim.leaseUntil))
            return try request.order(Column("next_attempt_at"), Column("id")).fetchAll(db)
        }
    }

    public func recordWebhookAttempt(_ row: WebhookRecord, owner: String) throws(CatalogError) -> Bool {
        guard let id = row.id else { return false }
        return try write { db in
            try db.execute(sql: """
                UPDATE webhook_outbox SET status = ?, attempts = ?, next_attempt_at = ?, delivered_at = ?, last_error = ?,
                lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?
                """, arguments: [row.status.rawValue, row.attempts, row.nextAttemptAt, row.deliveredAt, row.lastError, id, owner])
            return db.changesCount == 1
        }
    }

    public func webhookLeaseOwners(now: Int64) throws(CatalogError) -> [String] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT lease_owner FROM webhook_outbox WHERE lease_until > ? AND lease_owner IS NOT NULL",
                                arguments: [now])
        }
    }

    public func releaseWebhookLeases(owner: String) throws(CatalogError) -> Int {
        try write { db in
            try db.execute(sql: "UPDATE webhook_outbox SET lease_owner = NULL, lease_until = 0 WHERE lease_owner = ?", arguments: [owner])
            return db.changesCount
        }
    }

    public func nextWebhookDue(credentials: String) throws(CatalogError) -> Int64? {
        try read { db in
            try Int64.fetchOne(db, sql: """
                SELECT min(max(next_attempt_at, lease_until)) FROM webhook_outbox
                WHERE status = 'pending' AND (credentials IS NULL OR credentials = '' OR credentials = ?)
                """, arguments: [credentials])
        }
    }

    public func pruneDeliveredWebhooks(before: Int64) throws(CatalogError) -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM webhook_outbox WHERE status = 'delivered' AND delivered_at < ?", arguments: [before])
            return db.changesCount
        }
    }

    public func webhooks(_ filter: WebhookFilter) throws(CatalogError) -> [WebhookRecord] {
        try read { db in
            var request = WebhookRecord.all()
            if let status = filter.status { request = request.filter(Column("status") == status.rawValue) }
            if let session = filter.sessionID { request = request.filter(Column("session_id") == session) }
            if let ids = filter.ids { request = request.filter(ids.contains(Column("id"))) }
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
