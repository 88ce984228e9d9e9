import Archive
import Foundation
import Logging
import NIOPosix
import Synchronization
import WireCoding

/// Delivers the outbox, beside the recording and never inside it (the recording only writes
/// rows). Each pass claims the rows that may go now (`CatalogStore.claimWebhooks`: the oldest
/// pending row of each recording and URL, due, under a lease no other process holds, only
/// rows of this process's credentials, a few per URL) and sends them at once, each within
/// its own limit; a failure is retried after `RetrySchedule`'s delay until the row's window
/// ends (then `failed`). Any number of dispatchers, in one process or across a fleet on one
/// PostgreSQL catalog, share an outbox without sending a row twice (but for a request a kill
/// cut off, whose lease then runs out) or out of its recording's order.
public final class WebhookDispatcher: Sendable {
    public struct Report: Sendable, Equatable {
        public var delivered = 0
        public var failedAttempts = 0
        public var givenUp = 0
        /// Attempts whose outcome could not be stored: the lease had passed to another
        /// process, or the catalog refused the write (the row goes again after its lease).
        public var unrecorded = 0
        public init() {}

        static func + (lhs: Report, rhs: Report) -> Report {
            var sum = lhs
            sum.delivered += rhs.delivered
            sum.failedAttempts += rhs.failedAttempts
            sum.givenUp += rhs.givenUp
            sum.unrecorded += rhs.unrecorded
            return sum
        }
    }

    /// Rows of one URL under lease at once, across every dispatcher: a receiver that hangs
    /// holds this many requests, and the rest of the queue goes on.
    public static let leasesPerURL = 4
    /// Rows one pass claims (and sends at once).
    public static let rowsPerPass = 32
    /// Delivered rows are deleted this long after their delivery (`webhooks list` shows them until then).
    public static let deliveredRetentionMilliseconds: Int64 = 7 * 86_400_000
    /// How often a dispatcher prunes delivered rows.
    static let pruneIntervalNanoseconds: Int64 = 600_000_000_000

    private let sender: WebhookSender
    private let settings: WebhookSettings
    private let clock: any TimeSource
    private let logger: Logger
    private let jitter: @Sendable () -> Double
    /// This dispatcher's name on the leases it takes.
    let owner: String
    private let lastPrune = Mutex<MonotonicTime?>(nil)
    /// This dispatcher's own threads for catalog calls (see `onCatalog`).
    private let catalogThreads = NIOThreadPool(numberOfThreads: 2)

    public init(settings: WebhookSettings, clock: any TimeSource, logger: Logger,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.sender = WebhookSender(settings: settings)
        (self.settings, self.clock, self.logger, self.jitter) = (settings, clock, logger, jitter)
        owner = LeaseOwner(host: ProcessInfo.processInfo.hostName, pid: Int(ProcessInfo.processInfo.processIdentifier)).name
        catalogThreads.start()
    }

    public func shutdown() async {
        await sender.shutdown()
        try? await catalogThreads.shutdownGracefully()
    }

    /// The lease outlives the longest request, so a live owner always records its attempt first.
    private var leaseMilliseconds: Int64 { settings.requestTimeoutSeconds * 1000 + 30_000 }

    /// Delivers until `deadline` (monotonic; nil: until cancelled). Rows are claimed as places
    /// free up (`rowsPerPass` at once) and at least every second, so a slow or hung receiver
    /// holds only its own requests while every other row goes on. `untilIdle`: also stop when
    /// nothing of this dispatcher's is pending and due before the deadline. Each request ends
    /// by its own limit or the deadline, whichever is first; nothing is claimed with less than
    /// half a second left (a request cut that short would only count as a failure). `stop`:
    /// once requested, nothing more is claimed and the run returns when its attempts are stored.
    public func run(_ catalog: any CatalogStore, until deadline: MonotonicTime?, untilIdle: Bool, stop: DispatchStop? = nil,
                    onProgress: @escaping @Sendable (Report) -> Void = { _ in }) async -> Report {
        enum Step: Sendable { case attempted(Report), tick }
        await releaseLeasesOfDeadOwners(catalog)
        return await withTaskGroup(of: Step.self) { group in
            var (total, inFlight, ticking) = (Report(), 0, false)
            while !Task.isCancelled {
                let left = deadline.map { $0.nanoseconds - clock.now().nanoseconds }
                // Requests under way end by the deadline themselves (their limit is what was
                // left of it): they are waited for, so each attempt is stored and its lease given back.
                if let left, left <= 0, inFlight == 0 { break }
                await pruneIfDue(catalog)
                var claimed: [WebhookRecord] = []
                if (left ?? .max) >= 500_000_000, inFlight < Self.rowsPerPass, stop?.beginClaim() ?? true {
                    claimed = await claim(catalog, limit: Self.rowsPerPass - inFlight)
                    stop?.endClaim(rows: claimed.count)
                }
                for row in claimed {
                    group.addTask { .attempted(await self.attempt(row, catalog: catalog, timeoutSeconds: left.map { Double($0) / 1e9 })) }
                }
                inFlight += claimed.count
                if inFlight == 0 {
                    if stop?.isStopping == true { break }
                    guard let pause = await idlePause(catalog, left: left, untilIdle: untilIdle) else { break }
                    try? await clock.sleep(nanoseconds: Int64(clamping: pause))
                    continue
                }
                if !ticking {
                    ticking = true
                    group.addTask { [clock] in
                        try? await clock.sleep(nanoseconds: 1_000_000_000)
                        return .tick
                    }
                }
                switch await group.next() {
                case .attempted(let report):
                    inFlight -= 1
                    stop?.attemptEnded()
                    total = total + report
                    onProgress(report)
                case .tick: ticking = false
                case nil: break
                }
            }
            group.cancelAll()
            for await step in group {
                if case .attempted(let report) = step {
                    total = total + report
                    onProgress(report)
                }
            }
            return total
        }
    }

