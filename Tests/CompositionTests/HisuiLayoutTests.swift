import CodecBindings
import Foundation
@testable import Composition
import Testing

/// hisui layout files (docs/compose.md): read as hisui reads them, resolved against a
/// session's files with hisui's grid, sizing, reuse and trim rules. The expected numbers are
/// worked out from hisui's documentation (docs/layout_region.md, docs/layout.md at a847914).
struct HisuiLayoutTests {
    static func file(_ id: String, _ start: Int64, _ end: Int64, split: Int? = nil) -> HisuiSourceFile {
        let name = split.map { "split-archive-\(id)_\(String(format: "%04d", $0)).json" } ?? "archive-\(id).json"
        return HisuiSourceFile(name: name, connectionID: id, start: start, end: end)
    }

    static func plan(_ json: String, _ files: [HisuiSourceFile]) throws -> HisuiPlan {
        try HisuiPlan(layout: HisuiLayout(bytes: Array(json.utf8)), files: files)
    }

    @Test func hisuisDefaultLayoutGivesItsCanvasAndCells() throws {
        let layout = try HisuiLayout(bytes: Array(HisuiLayoutFixture.defaultLayout.utf8))
        #expect(layout.videoCodec == .vp9 && layout.framesPerSecond == 25 && layout.trim)
        #expect(layout.ignoredKeys == ["libvpx_vp8_encode_params", "libvpx_vp9_encode_params", "nvcodec_vp9_decode_params"])
        let plan = try HisuiPlan(layout: layout, files: [Self.file("A", 0, 10_000), Self.file("B", 500, 10_000)])
        // Two senders at once, at most 3 columns: one row of two 320x240 cells, a 2-pixel border between, none outside.
        #expect(plan.width == 642 && plan.height == 240)
        #expect(plan.regions.first?.cells == [Rectangle(x: 0, y: 0, width: 320, height: 240), Rectangle(x: 322, y: 0, width: 320, height: 240)])
        #expect(plan.regions.first?.assignments.mapValues(\.cell) == ["A": 0, "B": 1])
        #expect(plan.audioConnections == ["A", "B"] && plan.videoBitrateKbps == 2 * 200 * 1_024 / 1_000)
        // Seven senders: three columns, three rows.
        let seven = try HisuiPlan(layout: layout, files: (0..<7).map { Self.file("S\($0)", 0, 1_000) })
        #expect(seven.width == 320 * 3 + 4 && seven.height == 240 * 3 + 4)
    }

    @Test func thePictureInPictureExampleHasItsCellsWhereHisuiPutsThem() throws {
        let plan = try Self.plan(HisuiLayoutFixture.pictureInPicture,
                                 [Self.file("presenter", 0, 9_000), Self.file("a", 0, 9_000), Self.file("b", 100, 9_000)])
        #expect(plan.width == 1280 && plan.height == 720)
        #expect(plan.regions.map(\.name) == ["main", "pip"], "drawn by z_pos")
        let main = try #require(plan.regions.first)
        // The main region spans the canvas: no outer border, one cell for the presenter only.
        #expect(main.cells == [Rectangle(x: 0, y: 0, width: 1280, height: 720)] && main.assignments.keys.sorted() == ["presenter"])
        let pip = try #require(plan.regions.last)
        // 480x180 at (780, 520), 2-pixel borders: (476 - 2) / 2 = 237 → 236 wide, 176 high, outer borders 2 px.
        #expect(pip.cells == [Rectangle(x: 782, y: 522, width: 236, height: 176), Rectangle(x: 1020, y: 522, width: 236, height: 176)])
        #expect(pip.assignments.mapValues(\.cell) == ["a": 0, "b": 1], "the presenter is excluded from the pip")
    }

    @Test func excludedCellsAreSkippedAndOnlyThoseInsideTheGridCount() throws {
        let json = #"{"resolution": "640x480", "video_layout": {"main": {"video_sources": ["archive-*.json"], "max_rows": 2, "max_columns": 2, "cells_excluded": [1, 5, 8]}}}"#
        let plan = try Self.plan(json, ["u1", "u2", "u3"].map { Self.file($0, 0, 1_000) })
        #expect(plan.regions.first?.assignments.mapValues(\.cell) == ["u1": 0, "u2": 2, "u3": 3])
    }

    @Test func theGridShapeFollowsHisuisRules() {
        #expect(HisuiGrid.dimensions(maxRows: 0, maxColumns: 0, sources: 5) == (2, 3))
        #expect(HisuiGrid.dimensions(maxRows: 0, maxColumns: 0, sources: 4) == (2, 2))
        #expect(HisuiGrid.dimensions(maxRows: 0, maxColumns: 0, sources: 1) == (1, 1))
        #expect(HisuiGrid.dimensions(maxRows: 0, maxColumns: 0, sources: 0) == (1, 1))
        #expect(HisuiGrid.dimensions(maxRows: 0, maxColumns: 4, sources: 5) == (2, 4))
        #expect(HisuiGrid.dimensions(maxRows: 4, maxColumns: 0, sources: 5) == (4, 2))
        #expect(HisuiGrid.dimensions(maxRows: 2, maxColumns: 3, sources: 9) == (2, 3))
        #expect(HisuiGrid.dimensions(maxRows: 1, maxColumns: 6, sources: 2) == (1, 2))
    }

