import Archive
import Foundation
import Logging
import ServiceCore

/// Runs this worker's share of the jobs: every heartbeat it renews the leases of the jobs it
/// runs (stopping the ones asked to stop, killing the ones another worker took over), ends
/// jobs nobody will, and claims new ones up to its capacity, each as a child `recbot join`.
/// When a child exits, its exit status and the session's end reason become the job's result.
public actor JobSupervisor {
    struct Running {
        var lease: JobLease
        let child: ChildJoin
        var stopping = false
        /// The last successful renewal: past `lease` without one, this worker may no longer hold it.
        var renewedAt: Int64
    }

    private let store: any CatalogStore
    private let settings: WorkerSettings
    private let logger: Logger
    private let now: @Sendable () -> Int64
    private var running: [String: Running] = [:]
    private var draining = false
    private var shuttingDown = false
    /// Each child's watcher: it stores the child's result. Draining waits for them.
    private var completions: [JobLease: Task<Void, Never>] = [:]
    /// A heartbeat under way, and whether another was asked for meanwhile.
    private var ticking = false
    private var tickAgain = false

    public init(store: any CatalogStore, settings: WorkerSettings, logger: Logger,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        (self.store, self.settings, self.logger, self.now) = (store, settings, logger, now)
    }

    /// Works until `shutDown()` (or the task's cancellation), then stops every child and
    /// waits until their results are stored.
    public func run() async {
        let watchdog = Task { [weak self, settings] in
            while !Task.isCancelled {
                await self?.giveUpExpiringLeases()
                try? await Task.sleep(nanoseconds: UInt64(settings.heartbeatMilliseconds) * 500_000)
            }
        }
        defer { watchdog.cancel() }
        while !Task.isCancelled && !shuttingDown {
            await tick()
            try? await Task.sleep(nanoseconds: UInt64(settings.heartbeatMilliseconds) * 1_000_000)
        }
        await drain()
    }

    /// A worker cut off from the catalog (partitioned, or its server hangs) cannot renew, and
    /// a renewal may hang rather than fail: apart from the heartbeat, every recording whose
    /// lease was not renewed for its time less a heartbeat is stopped, so it has stopped
    /// before another worker may claim the job. Its files are finished; its late catalog
    /// writes carry a superseded segment and change nothing of the session another worker
    /// continues.
    private func giveUpExpiringLeases() {
        let time = now()
        for (id, entry) in running where time - entry.renewedAt >= settings.leaseMilliseconds - settings.heartbeatMilliseconds {
            logger.error("cannot renew the lease in time: stopping the recording before another worker may take it over",
                         metadata: ["job": "\(id)", "unrenewed_ms": "\(time - entry.renewedAt)"])
            abandon(id, entry)
        }
    }

    /// This worker no longer holds the job: its recording stops (files finished, as on a
    /// signal) and its result is not this worker's to store.
    private func abandon(_ id: String, _ entry: Running) {
        running[id] = nil
        if !entry.stopping { entry.child.stop() }  // one SIGTERM: a second would mean "exit now"
    }

    /// Stops taking jobs; `run()` then ends the recordings (within a heartbeat) and returns.
    public nonisolated func shutDown() {
        Task { await self.beginShutdown() }
    }

    private func beginShutdown() { shuttingDown = true }

    /// A heartbeat now rather than at the next beat: a job was queued or asked to stop here.
    public nonisolated func wake() {
        Task { await self.tick() }
    }

    /// One heartbeat: renew, expire, claim. Never two at once (a claim computes the free
    /// capacity before it starts children); one asked for meanwhile runs right after.
    public func tick() async {
        if ticking {
            tickAgain = true
            return
        }
        ticking = true
        defer { ticking = false }
        repeat {
            tickAgain = false
            await beat()
        } while tickAgain
    }

    private func beat() async {
        await renewLeases()
        let time = now()
        _ = try? await catalogCall { [store] in try store.expireJobs(now: time) }
        guard !draining else { return }
        await claim()
    }

    /// Stops every child (the recordings end as on a signal), waits for them, and stores
    /// their results. The leases stay renewed meanwhile: finishing the files can take longer
    /// than a lease, and no other worker may take a job that is still ending here.
    public func drain() async {
        draining = true
        let watchers = Array(completions.values)
        for (id, entry) in running where !entry.stopping {
            running[id]?.stopping = true  // one SIGTERM: a second would mean "exit now"
            entry.child.stop()
        }
        let finished = Task { for watcher in watchers { await watcher.value } }
        while !running.isEmpty && !Task.isCancelled {
            await renewLeases()
            try? await Task.sleep(nanoseconds: UInt64(settings.heartbeatMilliseconds) * 1_000_000)
        }
        await finished.value
    }

    private func renewLeases() async {
        for (id, entry) in running {
            let time = now()
            let until = time + settings.leaseMilliseconds
            let lease = entry.lease
            let renewal: Result<JobRenewal, any Error>
            do { renewal = .success(try await catalogCall { [store] in try store.renewJob(lease, until: until) }) } catch { renewal = .failure(error) }
            // The call may have taken long (a catalog that hangs): the job may have been given up meanwhile.
            guard let current = running[id], current.lease == lease else { continue }
            switch renewal {
            case .success(.lost):
                logger.warning("lease lost: another worker records this job now; stopping its recording", metadata: ["job": "\(id)"])
                abandon(id, current)
            case .success(.held(let stopRequested)):
                running[id]?.renewedAt = time
                if stopRequested, !current.stopping {
                    logger.notice("stopping job on request", metadata: ["job": "\(id)"])
                    running[id]?.stopping = true
                    current.child.stop()
                }
            case .failure(let error):
                // Cut off from the catalog: past the lease another worker may take the job,
                // so this one stops recording before it could write over the other's.
                guard time - current.renewedAt >= settings.leaseMilliseconds - settings.heartbeatMilliseconds else { continue }
                logger.error("cannot renew the lease in time: stopping the recording", metadata: ["job": "\(id)", "error": "\(error)"])
                abandon(id, current)
            }
        }
    }

    private func claim() async {
        let publishers = settings.publisherCapacity == nil ? nil : await publishersRecorded()
        let free = WorkerCapacity.claimLimit(running: running.count, sessions: settings.capacity, publishers: publishers,
                                             publisherBudget: settings.publisherCapacity)
        guard free > 0 else { return }
        let time = now()
        let claim = JobClaim(owner: settings.owner, host: settings.host, now: time, leaseUntil: time + settings.leaseMilliseconds, limit: free)
        let jobs: [JobRecord]
        do { jobs = try await catalogCall { [store] in try store.claimJobs(claim) } } catch {
            logger.error("cannot claim jobs", metadata: ["error": "\(error)"])
            return
        }
        for job in jobs { await start(job, at: time) }
    }

    private func start(_ job: JobRecord, at time: Int64) async {
        let lease = JobLease(jobID: job.id, owner: settings.owner, fence: job.fence)
        let options = (try? JobOptions(stored: job.options)) ?? JobOptions()
        let secondsLeft = job.expiresAt.map { max(($0 - time) / 1000, 0) }
        let arguments = settings.childArguments + ["--channel", job.channelID, "--session-id", job.id, "--exit-with-parent"]
            + Self.continuation(job) + options.joinArguments(secondsLeft: secondsLeft, secondsRecorded: job.startedAt.map { (time - $0) / 1000 } ?? 0)
        do {
            let child = try ChildJoin(jobID: job.id, executable: settings.executable, arguments: arguments, environment: settings.childEnvironment)
            running[job.id] = Running(lease: lease, child: child, renewedAt: time)
            logger.notice("job started", metadata: ["job": "\(job.id)", "channel": "\(job.channelID)", "pid": "\(child.pid)", "fence": "\(job.fence)"])
            completions[lease] = Task { [weak self] in
                let status = await child.status()
                await self?.childEnded(job.id, lease: lease, status: status)
            }
        } catch {
            logger.error("cannot start recbot join", metadata: ["job": "\(job.id)", "error": "\(error)"])
            let result = JobResult(endedAt: time, exitStatus: nil, endReason: "worker: cannot start recbot join: \(error)")
            _ = try? await catalogCall { [store] in try store.finishJob(lease, result: result) }
        }
    }

    /// The senders this worker's recordings record now (present in their sessions: cataloged,
    /// not left); nil when the catalog cannot say.
    private func publishersRecorded() async -> Int? {
        let ids = Array(running.keys)
        return try? await catalogCall { [store] in
            try ids.reduce(0) { sum, id in
                sum + (try store.connections(sessionID: id).filter { $0.leftAt == nil && $0.role != "recvonly" }.count)
            }
        }
    }

    /// A job claimed before (its worker died, or lost its lease) goes on in the same session,
    /// under this claim's fence: the catalog refuses the continuation once a newer claim exists.
    static func continuation(_ job: JobRecord) -> [String] {
        job.fence > 1 ? ["--continue-session", "--job-fence", "\(job.fence)"] : []
    }

    private func childEnded(_ id: String, lease: JobLease, status: Int32) async {
        defer { completions[lease] = nil }
        guard running[id]?.lease == lease else { return }  // lost meanwhile: the result is the new owner's
        let child = running[id]?.child
        let stopping = running[id]?.stopping ?? false
        running[id] = nil
        let session = try? await catalogCall { [store] in try store.session(id: id) }
        // The session's end reason is this child's only when the row is its own (a child that
        // refused to start leaves another's row, or none).
        let own = session.flatMap { $0.pid.map(Int32.init) == child?.pid && $0.hostname == ProcessInfo.processInfo.hostName ? $0 : nil }
        let reason = own?.endReason ?? child?.lastError ?? "exit \(status) before its session started"
        let result = JobResult(endedAt: now(), exitStatus: Int(status), endReason: reason)
        if !stopping, !draining, await retry(id, lease: lease, status: status, result: result) { return }
        let stored = (try? await catalogCall { [store] in try store.finishJob(lease, result: result) }) ?? false
        logger.notice("job ended", metadata: ["job": "\(id)", "exit": "\(status)", "reason": "\(reason)", "stored": "\(stored)"])
    }

    /// Gives the job another attempt when `JobRetry` says so; true when it did.
    private func retry(_ id: String, lease: JobLease, status: Int32, result: JobResult) async -> Bool {
        let time = now()
        guard let job = try? await catalogCall({ [store] in try store.job(id: id) }),
              let delay = JobRetry.delay(exitStatus: status, claims: job.fence, stopRequested: job.stopRequestedAt != nil,
                                         expiresAt: job.expiresAt, now: time),
              (try? await catalogCall({ [store] in try store.deferJob(lease, until: time + delay, result: result) })) == true
        else { return false }
        logger.warning("job failed; trying again", metadata: [
            "job": "\(id)", "exit": "\(status)", "reason": "\(result.endReason)", "in_ms": "\(delay)", "attempt": "\(job.fence + 1)",
        ])
        return true
    }

}
