import DiskLayout
import Foundation
import Media
import WebM
import WireCoding

/// What a sender's recording negotiated.
public struct SenderTracks: Sendable, Equatable {
    public var videoCodec: WebMVideoCodec?
    public var audioChannels: Int?

    public init(videoCodec: WebMVideoCodec?, audioChannels: Int?) {
        self.videoCodec = videoCodec
        self.audioChannels = audioChannels
    }
}

/// Where a frame came from, so a video frame dropped here can be reported to its stream.
public struct FrameSource: Sendable, Equatable {
    public var ssrc: UInt32
    public var rtpTimestamp: UInt32

    public init(ssrc: UInt32, rtpTimestamp: UInt32) {
        self.ssrc = ssrc
        self.rtpTimestamp = rtpTimestamp
    }
}

/// Counters a recording reports in its sidecar and catalog row.
public struct RecordingStatistics: Sendable, Equatable {
    public var videoFrames = 0
    public var audioFrames = 0
    public var bytes: UInt64 = 0
    public var framesDroppedForOrder = 0
    public var framesDroppedForBackpressure = 0
    /// Frames that came after the file could not be written any more (a full disk).
    public var framesDroppedAfterWriteError = 0
    public var framesDroppedBeforeStart = 0
    /// Video frames skipped after a dropped one, until the next keyframe (they reference it).
    public var framesDroppedAwaitingKeyframe = 0
    /// Picture sizes seen on keyframes, in order of first appearance ("640x360").
    public var videoSizes: [String] = []
    /// Keyframes whose size WebM cannot hold (beyond 16,384 pixels): ignored, the file goes on.
    public var videoSizesRefused = 0
    /// Video frames that came with the timestamp of one before them (an SFU switching simulcast
    /// layers forwards both layers' keyframes of one instant): a keyframe replaces the waiting
    /// one, or goes 1 ms after the written one; a delta frame is dropped.
    public var videoFramesSuperseded = 0
    public var videoKeyframesNudged = 0
    /// The sender's video orientation where it was first known and wherever it changed (file
    /// time); empty when the sender does not tag it. The file's header has the first one.
    public var videoRotations: [VideoRotationChange] = []
    /// Where video is missing on purpose (file time): paused for overload, say.
    public var videoGaps: [VideoGap] = []

    public var framesDropped: Int {
        framesDroppedForOrder + framesDroppedForBackpressure + framesDroppedAwaitingKeyframe + framesDroppedAfterWriteError
    }

    public init() {}
}

/// Video left out between two instants of the file, and why (`cause`: "overload").
public struct VideoGap: Sendable, Equatable {
    public var startMilliseconds: Int64
    public var stopMilliseconds: Int64
    public var cause: String
}

/// The pictures turn by `rotation` from `offsetMilliseconds` of the file on.
public struct VideoRotationChange: Sendable, Equatable {
    public var offsetMilliseconds: Int64
    public var rotation: VideoRotation
}

public enum RecorderError: Error, Sendable, CustomStringConvertible {
    case unsafeConnectionID(String)
    case storage(String)
    case muxer(WebMMuxerError)

    public var description: String {
        switch self {
        case .unsafeConnectionID(let id): "connection id \(id.debugDescription) is not safe to use in a file name"
        case .storage(let detail): "recording storage failed: \(detail)"
        case .muxer(let error): "WebM muxer: \(error)"
        }
    }
}

