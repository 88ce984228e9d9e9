/// How many jobs a worker may claim now. Capacity is counted in recordings (each a `recbot
/// join`), and optionally also in publishers, the work a recording really costs (a bench gives
/// both: docs/performance.md). A new job's publishers are unknown until it joins, so under a
/// publisher budget a worker admits one job at a time, only while the publishers it records now
/// leave room, and takes the next at a later heartbeat, once that one's senders are counted.
public enum WorkerCapacity {
    public static func claimLimit(running: Int, sessions: Int, publishers: Int?, publisherBudget: Int?) -> Int {
        let free = max(0, sessions - running)
        guard let publisherBudget else { return free }
        guard let publishers, publishers < publisherBudget else { return 0 }
        return min(free, 1)
    }
}
