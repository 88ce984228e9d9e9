import CodecBindings
import Foundation
import WebM

/// How the senders are arranged (docs/compose.md).
public enum CompositionLayout: String, Sendable, CaseIterable {
    /// Everyone present, on an automatic grid.
    case grid
    /// The sender speaking now enlarged, the others in a row below.
    case speaker
}

/// What `recbot compose` makes.
public struct CompositionSettings: Sendable {
    public var layout: CompositionLayout = .grid
    public var width = 1280
    public var height = 720
    public var framesPerSecond = 30
    public var videoCodec: VPXCodec = .vp8
    public var videoBitrateKbps = 2_500
    public var audioBitrate = 96_000
    /// An excerpt, in milliseconds on the session's timeline (nil: from the start, to the end).
    public var from: Int64?
    public var to: Int64?
    /// Encoder threads (libvpx).
    public var threads = 2
    /// A hisui layout resolved for this session: it places the pictures, picks whose audio is
    /// mixed and, with its `trim`, cuts the spans where nobody is.
    public var hisui: HisuiPlan?

    public init() {}
}

/// From `at` (milliseconds on the session's timeline) on, the speaker layout enlarges this sender.
public struct SpeakerChange: Sendable, Equatable {
    public var at: Int64
    public var connectionID: String
}

public struct CompositionResult: Sendable, Equatable {
    public var path: String
    /// Where the composition starts on the session's timeline, and how long it is.
    public var startMilliseconds: Int64
    public var durationMilliseconds: Int64
    /// The session's spans it shows, back to back (one, unless a hisui layout trims).
    public var timeline: CompositionTimeline
    public var videoFrames: Int
    public var audioFrames: Int
    public var senders: Int
    public var decodeErrors: Int
    /// Senders whose video decoder could not be opened, shown as a grey tile with their audio.
    public var undrawnVideo: [String: String]
    /// The speaker layout's speaker from each time on (milliseconds on the session's timeline).
    public var speakerChanges: [SpeakerChange] = []
    /// Chat cues in the file's text track.
    public var captionCues = 0
}

/// Composes senders' files into one WebM: the automatic grid of whoever is present, every
/// sender's audio mixed, VP8 or VP9 and Opus, muxed by recbot's own muxer. Runs frame by frame
/// on the session's clock, so memory stays one picture per sender and a few slots of audio.
public final class Composer {
    let senders: [SenderTrack]
    let settings: CompositionSettings
    /// The session's spans the composition shows (captions are placed on it before `run`).
    public let timeline: CompositionTimeline

    public init(senders: [(connectionID: String, files: [SourceFile])], settings: CompositionSettings) throws(CompositionError) {
        let tracks = senders.filter { !$0.files.isEmpty }.map { SenderTrack(connectionID: $0.connectionID, files: $0.files) }
            .sorted { ($0.firstSeen, $0.connectionID) < ($1.firstSeen, $1.connectionID) }
        guard let last = tracks.flatMap(\.files).map(\.end).max() else { throw .nothingToCompose("the session has no recorded files") }
        self.senders = tracks
        self.settings = settings
        let (start, end) = (max(0, settings.from ?? 0), min(last, settings.to ?? last))
        guard end > start else { throw .nothingToCompose("the excerpt is empty (from \(start) ms to \(end) ms)") }
        timeline = settings.hisui.map { CompositionTimeline(cutting: $0.cuts, end: last, from: start, to: end) } ?? CompositionTimeline(from: start, to: end)
        guard timeline.length > 0 else { throw .nothingToCompose("no source is present from \(start) ms to \(end) ms") }
    }

    /// Whose audio is mixed: everyone's, or a hisui layout's audio sources.
    func mixesAudio(_ sender: SenderTrack) -> Bool { settings.hisui.map { $0.audioConnections.contains(sender.connectionID) } ?? true }

