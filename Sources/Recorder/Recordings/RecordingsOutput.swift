import Media
import WebM

/// What the recordings ask of the session after one input: the caller (the connection's
/// pipeline, on the loop) applies all of it, so nothing here reaches back into the media core.
public struct RecordingsOutput {
    /// Recorders that left the set, to be finished off the loop (blocking file I/O).
    public var finish: [PartToFinish] = []
    /// Video streams to ask a keyframe from: a split boundary passed.
    public var keyframesWanted: [UInt32] = []
    /// Video frames a recorder had to drop: their streams must restart at a keyframe.
    public var framesLost: [FrameSource] = []
    /// What happened, for the log and the catalog (the core has no logger).
    public var events: [RecordingsEvent] = []

    public init() {}

    public var isEmpty: Bool { finish.isEmpty && keyframesWanted.isEmpty && framesLost.isEmpty && events.isEmpty }
}

/// A recorder that left the set. `isLastPart`: the sender's recording ends with it (it left, or
/// the session ended), so a split sender gets its end marker; false for a part another follows
/// (a split boundary, a codec change, a lost connection).
public struct PartToFinish {
    public let recorder: SenderRecorder
    public let isLastPart: Bool
}

public enum RecordingsEvent {
    /// A recorder (a file to be) started for a sender.
    case started(SenderRecorder)
    /// The sender id cannot be a file name: its media is not recorded (once per sender).
    case unsafeSender(String)
    /// A sender seen before (it left, or the connection was lost) is back, in a new part.
    case senderReturned(String)
    /// The sender's video codec changed: its recording goes on in part `part` (nil: none could start).
    case videoCodecChanged(sender: String, from: WebMVideoCodec?, to: WebMVideoCodec, part: Int?)
    /// No keyframe came within the wait after a split boundary: the part was cut without one.
    case cutWithoutKeyframe(sender: String, part: Int)
}

/// Called from the recorders' own threads (so they must be thread-safe): the file exists, its
/// storage failed, a keyframe named a size WebM cannot hold.
public struct RecorderHooks: Sendable {
    public var fileStarted: @Sendable (SenderRecorder) -> Void
    public var writeFailed: @Sendable (SenderRecorder, String) -> Void
    public var videoSizeRefused: @Sendable (SenderRecorder, Int, Int) -> Void

    public init(fileStarted: @escaping @Sendable (SenderRecorder) -> Void = { _ in },
                writeFailed: @escaping @Sendable (SenderRecorder, String) -> Void = { _, _ in },
                videoSizeRefused: @escaping @Sendable (SenderRecorder, Int, Int) -> Void = { _, _, _ in }) {
        self.fileStarted = fileStarted
        self.writeFailed = writeFailed
        self.videoSizeRefused = videoSizeRefused
    }
}
