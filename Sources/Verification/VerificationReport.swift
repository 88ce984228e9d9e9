/// What `recbot verify` found in one file.
public struct VerificationReport: Codable, Sendable, Equatable {
    public var path: String
    /// The file parsed to its end, every frame decoded, and the reader rules hold.
    public var ok: Bool
    /// Why the file could not be read at all (nil when it could).
    public var error: String?
    public var durationMilliseconds: Double?
    public var tracks: [TrackReport]
    /// First video frame minus first audio frame, when the file has both.
    public var audioVideoStartOffsetMilliseconds: Int64?
    /// Rules of hisui's strict WebM reader (and Sora's layout) the file breaks; empty when they hold.
    public var readerRuleViolations: [String]
    public var readerRulesHold: Bool { readerRuleViolations.isEmpty }
    /// Not errors, but worth a look (e.g. a track without frames).
    public var warnings: [String]

    enum CodingKeys: String, CodingKey {
        case path, ok, error, tracks, warnings
        case durationMilliseconds = "duration_ms"
        case audioVideoStartOffsetMilliseconds = "audio_video_start_offset_ms"
        case readerRuleViolations = "reader_rule_violations"
    }
}

public struct TrackReport: Codable, Sendable, Equatable {
    public var number: UInt64
    public var kind: String
    public var codecID: String
    public var frames = 0
    public var keyframes = 0
    /// Pictures (video) or packets (audio) the decoder produced.
    public var decoded = 0
    public var decodeErrors = 0
    /// The first few decode errors, with the frame's timestamp.
    public var errorSamples: [String] = []
    public var firstTimestampMilliseconds: Int64?
    public var lastTimestampMilliseconds: Int64?
    /// Gaps of more than a second between consecutive frames.
    public var gaps: [Gap] = []
    public var gapCount = 0
    /// Decoded picture sizes in order of appearance ("640x360").
    public var sizes: [String] = []
    /// The block timestamps against the track's frame grid.
    public var timeline = TimelineReport()

    public struct Gap: Codable, Sendable, Equatable {
        public var fromMilliseconds: Int64
        public var toMilliseconds: Int64

        enum CodingKeys: String, CodingKey {
            case fromMilliseconds = "from_ms", toMilliseconds = "to_ms"
        }
    }

    enum CodingKeys: String, CodingKey {
        case number, kind, frames, keyframes, decoded, gaps, sizes, timeline
        case codecID = "codec_id", decodeErrors = "decode_errors", errorSamples = "error_samples"
        case firstTimestampMilliseconds = "first_ms", lastTimestampMilliseconds = "last_ms", gapCount = "gap_count"
    }
}
