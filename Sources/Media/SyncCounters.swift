/// What keeping the senders' timelines did (docs/timeline.md), summed over a session's senders.
public struct SyncCounters: Sendable, Equatable {
    public var senderReports = 0
    /// SRs refused: NTP zero, or an NTP time far from what the sender's other reports say.
    public var implausibleSenderReports = 0
    /// SRs far from the line fitted through the stream's other reports (not used).
    public var outlierSenderReports = 0
    /// Senders whose streams' reports disagree too much to align them by (left on arrival time).
    public var inconsistentSenders = 0
    /// RTP timestamps that jumped (a restart, or a step the wall clock cannot explain): the
    /// stream started a new origin.
    public var timestampDiscontinuities = 0
    /// Streams that started on their arrival time because no usable SR came within the hold.
    public var arrivalStarts = 0
    /// Frames held at a stream's start until its sender's reports could place them.
    public var framesHeldForSync = 0
    /// Times a stream's origin began to slew (a late SR, drift between the sender's clock and ours).
    public var slewCorrections = 0
    /// How far all origins moved by slewing, in total (ns).
    public var slewedNanoseconds: Int64 = 0
    /// Times a sender's delay floor moved faster than clocks drift (a better path, not a
    /// drift): kept as a bias, no stream slewed.
    public var delayFloorSteps = 0

    public init() {}

    public static func + (lhs: SyncCounters, rhs: SyncCounters) -> SyncCounters {
        var sum = lhs
        sum.senderReports += rhs.senderReports
        sum.implausibleSenderReports += rhs.implausibleSenderReports
        sum.outlierSenderReports += rhs.outlierSenderReports
        sum.inconsistentSenders += rhs.inconsistentSenders
        sum.timestampDiscontinuities += rhs.timestampDiscontinuities
        sum.arrivalStarts += rhs.arrivalStarts
        sum.framesHeldForSync += rhs.framesHeldForSync
        sum.slewCorrections += rhs.slewCorrections
        sum.slewedNanoseconds &+= rhs.slewedNanoseconds
        sum.delayFloorSteps += rhs.delayFloorSteps
        return sum
    }
}
