/// One stream's mapping from its (unwrapped) RTP time to its sender's NTP time, fitted over the
/// recent sender reports rather than taken from the newest one.
///
/// What we took from libwebrtc's `RtpToNtpEstimator`: keep the last 20 reports, fit a line
/// through them by least squares, refuse a report that lies far from the line, and start over
/// after a few refusals in a row (the sender's clock really jumped). What we do differently:
/// the slope is the nominal clock rate until the reports span several seconds, and a fitted
/// slope is only believed within ±0.5 % of it, because a sender that stamps its reports with
/// the last packet's RTP time (aiortc does) adds up to a frame of noise to every report, which
/// over a short span says little about the slope and a lot about nothing.
struct RTPToNTPEstimator: Sendable {
    struct Measurement: Sendable, Equatable {
        var rtp: Int64
        /// Nanoseconds of the sender's NTP clock.
        var ntp: Int64
    }

    enum Update: Equatable {
        case accepted
        /// The same report again: nothing new.
        case ignored
        /// Far from what the other reports say, or going back in time: not used.
        case outlier
        /// Several outliers in a row: the sender's clocks jumped, and the fit starts over from this report.
        case restarted
    }

    static let capacity = 20
    /// A report further than this from the fitted line is an outlier. A frame interval of
    /// stamping noise (≤ 100 ms even at 10 fps) stays inside it.
    static let outlierThreshold: Int64 = 100_000_000
    static let restartAfterOutliers = 3
    /// Reports must span this much RTP time before their slope is fitted (nanoseconds).
    static let minimumSlopeSpan: Int64 = 5_000_000_000
    static let maximumSlopeDeviation = 0.005

    let clockRate: Int
    private(set) var measurements: [Measurement] = []
    private var consecutiveOutliers = 0
    /// The fitted line: NTP = ntp0 + intercept + slope · (rtp − rtp0), in nanoseconds.
    private var line: (rtp0: Int64, ntp0: Int64, slope: Double, intercept: Double)?

    init(clockRate: Int) {
        self.clockRate = min(max(1, clockRate), 1 << 30)
    }

    var hasMapping: Bool { line != nil }
    private var nominalSlope: Double { 1e9 / Double(clockRate) }

    mutating func add(rtp: Int64, ntp: Int64) -> Update {
        guard let last = measurements.last else {
            measurements.append(Measurement(rtp: rtp, ntp: ntp))
            fit()
            return .accepted
        }
        if ntp == last.ntp && rtp == last.rtp { return .ignored }
        let predicted = self.ntp(at: rtp) ?? ntp
        if rtp <= last.rtp || ntp <= last.ntp || (predicted &- ntp).magnitude > UInt64(Self.outlierThreshold) {
            consecutiveOutliers += 1
            guard consecutiveOutliers >= Self.restartAfterOutliers else { return .outlier }
            measurements.removeAll()
            measurements.append(Measurement(rtp: rtp, ntp: ntp))
            consecutiveOutliers = 0
            fit()
            return .restarted
        }
        consecutiveOutliers = 0
        if measurements.count == Self.capacity { measurements.removeFirst() }
        measurements.append(Measurement(rtp: rtp, ntp: ntp))
        fit()
        return .accepted
    }

    mutating func reset() {
        measurements.removeAll()
        consecutiveOutliers = 0
        line = nil
    }

    /// The sender's NTP time (ns) of `rtp`, once a report was taken.
    func ntp(at rtp: Int64) -> Int64? {
        guard let line else { return nil }
        let estimate = line.intercept + line.slope * Double(rtp &- line.rtp0)
        return line.ntp0 &+ Self.clampedInteger(estimate)
    }

    /// Doubles from wire-derived values can be anything: convert without trapping.
    static func clampedInteger(_ value: Double) -> Int64 {
        guard value.isFinite else { return 0 }
        let bound = Double(Int64(1) << 62)
        return Int64(min(max(value, -bound), bound).rounded())
    }

    private mutating func fit() {
        guard let first = measurements.first else {
            line = nil
            return
        }
        // Relative to the oldest report, so the doubles stay small and exact enough.
        let points = measurements.map { (x: Double($0.rtp &- first.rtp), y: Double($0.ntp &- first.ntp)) }
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / count
        let meanY = points.reduce(0) { $0 + $1.y } / count
        var slope = nominalSlope
        let span = (points.last?.x ?? 0) * nominalSlope
        if points.count >= 3, span >= Double(Self.minimumSlopeSpan) {
            let covariance = points.reduce(0) { $0 + ($1.x - meanX) * ($1.y - meanY) }
            let variance = points.reduce(0) { $0 + ($1.x - meanX) * ($1.x - meanX) }
            let fitted = variance > 0 ? covariance / variance : nominalSlope
            if abs(fitted / nominalSlope - 1) <= Self.maximumSlopeDeviation { slope = fitted }
        }
        line = (first.rtp, first.ntp, slope, meanY - slope * meanX)
    }
}
