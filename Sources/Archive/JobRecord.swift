import GRDB

/// Where a recording job is (`jobs.state`).
public enum JobState: String, Codable, Sendable, CaseIterable, DatabaseValueConvertible {
    /// Waiting for a worker with capacity.
    case queued
    /// A worker leased it and runs its `recbot join`; when the lease runs out another worker
    /// takes it over (failover).
    case running
    /// Its recording ended: `exitStatus` and `endReason` say how.
    case ended
    /// Stopped before any worker started it.
    case cancelled

    public var isActive: Bool { self == .queued || self == .running }
}

/// One recording the service was asked for (`jobs`), by a Sora webhook or an API call. Times
/// are Unix milliseconds. `id` is also the recbot session id of its recording.
public struct JobRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "jobs"

    public var id: String
    public var channelID: String
    public var soraSessionID: String?
    public var origin: JobOrigin
    public var rule: String?
    /// How to record, as JSON (the service's `JobOptions`): the catalog stores it and never reads it.
    public var options: String
    public var state: JobState = .queued
    public var createdAt: Int64
    public var expiresAt: Int64?
    public var stopRequestedAt: Int64?
    public var stopReason: String?
    public var leaseOwner: String?
    public var leaseUntil: Int64 = 0
    /// Grows by one at every claim; writes that carry an older value are refused.
    public var fence: Int64 = 0
    public var workerHost: String?
    public var startedAt: Int64?
    public var endedAt: Int64?
    public var exitStatus: Int?
    public var endReason: String?

    public init(id: String, channelID: String, soraSessionID: String? = nil, origin: JobOrigin, rule: String? = nil, options: String,
                createdAt: Int64, expiresAt: Int64? = nil) {
        (self.id, self.channelID, self.soraSessionID, self.origin, self.rule) = (id, channelID, soraSessionID, origin, rule)
        (self.options, self.createdAt, self.expiresAt) = (options, createdAt, expiresAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, origin, rule, options, state, fence
        case channelID = "channel_id", soraSessionID = "sora_session_id", createdAt = "created_at", expiresAt = "expires_at"
        case stopRequestedAt = "stop_requested_at", stopReason = "stop_reason", leaseOwner = "lease_owner", leaseUntil = "lease_until"
        case workerHost = "worker_host", startedAt = "started_at", endedAt = "ended_at", exitStatus = "exit_status", endReason = "end_reason"
    }
}

/// Who asked for a job.
public enum JobOrigin: String, Codable, Sendable, DatabaseValueConvertible {
    /// A Sora session webhook matched one of the service's rules.
    case webhook
    /// `POST /recordings`.
    case api
}

/// What a worker asks of the jobs table when it looks for work.
public struct JobClaim: Sendable {
    /// This worker (unique per process): the leases' owner.
    public var owner: String
    public var host: String
    public var now: Int64
    public var leaseUntil: Int64
    /// At most this many jobs (the worker's free capacity).
    public var limit: Int

    public init(owner: String, host: String, now: Int64, leaseUntil: Int64, limit: Int) {
        (self.owner, self.host, self.now, self.leaseUntil, self.limit) = (owner, host, now, leaseUntil, limit)
    }
}

/// A lease held: the job and the fence its writes carry.
public struct JobLease: Sendable, Equatable, Hashable {
    public var jobID: String
    public var owner: String
    public var fence: Int64

    public init(jobID: String, owner: String, fence: Int64) {
        (self.jobID, self.owner, self.fence) = (jobID, owner, fence)
    }
}

/// What a renewal learned.
public enum JobRenewal: Sendable, Equatable {
    /// Still this worker's, until the new time; `stopRequested` when someone asked it to stop.
    case held(stopRequested: Bool)
    /// Another worker claimed it, or it ended: this worker must stop its recording now.
    case lost
}

/// How a job's recording ended, as its worker stores it.
public struct JobResult: Sendable, Equatable {
    public var endedAt: Int64
    public var exitStatus: Int?
    public var endReason: String

    public init(endedAt: Int64, exitStatus: Int?, endReason: String) {
        (self.endedAt, self.exitStatus, self.endReason) = (endedAt, exitStatus, endReason)
    }
}

/// Which jobs to list.
public struct JobFilter: Sendable {
    public var states: [JobState]?
    public var channelID: String?
    public var limit: Int?

    public init(states: [JobState]? = nil, channelID: String? = nil, limit: Int? = nil) {
        (self.states, self.channelID, self.limit) = (states, channelID, limit)
    }
}

/// The jobs table, kept by either catalog. Every change is atomic against every other worker
/// on the catalog (SQLite's write lock; PostgreSQL's row locks with SKIP LOCKED).
public protocol JobStore: AnyObject, Sendable {
    /// Adds a job; false when one for the same Sora session is there already (a webhook Sora sent again).
    func insertJob(_ job: JobRecord) throws(CatalogError) -> Bool
    /// Leases to `claim.owner` the oldest claimable jobs: queued, or running under a lease that
    /// ran out (the failover), not asked to stop and not expired. Each claim raises the fence.
    func claimJobs(_ claim: JobClaim) throws(CatalogError) -> [JobRecord]
    /// Extends the lease while `lease` still holds it.
    func renewJob(_ lease: JobLease, until: Int64) throws(CatalogError) -> JobRenewal
    /// Stores how the recording ended, only while `lease` still holds it: false when it does not.
    func finishJob(_ lease: JobLease, result: JobResult) throws(CatalogError) -> Bool
    /// Gives the job up for another attempt from `until` on (its recording failed in a way a
    /// later one may not: Sora or the catalog unreachable). It stays running without an owner,
    /// so any worker claims it once `until` has passed (a higher fence: the attempt continues
    /// the session). `result` is kept as the job's last outcome until then. Only while `lease`
    /// still holds it: false when it does not.
    func deferJob(_ lease: JobLease, until: Int64, result: JobResult) throws(CatalogError) -> Bool
    /// Asks the active jobs with this id (or of this Sora session) to stop: a queued one is
    /// cancelled at once, a running one stops at its worker's next heartbeat. Returns the jobs it changed.
    func requestJobStop(id: String?, soraSessionID: String?, at time: Int64, reason: String) throws(CatalogError) -> [JobRecord]
    /// Ends jobs nobody can finish: queued or running ones past their expiry, and running ones
    /// asked to stop whose lease ran out (their worker died while stopping). Returns how many.
    func expireJobs(now: Int64) throws(CatalogError) -> Int
    func job(id: String) throws(CatalogError) -> JobRecord?
    /// Newest first.
    func jobs(_ filter: JobFilter) throws(CatalogError) -> [JobRecord]
    /// True when `lease` is the job's current one (its fence not superseded, the job not ended).
    func holdsJob(_ lease: JobLease) throws(CatalogError) -> Bool
}
