import CodecBindings

/// A hisui layout resolved against one session's files: the canvas, each region's cells and
/// which sender keeps which cell, whose audio is mixed, which files play, and the spans
/// `trim` cuts. Pure: the files' names and times in, the plan out (docs/compose.md).
public struct HisuiPlan: Sendable, Equatable {
    public struct Region: Sendable, Equatable {
        public var name: String
        public var frame: Rectangle
        public var cells: [Rectangle]
        public var assignments: [String: HisuiCellAssignment]
        /// The region's fill (borders and empty cells) as Y, U, V.
        public var background: (y: UInt8, u: UInt8, v: UInt8)

        public static func == (a: Region, b: Region) -> Bool {
            a.name == b.name && a.frame == b.frame && a.cells == b.cells && a.assignments == b.assignments && a.background == b.background
        }
    }

    public var width: Int
    public var height: Int
    /// In drawing order (lowest z first).
    public var regions: [Region]
    public var audioConnections: Set<String>
    /// Each sender's files to play, in time order (senders in any region or in the audio).
    public var files: [String: [HisuiSourceFile]]
    /// Spans where no source is (all but the leading one are kept with `trim: false`).
    public var cuts: [CompositionTimeline.Span]
    /// The end of the last source, on the session's timeline.
    public var end: Int64
    public var videoBitrateKbps: Int
    public var framesPerSecond: Int
    public var videoCodec: VPXCodec

    public init(layout: HisuiLayout, files: [HisuiSourceFile]) throws(HisuiLayoutError) {
        let audio = HisuiSources.aggregate(try HisuiSources.resolve(layout.audioSources, excluding: layout.audioSourcesExcluded, in: files, key: "audio_sources"))
        var everyone = Dictionary(uniqueKeysWithValues: audio.map { ($0.connectionID, $0) })
        var planned: [(HisuiRegion, [HisuiSource])] = []
        for region in layout.regions {
            let key = "video_layout.\(region.name).video_sources"
            let sources = HisuiSources.aggregate(try HisuiSources.resolve(region.videoSources, excluding: region.videoSourcesExcluded, in: files, key: key))
            for source in sources { everyone[source.connectionID] = Self.merge(everyone[source.connectionID], source) }
            planned.append((region, sources))
        }
        let canvas = try Self.canvas(layout: layout, planned: planned)
        (width, height) = (canvas.width, canvas.height)
        regions = try planned.map { entry throws(HisuiLayoutError) in try Self.place(entry.0, sources: entry.1, canvas: canvas, given: layout.resolution != nil) }
        audioConnections = Set(audio.map(\.connectionID))
        self.files = everyone.mapValues(\.playedFiles)
        let all = everyone.values.sorted { ($0.start, $0.end) < ($1.start, $1.end) }
        guard let last = all.map(\.end).max() else { throw .sources("no source in the layout matches a recorded file of the session") }
        end = last
        cuts = Self.cuts(all, trimAll: layout.trim)
        let videoSources = Set(planned.flatMap { $0.1.map(\.connectionID) }).count
        let bitrate = layout.videoBitrate ?? max(1, videoSources) * 200 * 1_024
        videoBitrateKbps = min(50_000, max(50, bitrate / 1_000))
        (framesPerSecond, videoCodec) = (layout.framesPerSecond, layout.videoCodec)
    }

    static func merge(_ a: HisuiSource?, _ b: HisuiSource) -> HisuiSource {
        guard let a else { return b }
        let files = a.files + b.files.filter { file in !a.files.contains(file) }
        return HisuiSource(connectionID: b.connectionID, start: min(a.start, b.start), end: max(a.end, b.end), files: files)
    }

    /// hisui's trim: from zero, each gap before a source's start is cut; with `trim: false`
    /// only the leading gap (the composition always starts at the first source).
    static func cuts(_ sources: [HisuiSource], trimAll: Bool) -> [CompositionTimeline.Span] {
        var cuts: [CompositionTimeline.Span] = []
        var position: Int64 = 0
        for source in sources {
            if !trimAll && position != 0 { break }
            if position < source.start {
                cuts.append(.init(start: position, end: source.start))
                position = source.end
            } else {
                position = max(position, source.end)
            }
        }
        return cuts
    }
}

extension CompositionSettings {
    /// The layout's canvas, frame rate, codec and bitrate (hisui's defaults where it gives none).
    public mutating func apply(_ plan: HisuiPlan) {
        hisui = plan
        layout = .grid
        (width, height) = (plan.width, plan.height)
        framesPerSecond = plan.framesPerSecond
        videoCodec = plan.videoCodec
        videoBitrateKbps = plan.videoBitrateKbps
    }
}
