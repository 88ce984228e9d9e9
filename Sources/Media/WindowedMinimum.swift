/// The smallest value seen over the last `window` of time, kept as a few bucket minima.
///
/// A delay floor: jitter, retransmissions and late frames only ever add delay, so the minimum
/// of (arrival − capture time) over a window follows the path's base delay plus the drift
/// between the sender's clock and ours, and ignores the rest. GStreamer's rtpjitterbuffer
/// estimates clock skew the same way (a windowed minimum of receive − send time).
struct WindowedMinimum: Sendable {
    static let bucketNanoseconds: Int64 = 5_000_000_000
    static let bucketCount = 6

    private var buckets: [(start: Int64, minimum: Int64)] = []
    private(set) var minimum: Int64?

    /// Adds a sample taken at `time`; true when the window's minimum changed.
    mutating func add(_ value: Int64, at time: Int64) -> Bool {
        let before = minimum
        if let last = buckets.last, time &- last.start < Self.bucketNanoseconds, time >= last.start {
            buckets[buckets.count - 1].minimum = min(last.minimum, value)
        } else {
            buckets.append((time, value))
            let horizon = time &- Self.bucketNanoseconds &* Int64(Self.bucketCount)
            buckets.removeAll { $0.start <= horizon || $0.start > time }
            if buckets.isEmpty { buckets.append((time, value)) }
        }
        var lowest = value
        for bucket in buckets where bucket.minimum < lowest { lowest = bucket.minimum }
        minimum = lowest
        return minimum != before
    }

    mutating func reset() {
        buckets.removeAll()
        minimum = nil
    }
}
