import CodecBindings
import Foundation
import WebMReader

/// Reads a recording with libwebm's parser (independent of recbot's muxer) and decodes every
/// frame with the codec's own decoder (libvpx, dav1d, OpenH264, libopus), in constant memory.
/// Runs wherever it is called; `recbot verify` calls it long after the network is gone.
public enum RecordingVerifier {
    public static func verify(path: String) -> VerificationReport {
        guard FileManager.default.isReadableFile(atPath: path) else {
            return VerificationReport(path: path, ok: false, error: "cannot read the file", tracks: [], readerRuleViolations: [], warnings: [])
        }
        return verify(label: path) { onTrack, onFrame in WebMReader.read(path: path, onTrack: onTrack, onFrame: onFrame) }
    }

    /// The same for a file in memory (the fuzz target's way in).
    public static func verify(bytes: [UInt8], label: String) -> VerificationReport {
        verify(label: label) { onTrack, onFrame in WebMReader.read(bytes: bytes, onTrack: onTrack, onFrame: onFrame) }
    }

    private static func verify(label path: String, read: (@escaping (WebMParsedFile.Track) -> Void,
                                                         @escaping (WebMParsedFile.Frame) -> Void) -> WebMParsedFile) -> VerificationReport {
        let tally = Tally()
        let parsed = read({ tally.add($0) }, { tally.add($0) })
        let checks = tally.checks
        var report = VerificationReport(path: path, ok: false, durationMilliseconds: parsed.info?.duration,
                                        tracks: checks.keys.sorted().compactMap { checks[$0]?.finishedReport },
                                        readerRuleViolations: ReaderRules.violations(parsed, blocks: tally.blocks), warnings: [])
        if !parsed.isComplete {
            report.error = parsed.endedEarly ? "the file ends before its WebM document does (truncated or not finalized)"
                                             : "libwebm cannot parse the file (status \(parsed.status))"
        }
        for check in checks.values {
            if let problem = check.decoderProblem { report.error = report.error ?? problem }
            if check.report.frames == 0 { report.warnings.append("\(check.report.kind) track \(check.report.number) has no frames") }
            let timeline = check.finishedReport.timeline
            // Two chat messages may share a millisecond: a text track's cues may repeat a time, never go back.
            if check.report.kind == "subtitles" ? timeline.backwardSteps > 0 : !timeline.isMonotonic {
                // A player places each block by its timestamp: one that goes back or repeats is out of place.
                report.error = report.error ?? "track \(check.report.number): \(timeline.backwardSteps) timestamps go backwards, \(timeline.repeatedTimestamps) repeat"
            }
        }
        let video = report.tracks.first { $0.kind == "video" }?.firstTimestampMilliseconds
        let audio = report.tracks.first { $0.kind == "audio" }?.firstTimestampMilliseconds
        if let video, let audio, case let (offset, overflow) = video.subtractingReportingOverflow(audio), !overflow {
            report.audioVideoStartOffsetMilliseconds = offset
        }
        report.ok = report.error == nil && report.readerRulesHold && report.tracks.allSatisfy { $0.decodeErrors == 0 }
        return report
    }
}

/// Every track's tally while the parser's callbacks arrive.
private final class Tally {
    var checks: [UInt64: TrackCheck] = [:]
    var blocks = BlockSummary()

    func add(_ track: WebMParsedFile.Track) {
        checks[track.number] = TrackCheck(track)
        if track.codecID == "V_MPEG4/ISO/AVC" { blocks.annexBTrack = track.number }
        if track.codecID == WebVTTCueCheck.codecID && track.type == 0x11 { blocks.textTrack = track.number }
    }

    func add(_ frame: WebMParsedFile.Frame) {
        blocks.note(frame, isKnownTrack: checks[frame.track] != nil)
        checks[frame.track]?.add(frame)
    }
}

/// One track's running tally while its frames stream past.
struct TrackCheck {
    static let gapMilliseconds: Int64 = 1_000
    static let keptSamples = 5
    var report: TrackReport
    private var decoder: (any FrameDecoder)?
    /// Why this track cannot be decoded at all.
    private(set) var decoderProblem: String?
    private var timeline = TimelineCheck()

    var finishedReport: TrackReport {
        var result = report
        result.timeline = timeline.finished()
        return result
    }

    init(_ track: WebMParsedFile.Track) {
        let kind = track.type == 1 ? "video" : track.type == 2 ? "audio" : track.type == 0x11 ? "subtitles" : "other"
        report = TrackReport(number: track.number, kind: kind, codecID: track.codecID)
        do {
            decoder = try FrameDecoders.make(codecID: track.codecID, channels: Int(clamping: track.channels), codecPrivate: track.codecPrivate)
            if decoder == nil { decoderProblem = "no decoder for \(track.codecID) (track \(track.number))" }
        } catch {
            decoderProblem = "cannot open a decoder for track \(track.number): \(error)"
        }
    }

    mutating func add(_ frame: WebMParsedFile.Frame) {
        report.frames += 1
        if frame.isKeyframe { report.keyframes += 1 }
        // Timecodes come from the file: any 64-bit value, so the difference may overflow.
        if let last = report.lastTimestampMilliseconds, case let (gap, overflow) = frame.timecode.subtractingReportingOverflow(last),
           overflow || gap > TrackCheck.gapMilliseconds {
            report.gapCount += 1
            if report.gaps.count < 20 { report.gaps.append(.init(fromMilliseconds: last, toMilliseconds: frame.timecode)) }
        }
        timeline.add(frame.timecode)
        report.firstTimestampMilliseconds = report.firstTimestampMilliseconds ?? frame.timecode
        report.lastTimestampMilliseconds = max(report.lastTimestampMilliseconds ?? frame.timecode, frame.timecode)
        guard decoder != nil else { return }
        do {
            let pictures = try decoder!.decode(frame.data)
            report.decoded += pictures.count
            for picture in pictures where picture.width > 0 {
                let size = "\(picture.width)x\(picture.height)"
                if report.sizes.last != size, !report.sizes.contains(size), report.sizes.count < 16 { report.sizes.append(size) }
            }
        } catch {
            report.decodeErrors += 1
            if report.errorSamples.count < TrackCheck.keptSamples { report.errorSamples.append("at \(frame.timecode) ms: \(error)") }
        }
    }
}
