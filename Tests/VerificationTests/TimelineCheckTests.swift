import Testing
@testable import Verification

@Suite struct TimelineCheckTests {
    static func report(_ timecodes: [Int64]) -> TimelineReport {
        var check = TimelineCheck()
        for timecode in timecodes { check.add(timecode) }
        return check.finished()
    }

    /// 30 fps in whole milliseconds (33 and 34), with a lost frame (a double step) and a real gap.
    @Test func aSteadyTrackIsOnItsGrid() {
        var timecodes = (0..<300).map { Int64($0) * 1_000 / 30 }
        timecodes.remove(at: 100)
        timecodes += (0..<30).map { 12_000 + Int64($0) * 1_000 / 30 }
        let report = Self.report(timecodes)
        #expect(report.frameIntervalMilliseconds == 33.3)
        #expect(report.offGridSteps == 0 && report.isMonotonic, "\(report)")
        #expect(report.largestStepMilliseconds.map { $0 == 2_034 } == true, "\(report)")
    }

    /// What the issue saw: steps of 46, 29, 41 and 38 ms among 33/34, an equal timestamp, one going back.
    @Test func stepsOffTheGridRepeatsAndBackwardStepsAreCounted() {
        var timecodes = (0..<200).map { Int64($0) * 1_000 / 30 }
        timecodes[50] += 13  // 46 then 20
        timecodes[120] -= 4  // 30 then 37
        timecodes[150] = timecodes[149]  // a repeat
        timecodes[180] = timecodes[179] - 5  // backwards
        let report = Self.report(timecodes)
        #expect(report.offGridSteps >= 4, "\(report)")
        #expect(report.offGridSamples.contains { $0.hasPrefix("46 ms") } && report.offGridSamples.contains { $0.hasPrefix("30 ms") })
        #expect(report.repeatedTimestamps == 1 && report.backwardSteps == 1 && !report.isMonotonic)
    }

    @Test func opusAt20msAndExtremeValues() {
        #expect(Self.report((0..<500).map { Int64($0) * 20 }).offGridSteps == 0)
        let extreme = Self.report([.max, .min, 0, .max])
        #expect(extreme.backwardSteps >= 1)
        #expect(Self.report([]).frameIntervalMilliseconds == nil && Self.report([5]).largestStepMilliseconds == nil)
    }
}
