import DiskLayout
import Media
import WebM
import WireCoding

/// What the recording side refused or changed, for the logs and the live status.
public struct RecordingsCounters: Sendable, Equatable {
    /// Frames of senders whose id cannot be a file name.
    public var unsafeSenderFrames = 0
    /// Video codec changes that started a new part of a sender's recording.
    public var codecChanges = 0
    /// Senders that a re-offer removed (or a lost connection ended) and a later one named
    /// again: each return starts a new part.
    public var returningSenders = 0

    public init() {}
}

/// What the session's recorders produced, those that ended included: it only grows.
public struct RecordingTotals: Sendable, Equatable {
    /// Bytes of WebM produced (written, or queued to be written).
    public var bytes: UInt64 = 0
    /// Encoded media bytes taken in.
    public var mediaBytes: UInt64 = 0
    public var videoFrames = 0
    public var audioFrames = 0
    /// Frames the recorder could not take (order, backpressure, write errors, before a keyframe).
    public var framesDropped = 0
    /// Recorders (files) started.
    public var recordersStarted = 0

    public init() {}

    public mutating func add(_ recorder: SenderRecorder) {
        bytes += recorder.bytesProduced
        mediaBytes += recorder.mediaBytesReceived
        videoFrames += recorder.statistics.videoFrames
        audioFrames += recorder.statistics.audioFrames
        framesDropped += recorder.statistics.framesDropped
    }

    /// One recorder's totals (read where nothing else touches it: on the loop while it is in
    /// the set, on the finishing thread once it is finished).
    public init(_ recorder: SenderRecorder) {
        add(recorder)
    }

    /// A second copy of media already counted (the whole-file archive beside split parts):
    /// its bytes were written, and a frame it dropped is missing from it, but its frames and
    /// media are the same ones the parts took in, so they count once.
    var asCopy: RecordingTotals {
        var copy = RecordingTotals()
        copy.bytes = bytes
        copy.framesDropped = framesDropped
        return copy
    }

    static func + (lhs: RecordingTotals, rhs: RecordingTotals) -> RecordingTotals {
        var sum = lhs
        sum.bytes += rhs.bytes
        sum.mediaBytes += rhs.mediaBytes
        sum.videoFrames += rhs.videoFrames
        sum.audioFrames += rhs.audioFrames
        sum.framesDropped += rhs.framesDropped
        sum.recordersStarted += rhs.recordersStarted
        return sum
    }
}

/// The session's recordings, as a sans-IO core: one recorder per sender, whose tracks come
/// from the offer; whole frames from the media core go to their sender's current part. Frames
/// and time go in; parts to finish, keyframe wants, frames lost downstream and events come
/// out (`RecordingsOutput`), for the connection's pipeline to apply. A video codec change (WebM
/// cannot change a track's codec) retires the sender's file as split part 1 and continues in
/// the next part; a split boundary does the same (Recordings+Split.swift). Confined to the
/// session's event loop; the recorders move their file writes to their own queues.
public final class Recordings {
    public private(set) var recorders: [String: SenderRecorder] = [:]
    public private(set) var counters = RecordingsCounters()
    /// Final totals of the recorders that left the set and were finished.
    private var endedTotals = RecordingTotals()
    /// Recorders that left the set and are being finished on another thread (which writes their
    /// last frames): their totals as they left, until `finished` brings the final ones. So the
    /// metrics never read a recorder being finished, and never miss its last frames.
    private var leaving: [ObjectIdentifier: RecordingTotals] = [:]
    private var recordersStarted = 0
    private var layouts: [String: SenderLayout] = [:]
    private var refusedVideo: [String: String] = [:]
    /// What the current input produced, returned when it is done.
    var output = RecordingsOutput()
    /// Every part number of every sender (see `PartNumbers`).
    private var partNumbers: PartNumbers
    private var unsafeSendersReported: Set<String> = []
    /// Time-split recording (nil: one file per sender; parts only at codec changes and rejoins).
    public let split: SplitPolicy?
    /// Per sender: the split boundary that ends its current part.
    var nextBoundaries: [String: MonotonicTime] = [:]
    /// Senders between two split parts (see `SplitCut`).
    var cuts: [String: SplitCut] = [:]
    /// With a split that is not `only`: each sender's whole-file archive (part 0).
    var wholeFiles: [String: SenderRecorder] = [:]
    /// The whole-file archives, running or being finished: their media is counted by the parts.
    var wholeFileCopies: Set<ObjectIdentifier> = []
    /// Senders whose whole-file archive ended (a codec change, a lost connection, a re-offer
    /// without them): its name is taken, so it does not resume; the split parts carry on.
    var wholeFileEnded: Set<String> = []
    private let archive: ArchiveLayout
    private let recordingStartMilliseconds: Int64
    let recordingStartTime: MonotonicTime
    private let interleaveNanoseconds: Int64
    private let clock: any TimeSource
    /// Segment UIDs come from here (injected like time, so a simulated session is repeatable).
    private let random: any RandomSource
    private let hooks: RecorderHooks

