/// A frame handed to the muxer: one encoded video frame, one Opus packet or one text cue.
public struct WebMFrame: Sendable {
    public var track: WebMTrackKind
    /// Presentation time on the recording's media clock (0 = the file's time 0), in nanoseconds.
    public var timestampNanoseconds: Int64
    /// For video: an independently decodable frame. Audio frames are always keyframes.
    public var isKeyframe: Bool
    public var data: [UInt8]
    /// How long a cue shows (subtitles only; written as its BlockDuration).
    public var durationNanoseconds: Int64?

    public init(track: WebMTrackKind, timestampNanoseconds: Int64, isKeyframe: Bool, data: [UInt8], durationNanoseconds: Int64? = nil) {
        self.track = track
        self.timestampNanoseconds = timestampNanoseconds
        self.isKeyframe = isKeyframe
        self.data = data
        self.durationNanoseconds = durationNanoseconds
    }

    /// A WebVTT cue: its text from `start` for `duration` (nanoseconds). WebM's WebVTT mapping
    /// puts the cue's identifier and settings lines before its text in the block (both empty here).
    public static func cue(_ text: String, start: Int64, duration: Int64) -> WebMFrame {
        WebMFrame(track: .subtitles, timestampNanoseconds: start, isKeyframe: true, data: Array("\n\n\(text)".utf8), durationNanoseconds: duration)
    }
}

/// What the caller must do with the file: append bytes at its end, or overwrite bytes already written.
public enum WebMWrite: Sendable, Equatable {
    case append([UInt8])
    case overwrite(offset: UInt64, bytes: [UInt8])
}

public enum WebMMuxerError: Error, Equatable, CustomStringConvertible {
    case noTracks
    case invalidSegmentUID(length: Int)
    case invalidVideoSize(width: Int, height: Int)
    case invalidClusterLimits(maxDurationMilliseconds: Int64, maxBytes: Int)
    case missingCodecPrivate(WebMVideoCodec)
    case codecPrivateSizeChanged
    case trackNotConfigured(WebMTrackKind)
    case emptyFrame(WebMTrackKind)
    case negativeTimestamp(WebMTrackKind, nanoseconds: Int64)
    case timestampDecreased(WebMTrackKind, previousMilliseconds: Int64, milliseconds: Int64)
    case alreadyFinalized
    case truncatedBeforeHeader(length: UInt64)
    case truncatedBeyondWriterLag(length: UInt64, oldestClusterEnd: UInt64)

    public var description: String {
        switch self {
        case .noTracks: "a WebM file needs at least one track"
        case .invalidSegmentUID(let length): "SegmentUID must be 16 bytes, got \(length)"
        case .invalidVideoSize(let w, let h): "invalid video size \(w)x\(h)"
        case .invalidClusterLimits(let d, let b): "invalid cluster limits: \(d) ms, \(b) bytes"
        case .missingCodecPrivate(let codec): "\(codec.rawValue) needs CodecPrivate"
        case .codecPrivateSizeChanged: "CodecPrivate can only be replaced in place by one of the same length"
        case .trackNotConfigured(let track): "frame for the \(track) track, which this file does not have"
        case .emptyFrame(let track): "empty \(track) frame"
        case .negativeTimestamp(let track, let ns): "negative \(track) timestamp \(ns) ns"
        case .timestampDecreased(let track, let previous, let now):
            "\(track) frame at \(now) ms is earlier than the previous block at \(previous) ms"
        case .alreadyFinalized: "the file is already finalized"
        case .truncatedBeforeHeader(let length): "only \(length) bytes reached the file: not even its header is whole"
        case .truncatedBeyondWriterLag(let length, let oldest):
            "only \(length) bytes reached the file, further back than the writer may lag (the oldest cluster remembered ends at \(oldest))"
        }
    }
}

