/// When a failed delivery is tried again: exponential backoff from 1 s, doubling to at most
/// 10 minutes, with jitter (each delay drawn from its upper half), so a receiver coming back
/// after an outage is not met by every recorder of the fleet at once.
public enum RetrySchedule {
    public static let firstDelayMilliseconds: Int64 = 1_000
    public static let longestDelayMilliseconds: Int64 = 600_000

    /// The delay after the `attempt`-th failure (1 for the first); `unit` in [0, 1) is the jitter draw.
    public static func delayMilliseconds(afterAttempt attempt: Int, unit: Double) -> Int64 {
        let doublings = min(max(0, attempt - 1), 20)
        let ceiling = min(longestDelayMilliseconds, firstDelayMilliseconds << Int64(doublings))
        let fraction = 0.5 + 0.5 * min(max(unit, 0), 1)
        return max(firstDelayMilliseconds / 2, Int64(Double(ceiling) * fraction))
    }
}