/// Result of a finished recording, for the catalog and the report.
public struct FinishedRecording: Sendable {
    public var connectionID: String
    /// 0: the sender's only file; from 1: a split part.
    public var part: Int
    /// The name the file had while it was written (its catalog row's path until it finished).
    public var createdFilename: String
    public var filename: String
    public var sidecarFilename: String
    public var tracks: SenderTracks
    public var videoWidth: Int?
    public var videoHeight: Int?
    public var startedAtMilliseconds: Int64
    public var stoppedAtMilliseconds: Int64
    public var startOffsetSeconds: Int64
    /// The first frame's precise offset from the recording start.
    public var startOffsetMilliseconds: Int64
    public var stopOffsetSeconds: Int64
    public var durationMilliseconds: Int64
    public var size: UInt64
    public var statistics: RecordingStatistics
    /// What the media core counted for this sender's streams (loss, recovery, requests).
    public var reception: ReceiveCounters
    /// Video the sender offered in a codec WebM cannot hold (e.g. H265): not recorded.
    public var refusedVideoCodec: String?
    /// Nothing usable was recorded (the file could not be created or finished).
    public var error: String?
    /// The file is finished but cut short: a write failed mid-file (a full disk), so it ends
    /// at its last whole cluster. Its sidecar is written; the recording counts as interrupted.
    public var interruption: String?
}

extension FinishedRecording {
    /// A file known from disk and the catalog rather than from a live recorder (`recbot repair`):
    /// file time 0 is `fileStartMilliseconds`, a whole second after the recording start.
    /// `nextPartStartMilliseconds`: where the sender's next part starts, if one follows. This
    /// part's stop offset is no later (its video may run past the boundary until a keyframe,
    /// as a live cut's does), so the parts tile the timeline and hisui drops none.
    public static func known(connectionID: String, part: Int, filename: String, layout: ArchiveLayout, tracks: SenderTracks,
                             videoSize: (width: Int, height: Int)?, recordingStartMilliseconds: Int64, fileStartMilliseconds: Int64,
                             firstFrameMilliseconds: Int64, durationMilliseconds: Int64, size: UInt64, statistics: RecordingStatistics,
                             refusedVideoCodec: String?, nextPartStartMilliseconds: Int64? = nil) -> FinishedRecording {
        let startOffset = max(0, fileStartMilliseconds - recordingStartMilliseconds) / 1000
        let stopped = fileStartMilliseconds + durationMilliseconds
        var stopOffset = (stopped - recordingStartMilliseconds + 999) / 1000
        // Catalog times: checked, as a damaged catalog may hold any value.
        if let next = nextPartStartMilliseconds, case let (since, false) = next.subtractingReportingOverflow(recordingStartMilliseconds) {
            stopOffset = min(stopOffset, since / 1000)
        }
        return FinishedRecording(
            connectionID: connectionID, part: part, createdFilename: filename, filename: filename,
            sidecarFilename: layout.sidecarFilename(connectionID: connectionID, part: part), tracks: tracks,
            videoWidth: videoSize?.width, videoHeight: videoSize?.height, startedAtMilliseconds: fileStartMilliseconds,
            stoppedAtMilliseconds: stopped, startOffsetSeconds: startOffset, startOffsetMilliseconds: startOffset * 1000 + firstFrameMilliseconds,
            stopOffsetSeconds: max(startOffset, stopOffset), durationMilliseconds: durationMilliseconds,
            size: size, statistics: statistics, reception: ReceiveCounters(), refusedVideoCodec: refusedVideoCodec, error: nil, interruption: nil)
    }
}

