/// How often and how long to wait before retrying a request the server could not serve:
/// exponential backoff with full jitter (AWS's advice: spreads a fleet's retries apart).
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt.
    public var retries: Int
    public var baseDelaySeconds: Double
    public var maximumDelaySeconds: Double

    public init(retries: Int = 5, baseDelaySeconds: Double = 0.5, maximumDelaySeconds: Double = 20) {
        (self.retries, self.baseDelaySeconds, self.maximumDelaySeconds) = (max(0, retries), baseDelaySeconds, maximumDelaySeconds)
    }

    /// The wait before attempt `attempt + 1` (attempts count from 1), or nil to give up.
    /// `unit` is a random number in [0, 1).
    public func delay(afterAttempt attempt: Int, unit: Double) -> Double? {
        guard attempt >= 1, attempt <= retries else { return nil }
        let ceiling = min(maximumDelaySeconds, baseDelaySeconds * Double(1 << min(attempt - 1, 30)))
        return ceiling * (0.5 + unit / 2)  // half fixed, half jitter: never a busy loop
    }
}