public struct WebMMuxerConfiguration: Sendable {
    public var video: WebMVideoTrack?
    public var audio: WebMAudioTrack?
    /// A text track (compositions carry their chat in one); recordings have none.
    public var subtitles: WebMSubtitleTrack?
    /// hisui requires both app strings to be "WebRTC SFU Sora" (the format we emulate).
    public var muxingApp: String
    public var writingApp: String
    /// 16 random bytes, injected so the muxer stays deterministic.
    public var segmentUID: [UInt8]
    /// A cluster is closed after this much media time even without a keyframe.
    public var maxClusterDurationMilliseconds: Int64
    /// ... or once it holds this many bytes (bounds what a crash can lose).
    public var maxClusterBytes: Int
    /// How far the file's writer can lag behind the muxer, in bytes: `finalizeTruncated` can
    /// cut back at most this far, and clusters further back are forgotten (their cues kept).
    public var maximumWriterLagBytes: UInt64

    public init(
        video: WebMVideoTrack?, audio: WebMAudioTrack?, segmentUID: [UInt8],
        muxingApp: String = "WebRTC SFU Sora", writingApp: String = "WebRTC SFU Sora",
        maxClusterDurationMilliseconds: Int64 = 5_000, maxClusterBytes: Int = 4 << 20, maximumWriterLagBytes: UInt64 = 64 << 20,
        subtitles: WebMSubtitleTrack? = nil
    ) {
        self.video = video
        self.audio = audio
        self.subtitles = subtitles
        self.segmentUID = segmentUID
        self.muxingApp = muxingApp
        self.writingApp = writingApp
        self.maxClusterDurationMilliseconds = maxClusterDurationMilliseconds
        self.maxClusterBytes = maxClusterBytes
        self.maximumWriterLagBytes = maximumWriterLagBytes
    }
}

/// Counters of what has been written so far.
public struct WebMMuxerStatistics: Sendable, Equatable {
    public var bytes: UInt64 = 0
    public var videoFrames = 0
    public var audioFrames = 0
    public var subtitleCues = 0
    public var videoKeyframes = 0
    public var clusters = 0
    /// Timestamp of the latest block, in milliseconds (nil before the first frame).
    public var lastTimestampMilliseconds: Int64?
}

/// A sans-IO WebM muxer: frames in, file writes out, in the layout of recording-format.md:
/// EBML header, Segment { SeekHead, Void, Info, Tracks, Cluster..., Cues }.
///
/// While recording, the Segment size is unknown but every Cluster is emitted whole with a
/// known size, so a crash loses at most the cluster being buffered. `finalize` appends Cues
/// and patches Duration, the Segment size and the SeekHead in place.
public struct WebMMuxer: Sendable {
    public private(set) var configuration: WebMMuxerConfiguration
    public private(set) var statistics = WebMMuxerStatistics()
    public private(set) var isFinalized = false

    private var headerWritten = false
    private var layout = HeaderLayout()
    private var cluster = EBMLWriter(capacity: 64 << 10)
    private var clusterTimestamp: Int64?
    private var clusterIsCuePoint = false
    private var cueTrack = WebMTrackKind.video
    /// Every emitted cluster: the Cues come from it, and a file cut short by a write error is
    /// finalized at its last whole cluster.
    private var clusters: ClusterLog

    /// SeekHead with three fixed-width entries is 68 bytes; the rest of the area is Void.
    static let seekAreaLength = 96

    private struct HeaderLayout: Sendable {
        var segmentSizeOffset: UInt64 = 0
        var segmentDataOffset: UInt64 = 0
        var durationValueOffset: UInt64 = 0
        var infoPosition: UInt64 = 0
        var tracksPosition: UInt64 = 0
        /// Absolute offset of PixelWidth's 2-byte value (PixelHeight's follows 4 bytes later).
        var pixelWidthValueOffset: UInt64?
        /// Absolute offset of the video track's CodecPrivate value.
        var videoCodecPrivateValueOffset: UInt64?
    }

    /// The widths and heights a video track may have (the element is written in two bytes,
    /// and no reader we fit expects more).
    public static let videoDimensions = 1...16_384