    public init(archive: ArchiveLayout, recordingStartMilliseconds: Int64, recordingStartTime: MonotonicTime, interleaveNanoseconds: Int64,
                split: SplitPolicy? = nil, clock: any TimeSource, random: any RandomSource,
                hooks: RecorderHooks = RecorderHooks(), continuing prior: PriorParts = PriorParts()) {
        self.archive = archive
        self.split = split
        self.clock = clock
        self.random = random
        self.hooks = hooks
        self.recordingStartMilliseconds = recordingStartMilliseconds
        self.recordingStartTime = recordingStartTime
        self.interleaveNanoseconds = interleaveNanoseconds
        partNumbers = PartNumbers(first: split == nil ? 0 : 1, continuing: prior)
        wholeFileEnded = prior.hadWholeFile
    }

    /// Hands out what the input produced.
    private func takeOutput() -> RecordingsOutput {
        defer { output = RecordingsOutput() }
        return output
    }

    /// A part another follows: finished by the caller without a split end marker.
    func retire(_ recorder: SenderRecorder) {
        output.finish.append(PartToFinish(recorder: recorder, isLastPart: false))
    }

    /// The senders the (re-)negotiation names, and the video codecs it refused per sender. The
    /// recorders of senders that are gone are finished as their last parts.
    public func update(senders: [String: SenderLayout], refusedVideo: [String: String] = [:], now: MonotonicTime) -> RecordingsOutput {
        layouts = senders
        self.refusedVideo = refusedVideo
        let gone = recorders.filter { senders[$0.key] == nil }
        for (sender, recorder) in gone {
            endCut(sender)
            recorders[sender] = nil
            nextBoundaries[sender] = nil
            leave(recorder)
            if !recorder.hasMedia { partNumbers.giveBack(sender, part: recorder.part) }
        }
        let ended = Array(gone.values) + endWholeFiles { senders[$0] == nil }
        output.finish += ended.map { PartToFinish(recorder: $0, isLastPart: true) }
        return takeOutput()
    }

    /// The connection to Sora failed: every recorder ends, each file as a split part, and a
    /// sender seen again after the rejoin continues in its next part. `boundary`: the last
    /// frame the connection received; each part stops at its whole second, which the next
    /// part cannot start before (hisui drops a part that starts before the previous stops).
    public func endForInterruption(boundary: MonotonicTime, now: MonotonicTime) -> RecordingsOutput {
        for sender in Array(cuts.keys) { endCut(sender) }
        let ended = Array(recorders.values)
        recorders.removeAll()
        nextBoundaries.removeAll()
        for recorder in ended {
            leave(recorder)
            // A recorder that never had media (a part waiting for its first keyframe after a
            // boundary, say) leaves no file: its number is handed out again.
            guard recorder.hasMedia else {
                partNumbers.giveBack(recorder.connectionID, part: recorder.part)
                continue
            }
            endAsPart(recorder, boundary: boundary)
        }
        output.finish += (ended + endWholeFiles { _ in true }).map { PartToFinish(recorder: $0, isLastPart: false) }
        return takeOutput()
    }