    /// hisui's reuse example: C 0–20, A 2–12, B 5–15 on a 1×2 grid.
    @Test func reuseDecidesWhoShowsWhenSourcesOutnumberCells() throws {
        let sources = [HisuiSource(connectionID: "A", start: 2, end: 12, files: []), HisuiSource(connectionID: "B", start: 5, end: 15, files: []),
                       HisuiSource(connectionID: "C", start: 0, end: 20, files: [])]
        let none = HisuiGrid.assign(sources, reuse: .none, cells: 2, excluded: [])
        #expect(none.mapValues(\.cell) == ["C": 0, "A": 1], "B finds no free cell and is never shown")
        let oldest = HisuiGrid.assign(sources, reuse: .showOldest, cells: 2, excluded: [])
        #expect(oldest["B"]?.cell == 1 && oldest["B"]!.priority > oldest["A"]!.priority, "A, the older, wins cell 1 while both are there")
        let newest = HisuiGrid.assign(sources, reuse: .showNewest, cells: 2, excluded: [])
        #expect(newest["B"]?.cell == 1 && newest["B"]!.priority < newest["A"]!.priority, "B, the newer, wins cell 1")
        #expect(HisuiGrid.requiredCells(sources, reuse: .showOldest, excluded: []) == 3)
        #expect(HisuiGrid.requiredCells(sources, reuse: .none, excluded: [0, 7]) == 4)
    }

