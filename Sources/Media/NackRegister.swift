import WireCoding

/// How hard a receive stream tries to recover lost packets before it declares them lost.
public struct RecoveryPolicy: Sendable, Equatable {
    /// Send NACKs at all (only where the offer allows `nack` for the codec).
    public var nackEnabled: Bool
    /// A missing packet is given up this long after its gap was first seen (the issue's ~1 s).
    public var maximumRecoveryDelayNanoseconds: Int64
    /// Without NACK, how long a gap may be plain reordering before it counts as loss.
    public var reorderDelayNanoseconds: Int64
    /// NACKs per missing packet before it is given up.
    public var maximumNacksPerPacket: Int
    /// Interval between NACKs for the same packet while no round-trip time has been measured.
    public var defaultRetryIntervalNanoseconds: Int64
    /// Missing packets tracked per stream; a larger gap is a jump, not something to recover.
    public var maximumMissingPackets: Int

    public init(nackEnabled: Bool = true, maximumRecoveryDelayNanoseconds: Int64 = 1_000_000_000, reorderDelayNanoseconds: Int64 = 100_000_000,
                maximumNacksPerPacket: Int = 10, defaultRetryIntervalNanoseconds: Int64 = 100_000_000, maximumMissingPackets: Int = 1_000) {
        self.nackEnabled = nackEnabled
        self.maximumRecoveryDelayNanoseconds = maximumRecoveryDelayNanoseconds
        self.reorderDelayNanoseconds = reorderDelayNanoseconds
        self.maximumNacksPerPacket = maximumNacksPerPacket
        self.defaultRetryIntervalNanoseconds = defaultRetryIntervalNanoseconds
        self.maximumMissingPackets = maximumMissingPackets
    }

    /// How long a gap is waited for before it is given up.
    var giveUpDelayNanoseconds: Int64 { nackEnabled ? maximumRecoveryDelayNanoseconds : reorderDelayNanoseconds }
}

/// The missing sequence numbers of one stream (RFC 4585 generic NACK, receiver side): each is
/// NACKed as soon as its gap is seen (after the stream's reorder wait, 0 on a path that does
/// not reorder), again after the retry interval, then at a spacing that
/// outlasts senders' repeat filters, up to a bounded number of NACKs, and given up only when the maximum recovery delay has passed, never when its NACKs
/// are spent: a retransmission that a busy sender or a reordering path (120 ms of jitter)
/// delays past the last of ten short, RTT-based intervals is still on its way, and still taken. Sequence numbers are the stream's extended
/// (64-bit) ones; entries stay sorted, and since gaps are found in sequence order the oldest
/// entry is always first.
struct NackRegister {
    struct Entry {
        var sequence: Int64
        var firstMissing: MonotonicTime
        /// When the first NACK is due: after the stream's reorder wait (`ReorderWait`).
        var firstNackDue: MonotonicTime
        var lastNack: MonotonicTime?
        var nacks: Int
    }

    private(set) var entries: [Entry] = []
    let policy: RecoveryPolicy
    /// How late this stream's reordered packets come: a new gap's first NACK waits that long.
    private(set) var reorder: ReorderWait