    public init(configuration: WebMMuxerConfiguration) throws(WebMMuxerError) {
        if configuration.video == nil && configuration.audio == nil { throw .noTracks }
        if configuration.segmentUID.count != 16 { throw .invalidSegmentUID(length: configuration.segmentUID.count) }
        if let video = configuration.video {
            guard Self.videoDimensions.contains(video.width), Self.videoDimensions.contains(video.height) else {
                throw .invalidVideoSize(width: video.width, height: video.height)
            }
            if video.codec == .av1 && (video.codecPrivate ?? []).isEmpty { throw .missingCodecPrivate(.av1) }
        }
        // Block timestamps are signed 16-bit offsets from their cluster's timestamp.
        guard (1...30_000).contains(configuration.maxClusterDurationMilliseconds), configuration.maxClusterBytes > 0 else {
            throw .invalidClusterLimits(
                maxDurationMilliseconds: configuration.maxClusterDurationMilliseconds,
                maxBytes: configuration.maxClusterBytes)
        }
        self.configuration = configuration
        clusters = ClusterLog(retainedBytes: configuration.maximumWriterLagBytes + UInt64(configuration.maxClusterBytes))
    }

    /// Adds one frame. On error nothing is written and the file stays valid.
    public mutating func write(_ frame: WebMFrame) throws(WebMMuxerError) -> [WebMWrite] {
        if isFinalized { throw .alreadyFinalized }
        switch frame.track {
        case .video where configuration.video == nil, .audio where configuration.audio == nil, .subtitles where configuration.subtitles == nil:
            throw .trackNotConfigured(frame.track)
        default: break
        }
        if frame.data.isEmpty { throw .emptyFrame(frame.track) }
        if frame.timestampNanoseconds < 0 { throw .negativeTimestamp(frame.track, nanoseconds: frame.timestampNanoseconds) }
        let milliseconds = frame.timestampNanoseconds / 1_000_000
        if let previous = statistics.lastTimestampMilliseconds, milliseconds < previous {
            throw .timestampDecreased(frame.track, previousMilliseconds: previous, milliseconds: milliseconds)
        }

        var writes: [WebMWrite] = []
        if !headerWritten { writes.append(.append(makeHeader())) }

        let isVideoKeyframe = frame.track == .video && frame.isKeyframe
        if let start = clusterTimestamp {
            let tooLong = milliseconds - start >= configuration.maxClusterDurationMilliseconds
            let tooBig = cluster.count >= configuration.maxClusterBytes
            if isVideoKeyframe || tooLong || tooBig {
                writes.append(.append(closeCluster()))
            }
        }
        if clusterTimestamp == nil { openCluster(at: milliseconds, startsWithVideoKeyframe: isVideoKeyframe) }

        if frame.track == .subtitles {
            appendBlockGroup(frame, milliseconds: milliseconds)
        } else {
            appendSimpleBlock(frame, milliseconds: milliseconds)
        }
        statistics.lastTimestampMilliseconds = milliseconds
        switch frame.track {
        case .video:
            statistics.videoFrames += 1
            if frame.isKeyframe { statistics.videoKeyframes += 1 }
        case .audio:
            statistics.audioFrames += 1
        case .subtitles:
            statistics.subtitleCues += 1
        }
        return writes
    }

    /// Sets the video track's PixelWidth/PixelHeight: before the header is written it is just
    /// the configuration; afterwards the two values are overwritten in place. This lets a file
    /// whose video starts late begin with a provisional size and carry the first keyframe's.
    public mutating func updateVideoSize(width: Int, height: Int) throws(WebMMuxerError) -> [WebMWrite] {
        guard var video = configuration.video else { throw .trackNotConfigured(.video) }
        guard Self.videoDimensions.contains(width), Self.videoDimensions.contains(height) else { throw .invalidVideoSize(width: width, height: height) }
        video.width = width
        video.height = height
        configuration.video = video
        guard headerWritten, let offset = layout.pixelWidthValueOffset else { return [] }
        var bytes = EBMLWriter(capacity: 8)
        bytes.writeUInt(WebMElementID.pixelWidth, UInt64(width), width: 2)
        bytes.writeUInt(WebMElementID.pixelHeight, UInt64(height), width: 2)
        return [.overwrite(offset: offset - 2, bytes: bytes.bytes)]
    }

