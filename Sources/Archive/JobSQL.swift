/// The statements both catalogs run on the jobs table, in either dialect's placeholders.
public enum JobSQL {
    /// The oldest claimable jobs (bound: now, the limit): queued, or running under a lease
    /// that ran out, not asked to stop and not past their expiry.
    public static func claimable(placeholder: (Int) -> String) -> String {
        let (now, limit) = (placeholder(1), placeholder(2))
        return """
            SELECT id FROM jobs
            WHERE state IN ('queued', 'running') AND lease_until <= \(now) AND stop_requested_at IS NULL
              AND (expires_at IS NULL OR expires_at > \(now))
            ORDER BY created_at, id LIMIT \(limit)
            """
    }

    /// A statement bound with one value, now.
    public struct Expiry: Sendable {
        let template: @Sendable ((Int) -> String) -> String
        public func sql(placeholder: (Int) -> String) -> String { template(placeholder) }
    }

    /// What ends jobs no worker will: queued ones past their expiry (nobody had capacity in
    /// time); running ones whose lease ran out past their expiry, or while they were asked to
    /// stop (their worker died before it could store the result: `worker-lost`; or the job
    /// waited for another attempt: its last attempt's outcome stays).
    public static let expiries: [Expiry] = [
        Expiry { p in
            "UPDATE jobs SET state = 'cancelled', ended_at = \(p(1)), end_reason = 'expired' WHERE state = 'queued' AND expires_at <= \(p(1))"
        },
        Expiry { p in
            """
            UPDATE jobs SET state = 'ended', ended_at = \(p(1)), end_reason = coalesce(end_reason, 'worker-lost'), lease_owner = NULL, lease_until = 0
            WHERE state = 'running' AND lease_until <= \(p(1)) AND (stop_requested_at IS NOT NULL OR expires_at <= \(p(1)))
            """
        },
    ]

    /// `id = ?` or `sora_session_id = ?`, or both joined with OR, and their values.
    static func stopMatch(id: String?, soraSessionID: String?) -> (sql: String, values: [String]) {
        var clauses: [String] = [], values: [String] = []
        if let id { clauses.append("id = ?"); values.append(id) }
        if let soraSessionID { clauses.append("sora_session_id = ?"); values.append(soraSessionID) }
        return ("(" + clauses.joined(separator: " OR ") + ")", values)
    }
}