    /// The session ends: every recorder leaves the set (on the loop) and is finished as its
    /// sender's last part.
    public func endAll(now: MonotonicTime) -> RecordingsOutput {
        for sender in Array(cuts.keys) { endCut(sender) }
        let ended = Array(recorders.values)
        recorders.removeAll()
        for recorder in ended { leave(recorder) }
        output.finish += (ended + endWholeFiles { _ in true }).map { PartToFinish(recorder: $0, isLastPart: true) }
        return takeOutput()
    }

    func leave(_ recorder: SenderRecorder) {
        let id = ObjectIdentifier(recorder)
        leaving[id] = wholeFileCopies.contains(id) ? RecordingTotals(recorder).asCopy : RecordingTotals(recorder)
    }

    /// A recorder that left was finished with these totals.
    public func finished(_ recorder: ObjectIdentifier, totals: RecordingTotals) {
        guard leaving.removeValue(forKey: recorder) != nil else { return }
        endedTotals = endedTotals + (wholeFileCopies.remove(recorder) != nil ? totals.asCopy : totals)
    }

    /// Everything produced so far, by current and ended recorders.
    public var totals: RecordingTotals {
        var result = recorders.values.reduce(into: leaving.values.reduce(endedTotals, +)) { $0.add($1) }
        for whole in wholeFiles.values { result = result + RecordingTotals(whole).asCopy }
        result.recordersStarted = recordersStarted
        return result
    }

    /// Records frames from the media core, each at the time it was completed.
    /// `sender`'s video was paused for overload, or resumed (its file notes the gap).
    public func videoPaused(sender: String) { recorders[sender]?.videoPaused() }
    public func videoResumed(sender: String) { recorders[sender]?.videoResumed() }

    public func add(_ frames: [ReceivedFrame]) -> RecordingsOutput {
        for frame in frames {
            if let lost = add(frame, now: frame.completedAt) { output.framesLost.append(lost) }
        }
        return takeOutput()
    }

    /// Records a frame; returns the source of a video frame dropped here, whose stream must then
    /// wait for (and ask for) a keyframe.
    private func add(_ received: ReceivedFrame, now: MonotonicTime) -> FrameSource? {
        guard var recorder = recorder(for: received.sender) else { return nil }
        let video = received.kind == .video
        if video, let current = recorder.tracks.videoCodec, let incoming = WebMVideoCodec(sdpName: received.codec), incoming != current {
            guard let next = nextPart(after: recorder, videoCodec: incoming, at: received.mediaTime) else { return nil }
            recorder = next
        }
        if split != nil { return addSplit(received, current: recorder, now: now) }
        return recorder.add(received.frame, video: video, mediaTime: received.mediaTime, arrival: now, ssrc: received.ssrc)
    }

    /// A new codec before the file started just changes the track; after, the file becomes
    /// part 1 (or stays the part it was) and the next part starts.
    private func nextPart(after current: SenderRecorder, videoCodec: WebMVideoCodec, at boundary: MonotonicTime) -> SenderRecorder? {
        // Nothing in the old codec goes on past the change: not the part a split boundary is
        // cutting (it would take the new codec's frames until a keyframe), and not the
        // whole-file archive, which cannot change a track's codec either (unless it has no
        // media yet), however far the current part got.
        endCut(current.connectionID)
        for whole in endWholeFileOnCodecChange(current.connectionID, to: videoCodec) { retire(whole) }
        if current.changeVideoCodecBeforeStart(to: videoCodec) { return current }
        endAsPart(current, boundary: boundary)
        retire(current)
        recorders[current.connectionID] = nil
        leave(current)
        counters.codecChanges += 1
        let tracks = SenderTracks(videoCodec: videoCodec, audioChannels: current.tracks.audioChannels)
        let next = makeRecorder(current.connectionID, tracks: tracks, startsAt: boundary)
        output.events.append(.videoCodecChanged(sender: current.connectionID, from: current.tracks.videoCodec, to: videoCodec, part: next?.part))
        return next
    }

