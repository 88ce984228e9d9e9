import CodecBindings
import Foundation

/// A hisui layout file (docs/compose.md, "hisui layout files"): the subset that places and
/// times pictures and picks sources. Read as hisui's own code reads it (hisui a847914), so
/// a hisui user's file composes unchanged; encoder and decoder tuning for engines recbot does
/// not have is named in `ignoredKeys` rather than refused.
public struct HisuiLayout: Sendable, Equatable {
    public var audioSources: [String] = []
    public var audioSourcesExcluded: [String] = []
    /// In hisui's drawing order: by z_pos, regions of equal z by name.
    public var regions: [HisuiRegion] = []
    public var trim = true
    public var resolution: (width: Int, height: Int)?
    public var videoCodec: VPXCodec = .vp9
    /// Bits per second (`video_bitrate`, or the legacy `bitrate` in kbit/s × 1024).
    public var videoBitrate: Int?
    public var audioBitrate: Int?
    /// Frames per second, rounded to a whole number (recbot's encoder clock is whole frames).
    public var framesPerSecond = 25
    /// Keys hisui knows that recbot reads but does not apply, with why.
    public var ignoredKeys: [String] = []

    public static func == (a: HisuiLayout, b: HisuiLayout) -> Bool {
        a.audioSources == b.audioSources && a.audioSourcesExcluded == b.audioSourcesExcluded && a.regions == b.regions && a.trim == b.trim
            && a.resolution?.width == b.resolution?.width && a.resolution?.height == b.resolution?.height && a.videoCodec == b.videoCodec
            && a.videoBitrate == b.videoBitrate && a.audioBitrate == b.audioBitrate && a.framesPerSecond == b.framesPerSecond && a.ignoredKeys == b.ignoredKeys
    }

    static let tuningKeys: Set<String> = [
        "libvpx_vp8_encode_params", "libvpx_vp9_encode_params", "openh264_encode_params", "svt_av1_encode_params",
        "video_toolbox_h264_encode_params", "video_toolbox_h265_encode_params", "nvcodec_h264_encode_params", "nvcodec_h265_encode_params",
        "nvcodec_av1_encode_params", "nvcodec_h264_decode_params", "nvcodec_h265_decode_params", "nvcodec_vp8_decode_params",
        "nvcodec_vp9_decode_params", "nvcodec_av1_decode_params", "video_encode_engines", "video_decode_engines",
    ]
    static let keys: Set<String> = tuningKeys.union([
        "audio_codec", "audio_bitrate", "audio_sources", "audio_sources_excluded", "audio_source_excluded", "video_codec", "video_bitrate",
        "bitrate", "resolution", "video_layout", "frame_rate", "trim",
    ])

    public init() {}

    /// Reads a layout file's bytes (JSON, or JSONC as hisui's `.jsonc` files are).
    public init(bytes: [UInt8]) throws(HisuiLayoutError) {
        let plain: [UInt8]
        do { plain = try JSONC.plainJSON(bytes) } catch { throw .syntax("\(error)") }
        let value: Any
        do { value = try JSONSerialization.jsonObject(with: Data(plain)) } catch { throw .syntax(error.localizedDescription) }
        let root = try HisuiJSONReader(value, path: "")
        try root.rejectUnknown(Self.keys)
        try read(root)
    }

    private mutating func read(_ root: HisuiJSONReader) throws(HisuiLayoutError) {
        audioSources = try root.strings("audio_sources") ?? []
        // hisui's code reads audio_sources_excluded; its documentation spells it audio_source_excluded: both are taken.
        audioSourcesExcluded = try (root.strings("audio_sources_excluded") ?? []) + (root.strings("audio_source_excluded") ?? [])
        trim = try root.bool("trim") ?? true
        if let text = try root.string("resolution") { resolution = try Self.resolution(text) }
        if let codec = try root.string("video_codec") { videoCodec = try Self.videoCodec(codec) }
        if let codec = try root.string("audio_codec"), codec.uppercased() != "OPUS" {
            throw .unsupported(key: "audio_codec", why: "\(codec): recbot composes Opus audio only")
        }
        audioBitrate = try root.integer("audio_bitrate", in: 1...10_000_000)
        if let bitrate = try root.integer("video_bitrate", in: 1...1_000_000_000) {
            videoBitrate = bitrate
        } else if let kbps = try root.integer("bitrate", in: 1...1_000_000) {
            videoBitrate = kbps * 1_024
        }
        if root.has("frame_rate") { framesPerSecond = try Self.frameRate(root) }
        ignoredKeys = root.object.keys.filter(Self.tuningKeys.contains).sorted()
        if root.has("video_layout") {
            let layout = try HisuiJSONReader(root.object["video_layout"] as Any, path: "video_layout")
            guard layout.object.count <= 64 else { throw .badValue(key: "video_layout", why: "has more than 64 regions") }
            // hisui sorts regions by name, then stably by z_pos (equal z: drawn in name order).
            var regions: [HisuiRegion] = []
            for name in layout.object.keys.sorted() {
                regions.append(try HisuiRegion(name: name, reader: HisuiJSONReader(layout.object[name] as Any, path: layout.key(name))))
            }
            self.regions = regions.enumerated().sorted { ($0.element.z, $0.offset) < ($1.element.z, $1.offset) }.map(\.element)
        }
    }

    /// `"1280x720"`: each side from 16 to 3840, an odd side rounded down to even (as hisui does).
    static func resolution(_ text: String) throws(HisuiLayoutError) -> (width: Int, height: Int) {
        let sides = text.split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, let width = Int(sides[0]), let height = Int(sides[1]),
              (16...3_840).contains(width), (16...3_840).contains(height) else {
            throw .badValue(key: "resolution", why: "must be WIDTHxHEIGHT, each from 16 to 3840, not \(text)")
        }
        return (width & ~1, height & ~1)
    }

    static func videoCodec(_ name: String) throws(HisuiLayoutError) -> VPXCodec {
        switch name.uppercased() {
        case "VP8": return .vp8
        case "VP9": return .vp9
        case "H264", "H265", "AV1": throw .unsupported(key: "video_codec", why: "\(name): recbot encodes compositions with libvpx (VP8 or VP9)")
        default: throw .badValue(key: "video_codec", why: "unknown codec \(name)")
        }
    }

    /// `30` or `"30000/1001"`, rounded to whole frames per second, from 1 to 60.
    static func frameRate(_ root: HisuiJSONReader) throws(HisuiLayoutError) -> Int {
        let rate: Double
        if let text = root.object["frame_rate"] as? String {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let numerator = Int(parts[0]), let denominator = parts.count == 2 ? Int(parts[1]) : 1,
                  numerator > 0, denominator > 0 else {
                throw .badValue(key: "frame_rate", why: "must be an integer or \"NUMERATOR/DENOMINATOR\", not \(text)")
            }
            rate = Double(numerator) / Double(denominator)
        } else {
            rate = Double(try root.integer("frame_rate", in: 1...1_000) ?? 25)
        }
        let rounded = Int(rate.rounded())
        guard (1...60).contains(rounded) else { throw .unsupported(key: "frame_rate", why: "\(rate): recbot composes from 1 to 60 frames per second") }
        return rounded
    }
}