    init(policy: RecoveryPolicy) {
        self.policy = policy
        reorder = ReorderWait(maximumNanoseconds: policy.reorderDelayNanoseconds)
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Registers `range` as missing. Returns false (registering nothing) when it would exceed the bound.
    mutating func markMissing(_ range: Range<Int64>, now: MonotonicTime) -> Bool {
        guard !range.isEmpty else { return true }
        guard range.count <= policy.maximumMissingPackets - entries.count else { return false }
        entries.append(contentsOf: newEntries(range, now: now))
        return true
    }

    /// Registers `range`, which lies before every entry (a stream's start moved back), as missing.
    mutating func markMissing(before range: Range<Int64>, now: MonotonicTime) -> Bool {
        guard !range.isEmpty else { return true }
        guard range.count <= policy.maximumMissingPackets - entries.count, range.upperBound <= entries.first?.sequence ?? .max else { return false }
        entries.insert(contentsOf: newEntries(range, now: now), at: 0)
        return true
    }

    /// `range` gone missing at `now`: each first NACKed after the stream's current reorder wait.
    private func newEntries(_ range: Range<Int64>, now: MonotonicTime) -> [Entry] {
        let due = now.adding(nanoseconds: reorder.wait(now: now))
        return range.map { Entry(sequence: $0, firstMissing: now, firstNackDue: due, lastNack: nil, nacks: 0) }
    }

    /// A missing packet came by itself, not resent: the path reorders this much.
    mutating func reordered(_ entry: Entry, now: MonotonicTime) {
        reorder.reordered(lateness: now.nanoseconds - entry.firstMissing.nanoseconds, now: now)
    }

    func contains(_ sequence: Int64) -> Bool { index(of: sequence) != nil }

    /// Removes `sequence` when it was missing; returns the entry (for recovery statistics).
    mutating func arrived(_ sequence: Int64) -> Entry? {
        guard let first = entries.first, sequence >= first.sequence, let index = index(of: sequence) else { return nil }
        return entries.remove(at: index)
    }

    /// Forgets everything up to and including `sequence` (given up or skipped); returns how many.
    mutating func removeThrough(_ sequence: Int64) -> Int {
        let count = entries.prefix { $0.sequence <= sequence }.count
        entries.removeFirst(count)
        return count
    }

    mutating func removeAll() { entries.removeAll(keepingCapacity: false) }

    /// The newest sequence number whose recovery time is up, if any: everything up to it is lost.
    func expired(now: MonotonicTime) -> Int64? {
        var last: Int64?
        for entry in entries {
            guard isExpired(entry, now: now) else { break }
            last = entry.sequence
        }
        return last
    }

    /// Sequence numbers to NACK now, marking them as NACKed. One the session's budget holds
    /// back stays due, and is asked for when the budget allows.
    mutating func due(now: MonotonicTime, retryInterval: Int64, budget: inout FeedbackBudget) -> [Int64] {
        guard policy.nackEnabled else { return [] }
        var result: [Int64] = []
        for index in entries.indices {
            let entry = entries[index]
            guard entry.nacks < policy.maximumNacksPerPacket else { continue }
            if entry.nacks == 0 && now < entry.firstNackDue { continue }
            if let last = entry.lastNack, now.nanoseconds - last.nanoseconds < Self.backoff(retryInterval, after: entry.nacks) { continue }
            guard budget.allowNack(isRetry: entry.nacks > 0, now: now) else {
                if entry.nacks == 0 { break }  // not even a first NACK fits: nothing later will
                continue
            }
            entries[index].lastNack = now
            entries[index].nacks += 1
            result.append(entry.sequence)
        }
        return result
    }

    /// When something next becomes due or expires.
    func nextDeadline(retryInterval: Int64) -> MonotonicTime? {
        guard let first = entries.first else { return nil }
        var deadline = first.firstMissing.adding(nanoseconds: policy.giveUpDelayNanoseconds)
        guard policy.nackEnabled else { return deadline }
        for entry in entries where entry.nacks < policy.maximumNacksPerPacket {
            let next = entry.lastNack.map { $0.adding(nanoseconds: Self.backoff(retryInterval, after: entry.nacks)) } ?? entry.firstNackDue
            if next < deadline { deadline = next }
        }
        return deadline
    }

    /// The wait before the next NACK of a packet already NACKed `nacks` times: the retry
    /// interval once, then at least `repeatSpacingNanoseconds`. A sender that has just resent a
    /// packet ignores NACKs for it for a while (libwebrtc for one RTT, Janus for 200 ms): with a
    /// short round trip, ten NACKs at the RTT-based interval all fell inside Janus's window, so a
    /// lost retransmission was never resent. Spaced out, they still span the recovery window.
    static func backoff(_ interval: Int64, after nacks: Int) -> Int64 {
        nacks <= 1 ? interval : max(interval, repeatSpacingNanoseconds)
    }

    static let repeatSpacingNanoseconds: Int64 = 110_000_000

    /// A packet is given up when its recovery window is over, never sooner: the answer to the
    /// last NACK may still be on its way.
    private func isExpired(_ entry: Entry, now: MonotonicTime) -> Bool {
        now.nanoseconds - entry.firstMissing.nanoseconds >= policy.giveUpDelayNanoseconds
    }

    private func index(of sequence: Int64) -> Int? {
        var low = 0
        var high = entries.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let value = entries[middle].sequence
            if value == sequence { return middle }
            if value < sequence { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }
}