    /// Replaces the video track's CodecPrivate. Once the header is written only a value of the
    /// same length fits in place: an AV1 file started on the provisional four-byte av1C record
    /// gets the real record's fields when the first sequence header arrives.
    public mutating func updateVideoCodecPrivate(_ codecPrivate: [UInt8]) throws(WebMMuxerError) -> [WebMWrite] {
        guard var video = configuration.video else { throw .trackNotConfigured(.video) }
        guard !codecPrivate.isEmpty else { throw .missingCodecPrivate(video.codec) }
        if headerWritten {
            guard let offset = layout.videoCodecPrivateValueOffset, codecPrivate.count == video.codecPrivate?.count else {
                throw .codecPrivateSizeChanged
            }
            video.codecPrivate = codecPrivate
            configuration.video = video
            return [.overwrite(offset: offset, bytes: codecPrivate)]
        }
        video.codecPrivate = codecPrivate
        configuration.video = video
        return []
    }

    /// Where PixelWidth (ID B0, size 82, 2-byte value) and PixelHeight (BA 82 …) stand in Tracks.
    static func pixelSizeIndex(in tracks: [UInt8], width: Int, height: Int) -> Int? {
        index(of: [0xB0, 0x82, UInt8(width >> 8), UInt8(width & 0xFF), 0xBA, 0x82, UInt8(height >> 8), UInt8(height & 0xFF)], in: tracks)
    }

    static func index(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard !pattern.isEmpty, bytes.count >= pattern.count else { return nil }
        for index in 0...(bytes.count - pattern.count) where bytes[index..<(index + pattern.count)].elementsEqual(pattern) { return index }
        return nil
    }

    /// Emits the buffered cluster now (e.g. on a periodic flush timer).
    public mutating func flush() -> [WebMWrite] {
        guard !isFinalized, clusterTimestamp != nil else { return [] }
        return [.append(closeCluster())]
    }

    /// Ends the file: closes the cluster, appends Cues, and patches Duration, the Segment size
    /// and the SeekHead. `durationMilliseconds` defaults to the last block's timestamp.
    public mutating func finalize(durationMilliseconds: Int64? = nil) throws(WebMMuxerError) -> [WebMWrite] {
        try finish(durationMilliseconds: durationMilliseconds, includeCues: true)
    }

    private mutating func finish(durationMilliseconds: Int64?, includeCues: Bool) throws(WebMMuxerError) -> [WebMWrite] {
        if isFinalized { throw .alreadyFinalized }
        var writes: [WebMWrite] = []
        if !headerWritten { writes.append(.append(makeHeader())) }
        if clusterTimestamp != nil { writes.append(.append(closeCluster())) }

        var cuesPosition: UInt64?
        if includeCues && clusters.cues.count > 0 {
            cuesPosition = statistics.bytes - layout.segmentDataOffset
            let cues = makeCues()
            statistics.bytes += UInt64(cues.count)
            writes.append(.append(cues))
        }

        let duration = Double(max(0, durationMilliseconds ?? statistics.lastTimestampMilliseconds ?? 0))
        var durationBytes = EBMLWriter(capacity: 8)
        durationBytes.writeBigEndian(duration.bitPattern, width: 8)
        writes.append(.overwrite(offset: layout.durationValueOffset, bytes: durationBytes.bytes))

        var segmentSize = EBMLWriter(capacity: 8)
        segmentSize.writeSize(statistics.bytes - layout.segmentDataOffset, width: 8)
        writes.append(.overwrite(offset: layout.segmentSizeOffset, bytes: segmentSize.bytes))

        writes.append(.overwrite(offset: layout.segmentDataOffset, bytes: makeSeekArea(cuesPosition: cuesPosition)))
        isFinalized = true
        return writes
    }

    /// Ends a file of which only the first `length` bytes reached the disk (a write failed
    /// after that; the caller truncated the file there). Everything from the first cluster that
    /// is not whole is dropped, with its Cues; Duration is the last kept block's time. With
    /// `includeCues` false nothing is appended (a disk that is still full only takes the
    /// in-place patches). Throws when not even the header is whole (nothing can be kept), or
    /// when `length` is further back than `maximumWriterLagBytes` allows.
    public mutating func finalizeTruncated(toLength length: UInt64, includeCues: Bool = true) throws(WebMMuxerError) -> [WebMWrite] {
        if isFinalized { throw .alreadyFinalized }
        guard headerWritten, length >= headerEnd else { throw .truncatedBeforeHeader(length: length) }
        let kept: ClusterLog.Entry?
        switch clusters.truncate(toEndAtOrBefore: length) {
        case .kept(let entry, let count): (kept, statistics.clusters) = (entry, count)
        case .noCluster: (kept, statistics.clusters) = (nil, 0)
        case .beyondRetained(let oldest): throw .truncatedBeyondWriterLag(length: length, oldestClusterEnd: oldest)
        }
        statistics.bytes = kept?.end ?? headerEnd
        statistics.lastTimestampMilliseconds = kept?.lastBlockMilliseconds
        statistics.videoFrames = kept?.videoFrames ?? 0
        statistics.audioFrames = kept?.audioFrames ?? 0
        clusterTimestamp = nil
        cluster.removeAll()
        return try finish(durationMilliseconds: statistics.lastTimestampMilliseconds ?? 0, includeCues: includeCues)
    }

