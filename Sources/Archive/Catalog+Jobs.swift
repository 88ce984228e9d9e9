import GRDB

/// The jobs table in SQLite. Every change is one IMMEDIATE transaction (GRDB's for a pool's
/// writes), so a claim's choice and its lease are atomic against every process on the file.
extension Catalog {
    public func insertJob(_ job: JobRecord) throws(CatalogError) -> Bool {
        try write { db in
            try job.insert(db, onConflict: .ignore)
            return db.changesCount == 1
        }
    }

    public func claimJobs(_ claim: JobClaim) throws(CatalogError) -> [JobRecord] {
        guard claim.limit > 0 else { return [] }
        return try write { db in
            let ids = try String.fetchAll(db, sql: JobSQL.claimable(placeholder: { "?\($0)" }), arguments: [claim.now, claim.limit])
            guard !ids.isEmpty else { return [] }
            let request = JobRecord.filter(ids.contains(Column("id")))
            try db.execute(sql: """
                UPDATE jobs SET state = 'running', lease_owner = ?, lease_until = ?, fence = fence + 1, worker_host = ?,
                started_at = coalesce(started_at, ?), exit_status = NULL, end_reason = NULL WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))
                """, arguments: StatementArguments([claim.owner, claim.leaseUntil, claim.host, claim.now] as [any DatabaseValueConvertible]) + StatementArguments(ids))
            return try request.order(Column("created_at"), Column("id")).fetchAll(db)
        }
    }

    public func renewJob(_ lease: JobLease, until: Int64) throws(CatalogError) -> JobRenewal {
        try write { db in
            try db.execute(sql: "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND fence = ? AND state = 'running'",
                           arguments: [until, lease.jobID, lease.owner, lease.fence])
            guard db.changesCount == 1 else { return .lost }
            let stop = try Int64?.fetchOne(db, sql: "SELECT stop_requested_at FROM jobs WHERE id = ?", arguments: [lease.jobID]) ?? nil
            return .held(stopRequested: stop != nil)
        }
    }

    public func finishJob(_ lease: JobLease, result: JobResult) throws(CatalogError) -> Bool {
        try write { db in
            try db.execute(sql: """
                UPDATE jobs SET state = 'ended', ended_at = ?, exit_status = ?, end_reason = ?, lease_owner = NULL, lease_until = 0
                WHERE id = ? AND lease_owner = ? AND fence = ? AND state = 'running'
                """, arguments: [result.endedAt, result.exitStatus, result.endReason, lease.jobID, lease.owner, lease.fence])
            return db.changesCount == 1
        }
    }

    public func deferJob(_ lease: JobLease, until: Int64, result: JobResult) throws(CatalogError) -> Bool {
        try write { db in
            try db.execute(sql: """
                UPDATE jobs SET lease_owner = NULL, lease_until = ?, exit_status = ?, end_reason = ?
                WHERE id = ? AND lease_owner = ? AND fence = ? AND state = 'running'
                """, arguments: [until, result.exitStatus, result.endReason, lease.jobID, lease.owner, lease.fence])
            return db.changesCount == 1
        }
    }

    public func requestJobStop(id: String?, soraSessionID: String?, at time: Int64, reason: String) throws(CatalogError) -> [JobRecord] {
        guard id != nil || soraSessionID != nil else { return [] }
        return try write { db in
            let match = JobSQL.stopMatch(id: id, soraSessionID: soraSessionID)
            let targets = try String.fetchAll(db, sql: "SELECT id FROM jobs WHERE \(match.sql) AND state IN ('queued', 'running') AND stop_requested_at IS NULL",
                                              arguments: StatementArguments(match.values))
            guard !targets.isEmpty else { return [] }
            let request = JobRecord.filter(targets.contains(Column("id")))
            try request.updateAll(db, Column("stop_requested_at").set(to: time), Column("stop_reason").set(to: reason))
            try request.filter(Column("state") == JobState.queued.rawValue).updateAll(
                db, Column("state").set(to: JobState.cancelled.rawValue), Column("ended_at").set(to: time), Column("end_reason").set(to: reason))
            return try request.order(Column("created_at")).fetchAll(db)
        }
    }

    public func expireJobs(now: Int64) throws(CatalogError) -> Int {
        try write { db in
            var changed = 0
            for statement in JobSQL.expiries {
                try db.execute(sql: statement.sql(placeholder: { "?\($0)" }), arguments: [now])
                changed += db.changesCount
            }
            return changed
        }
    }

    public func job(id: String) throws(CatalogError) -> JobRecord? {
        try read { db in try JobRecord.fetchOne(db, key: id) }
    }

    public func jobs(_ filter: JobFilter) throws(CatalogError) -> [JobRecord] {
        try read { db in
            var request = JobRecord.all()
            if let states = filter.states { request = request.filter(states.map(\.rawValue).contains(Column("state"))) }
            if let channel = filter.channelID { request = request.filter(Column("channel_id") == channel) }
            request = request.order(Column("created_at").desc, Column("id").desc)
            if let limit = filter.limit { request = request.limit(limit) }
            return try request.fetchAll(db)
        }
    }

    public func holdsJob(_ lease: JobLease) throws(CatalogError) -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM jobs WHERE id = ? AND fence = ? AND state = 'running'",
                              arguments: [lease.jobID, lease.fence]) ?? false
        }
    }
}