    /// A recorder killed on this host mid-request leaves its leases until they run out: a
    /// repair or join right after it (the systemd units' ExecStartPre) would wait that long.
    /// Leases whose owner was a process of this host that no longer runs are ended now.
    private func releaseLeasesOfDeadOwners(_ catalog: any CatalogStore) async {
        let (now, host) = (clock.wallClockMilliseconds(), ProcessInfo.processInfo.hostName)
        guard let owners = try? await onCatalog({ try catalog.webhookLeaseOwners(now: now) }) else { return }
        for name in owners {
            guard let lease = LeaseOwner(name: name), lease.host == host, !LocalProcess.isAlive(pid: lease.pid) else { continue }
            if let released = try? await onCatalog({ try catalog.releaseWebhookLeases(owner: name) }), released > 0 {
                logger.info("webhook leases of a recorder that no longer runs released", metadata: ["owner": "\(name)", "rows": "\(released)"])
            }
        }
    }

    /// Nothing under way: how long to wait before claiming again, or nil to stop (draining,
    /// and nothing of this dispatcher's comes due before the deadline).
    private func idlePause(_ catalog: any CatalogStore, left: Int64?, untilIdle: Bool) async -> UInt64? {
        let longest = min(1_000_000_000, left ?? .max)
        guard untilIdle else { return UInt64(longest) }
        let credentials = settings.credentialsReference
        guard let due = (try? await onCatalog({ try catalog.nextWebhookDue(credentials: credentials) })) ?? nil else { return nil }
        let wait = max(0, due - clock.wallClockMilliseconds()) * 1_000_000
        guard wait < left ?? .max else { return nil }
        // At least a little (a row behind another recording's head is due but cannot go yet),
        // at most a second (another process may deliver that head meanwhile).
        return UInt64(min(max(wait, 50_000_000), longest))
    }