/// Records one sender (one connection id) into `archive-<id>.webm`. Frames come in on the
/// network event loop with their media time; the muxer runs there, while creating the file and
/// writing it run on a serial queue bounded by `maximumPendingBytes` and by the process's shared
/// `WriteBudget` (beyond either, frames are dropped and counted). The file's tracks are the ones the offer gave the sender: when its
/// video starts late, the file begins with a provisional picture size that the first keyframe's
/// replaces in place.
public final class SenderRecorder: @unchecked Sendable {
    // @unchecked: mutable state is confined to the caller's event loop; file I/O belongs to
    // `file` (its own queue and lock).
    public let connectionID: String
    public private(set) var tracks: SenderTracks
    /// The video codec the offer gave this sender that WebM cannot hold (H265): refused, and said so.
    public let refusedVideoCodec: String?
    public private(set) var statistics = RecordingStatistics()
    public static let maximumPendingBytes = 32 << 20
    /// Longest cluster: what a kill can cost, beyond frames still held for recovery.
    public static let clusterMilliseconds: Int64 = 1_000
    /// Called on the caller's loop when the file is created (for the catalog's `recording` row).
    public var onFileStarted: ((SenderRecorder) -> Void)?
    /// Called on the writer queue, once, when the file cannot be created or written (with the
    /// error and its errno): the recorder stops taking frames; `finish` keeps what was written.
    public var onWriteFailed: (@Sendable (SenderRecorder, String) -> Void)?
    /// A keyframe said a size WebM cannot hold (it is ignored; called on the recorder's thread).
    public var onVideoSizeRefused: ((SenderRecorder, Int, Int) -> Void)?
    /// The file's time 0 in Unix milliseconds (a whole second after the recording start; valid once started).
    public var fileStartMilliseconds: Int64 { recordingStartMilliseconds + startOffsetSeconds * 1000 }
    /// How long audio waits for the first video keyframe before the file starts with a
    /// provisional picture size (the video track is there all the same).
    public static let videoWaitNanoseconds: Int64 = 5_000_000_000
    /// The picture size written until the first keyframe says the real one.
    public static let provisionalVideoSize = (width: 640, height: 480)
    /// How long the interleaver holds one track's frames for the other (at least as long as
    /// the media core may hold a frame to recover its packets).
    public let interleaveNanoseconds: Int64

    public let layout: ArchiveLayout
    private let recordingStartMilliseconds: Int64
    private let recordingStartTime: MonotonicTime
    private let segmentUID: [UInt8]
    private var muxer: WebMMuxer?
    private var fileOriginNanoseconds: Int64 = 0  // media time of file time 0
    private var startOffsetSeconds: Int64 = 0
    private var startOffsetMilliseconds: Int64 = 0
    private var firstFrameTime: MonotonicTime?
    private var videoSize: (width: Int, height: Int)?
    /// AV1's av1C record, from the first sequence header (WebM needs it in the track header).
    private var videoCodecPrivate: [UInt8]?
    private var codecPrivateIsProvisional = false
    private var pending: PendingFrames
    /// Frames held for interleaving or for the file to start; past this the file starts (and
    /// frames flow) whatever it waits for, so a flood cannot grow the list.
    static let maximumPendingFrames = 2_048
    /// Orientation changes listed in the sidecar (a phone turned back and forth all session long).
    static let maximumRotationChanges = 256
    private var lastWrittenNanoseconds: Int64 = -1
    /// The last video block's time in the file (ms): no two video blocks share one.
    private var lastVideoMilliseconds: Int64?
    /// Video paused for overload (`videoPaused`), and resumed but waiting for its keyframe.
    private var overloadPause: (paused: Bool, resumed: Bool)?
    static let maximumVideoGaps = 1_024
    private var hasVideoStarted = false
    private var videoNeedsKeyframe = false
    private var lastMediaNanoseconds: Int64 = 0
    private var failure: String?

    /// Creating and writing the file (internal so a test can hold its queue, as a hung disk would).
    let file: RecordingFile

    public init(connectionID: String, tracks: SenderTracks, layout: ArchiveLayout, recordingStartMilliseconds: Int64,
                recordingStartTime: MonotonicTime, segmentUID: [UInt8], interleaveNanoseconds: Int64 = 400_000_000, part: Int = 0,
                startsAt boundary: MonotonicTime? = nil, refusedVideoCodec: String? = nil, writeBudget: WriteBudget = .shared,
                clock: any TimeSource) throws(RecorderError) {
        guard ArchiveLayout.isSafeConnectionID(connectionID) else { throw .unsafeConnectionID(connectionID) }
        self.connectionID = connectionID
        self.tracks = tracks
        self.layout = layout
        self.recordingStartMilliseconds = recordingStartMilliseconds
        self.recordingStartTime = recordingStartTime
        self.segmentUID = segmentUID
        self.interleaveNanoseconds = interleaveNanoseconds
        pending = PendingFrames(interleaveNanoseconds: interleaveNanoseconds)
        self.part = part
        notBeforeSeconds = boundary.map { max(0, $0.nanoseconds - recordingStartTime.nanoseconds) / 1_000_000_000 }
        self.refusedVideoCodec = refusedVideoCodec
        file = RecordingFile(label: "recbot.recorder.\(connectionID)", maximumPendingBytes: SenderRecorder.maximumPendingBytes,
                             budget: writeBudget, clock: clock)
        file.onWriteFailed = { [unowned self] error in onWriteFailed?(self, error) }
    }