    /// Writes the composition to `path` (through a temporary file renamed at the end), with
    /// `captions` (milliseconds on the composition's timeline, WebVTT cue text) as its text
    /// track; `progress` gets the share done, at most a few times a second.
    public func run(to path: String, captions: [(start: Int64, end: Int64, text: String)] = [],
                    progress: (Double) -> Void = { _ in }) throws(CompositionError) -> CompositionResult {
        let temporary = path + ".tmp"
        let encoder: VPXEncoder
        let audioEncoder: OpusEncoder
        do {
            encoder = try VPXEncoder(codec: settings.videoCodec, width: settings.width, height: settings.height, framesPerSecond: settings.framesPerSecond,
                                     bitrateKbps: settings.videoBitrateKbps, keyframeInterval: settings.framesPerSecond * 2, threads: settings.threads)
            audioEncoder = try OpusEncoder(channels: 2, bitrate: settings.audioBitrate)
        } catch { throw .codec("\(error)") }
        var muxer: WebMMuxer
        let writer: WebMFileWriter
        do {
            let head = OpusHead(channelCount: 2, preSkip: UInt16(clamping: audioEncoder.lookahead))
            muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
                video: WebMVideoTrack(codec: settings.videoCodec == .vp8 ? .vp8 : .vp9, width: settings.width, height: settings.height),
                audio: WebMAudioTrack(opusHead: head), segmentUID: (0..<16).map { _ in UInt8.random(in: 0...255) },
                muxingApp: "recbot compose", writingApp: "recbot compose",
                subtitles: captions.isEmpty ? nil : WebMSubtitleTrack(name: "chat")))
            writer = try WebMFileWriter(creatingAt: temporary)
        } catch { throw .output("\(error)") }
        var canvas = I420Image(width: settings.width, height: settings.height)
        var mixer = AudioMixer()
        var speakers = SpeakerSelector()
        var speakerChanges: [SpeakerChange] = []
        var (videoFrames, audioFrames) = (0, 0)
        let length = timeline.length
        var lastProgress = Date.distantPast
        let cues = captions.filter { $0.start >= 0 && $0.start < length && $0.end > $0.start && !$0.text.isEmpty }.sorted { $0.start < $1.start }
        var nextCue = 0
        /// Cues due by `time` go in first: the muxer takes blocks in time order across tracks.
        func writeCues(until time: Int64) throws {
            while nextCue < cues.count, cues[nextCue].start <= time {
                let cue = cues[nextCue]
                try writer.apply(try muxer.write(.cue(cue.text, start: cue.start * 1_000_000, duration: (cue.end - cue.start) * 1_000_000)))
                nextCue += 1
            }
        }
        do {
            var frame = 0
            var slot = 0
            while true {
                // Output time (the file's clock) and the session time it shows.
                let videoOut = Int64(frame) * 1_000 / Int64(settings.framesPerSecond)
                let audioOut = Int64(slot) * 20
                if videoOut >= length && audioOut >= length { break }
                try writeCues(until: min(videoOut, audioOut))
                if audioOut <= videoOut {
                    let audioAt = timeline.sessionTime(at: audioOut)
                    let samples = OpusEncoder.samplesPerFrame
                    let slots = senders.map { mixesAudio($0) ? $0.audio(from: audioAt * 48, samples: samples) : [] }
                    if settings.layout == .speaker {
                        let speaker = speakers.update(levels: zip(senders, slots).filter { $0.0.isPresent(at: audioAt) }
                            .map { ($0.0.connectionID, SpeakerSelector.level($0.1)) })
                        if let speaker, speaker != speakerChanges.last?.connectionID { speakerChanges.append(SpeakerChange(at: audioAt, connectionID: speaker)) }
                    }
                    let mixed = mixer.mix(slots, samples: samples * 2)
                    let packet = try audioEncoder.encode(mixed)
                    try writer.apply(try muxer.write(WebMFrame(track: .audio, timestampNanoseconds: audioOut * 1_000_000, isKeyframe: true, data: packet)))
                    audioFrames += 1
                    slot += 1
                } else {
                    draw(at: timeline.sessionTime(at: videoOut), on: &canvas, speaker: speakers.speaker)
                    for encoded in try encoder.encode(canvas, pts: Int64(frame)) {
                        try writer.apply(try muxer.write(WebMFrame(track: .video, timestampNanoseconds: videoOut * 1_000_000,
                                                                   isKeyframe: encoded.isKeyframe, data: encoded.data)))
                        videoFrames += 1
                    }
                    frame += 1
                    if Date().timeIntervalSince(lastProgress) > 0.25 {
                        lastProgress = Date()
                        progress(Double(videoOut) / Double(length))
                    }
                }
            }
            try writeCues(until: length)
            try writer.apply(try muxer.finalize(durationMilliseconds: length))
            try writer.sync()
            try writer.close()
            guard rename(temporary, path) == 0 else { throw CompositionError.output("cannot rename \(temporary) to \(path): errno \(errno)") }
        } catch let error as CompositionError {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .output("\(error)")
        }
        progress(1)
        var undrawn: [String: String] = [:]
        for sender in senders { for file in sender.files { if let codec = file.unsupportedVideo ?? file.videoCodec.flatMap({ SourceFile.drawable.contains($0) ? nil : $0.rawValue }) { undrawn[sender.connectionID] = codec } } }
        var result = CompositionResult(path: path, startMilliseconds: timeline.start, durationMilliseconds: length, timeline: timeline, videoFrames: videoFrames, audioFrames: audioFrames,
                                       senders: senders.count, decodeErrors: senders.reduce(0) { $0 + $1.decodeErrors }, undrawnVideo: undrawn)
        result.speakerChanges = speakerChanges
        result.captionCues = cues.count
        return result
    }

    /// Where each sender present at `time` goes, in the layout.
    func placements(at time: Int64, width: Int, height: Int, speaker: String?) -> [(SenderTrack, Rectangle)] {
        let present = senders.filter { $0.isPresent(at: time) }
        switch settings.layout {
        case .grid:
            return Array(zip(present, GridLayout.cells(count: present.count, width: width, height: height)))
        case .speaker:
            guard let cells = SpeakerLayout.cells(count: present.count, width: width, height: height) else { return [] }
            let main = present.first { $0.connectionID == speaker } ?? present[0]
            return [(main, cells.speaker)] + zip(present.filter { $0 !== main }, cells.others)
        }
    }

    /// Half an output frame, in milliseconds.
    var halfFrame: Int64 { Int64(500 / max(1, settings.framesPerSecond)) }

    /// The layout at `time`: who is present, each picture fitted into its cell.
    func draw(at time: Int64, on canvas: inout I420Image, speaker: String?) {
        canvas.fill(x: 0, y: 0, width: canvas.width, height: canvas.height)
        if let plan = settings.hisui { return drawHisui(plan, at: time, on: &canvas) }
        for (sender, cell) in placements(at: time, width: canvas.width, height: canvas.height, speaker: speaker) {
            drawTile(sender, at: time, in: cell, on: &canvas)
        }
    }

    /// One sender in its cell: the picture fitted, or a grey tile.
    func drawTile(_ sender: SenderTrack, at time: Int64, in cell: Rectangle, on canvas: inout I420Image) {
        guard cell.width >= 8, cell.height >= 8 else { return }
        // The picture nearest the output frame's time (up to half a frame ahead), not the
        // last one before it: resampling to a fixed rate then moves a frame by at most half
        // a frame (17 ms at 30 fps), never a whole one, which would put video behind audio.
        if sender.drawsVideo(at: time), let picture = sender.picture(at: time + halfFrame) {
            let target = GridLayout.fit(width: picture.width, height: picture.height, in: cell)
            canvas.place(picture, x: target.x, y: target.y, width: target.width, height: target.height)
        } else {
            // Present without a picture yet (audio only, before its first keyframe, or a codec not drawn): a grey tile.
            let inset = Rectangle(x: cell.x + 2, y: cell.y + 2, width: cell.width - 4, height: cell.height - 4)
            canvas.fill(x: inset.x, y: inset.y, width: inset.width, height: inset.height, luma: 48)
        }
    }

    /// A hisui layout: regions from the back, each filled with its colour, each cell showing
    /// the present sender assigned to it with the lowest priority (hisui's reuse rule).
    func drawHisui(_ plan: HisuiPlan, at time: Int64, on canvas: inout I420Image) {
        for region in plan.regions {
            let frame = region.frame
            canvas.fill(x: frame.x, y: frame.y, width: frame.width, height: frame.height, luma: region.background.y, cb: region.background.u, cr: region.background.v)
            var shown: [Int: (priority: Int, sender: SenderTrack)] = [:]
            for sender in senders where sender.isPresent(at: time) {
                guard let assignment = region.assignments[sender.connectionID], assignment.cell < region.cells.count else { continue }
                if let current = shown[assignment.cell], current.priority <= assignment.priority { continue }
                shown[assignment.cell] = (assignment.priority, sender)
            }
            for (cell, entry) in shown.sorted(by: { $0.key < $1.key }) { drawTile(entry.sender, at: time, in: region.cells[cell], on: &canvas) }
        }
    }
}