    private func claim(_ catalog: any CatalogStore, limit: Int) async -> [WebhookRecord] {
        let now = clock.wallClockMilliseconds()
        let claim = WebhookClaim(owner: owner, now: now, leaseUntil: now + leaseMilliseconds, credentials: settings.credentialsReference,
                                 perURL: Self.leasesPerURL, limit: limit)
        do {
            return try await onCatalog { try catalog.claimWebhooks(claim) }
        } catch {
            logger.warning("cannot claim webhooks from the catalog", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Sends one claimed row and stores the outcome while the lease is still this dispatcher's.
    private func attempt(_ claimed: WebhookRecord, catalog: any CatalogStore, timeoutSeconds: Double?) async -> Report {
        var row = claimed
        var report = Report()
        // A row queued with no credentials goes without this process's; one queued with its
        // own (or before references were kept) goes with them.
        let failure = await sender.send(type: row.eventType, body: row.body, to: row.url, signed: row.credentials != "",
                                        timeoutSeconds: timeoutSeconds)
        let after = clock.wallClockMilliseconds()
        if Task.isCancelled {
            // Cut off by the dispatcher's own end, not the receiver: the row is as it was, its
            // lease given back, so the next dispatcher sends it at once.
            row = claimed
        } else if let failure {
            row.lastError = failure
            if after >= row.expiresAt {
                row.attempts += 1
                row.status = .failed
                report.givenUp += 1
                logger.warning("webhook given up after its retry window", metadata: ["type": "\(row.eventType)", "url": "\(row.url)", "error": "\(failure)"])
            } else {
                row.attempts += 1
                row.nextAttemptAt = after + RetrySchedule.delayMilliseconds(afterAttempt: row.attempts, unit: jitter())
                report.failedAttempts += 1
                logger.info("webhook not delivered; will retry", metadata: ["type": "\(row.eventType)", "url": "\(row.url)", "error": "\(failure)",
                                                                           "attempt": "\(row.attempts)"])
            }
        } else {
            row.attempts += 1
            row.status = .delivered
            row.deliveredAt = after
            report.delivered += 1
        }
        do {
            let (owner, outcome) = (self.owner, row)
            let stored = try await onCatalog { try catalog.recordWebhookAttempt(outcome, owner: owner) }
            if !stored {
                logger.warning("a webhook's lease passed to another process before its attempt was stored", metadata: ["id": "\(row.id ?? 0)"])
                return Report(unrecorded: 1)
            }
        } catch {
            logger.warning("cannot record a webhook attempt in the catalog; it goes again after its lease", metadata: ["error": "\(error)"])
            return Report(unrecorded: 1)
        }
        return report
    }

    /// Delivers until nothing of this dispatcher's is pending and due before `deadline`
    /// (monotonic), or the deadline passes.
    public func drain(_ catalog: any CatalogStore, until deadline: MonotonicTime) async -> Report {
        await run(catalog, until: deadline, untilIdle: true)
    }

    /// Pending rows, counted off Swift's concurrency pool.
    public func pendingCount(_ catalog: any CatalogStore) async -> Int? {
        try? await onCatalog { try catalog.webhookCounts().pending }
    }

    private func pruneIfDue(_ catalog: any CatalogStore) async {
        let now = clock.now()
        let due = lastPrune.withLock { last -> Bool in
            guard last.map({ now.nanoseconds - $0.nanoseconds >= Self.pruneIntervalNanoseconds }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        let before = clock.wallClockMilliseconds() - Self.deliveredRetentionMilliseconds
        if let pruned = try? await onCatalog({ try catalog.pruneDeliveredWebhooks(before: before) }), pruned > 0 {
            logger.info("delivered webhooks pruned", metadata: ["rows": "\(pruned)"])
        }
    }

    /// Catalog calls block (SQLite's file, PostgreSQL's wait for an answer): they run on this
    /// dispatcher's own threads, never on Swift's concurrency pool, and not on a pool shared
    /// with anything else either, where file I/O (an upload reading a recording) or another
    /// dispatcher's calls to an unreachable server could queue them past a drain's deadline
    /// (the suite once saw a 3 s finish take 14 s). The wait ignores cancellation: a dispatcher
    /// being cancelled still stores what it sent (and gives back its leases) rather than
    /// leaving rows leased until the lease runs out. The answer resumes the caller straight
    /// from the pool's thread, not through an event loop that may be busy.
    func onCatalog<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            catalogThreads.submit { state in
                guard case .active = state else { return continuation.resume(throwing: NIOThreadPoolError.ThreadPoolInactive()) }
                continuation.resume(with: Result(catching: body))
            }
        }
    }
}

extension WebhookDispatcher.Report {
    init(unrecorded: Int) {
        self.init()
        self.unrecorded = unrecorded
    }
}

extension WebhookSender {
    /// Sends what is queued (any session's) for at most `seconds`, then lets go of its connections.
    public static func drainQueued(_ catalog: any CatalogStore, settings: WebhookSettings, seconds: Double, clock: any TimeSource,
                                   logger: Logger = Logger(label: "recbot.webhooks")) async -> WebhookDispatcher.Report {
        let dispatcher = WebhookDispatcher(settings: settings, clock: clock, logger: logger)
        let report = await dispatcher.drain(catalog, until: clock.now().adding(milliseconds: Int64(seconds * 1000)))
        await dispatcher.shutdown()
        return report
    }
}

/// A lease's owner as the outbox names it, `host/pid/random`: the host and process that
/// sent, so a process on the same host can tell that the sender is gone; the random part
/// tells two dispatchers of one process apart.
struct LeaseOwner {
    var host: String
    var pid: Int
    var name: String

    init(host: String, pid: Int) {
        (self.host, self.pid) = (host, pid)
        name = "\(host)/\(pid)/\(ULID.generate(now: 0).string.suffix(16))"
    }

    init?(name: String) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, let pid = Int(parts[parts.count - 2]) else { return nil }
        (self.host, self.pid, self.name) = (parts.dropLast(2).joined(separator: "/"), pid, name)
    }
}