    /// Where the first cluster starts (the header's end), once the header is written.
    private var headerEnd: UInt64 = 0

    // MARK: - Header

    private mutating func makeHeader() -> [UInt8] {
        var out = EBMLWriter(capacity: 512)
        out.writeMaster(WebMElementID.ebml) { ebml in
            ebml.writeUInt(WebMElementID.ebmlVersion, 1)
            ebml.writeUInt(WebMElementID.ebmlReadVersion, 1)
            ebml.writeUInt(WebMElementID.ebmlMaxIDLength, 4)
            ebml.writeUInt(WebMElementID.ebmlMaxSizeLength, 8)
            ebml.writeString(WebMElementID.docType, "webm")
            ebml.writeUInt(WebMElementID.docTypeVersion, 4)
            ebml.writeUInt(WebMElementID.docTypeReadVersion, 2)
        }
        out.writeID(WebMElementID.segment)
        layout.segmentSizeOffset = UInt64(out.count)
        out.writeUnknownSize()
        layout.segmentDataOffset = UInt64(out.count)

        // Info and Tracks follow the reserved SeekHead area, so their positions are known now.
        layout.infoPosition = UInt64(Self.seekAreaLength)
        let (info, durationOffsetInInfo) = makeInfo()
        layout.durationValueOffset = layout.segmentDataOffset + layout.infoPosition + UInt64(durationOffsetInInfo)
        layout.tracksPosition = layout.infoPosition + UInt64(info.count)

        out.append(makeSeekArea(cuesPosition: nil))
        out.append(info)
        let tracks = makeTracks()
        if let video = configuration.video, let index = Self.pixelSizeIndex(in: tracks, width: video.width, height: video.height) {
            layout.pixelWidthValueOffset = layout.segmentDataOffset + layout.tracksPosition + UInt64(index + 2)
        }
        if let codecPrivate = configuration.video?.codecPrivate, !codecPrivate.isEmpty {
            var element = EBMLWriter(capacity: codecPrivate.count + 12)
            element.writeBinary(WebMElementID.codecPrivate, codecPrivate)
            if let index = Self.index(of: element.bytes, in: tracks) {
                let valueOffset = index + element.bytes.count - codecPrivate.count
                layout.videoCodecPrivateValueOffset = layout.segmentDataOffset + layout.tracksPosition + UInt64(valueOffset)
            }
        }
        out.append(tracks)
        headerWritten = true
        statistics.bytes = UInt64(out.count)
        headerEnd = statistics.bytes
        return out.bytes
    }

    /// Returns the Info element and the offset of Duration's 8-byte value inside it.
    private func makeInfo() -> ([UInt8], Int) {
        var body = EBMLWriter()
        body.writeUInt(WebMElementID.timestampScale, 1_000_000)
        body.writeString(WebMElementID.muxingApp, configuration.muxingApp)
        body.writeString(WebMElementID.writingApp, configuration.writingApp)
        body.writeBinary(WebMElementID.segmentUID, configuration.segmentUID)
        let durationElementOffset = body.count
        body.writeFloat(WebMElementID.duration, 0)
        var info = EBMLWriter()
        info.writeID(WebMElementID.info)
        info.writeSize(UInt64(body.count))
        let headerLength = info.count
        info.append(body.bytes)
        // Duration's ID is two bytes and its size one byte.
        return (info.bytes, headerLength + durationElementOffset + 3)
    }

