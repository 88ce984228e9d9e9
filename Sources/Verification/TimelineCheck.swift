/// What a track's block timestamps say about its timeline.
public struct TimelineReport: Codable, Sendable, Equatable {
    /// The track's frame interval, as its steps say (nil with fewer than two frames).
    public var frameIntervalMilliseconds: Double?
    /// Steps between consecutive blocks (up to a second) that are more than `tolerance` off a
    /// whole number of frame intervals. Zero for a steady sender recorded faithfully.
    public var offGridSteps = 0
    /// The off-grid step lengths, most frequent first (at most five): "46 ms x3".
    public var offGridSamples: [String] = []
    public var largestStepMilliseconds: Int64?
    /// Blocks whose timestamp is below the previous block's.
    public var backwardSteps = 0
    /// Blocks with the same timestamp as the previous block.
    public var repeatedTimestamps = 0

    public var isMonotonic: Bool { backwardSteps == 0 && repeatedTimestamps == 0 }

    enum CodingKeys: String, CodingKey {
        case frameIntervalMilliseconds = "frame_interval_ms", offGridSteps = "off_grid_steps", offGridSamples = "off_grid_samples"
        case largestStepMilliseconds = "largest_step_ms", backwardSteps = "backward_steps", repeatedTimestamps = "repeated_timestamps"
    }
}

/// Checks a track's block-to-block steps against its frame grid, in constant memory: steps up
/// to a second go into a histogram; at the end the grid is the mean of the steps near the
/// median step (33 and 34 ms for 30 fps average to 33.3), and a step is on the grid when it is
/// within `tolerance` of a whole number of intervals (a lost frame makes a double step, not
/// an off-grid one). A sender whose frame rate varies (screen sharing) has off-grid steps by
/// nature: they are reported, not an error.
struct TimelineCheck {
    static let toleranceMilliseconds = 2.0
    static let histogramMilliseconds = 1_000
    private var histogram = [Int](repeating: 0, count: TimelineCheck.histogramMilliseconds + 1)
    private var last: Int64?
    private(set) var report = TimelineReport()

    mutating func add(_ timecode: Int64) {
        defer { last = max(last ?? timecode, timecode) }
        guard let last else { return }
        let (step, overflow) = timecode.subtractingReportingOverflow(last)
        guard !overflow else {
            report.backwardSteps += timecode < last ? 1 : 0
            return
        }
        if step < 0 { report.backwardSteps += 1 }
        if step == 0 { report.repeatedTimestamps += 1 }
        if step > 0 {
            report.largestStepMilliseconds = max(report.largestStepMilliseconds ?? step, step)
            if step <= Int64(Self.histogramMilliseconds) { histogram[Int(step)] += 1 }
        }
    }

    /// The report, with the grid judged from every step seen.
    func finished() -> TimelineReport {
        var result = report
        let total = histogram.reduce(0, +)
        guard total > 0 else { return result }
        var seen = 0
        var median = 1
        for (step, count) in histogram.enumerated() {
            seen += count
            if seen * 2 >= total {
                median = step
                break
            }
        }
        var near = (sum: 0, count: 0)
        for step in max(1, median - 3)...min(Self.histogramMilliseconds, median + 3) {
            near.sum += step * histogram[step]
            near.count += histogram[step]
        }
        let interval = Double(near.sum) / Double(max(1, near.count))
        result.frameIntervalMilliseconds = (interval * 10).rounded() / 10
        var offGrid: [(step: Int, count: Int)] = []
        for (step, count) in histogram.enumerated() where count > 0 {
            let intervals = max(1, (Double(step) / interval).rounded())
            if abs(Double(step) - intervals * interval) > Self.toleranceMilliseconds { offGrid.append((step, count)) }
        }
        result.offGridSteps = offGrid.reduce(0) { $0 + $1.count }
        result.offGridSamples = offGrid.sorted { $0.count > $1.count || ($0.count == $1.count && $0.step < $1.step) }.prefix(5)
            .map { "\($0.step) ms x\($0.count)" }
        return result
    }
}