    @Test func trimCutsTheSpansWhereNobodyIs() throws {
        let files = [Self.file("A", 1_000, 10_000), Self.file("B", 15_000, 25_000)]
        let trimmed = try Self.plan(#"{"audio_sources": ["archive-*.json"]}"#, files)
        #expect(trimmed.cuts == [.init(start: 0, end: 1_000), .init(start: 10_000, end: 15_000)])
        let timeline = CompositionTimeline(cutting: trimmed.cuts, end: trimmed.end, from: 0, to: trimmed.end)
        #expect(timeline.length == 19_000 && timeline.start == 1_000)
        #expect(timeline.sessionTime(at: 0) == 1_000 && timeline.sessionTime(at: 9_500) == 15_500)
        #expect(timeline.outputTime(at: 12_000) == nil && timeline.outputTime(at: 15_000) == 9_000 && timeline.outputTime(at: 500) == nil)
        // trim false: only the leading gap goes.
        let kept = try Self.plan(#"{"audio_sources": ["archive-*.json"], "trim": false}"#, files)
        #expect(kept.cuts == [.init(start: 0, end: 1_000)])
        // An excerpt clips the kept spans.
        let excerpt = CompositionTimeline(cutting: trimmed.cuts, end: trimmed.end, from: 9_000, to: 16_000)
        #expect(excerpt.kept == [.init(start: 9_000, end: 10_000), .init(start: 15_000, end: 16_000)] && excerpt.length == 2_000)
    }

    @Test func sourcesAreMatchedByNameInTheSessionsDirectory() throws {
        let files = [Self.file("A", 0, 20_000), Self.file("A", 0, 10_000, split: 1), Self.file("A", 10_000, 20_000, split: 2), Self.file("B", 0, 5_000)]
        // Split parts and the whole file of one sender are one source; the whole file plays.
        let all = try Self.plan(#"{"audio_sources": ["*archive*.json"]}"#, files)
        #expect(all.files["A"]?.map(\.name) == ["archive-A.json"] && all.files["B"]?.map(\.name) == ["archive-B.json"])
        let parts = try Self.plan(#"{"audio_sources": ["split-archive-*.json"]}"#, files)
        #expect(parts.files["A"]?.map(\.name) == ["split-archive-A_0001.json", "split-archive-A_0002.json"] && parts.files["B"] == nil)
        let excluded = try Self.plan(#"{"audio_sources": ["./archive-*.json"], "audio_sources_excluded": ["archive-B.json"]}"#, files)
        #expect(excluded.audioConnections == ["A"])
        #expect(HisuiSources.matches("a*b", "abab") && HisuiSources.matches("*archive*.json", "split-archive-X_0001.json"))
        #expect(!HisuiSources.matches("archive-*.json", "split-archive-X.json") && !HisuiSources.matches("a*b", "abc"))
        #expect(throws: HisuiLayoutError.sources("audio_sources: no recorded file archive-Z.json in the session")) {
            try Self.plan(#"{"audio_sources": ["archive-Z.json"]}"#, files)
        }
        for outside in ["../archive-A.json", "/etc/passwd", "sub/archive-*.json", ".."] {
            #expect(throws: HisuiLayoutError.self) { try Self.plan(#"{"audio_sources": ["\#(outside)"]}"#, files) }
        }
        #expect(throws: HisuiLayoutError.sources("no source in the layout matches a recorded file of the session")) {
            try Self.plan(#"{"audio_sources": ["nothing-*.json"]}"#, files)
        }
    }

    @Test func aLayoutThatCannotBeUsedSaysWhichKey() {
        let cases: [(String, HisuiLayoutError)] = [
            (#"{"video_layout": {"main": {"video_sources": [], "max_colums": 2}}}"#, .unknownKey("video_layout.main.max_colums")),
            (#"{"video_layout": {"main": {"video_sources": [], "width": 320, "cell_width": 160}}}"#,
             .badValue(key: "video_layout.main.width", why: "cannot be given with cell_width")),
            (#"{"video_layout": {"main": {"video_sources": [], "border_pixels": 3}}}"#, .badValue(key: "video_layout.main.border_pixels", why: "must be even, not 3")),
            (#"{"video_layout": {"main": {}}}"#, .badValue(key: "video_layout.main.video_sources", why: "is required in every region")),
            (#"{"video_codec": "H264"}"#, .unsupported(key: "video_codec", why: "H264: recbot encodes compositions with libvpx (VP8 or VP9)")),
            (#"{"audio_codec": "AAC"}"#, .unsupported(key: "audio_codec", why: "AAC: recbot composes Opus audio only")),
            (#"{"resolution": "1920"}"#, .badValue(key: "resolution", why: "must be WIDTHxHEIGHT, each from 16 to 3840, not 1920")),
            (#"{"trim": 1}"#, .badValue(key: "trim", why: "must be true or false")),
            (#"{"frame_rate": "30/0"}"#, .badValue(key: "frame_rate", why: "must be an integer or \"NUMERATOR/DENOMINATOR\", not 30/0")),
        ]
        for (json, expected) in cases {
            #expect(throws: expected, "\(json)") { try HisuiLayout(bytes: Array(json.utf8)) }
        }
        #expect(throws: HisuiLayoutError.self) { try HisuiLayout(bytes: Array("{".utf8)) }
        #expect(throws: HisuiLayoutError.self) { try HisuiLayout(bytes: Array("[1]".utf8)) }
        // A region past the canvas.
        #expect(throws: HisuiLayoutError.badValue(key: "video_layout.main.x_pos", why: "x_pos + width (700) is past the canvas (640)")) {
            try Self.plan(#"{"resolution": "640x480", "video_layout": {"main": {"video_sources": ["*.json"], "x_pos": 100, "width": 600}}}"#, [Self.file("A", 0, 1)])
        }
    }

    @Test func frameRatesAndBitratesReadAsHisuiDoes() throws {
        #expect(try HisuiLayout(bytes: Array(#"{"frame_rate": "30000/1001", "bitrate": 1000}"#.utf8)).framesPerSecond == 30)
        #expect(try HisuiLayout(bytes: Array(#"{"bitrate": 1000}"#.utf8)).videoBitrate == 1_024_000)
        #expect(try HisuiLayout(bytes: Array(#"{"bitrate": 1000, "video_bitrate": 500000}"#.utf8)).videoBitrate == 500_000)
        #expect(try HisuiLayout(bytes: Array(#"{"resolution": "641x481"}"#.utf8)).resolution.map { [$0.width, $0.height] } == [640, 480])
    }

    @Test func jsoncCommentsAndTrailingCommasAreReadStringsAreNot() throws {
        let text = "{\n // a comment, with a comma,\n \"a\": \"http://x/*y*/\", /* block\n */ \"b\": [1, 2,],\n}"
        let plain = String(decoding: try JSONC.plainJSON(Array(text.utf8)), as: UTF8.self)
        #expect(plain.contains("\"http://x/*y*/\"") && !plain.contains("comment") && !plain.contains("2,]"))
        #expect(throws: JSONC.Failure.tooDeep) { try JSONC.plainJSON(Array(String(repeating: "[", count: 65).utf8)) }
        #expect(throws: JSONC.Failure.unterminatedComment) { try JSONC.plainJSON(Array("{} /* open".utf8)) }
        #expect(throws: JSONC.Failure.unterminatedString) { try JSONC.plainJSON(Array("{\"a".utf8)) }
    }
}

/// Layouts in hisui's documented shapes, kept as the verify fuzz target's seeds.
enum HisuiLayoutFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus/verify")
    /// hisui's default layout's shape: a grid of 320x240 cells, at most 3 columns, VP9, encoder tuning.
    static var defaultLayout: String { (try? String(contentsOf: directory.appendingPathComponent("hisui-default.jsonc"), encoding: .utf8)) ?? "" }
    /// hisui's picture-in-picture example (docs/layout.md): a presenter full screen, the others in a row at the bottom right.
    static var pictureInPicture: String { (try? String(contentsOf: directory.appendingPathComponent("hisui-pip.json"), encoding: .utf8)) ?? "" }
}