    /// A TrackEntry's first children: number (hisui wants TrackNumber first), UID, type, no lacing.
    private static func writeTrackHead(_ entry: inout EBMLWriter, _ kind: WebMTrackKind, type: UInt64) {
        entry.writeUInt(WebMElementID.trackNumber, UInt64(kind.trackNumber))
        entry.writeUInt(WebMElementID.trackUID, UInt64(kind.trackNumber))
        entry.writeUInt(WebMElementID.trackType, type)
        entry.writeUInt(WebMElementID.flagLacing, 0)
    }

    private func makeTracks() -> [UInt8] {
        var out = EBMLWriter()
        out.writeMaster(WebMElementID.tracks) { tracks in
            if let video = configuration.video {
                tracks.writeMaster(WebMElementID.trackEntry) { entry in
                    Self.writeTrackHead(&entry, .video, type: 1)
                    entry.writeString(WebMElementID.codecID, video.codec.codecID)
                    if let codecPrivate = video.codecPrivate, !codecPrivate.isEmpty {
                        entry.writeBinary(WebMElementID.codecPrivate, codecPrivate)
                    }
                    // Fixed 2-byte values, so `updateVideoSize` can patch them in place.
                    entry.writeMaster(WebMElementID.video) { v in
                        v.writeUInt(WebMElementID.pixelWidth, UInt64(video.width), width: 2)
                        v.writeUInt(WebMElementID.pixelHeight, UInt64(video.height), width: 2)
                        if let rotation = video.rotation {
                            // A rectangular projection with a roll: how Matroska says "turn to show".
                            v.writeMaster(WebMElementID.projection) { projection in
                                projection.writeUInt(WebMElementID.projectionType, 0)
                                projection.writeFloat(WebMElementID.projectionPoseRoll, rotation.projectionRoll)
                            }
                        }
                    }
                }
            }
            if let audio = configuration.audio {
                tracks.writeMaster(WebMElementID.trackEntry) { entry in
                    Self.writeTrackHead(&entry, .audio, type: 2)
                    entry.writeString(WebMElementID.codecID, audio.codec.codecID)
                    entry.writeBinary(WebMElementID.codecPrivate, audio.opusHead.bytes)
                    if audio.opusHead.preSkip > 0 {
                        entry.writeUInt(WebMElementID.codecDelay, audio.opusHead.codecDelayNanoseconds)
                    }
                    entry.writeUInt(WebMElementID.seekPreRoll, 80_000_000)
                    entry.writeMaster(WebMElementID.audio) { a in
                        a.writeFloat(WebMElementID.samplingFrequency, audio.samplingFrequency)
                        a.writeUInt(WebMElementID.channels, UInt64(audio.opusHead.channelCount))
                    }
                }
            }
            if let subtitles = configuration.subtitles {
                tracks.writeMaster(WebMElementID.trackEntry) { entry in
                    Self.writeTrackHead(&entry, .subtitles, type: 0x11)
                    entry.writeString(WebMElementID.name, subtitles.name)
                    entry.writeString(WebMElementID.language, subtitles.language)
                    entry.writeString(WebMElementID.codecID, WebMSubtitleTrack.codecID)
                }
            }
        }
        return out.bytes
    }

    /// The SeekHead (Info, Tracks and, once known, Cues) padded with Void to `seekAreaLength`.
    private func makeSeekArea(cuesPosition: UInt64?) -> [UInt8] {
        var entries: [(UInt32, UInt64)] = [(WebMElementID.info, layout.infoPosition), (WebMElementID.tracks, layout.tracksPosition)]
        if let cuesPosition { entries.append((WebMElementID.cues, cuesPosition)) }
        var out = EBMLWriter(capacity: Self.seekAreaLength)
        out.writeMaster(WebMElementID.seekHead) { head in
            for (id, position) in entries {
                head.writeMaster(WebMElementID.seek) { seek in
                    var idBytes = EBMLWriter(capacity: 4)
                    idBytes.writeID(id)
                    seek.writeBinary(WebMElementID.seekID, idBytes.bytes)
                    // Fixed width, so the rewritten SeekHead has a predictable size.
                    seek.writeUInt(WebMElementID.seekPosition, position, width: 8)
                }
            }
        }
        out.writeVoid(totalLength: Self.seekAreaLength - out.count)
        return out.bytes
    }

    // MARK: - Clusters

