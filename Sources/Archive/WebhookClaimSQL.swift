/// The query both catalogs choose webhook rows to claim with (bound: now, the claimant's
/// credentials, the per-URL limit, the row limit). Of each (URL, recording) only the oldest
/// pending row may go, so a recording's events reach a receiver in order; rows due longest go
/// first, so one receiver's backlog cannot keep another's row waiting; and a URL gets only
/// the leases it has left under the per-URL limit. One pass over the pending rows (window
/// functions group NULL recordings together in both SQLite and PostgreSQL), not a subquery
/// per row.
public enum WebhookClaimSQL {
    /// `placeholder`: the dialect's numbered parameter (`?1`, `$1`).
    public static func candidates(placeholder: (Int) -> String) -> String {
        let (now, credentials, perURL, limit) = (placeholder(1), placeholder(2), placeholder(3), placeholder(4))
        return """
            WITH pending AS (
                SELECT id, url, next_attempt_at, lease_until, credentials,
                       row_number() OVER (PARTITION BY url, session_id ORDER BY id) AS position
                FROM webhook_outbox WHERE status = 'pending'
            ), heads AS (
                SELECT id, url, next_attempt_at FROM pending
                WHERE position = 1 AND next_attempt_at <= \(now) AND lease_until <= \(now)
                  AND (credentials IS NULL OR credentials = '' OR credentials = \(credentials))
            ), ranked AS (
                SELECT id, url, next_attempt_at, row_number() OVER (PARTITION BY url ORDER BY next_attempt_at, id) AS place FROM heads
            ), busy AS (
                SELECT url, count(*) AS leased FROM webhook_outbox WHERE status = 'pending' AND lease_until > \(now) GROUP BY url
            )
            SELECT r.id FROM ranked r LEFT JOIN busy b ON b.url = r.url
            WHERE r.place + coalesce(b.leased, 0) <= \(perURL)
            ORDER BY r.next_attempt_at, r.id LIMIT \(limit)
            """
    }
}
