/// One region of a hisui layout's `video_layout`, as written (sizes are resolved against the
/// sources and the resolution by `HisuiPlan`). Zero means "computed", as in hisui.
public struct HisuiRegion: Sendable, Equatable {
    /// Which source a cell shows when more overlap in time than it has cells.
    public enum Reuse: String, Sendable { case none, showOldest = "show_oldest", showNewest = "show_newest" }

    public var name: String
    public var videoSources: [String]
    public var videoSourcesExcluded: [String] = []
    public var cellsExcluded: [Int] = []
    public var width = 0, height = 0, cellWidth = 0, cellHeight = 0
    public var maxColumns = 0, maxRows = 0
    public var reuse = Reuse.showOldest
    public var x = 0, y = 0, z = 0
    public var borderPixels = 2
    /// RGB (hisui's undocumented `background_color`, black by default).
    public var background: [Int] = [0, 0, 0]

    static let keys: Set<String> = [
        "video_sources", "video_sources_excluded", "cells_excluded", "width", "height", "cell_width", "cell_height", "max_columns",
        "max_rows", "reuse", "x_pos", "y_pos", "z_pos", "border_pixels", "background_color",
    ]
    static let pixels = 0...7_680

    public init(name: String, videoSources: [String]) {
        self.name = name
        self.videoSources = videoSources
    }

    init(name: String, reader: HisuiJSONReader) throws(HisuiLayoutError) {
        try reader.rejectUnknown(Self.keys)
        guard let sources = try reader.strings("video_sources") else { throw .badValue(key: reader.key("video_sources"), why: "is required in every region") }
        self.init(name: name, videoSources: sources)
        videoSourcesExcluded = try reader.strings("video_sources_excluded") ?? []
        cellsExcluded = try reader.integers("cells_excluded", in: 0...10_000) ?? []
        width = try reader.integer("width", in: Self.pixels) ?? 0
        height = try reader.integer("height", in: Self.pixels) ?? 0
        cellWidth = (try reader.integer("cell_width", in: Self.pixels) ?? 0) & ~1
        cellHeight = (try reader.integer("cell_height", in: Self.pixels) ?? 0) & ~1
        maxColumns = try reader.integer("max_columns", in: 0...64) ?? 0
        maxRows = try reader.integer("max_rows", in: 0...64) ?? 0
        if let text = try reader.string("reuse") {
            guard let kind = Reuse(rawValue: text) else { throw .badValue(key: reader.key("reuse"), why: "must be none, show_oldest or show_newest, not \(text)") }
            reuse = kind
        }
        x = try reader.integer("x_pos", in: Self.pixels) ?? 0
        y = try reader.integer("y_pos", in: Self.pixels) ?? 0
        z = try reader.integer("z_pos", in: -99...99) ?? 0
        borderPixels = try reader.integer("border_pixels", in: 0...1_000) ?? 2
        guard borderPixels % 2 == 0 else { throw .badValue(key: reader.key("border_pixels"), why: "must be even, not \(borderPixels)") }
        if let color = try reader.integers("background_color", in: 0...255) {
            guard color.count == 3 else { throw .badValue(key: reader.key("background_color"), why: "must be [R, G, B]") }
            background = color
        }
        guard width == 0 || cellWidth == 0 else { throw .badValue(key: reader.key("width"), why: "cannot be given with cell_width") }
        guard height == 0 || cellHeight == 0 else { throw .badValue(key: reader.key("height"), why: "cannot be given with cell_height") }
    }
}
