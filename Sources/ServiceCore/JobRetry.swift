/// When a job's recording ended in a way a later attempt may not (Sora, a TURN relay or the
/// catalog unreachable, a connection lost for longer than rejoining tried), the job is given
/// another attempt after a backoff, on any worker, in the same session, while nobody asked it
/// to stop (`session.destroyed` ends the retries), before its expiry, and a few times at most.
public enum JobRetry {
    /// Exit statuses worth another attempt: 69 network, 80 relay unavailable, 82 catalog unavailable.
    public static let retryableStatuses: Set<Int32> = [69, 80, 82]
    /// Claims a job gets at most: the first and four retries (1, 2, 4 and 8 s after each failure).
    public static let maximumClaims: Int64 = 5
    public static let maximumDelayMilliseconds: Int64 = 60_000

    /// How long to wait before the next attempt, or nil for none. `claims`: the job's fence
    /// (how many times it was claimed, this attempt's included).
    public static func delay(exitStatus: Int32, claims: Int64, stopRequested: Bool, expiresAt: Int64?, now: Int64) -> Int64? {
        guard retryableStatuses.contains(exitStatus), !stopRequested, claims >= 1, claims < maximumClaims else { return nil }
        let delay = min(Int64(1_000) << min(claims - 1, 16), maximumDelayMilliseconds)
        if let expiresAt, now + delay >= expiresAt { return nil }
        return delay
    }
}