    public var isStarted: Bool { muxer != nil }
    /// Encoded media bytes received for this sender (the live bitrate is computed from it).
    public private(set) var mediaBytesReceived: UInt64 = 0
    /// Bytes the muxer has produced so far (written or queued for writing).
    public var bytesProduced: UInt64 { muxer?.statistics.bytes ?? 0 }
    public var codecSummary: String {
        [hasVideoStarted ? tracks.videoCodec?.rawValue : nil, tracks.audioChannels == nil ? nil : "OPUS"].compactMap { $0 }.joined(separator: "+")
    }
    /// 0 for the sender's only file; 1, 2… once a codec change split it into parts.
    public private(set) var part: Int
    public var filename: String { layout.mediaFilename(connectionID: connectionID, part: part) }
    /// The name the file was created under (part 0's, until the first split renames it).
    private var createdFilename: String?
    /// The file exists (its first whole cluster was written); `heldWrites` wait until then.
    private var fileOpened = false
    private var heldWrites: [(writes: [WebMWrite], releasing: Int)] = []

    /// Before the file exists its video track can still take another codec; video frames
    /// of the old one waiting for it are dropped. False once the file has started.
    public func changeVideoCodecBeforeStart(to codec: WebMVideoCodec) -> Bool {
        guard muxer == nil else { return false }
        statistics.framesDroppedBeforeStart += pending.removeVideo()
        tracks.videoCodec = codec
        (videoSize, videoCodecPrivate, codecPrivateIsProvisional, hasVideoStarted) = (nil, nil, false, false)
        return true
    }

    /// Another part follows this one from `boundary` on (the sender's video codec changed, or
    /// the connection to Sora was lost and the sender may come back after the rejoin): a
    /// first file becomes part 1, renamed when it is finished. Its stop offset is the boundary's
    /// whole second, where the next part starts (hisui drops a part that starts before the
    /// previous one stops).
    public func endAsPart(boundary: MonotonicTime) {
        if part == 0 { part = 1 }
        partBoundarySeconds = max(0, boundary.nanoseconds - recordingStartTime.nanoseconds) / 1_000_000_000
    }
    private var partBoundarySeconds: Int64?

    /// Whether finishing will leave a file: one was started, or frames wait to start it.
    public var hasMedia: Bool { muxer != nil || !pending.isEmpty }
    /// For a part that follows another: its start offset is at least this whole second, and
    /// frames before it (audio a little behind the switch) are dropped and counted.
    private let notBeforeSeconds: Int64?

