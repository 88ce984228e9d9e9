import WireCoding

/// Time-split recording, as Sora's `split_duration` / `split_only`: each sender's media goes
/// into parts of `seconds` on the session's timeline (`split-archive-<id>_NNNN.webm`), and
/// unless `only`, into the whole-file archive (`archive-<id>.webm`) as well.
public struct SplitPolicy: Sendable, Equatable {
    public static let secondsRange: ClosedRange<Int64> = 1...86_400
    public var seconds: Int64
    public var only: Bool

    public init(seconds: Int64, only: Bool) {
        self.seconds = seconds
        self.only = only
    }

    /// The first boundary after `time`: boundaries sit on whole multiples of `seconds` from the
    /// recording start, the same for every sender, so parts of all senders line up.
    func boundary(after time: MonotonicTime, recordingStart: MonotonicTime) -> MonotonicTime {
        let length = seconds * 1_000_000_000
        let elapsed = max(0, time.nanoseconds - recordingStart.nanoseconds)
        return MonotonicTime(nanoseconds: recordingStart.nanoseconds + (elapsed / length + 1) * length)
    }

    /// How long past a boundary the previous part keeps taking video while it waits for a
    /// keyframe; then the cut happens anyway (the next part's video starts at its next keyframe).
    public static let keyframeWaitNanoseconds: Int64 = 3_000_000_000
}

/// A sender between two parts: audio from the boundary goes to the next part, video to the
/// previous one until the first keyframe at or after the boundary.
struct SplitCut {
    let boundary: MonotonicTime
    let previous: SenderRecorder
}
