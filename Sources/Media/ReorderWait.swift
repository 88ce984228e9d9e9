import WireCoding

/// How long a new gap waits before its first NACK: about as late as reordered packets of the
/// stream have recently come, so that a gap is asked for once it is more likely lost than late.
///
/// On a path that does not reorder this is 0, and a gap is NACKed as soon as it is seen (RFC
/// 4585 early feedback). With 30 ms of jitter, NACKing at once asked for five times the packets
/// that were lost; each answer was a duplicate to decrypt and drop, and 128 publishers cost
/// 1.6 times the CPU of a clean network. libwebrtc's NackRequester waits for reordering the same
/// way, counted in packets; here it is time, which is what the recovery window is kept in.
///
/// The estimate is a peak that decays: the latest lateness seen, falling by `decayPerSecond`,
/// so a path that stops reordering goes back to NACKing at once within a few seconds.
struct ReorderWait: Sendable, Equatable {
    /// The longest wait (a gap later than this is taken for loss whatever the path does).
    let maximumNanoseconds: Int64
    private var peak: Int64 = 0
    private var sampledAt: Int64 = 0
    /// How fast the peak falls when no packet comes that late again (ns of wait per second).
    static let decayPerSecond: Int64 = 20_000_000

    init(maximumNanoseconds: Int64) { self.maximumNanoseconds = max(0, maximumNanoseconds) }

    /// A packet the stream had counted missing came on its own, `lateness` after its gap was seen.
    mutating func reordered(lateness: Int64, now: MonotonicTime) {
        let current = wait(now: now)
        peak = min(maximumNanoseconds, max(current, lateness + lateness / 8))  // a little past the latest seen
        sampledAt = now.nanoseconds
    }

    /// The wait before a gap seen at `now` is first NACKed.
    func wait(now: MonotonicTime) -> Int64 {
        guard peak > 0 else { return 0 }
        let elapsed = max(0, now.nanoseconds &- sampledAt)
        let decayed = peak - Self.decayPerSecond * min(elapsed, 60_000_000_000) / 1_000_000_000
        return max(0, decayed)
    }
}