    /// Adds a frame. `mediaTime` is on the recording's monotonic clock. Returns the source of a
    /// video frame that had to be dropped here (this one or an earlier one released now): its
    /// stream then needs a keyframe, and later delta frames are skipped until one comes.
    @discardableResult
    public func add(_ frame: EncodedFrame, video: Bool, mediaTime: MonotonicTime, arrival: MonotonicTime, ssrc: UInt32 = 0) -> FrameSource? {
        guard failure == nil else { return nil }
        mediaBytesReceived += UInt64(frame.data.count)
        if firstFrameTime == nil { firstFrameTime = mediaTime }
        if video {
            guard tracks.videoCodec != nil else { return nil }
            if frame.isKeyframe && tracks.videoCodec == .av1 { noteAV1Configuration(frame.data) }
            if frame.isKeyframe, let width = frame.width, let height = frame.height, width > 0, height > 0 { noteVideoSize(width, height) }
            if !hasVideoStarted {
                guard frame.isKeyframe, videoSize != nil, tracks.videoCodec != .av1 || videoCodecPrivate != nil else {
                    statistics.framesDroppedBeforeStart += 1
                    return nil
                }
                hasVideoStarted = true
            }
        } else if tracks.audioChannels == nil {
            return nil
        }
        let entry = PendingFrames.Entry(frame: WebMFrame(track: video ? .video : .audio, timestampNanoseconds: mediaTime.nanoseconds,
                                                         isKeyframe: frame.isKeyframe, data: frame.data),
                                        arrival: arrival, source: FrameSource(ssrc: ssrc, rtpTimestamp: frame.rtpTimestamp),
                                        quarterTurns: frame.quarterTurns)
        if !pending.insert(entry) { statistics.videoFramesSuperseded += 1 }
        return drain(now: arrival, force: pending.count > SenderRecorder.maximumPendingFrames)
    }

    private func noteVideoSize(_ width: Int, _ height: Int) {
        // A size from the bitstream that WebM cannot hold (beyond 16,384) would make the file
        // impossible to start and lose the sender, audio included: it counts as no size yet.
        guard WebMMuxer.videoDimensions.contains(width), WebMMuxer.videoDimensions.contains(height) else {
            statistics.videoSizesRefused += 1
            onVideoSizeRefused?(self, width, height)
            return
        }
        let text = "\(width)x\(height)"
        if !statistics.videoSizes.contains(text), statistics.videoSizes.count < 32 { statistics.videoSizes.append(text) }
        guard videoSize == nil else { return }
        videoSize = (width, height)
        // A file that started on the provisional size gets the real one in place.
        if var muxer, let writes = try? muxer.updateVideoSize(width: width, height: height) {
            self.muxer = muxer
            submit(writes, releasing: 0)
        }
    }

    /// The first sequence header gives the file its av1C; one that arrives after the file
    /// started on the provisional record replaces its fields in place (later ones travel in
    /// the blocks, where decoders read them).
    private func noteAV1Configuration(_ temporalUnit: [UInt8]) {
        guard videoCodecPrivate == nil || codecPrivateIsProvisional,
              let configuration = try? AV1CodecConfiguration(temporalUnit: temporalUnit) else { return }
        guard codecPrivateIsProvisional else {
            videoCodecPrivate = configuration.codecPrivate
            return
        }
        let fields = AV1CodecConfiguration.recordFields(configuration.sequence)
        if var muxer, let writes = try? muxer.updateVideoCodecPrivate(fields) {
            self.muxer = muxer
            submit(writes, releasing: 0)
        }
        videoCodecPrivate = fields
        codecPrivateIsProvisional = false
    }

    private var readyToStart: Bool {
        if tracks.videoCodec == nil || (videoSize != nil && (tracks.videoCodec != .av1 || videoCodecPrivate != nil)) { return true }
        guard let first = firstFrameTime else { return false }
        return pending.entries.last.map { $0.arrival.nanoseconds - first.nanoseconds >= SenderRecorder.videoWaitNanoseconds } ?? false
    }

    /// Writes what is due; returns the source of the first video frame dropped on the way.
    private func drain(now: MonotonicTime, force: Bool) -> FrameSource? {
        let bothTracks = tracks.videoCodec != nil && tracks.audioChannels != nil
        let released = pending.releasable(now: now, force: force, bothTracks: bothTracks)
        if muxer == nil {
            // The file is created with its first block ready to go: a kill between the two would
            // leave a file with no media.
            guard released > 0, force || readyToStart else { return nil }
            start()
            guard muxer != nil else { return nil }
        }
        var dropped: FrameSource?
        for entry in pending.entries.prefix(released) {
            if !write(entry.frame, quarterTurns: entry.quarterTurns, now: now), dropped == nil { dropped = entry.source }
        }
        pending.removeFirst(released)
        return dropped
    }