    private mutating func openCluster(at milliseconds: Int64, startsWithVideoKeyframe: Bool) {
        clusterTimestamp = milliseconds
        // Cue video keyframes; in audio-only files, and while audio leads before the first video
        // frame, cue every cluster (on the audio track): a file the video never reached still has Cues.
        clusterIsCuePoint = configuration.video == nil || startsWithVideoKeyframe || statistics.videoFrames == 0
        cueTrack = startsWithVideoKeyframe ? .video : .audio
        cluster.removeAll()
    }

    private mutating func appendSimpleBlock(_ frame: WebMFrame, milliseconds: Int64) {
        let relative = Int16(milliseconds - (clusterTimestamp ?? milliseconds))
        cluster.writeID(WebMElementID.simpleBlock)
        cluster.writeSize(UInt64(frame.data.count + 4))
        cluster.append(0x80 | frame.track.trackNumber)  // track number as a 1-byte vint
        let relativeBits = UInt16(bitPattern: relative)
        cluster.append(UInt8(relativeBits >> 8))
        cluster.append(UInt8(relativeBits & 0xFF))
        let keyframe = frame.track == .audio || frame.isKeyframe
        cluster.append(keyframe ? 0x80 : 0x00)
        cluster.append(frame.data)
    }

    /// A cue: a BlockGroup, since a SimpleBlock has no duration. The block's timestamp is the
    /// cue's start; BlockDuration is in the file's milliseconds (at least one).
    private mutating func appendBlockGroup(_ frame: WebMFrame, milliseconds: Int64) {
        let relative = UInt16(bitPattern: Int16(milliseconds - (clusterTimestamp ?? milliseconds)))
        var block = EBMLWriter(capacity: frame.data.count + 8)
        block.writeID(WebMElementID.block)
        block.writeSize(UInt64(frame.data.count + 4))
        block.append(0x80 | frame.track.trackNumber)
        block.append(UInt8(relative >> 8))
        block.append(UInt8(relative & 0xFF))
        block.append(0x00)
        block.append(frame.data)
        block.writeUInt(WebMElementID.blockDuration, UInt64(max(1, (frame.durationNanoseconds ?? 0) / 1_000_000)))
        cluster.writeID(WebMElementID.blockGroup)
        cluster.writeSize(UInt64(block.count))
        cluster.append(block.bytes)
    }

    private mutating func closeCluster() -> [UInt8] {
        let timestamp = clusterTimestamp ?? 0
        var timestampElement = EBMLWriter(capacity: 12)
        timestampElement.writeUInt(WebMElementID.timestamp, UInt64(timestamp))
        var out = EBMLWriter(capacity: cluster.count + 24)
        out.writeID(WebMElementID.cluster)
        out.writeSize(UInt64(timestampElement.count + cluster.count))
        out.append(timestampElement.bytes)
        out.append(cluster.bytes)
        let start = statistics.bytes
        statistics.bytes += UInt64(out.count)
        statistics.clusters += 1
        clusters.append(ClusterLog.Entry(
            start: start, end: statistics.bytes, timestampMilliseconds: timestamp,
            lastBlockMilliseconds: statistics.lastTimestampMilliseconds ?? timestamp,
            videoFrames: statistics.videoFrames, audioFrames: statistics.audioFrames,
            cueTrack: clusterIsCuePoint ? cueTrack.trackNumber : nil))
        clusterTimestamp = nil
        cluster.removeAll()
        return out.bytes
    }

    private func makeCues() -> [UInt8] {
        var out = EBMLWriter(capacity: clusters.cues.count * 24 + 16)
        let segmentDataOffset = layout.segmentDataOffset
        out.writeMaster(WebMElementID.cues) { cues in
            for point in clusters.cues.entries {
                cues.writeMaster(WebMElementID.cuePoint) { cue in
                    cue.writeUInt(WebMElementID.cueTime, UInt64(point.time))
                    cue.writeMaster(WebMElementID.cueTrackPositions) { positions in
                        positions.writeUInt(WebMElementID.cueTrack, UInt64(point.track))
                        positions.writeUInt(WebMElementID.cueClusterPosition, point.position - segmentDataOffset)
                    }
                }
            }
        }
        return out.bytes
    }
}
