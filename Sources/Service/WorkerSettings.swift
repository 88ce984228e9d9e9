import Foundation

/// How one `recbot serve` works its share of the jobs.
public struct WorkerSettings: Sendable {
    /// This process, as leases name it: host, pid and a random part, so a restarted worker
    /// never mistakes its predecessor's leases for its own.
    public var owner: String
    /// The host name its claims record (the catalog's `worker_host`).
    public var host: String
    /// Recordings it runs at once (`RECBOT_SERVE_CAPACITY`): each is a `recbot join` with its
    /// own sockets and files; size it from the bench (docs/performance.md), not by guess.
    public var capacity: Int
    /// Publishers its recordings may take in all (`RECBOT_SERVE_CAPACITY_PUBLISHERS`); nil:
    /// recordings alone count (`WorkerCapacity`).
    public var publisherCapacity: Int?
    /// A lease lasts this long without renewal; a worker that cannot renew within it (killed,
    /// partitioned) loses its jobs to the others. Failover takes at most about this long.
    public var leaseMilliseconds: Int64
    /// Renewals (and looks for new jobs) come this often: three chances per lease, and at
    /// least every second, so a stop asked on another worker (`session.destroyed` reaching
    /// it) ends the recording within about a second.
    public var heartbeatMilliseconds: Int64 { min(max(leaseMilliseconds / 3, 100), 1_000) }
    /// The `recbot` executable the children run (the service's own).
    public var executable: String
    /// Flags every child gets before its job's own (`--data-dir`, `--catalog`).
    public var childArguments: [String]
    /// The children's environment: the service's own, minus its secrets.
    public var childEnvironment: [String: String]

    public init(host: String, capacity: Int, leaseMilliseconds: Int64 = 10_000, executable: String, childArguments: [String],
                childEnvironment: [String: String]) {
        self.host = host
        self.capacity = capacity
        self.leaseMilliseconds = leaseMilliseconds
        self.executable = executable
        self.childArguments = childArguments
        self.childEnvironment = ChildJoin.environment(from: childEnvironment)
        var random = SystemRandomNumberGenerator()
        owner = "\(host)/\(getpid())/\(String(random.next() & 0xFFFF_FFFF, radix: 36))"
    }
}