    private func start() {
        guard let firstFrame = pending.entries.map(\.frame.timestampNanoseconds).min() else { return }
        // File time 0 sits on a whole second after the recording start (Sora's readers use whole seconds).
        let sinceStart = max(0, firstFrame - recordingStartTime.nanoseconds)
        startOffsetSeconds = max(sinceStart / 1_000_000_000, notBeforeSeconds ?? 0)
        startOffsetMilliseconds = sinceStart / 1_000_000
        fileOriginNanoseconds = recordingStartTime.nanoseconds + startOffsetSeconds * 1_000_000_000
        var video: WebMVideoTrack?
        if let codec = tracks.videoCodec {
            let size = videoSize ?? SenderRecorder.provisionalVideoSize
            if codec == .av1 && videoCodecPrivate == nil {
                videoCodecPrivate = AV1CodecConfiguration.provisionalRecord
                codecPrivateIsProvisional = true
            }
            // The first keyframe's orientation, when the sender tags it (the pictures are not turned).
            let turns = pending.entries.first { $0.frame.track == .video && $0.frame.isKeyframe }?.quarterTurns
            video = WebMVideoTrack(codec: codec, width: size.width, height: size.height, codecPrivate: videoCodecPrivate,
                                   rotation: turns.flatMap { VideoRotation(rawValue: Int($0) * 90) })
        }
        let audio = tracks.audioChannels.map { WebMAudioTrack(opusHead: OpusHead(channelCount: UInt8(min(2, max(1, $0))))) }
        do {
            // One-second clusters: each is written whole as soon as it closes, so a kill costs
            // at most about a second of media (plus what waits for retransmissions).
            muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(video: video, audio: audio, segmentUID: segmentUID,
                                                                        maxClusterDurationMilliseconds: SenderRecorder.clusterMilliseconds,
                                                                        maximumWriterLagBytes: UInt64(SenderRecorder.maximumPendingBytes)))
        } catch {
            failure = "\(error)"
            muxer = nil
            return
        }
        // The file itself is created with its first whole cluster (`submit`).
        createdFilename = filename
    }

    /// Muxes one frame; false when it was a video frame that had to be dropped.
    private func write(_ frame: WebMFrame, quarterTurns: UInt8? = nil, now: MonotonicTime) -> Bool {
        guard muxer != nil else { return true }
        let isVideo = frame.track == .video
        if isVideo && videoNeedsKeyframe {
            guard frame.isKeyframe else {
                statistics.framesDroppedAwaitingKeyframe += 1
                return true  // already reported when the first one was dropped
            }
            videoNeedsKeyframe = false
        }
        // Before the file's time 0: before this part's start, or a frame that arrived after the
        // file started with an earlier time (a stalled track). Placing it at 0 would repeat a
        // timestamp; the archive keeps the sender's clock or drops the frame.
        if frame.timestampNanoseconds < fileOriginNanoseconds {
            statistics.framesDroppedBeforeStart += 1
            return dropped(isVideo)
        }
        var adjusted = frame
        adjusted.timestampNanoseconds = frame.timestampNanoseconds - fileOriginNanoseconds
        if isVideo, let last = lastVideoMilliseconds, adjusted.timestampNanoseconds / 1_000_000 == last {
            // Another picture of the instant already written (a layer switch whose first frame
            // was written before the second came). Repeating the block's time would fail the
            // file; the new layer's keyframe goes 1 ms later, a delta frame goes.
            statistics.videoFramesSuperseded += 1
            guard frame.isKeyframe else { return dropped(isVideo) }
            statistics.videoKeyframesNudged += 1
            adjusted.timestampNanoseconds = (last + 1) * 1_000_000
        }
        if adjusted.timestampNanoseconds < lastWrittenNanoseconds {
            // Arrived too late to keep the file in order (e.g. a long stall): never write backwards.
            statistics.framesDroppedForOrder += 1
            return dropped(isVideo)
        }
        let size = frame.data.count
        switch file.admit(size) {
        case .accepted: break
        case .queueFull:
            statistics.framesDroppedForBackpressure += 1
            return dropped(isVideo)
        case .fileFailed:
            // Nothing more can reach the file: counted, and no keyframe is asked for (one
            // would not be written either; asking would only make the sender send more).
            statistics.framesDroppedAfterWriteError += 1
            return true
        }
        do {
            // In place: a local copy would share the muxer's cluster buffer with `self.muxer`, and
            // the append would then copy the whole cluster on every frame.
            let writes = try muxer!.write(adjusted)
            lastWrittenNanoseconds = adjusted.timestampNanoseconds
            lastMediaNanoseconds = adjusted.timestampNanoseconds
            if isVideo {
                if overloadPause?.resumed == true && frame.isKeyframe { closeOverloadGap(at: adjusted.timestampNanoseconds / 1_000_000) }
                lastVideoMilliseconds = adjusted.timestampNanoseconds / 1_000_000
                noteRotation(quarterTurns, at: adjusted.timestampNanoseconds / 1_000_000)
            }
            if isVideo { statistics.videoFrames += 1 } else { statistics.audioFrames += 1 }
            submit(writes, releasing: size, now: now)
            return true
        } catch {
            file.release(size)
            statistics.framesDroppedForOrder += 1
            return dropped(isVideo)
        }
    }

    // MARK: Overload pauses

    /// The sender's video was paused for overload: what follows is a gap until a keyframe
    /// after the resume is written.
    public func videoPaused() {
        guard tracks.videoCodec != nil else { return }
        overloadPause = (paused: true, resumed: false)
    }

    public func videoResumed() {
        guard overloadPause != nil else { return }
        overloadPause = (paused: false, resumed: true)
    }

    private func closeOverloadGap(at milliseconds: Int64) {
        overloadPause = nil
        guard let start = lastVideoMilliseconds, milliseconds > start, statistics.videoGaps.count < Self.maximumVideoGaps else { return }
        statistics.videoGaps.append(VideoGap(startMilliseconds: start, stopMilliseconds: milliseconds, cause: "overload"))
    }

    private func noteRotation(_ quarterTurns: UInt8?, at milliseconds: Int64) {
        guard let quarterTurns, let rotation = VideoRotation(rawValue: Int(quarterTurns) * 90),
              statistics.videoRotations.last?.rotation != rotation,
              statistics.videoRotations.count < SenderRecorder.maximumRotationChanges else { return }
        statistics.videoRotations.append(VideoRotationChange(offsetMilliseconds: milliseconds, rotation: rotation))
    }

    /// Writes go to the file once it holds a whole cluster. Until then they wait here and the
    /// file does not exist: a kill in a file's first second (at most what the crash budget
    /// allows anyway) leaves no file without media, and no catalog row for one.
    private func submit(_ writes: [WebMWrite], releasing: Int, now: MonotonicTime? = nil) {
        guard !fileOpened else { return file.submit(writes, releasing: releasing, now: now) }
        // Held writes give their reservation back at once: the shared budget bounds what waits
        // for a disk, and a file's first cluster (bounded by the muxer) waits for nothing but time.
        file.release(releasing)
        heldWrites.append((writes, 0))
        if (muxer?.statistics.clusters ?? 0) > 0 { openFile() }
    }

    private func openFile() {
        guard !fileOpened, let createdFilename else { return }
        fileOpened = true
        onFileStarted?(self)
        // mkdir and open are blocking file-system calls: they run on the writer queue, first.
        file.create(in: layout, path: layout.path(of: createdFilename))
        for held in heldWrites { file.submit(held.writes, releasing: held.releasing) }
        heldWrites = []
    }

    private func dropped(_ isVideo: Bool) -> Bool {
        guard isVideo else { return true }
        videoNeedsKeyframe = true
        return false
    }

    /// What the file holds so far, for the catalog while recording (nil before it started).
    public func progress(now: MonotonicTime) -> (bytes: UInt64, durationMilliseconds: Int64, statistics: RecordingStatistics)? {
        guard muxer != nil else { return nil }
        return (file.length, max(0, (now.nanoseconds - fileOriginNanoseconds) / 1_000_000), statistics)
    }

    /// Ends the file: flushes frames, finalizes the WebM (Cues, Duration, sizes), fsyncs,
    /// then writes the sidecar. Blocks until the writer queue is done; call off the event loop
    /// or at shutdown.
    public func finish(stoppedAtMilliseconds: Int64, now: MonotonicTime, context: SidecarContext,
                       reception: ReceiveCounters = ReceiveCounters()) -> FinishedRecording? {
        _ = drain(now: now, force: true)  // nothing to ask for a keyframe any more
        guard let muxer else { return nil }
        openFile()  // a file shorter than its first cluster
        var durationMilliseconds = max(0, (now.nanoseconds - fileOriginNanoseconds) / 1_000_000)
        let rename = createdFilename.flatMap { $0 == filename ? nil : (layout.path(of: $0), layout.path(of: filename)) }
        let finalized = file.finalize(muxer, durationMilliseconds: max(durationMilliseconds, muxer.statistics.lastTimestampMilliseconds ?? 0),
                                      rename: rename)
        let (error, interruption, size, finalMuxer) = (finalized.error, finalized.interruption, finalized.size, finalized.muxer)
        self.muxer = finalMuxer
        statistics.bytes = size
        if interruption != nil {
            // What the file really holds: the frames of its whole clusters.
            durationMilliseconds = finalMuxer.statistics.lastTimestampMilliseconds ?? 0
            statistics.videoFrames = finalMuxer.statistics.videoFrames
            statistics.audioFrames = finalMuxer.statistics.audioFrames
        }
        if overloadPause != nil { closeOverloadGap(at: durationMilliseconds) }  // the file ends inside the pause
        let startedAt = recordingStartMilliseconds + startOffsetSeconds * 1000
        var stopOffset = max(startOffsetSeconds, partBoundarySeconds ?? (stoppedAtMilliseconds - recordingStartMilliseconds + 999) / 1000)
        if interruption != nil { stopOffset = startOffsetSeconds + (durationMilliseconds + 999) / 1000 }  // where the media really ends
        var finished = FinishedRecording(
            connectionID: connectionID, part: part, createdFilename: createdFilename ?? filename, filename: filename, sidecarFilename: layout.sidecarFilename(connectionID: connectionID, part: part),
            tracks: SenderTracks(videoCodec: statistics.videoFrames == 0 ? nil : tracks.videoCodec, audioChannels: tracks.audioChannels),
            videoWidth: videoSize?.width, videoHeight: videoSize?.height, startedAtMilliseconds: startedAt,
            stoppedAtMilliseconds: stoppedAtMilliseconds, startOffsetSeconds: startOffsetSeconds,
            startOffsetMilliseconds: startOffsetMilliseconds, stopOffsetSeconds: stopOffset,
            durationMilliseconds: durationMilliseconds, size: statistics.bytes, statistics: statistics, reception: reception,
            refusedVideoCodec: refusedVideoCodec, error: error, interruption: interruption)
        if error == nil {
            // Media first, sidecar second (the uploader queues a sidecar only once its media exists).
            do {
                try ArchiveLayout.writeJSON(Sidecar.object(finished, context: context, layout: layout),
                                            to: layout.path(of: finished.sidecarFilename))
            } catch {
                finished.error = "sidecar: \(error)"
            }
        }
        return finished
    }
}
