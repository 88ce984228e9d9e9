import Archive
import PostgresNIO

/// The jobs table in PostgreSQL: the same contract as the SQLite catalog's. A claim locks the
/// rows it chose with SKIP LOCKED, so workers claiming at once never wait on each other and
/// never take one job twice.
extension PostgresCatalog {
    public func insertJob(_ job: JobRecord) throws(CatalogError) -> Bool {
        try link.withConnection { db in
            let columns = job.postgresColumns
            return try db.changes(PostgresQuery(unsafeSQL: "INSERT INTO jobs \(columns.insertClause) ON CONFLICT DO NOTHING", binds: columns.binds)) == 1
        }
    }

    public func claimJobs(_ claim: JobClaim) throws(CatalogError) -> [JobRecord] {
        guard claim.limit > 0 else { return [] }
        return try link.transaction { db in
            var binds = PostgresBindings()
            binds.append(claim.now)
            binds.append(Int64(claim.limit))
            let chosen = JobSQL.claimable(placeholder: { "$\($0)" }) + " FOR UPDATE SKIP LOCKED"
            let ids = try db.query(PostgresQuery(unsafeSQL: chosen, binds: binds)).rows.map { try $0.decode(String.self) }
            guard !ids.isEmpty else { return [] }
            return try db.query("""
                UPDATE jobs SET state = 'running', lease_owner = \(claim.owner), lease_until = \(claim.leaseUntil), fence = fence + 1,
                worker_host = \(claim.host), started_at = coalesce(started_at, \(claim.now)), exit_status = NULL, end_reason = NULL
                WHERE id = ANY(\(ids)) RETURNING \(unescaped: JobRecord.selectColumns)
                """).rows.map(JobRecord.init(postgres:)).sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    public func renewJob(_ lease: JobLease, until: Int64) throws(CatalogError) -> JobRenewal {
        try link.withConnection { db in
            let rows = try db.query("""
                UPDATE jobs SET lease_until = \(until)
                WHERE id = \(lease.jobID) AND lease_owner = \(lease.owner) AND fence = \(lease.fence) AND state = 'running'
                RETURNING stop_requested_at
                """).rows
            guard let row = rows.first else { return .lost }
            return .held(stopRequested: try row.decode(Int64?.self) != nil)
        }
    }

    public func finishJob(_ lease: JobLease, result: JobResult) throws(CatalogError) -> Bool {
        try link.withConnection { db in
            try db.changes("""
                UPDATE jobs SET state = 'ended', ended_at = \(result.endedAt), exit_status = \(result.exitStatus.map(Int64.init)),
                end_reason = \(result.endReason), lease_owner = NULL, lease_until = 0
                WHERE id = \(lease.jobID) AND lease_owner = \(lease.owner) AND fence = \(lease.fence) AND state = 'running'
                """) == 1
        }
    }

    public func deferJob(_ lease: JobLease, until: Int64, result: JobResult) throws(CatalogError) -> Bool {
        try link.withConnection { db in
            try db.changes("""
                UPDATE jobs SET lease_owner = NULL, lease_until = \(until), exit_status = \(result.exitStatus.map(Int64.init)),
                end_reason = \(result.endReason)
                WHERE id = \(lease.jobID) AND lease_owner = \(lease.owner) AND fence = \(lease.fence) AND state = 'running'
                """) == 1
        }
    }

    public func requestJobStop(id: String?, soraSessionID: String?, at time: Int64, reason: String) throws(CatalogError) -> [JobRecord] {
        guard id != nil || soraSessionID != nil else { return [] }
        return try link.transaction { db in
            let cancelled = JobState.cancelled.rawValue
            return try db.query("""
                UPDATE jobs SET stop_requested_at = \(time), stop_reason = \(reason),
                  state = CASE WHEN state = 'queued' THEN \(cancelled) ELSE state END,
                  ended_at = CASE WHEN state = 'queued' THEN \(time) ELSE ended_at END,
                  end_reason = CASE WHEN state = 'queued' THEN \(reason) ELSE end_reason END
                WHERE (id = \(id) OR sora_session_id = \(soraSessionID)) AND state IN ('queued', 'running') AND stop_requested_at IS NULL
                RETURNING \(unescaped: JobRecord.selectColumns)
                """).rows.map(JobRecord.init(postgres:)).sorted { $0.createdAt < $1.createdAt }
        }
    }

    public func expireJobs(now: Int64) throws(CatalogError) -> Int {
        try link.transaction { db in
            var changed = 0
            for statement in JobSQL.expiries {
                var binds = PostgresBindings()
                binds.append(now)
                changed += try db.changes(PostgresQuery(unsafeSQL: statement.sql(placeholder: { "$\($0)" }), binds: binds))
            }
            return changed
        }
    }

    public func job(id: String) throws(CatalogError) -> JobRecord? {
        var query = FilteredQuery("SELECT \(JobRecord.selectColumns) FROM jobs")
        query.require("id = ", id)
        return try fetch(query, JobRecord.init(postgres:)).first
    }

    public func jobs(_ filter: JobFilter) throws(CatalogError) -> [JobRecord] {
        var query = FilteredQuery("SELECT \(JobRecord.selectColumns) FROM jobs")
        if let states = filter.states { query.require("state = ANY(", states.map(\.rawValue), ")") }
        if let channel = filter.channelID { query.require("channel_id = ", channel) }
        query.finish(orderBy: "created_at DESC, id DESC", limit: filter.limit)
        return try fetch(query, JobRecord.init(postgres:))
    }

    public func holdsJob(_ lease: JobLease) throws(CatalogError) -> Bool {
        try link.withConnection { db in
            try db.query("SELECT count(*) FROM jobs WHERE id = \(lease.jobID) AND fence = \(lease.fence) AND state = 'running'")
                .rows.first?.decode(Int64.self) ?? 0 > 0
        }
    }
}

extension JobRecord {
    static let selectColumns = """
        id, channel_id, sora_session_id, origin, rule, options, state, created_at, expires_at, stop_requested_at, stop_reason,
        lease_owner, lease_until, fence, worker_host, started_at, ended_at, exit_status, end_reason
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(id: try value("id"), channelID: try value("channel_id"), soraSessionID: try value("sora_session_id"),
                  origin: JobOrigin(rawValue: try value("origin")) ?? .api, rule: try value("rule"), options: try value("options"),
                  createdAt: try value("created_at"), expiresAt: try value("expires_at"))
        state = JobState(rawValue: try value("state")) ?? .ended
        stopRequestedAt = try value("stop_requested_at")
        stopReason = try value("stop_reason")
        leaseOwner = try value("lease_owner")
        leaseUntil = try value("lease_until")
        fence = try value("fence")
        workerHost = try value("worker_host")
        startedAt = try value("started_at")
        endedAt = try value("ended_at")
        exitStatus = try value("exit_status", as: Int64?.self).map(Int.init)
        endReason = try value("end_reason")
    }

    var postgresColumns: ColumnValues {
        var columns = ColumnValues()
        columns.add("id", id)
        columns.add("channel_id", channelID)
        columns.add("sora_session_id", soraSessionID)
        columns.add("origin", origin.rawValue)
        columns.add("rule", rule)
        columns.add("options", options)
        columns.add("state", state.rawValue)
        columns.add("created_at", createdAt)
        columns.add("expires_at", expiresAt)
        columns.add("stop_requested_at", stopRequestedAt)
        columns.add("stop_reason", stopReason)
        columns.add("lease_owner", leaseOwner)
        columns.add("lease_until", leaseUntil)
        columns.add("fence", fence)
        columns.add("worker_host", workerHost)
        columns.add("started_at", startedAt)
        columns.add("ended_at", endedAt)
        columns.add("exit_status", exitStatus.map(Int64.init))
        columns.add("end_reason", endReason)
        return columns
    }
}