    private func recorder(for sender: String) -> SenderRecorder? {
        if let existing = recorders[sender] { return existing }
        guard ArchiveLayout.isSafeConnectionID(sender) else {
            counters.unsafeSenderFrames += 1
            if unsafeSendersReported.insert(String(sender.prefix(80))).inserted { output.events.append(.unsafeSender(String(sender.prefix(80)))) }
            return nil
        }
        let layout = layouts[sender] ?? SenderLayout(videoCodec: nil, audioChannels: nil)
        let tracks = SenderTracks(videoCodec: layout.videoCodec.flatMap(WebMVideoCodec.init(sdpName:)), audioChannels: layout.audioChannels)
        guard tracks.videoCodec != nil || tracks.audioChannels != nil else { return nil }
        guard partNumbers.hasNumbered(sender) else { return makeRecorder(sender, tracks: tracks) }
        counters.returningSenders += 1
        output.events.append(.senderReturned(sender))
        return makeRecorder(sender, tracks: tracks)
    }

    /// Ends `recorder` as a part that another follows: a sender's only file (part 0) becomes
    /// part 1 by that, which `PartNumbers` must know before it numbers the next.
    func endAsPart(_ recorder: SenderRecorder, boundary: MonotonicTime) {
        recorder.endAsPart(boundary: boundary)
        partNumbers.inUse(recorder.connectionID, part: recorder.part)
    }

    /// A new part for `sender`, numbered by `PartNumbers`, as its current recorder.
    func makeRecorder(_ sender: String, tracks: SenderTracks, startsAt boundary: MonotonicTime? = nil) -> SenderRecorder? {
        let part = partNumbers.take(sender)
        guard let recorder = newRecorder(sender, tracks: tracks, part: part, startsAt: boundary) else {
            partNumbers.giveBack(sender, part: part)
            return nil
        }
        recorders[sender] = recorder
        return recorder
    }

    /// A recorder of `sender` numbered `part`: a new current part (above), or the whole-file
    /// archive beside split parts (part 0, not the sender's current recorder).
    func newRecorder(_ sender: String, tracks: SenderTracks, part: Int, startsAt boundary: MonotonicTime? = nil) -> SenderRecorder? {
        let uid = random.bytes(16)
        do {
            let recorder = try SenderRecorder(connectionID: sender, tracks: tracks, layout: archive,
                                              recordingStartMilliseconds: recordingStartMilliseconds, recordingStartTime: recordingStartTime,
                                              segmentUID: uid, interleaveNanoseconds: interleaveNanoseconds, part: part,
                                              startsAt: boundary, refusedVideoCodec: refusedVideo[sender], clock: clock)
            recordersStarted += 1
            recorder.onFileStarted = hooks.fileStarted
            recorder.onVideoSizeRefused = hooks.videoSizeRefused
            recorder.onWriteFailed = hooks.writeFailed
            output.events.append(.started(recorder))
            return recorder
        } catch {
            counters.unsafeSenderFrames += 1
            return nil
        }
    }
}

extension WebMVideoCodec {
    /// From an SDP encoding name (VP8, VP9, AV1, H264).
    init?(sdpName: String) {
        // Asked for every video frame: the name is folded (a new string) only when it has
        // lower-case letters, which the usual spelling has not.
        let hasLowerCase = sdpName.utf8.contains { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
        switch hasLowerCase ? sdpName.uppercased() : sdpName {
        case "VP8": self = .vp8
        case "VP9": self = .vp9
        case "AV1": self = .av1
        case "H264": self = .h264
        default: return nil
        }
    }
}
