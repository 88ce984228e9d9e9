import Foundation
import WebM
import WebMReader
import WireCoding

/// What rewriting one file found and wrote.
public struct RepairedFile: Sendable, Equatable {
    public var videoCodec: WebMVideoCodec?
    public var audioChannels: Int?
    public var videoWidth: Int?
    public var videoHeight: Int?
    public var videoFrames = 0
    public var audioFrames = 0
    /// File time of the first and last frame.
    public var firstMilliseconds: Int64?
    public var lastMilliseconds: Int64?
    public var size: UInt64 = 0
    /// The input was already a finished file: it was left as it was.
    public var wasComplete = false
    /// Frames left out because their time is beyond what a WebM file can hold in
    /// nanoseconds (a corrupt or crafted cluster timestamp).
    public var framesOutOfRange = 0
}

public enum RepairError: Error, Sendable, CustomStringConvertible {
    /// Nothing in the file can be kept: repairing it again gives the same answer.
    case unreadable(String, reason: String)
    /// The disk refused the new file (full, read-only, I/O error): the old one is untouched, and
    /// a later repair, with room, can finish it.
    case write(String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot repair \(path): \(reason)"
        case .write(let path, let reason): "cannot write the repaired \(path): \(reason)"
        }
    }

    /// A later repair may succeed (the file stays `recording`, for it).
    public var isTransient: Bool {
        if case .write = self { true } else { false }
    }
}

/// Rewrites a WebM file a killed recorder left behind (unknown Segment size, no Cues or
/// Duration, perhaps a cluster cut short) into a finalized one, with recbot's own muxer.
/// libwebm's parser reads it; every whole block is kept, a block cut short is not. The new
/// file is written beside the old one and renamed over it only once complete, so a repair
/// that is itself interrupted loses nothing.
public enum FileRepair {
    /// `random`: the rewritten file's segment UID.
    public static func repair(path: String, random: any RandomSource) throws(RepairError) -> RepairedFile {
        let temporary = path + ".repair"
        try? FileManager.default.removeItem(atPath: temporary)
        do {
            return try rewrite(path, through: temporary, segmentUID: random.bytes(16))
        } catch {
            // A disk that filled leaves a partial new file: it goes, the old one stays.
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    private static func rewrite(_ path: String, through temporary: String, segmentUID: [UInt8]) throws(RepairError) -> RepairedFile {
        let rewriter = Rewriter(temporary: temporary, segmentUID: segmentUID)
        let parsed = WebMReader.read(path: path, onTrack: { rewriter.add($0) }, onFrame: { rewriter.write($0) })
        if parsed.isParseError && rewriter.result.videoFrames + rewriter.result.audioFrames == 0 {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .unreadable(path, reason: "libwebm cannot parse it (status \(parsed.status))")
        }
        if parsed.isComplete && parsed.elements.first(where: { $0.id == 0x1853_8067 })?.size != nil {
            // Already finalized (a repair that ran before, or a file that was finished): keep it.
            try? FileManager.default.removeItem(atPath: temporary)
            var result = rewriter.result
            result.wasComplete = true
            result.size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
            return result
        }
        var result = try rewriter.finish(muxingApp: parsed.info?.muxingApp, writingApp: parsed.info?.writingApp)
        guard rename(temporary, path) == 0 else { throw .write(path, reason: String(cString: strerror(errno))) }
        result.size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? result.size
        return result
    }
}

/// Feeds the parser's tracks and frames into a new muxer and file.
private final class Rewriter {
    let temporary: String
    var result = RepairedFile()
    private var video: WebMVideoTrack?
    private var audio: WebMAudioTrack?
    private var muxer: WebMMuxer?
    private var writer: WebMFileWriter?
    private var pending: [WebMWrite] = []
    private var failure: RepairError?

    private let segmentUID: [UInt8]

    init(temporary: String, segmentUID: [UInt8]) { (self.temporary, self.segmentUID) = (temporary, segmentUID) }

    func add(_ track: WebMParsedFile.Track) {
        if track.type == 1, track.number == 1, let codec = WebMVideoCodec(codecID: track.codecID) {
            video = WebMVideoTrack(codec: codec, width: Int(clamping: track.pixelWidth), height: Int(clamping: track.pixelHeight),
                                   codecPrivate: track.codecPrivate.isEmpty ? nil : track.codecPrivate,
                                   rotation: track.projection.flatMap { $0.type == 0 ? VideoRotation(projectionRoll: $0.roll) : nil })
            (result.videoCodec, result.videoWidth, result.videoHeight) = (codec, video?.width, video?.height)
        } else if track.type == 2, track.number == 2, track.codecID == "A_OPUS" {
            let head = track.codecPrivate
            let channels = head.count >= 19 ? head[9] : UInt8(clamping: max(1, track.channels))
            let preSkip = head.count >= 19 ? UInt16(head[10]) | UInt16(head[11]) << 8 : 0
            audio = WebMAudioTrack(opusHead: OpusHead(channelCount: min(2, max(1, channels)), preSkip: preSkip))
            result.audioChannels = Int(min(2, max(1, channels)))
        }
    }

    func write(_ frame: WebMParsedFile.Frame) {
        guard failure == nil, frame.track == 1 || frame.track == 2 else { return }
        if muxer == nil { open() }
        guard var muxer, let writer else { return }
        let kind: WebMTrackKind = frame.track == 1 ? .video : .audio
        // The timecode comes from the file: one of 2^43 ms or more would overflow (and trap).
        let (nanoseconds, overflow) = max(0, frame.timecode).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else {
            result.framesOutOfRange += 1
            return
        }
        do {
            try writer.apply(try muxer.write(WebMFrame(track: kind, timestampNanoseconds: nanoseconds,
                                                      isKeyframe: frame.isKeyframe, data: frame.data)))
            self.muxer = muxer
            if kind == .video { result.videoFrames += 1 } else { result.audioFrames += 1 }
            result.firstMilliseconds = result.firstMilliseconds ?? frame.timecode
            result.lastMilliseconds = max(result.lastMilliseconds ?? frame.timecode, frame.timecode)
        } catch let error as WebMFileError {
            failure = .write(temporary, reason: "\(error)")
        } catch {
            // A frame the muxer refuses (out of order, empty) is left out; the rest goes on.
        }
    }

    private func open() {
        do {
            muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(video: video, audio: audio, segmentUID: segmentUID))
        } catch {
            failure = .unreadable(temporary, reason: "its tracks cannot be written again: \(error)")
            return
        }
        do { writer = try WebMFileWriter(creatingAt: temporary) } catch { failure = .write(temporary, reason: "\(error)") }
    }

    func finish(muxingApp: String?, writingApp: String?) throws(RepairError) -> RepairedFile {
        if let failure { throw failure }
        if muxer == nil { open() }  // no whole frame at all: an empty, valid file with its tracks
        guard var muxer, let writer else { throw failure ?? .unreadable(temporary, reason: "no tracks to write") }
        do {
            let duration = max(0, (result.lastMilliseconds ?? 0) + (result.videoFrames + result.audioFrames > 0 ? 20 : 0))
            try writer.apply(try muxer.finalize(durationMilliseconds: duration))
            try writer.sync()
            try writer.close()
        } catch {
            throw .write(temporary, reason: "\(error)")
        }
        result.size = muxer.statistics.bytes
        return result
    }
}

extension WebMVideoCodec {
    /// From a WebM CodecID.
    init?(codecID: String) {
        guard let codec = WebMVideoCodec.allCases.first(where: { $0.codecID == codecID }) else { return nil }
        self = codec
    }
}
