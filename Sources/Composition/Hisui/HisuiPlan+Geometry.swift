/// hisui's sizing rules (docs/layout_region.md, "解像度の決定方法"): the canvas, each region's
/// size from `width`/`height`, `cell_width`/`cell_height` or what the canvas leaves, and the
/// cells inside its borders. Every size and position is even (I420).
extension HisuiPlan {
    struct Sized {
        var rows: Int, columns: Int, width: Int, height: Int
        var assignments: [String: HisuiCellAssignment]
    }

    /// The grid and the region's size before the canvas is known (zero: to be computed).
    static func size(_ region: HisuiRegion, sources: [HisuiSource], canvas: (width: Int, height: Int)?) -> Sized {
        let needed = HisuiGrid.requiredCells(sources, reuse: region.reuse, excluded: region.cellsExcluded)
        let (rows, columns) = HisuiGrid.dimensions(maxRows: region.maxRows, maxColumns: region.maxColumns, sources: needed)
        let assignments = HisuiGrid.assign(sources, reuse: region.reuse, cells: rows * columns, excluded: region.cellsExcluded)
        let border = region.borderPixels
        var (width, height) = (region.width, region.height)
        if region.cellWidth != 0 {
            let grid = region.cellWidth * columns + border * (columns - 1)
            // The outer border is added only when the given resolution has room for it.
            width = canvas.map { grid + border * 2 <= $0.width } == true ? grid + border * 2 : grid
        }
        if region.cellHeight != 0 {
            let grid = region.cellHeight * rows + border * (rows - 1)
            height = canvas.map { grid + border * 2 <= $0.height } == true ? grid + border * 2 : grid
        }
        return Sized(rows: rows, columns: columns, width: width, height: height, assignments: assignments)
    }

    /// `resolution`, else the smallest canvas holding every region.
    static func canvas(layout: HisuiLayout, planned: [(HisuiRegion, [HisuiSource])]) throws(HisuiLayoutError) -> (width: Int, height: Int) {
        if let given = layout.resolution { return given }
        var (width, height) = (16, 16)
        for (region, sources) in planned {
            let sized = size(region, sources: sources, canvas: nil)
            let key = "video_layout.\(region.name)"
            guard sized.width != 0 else { throw .badValue(key: key + ".width", why: "width or cell_width is needed when resolution is not given") }
            guard sized.height != 0 else { throw .badValue(key: key + ".height", why: "height or cell_height is needed when resolution is not given") }
            width = max(width, (region.x & ~1) + (sized.width & ~1))
            height = max(height, (region.y & ~1) + (sized.height & ~1))
        }
        guard width <= 7_680, height <= 4_320 else { throw .badValue(key: "video_layout", why: "the regions need a \(width)x\(height) canvas, larger than 7680x4320") }
        return (width, height)
    }

    /// The region on the canvas, its cells and who keeps each.
    static func place(_ region: HisuiRegion, sources: [HisuiSource], canvas: (width: Int, height: Int), given: Bool) throws(HisuiLayoutError) -> Region {
        let key = "video_layout.\(region.name)"
        let sized = size(region, sources: sources, canvas: given ? canvas : nil)
        // Without a resolution hisui measures a region against its own extent (x + width).
        let reference = given ? canvas : (width: region.x + sized.width, height: region.y + sized.height)
        let width = try side(sized.width, position: region.x, limit: reference.width, key: key + ".width")
        let height = try side(sized.height, position: region.y, limit: reference.height, key: key + ".height")
        guard region.x + width <= reference.width else { throw .badValue(key: key + ".x_pos", why: "x_pos + width (\(region.x + width)) is past the canvas (\(reference.width))") }
        guard region.y + height <= reference.height else { throw .badValue(key: key + ".y_pos", why: "y_pos + height (\(region.y + height)) is past the canvas (\(reference.height))") }
        let border = region.borderPixels
        // The outer border is left out when the region spans the whole canvas.
        let gridWidth = width == reference.width ? width : width - border * 2
        let gridHeight = height == reference.height ? height : height - border * 2
        guard gridWidth > 0, gridHeight > 0 else { throw .badValue(key: key + ".border_pixels", why: "the borders (\(border) px) leave no room in a \(width)x\(height) region") }
        let cellWidth = (max(0, gridWidth - border * (sized.columns - 1)) / sized.columns) & ~1
        let cellHeight = (max(0, gridHeight - border * (sized.rows - 1)) / sized.rows) & ~1
        let left = (max(0, width - (cellWidth * sized.columns + border * (sized.columns - 1))) / 2) & ~1
        let top = (max(0, height - (cellHeight * sized.rows + border * (sized.rows - 1))) / 2) & ~1
        let origin = (x: region.x & ~1, y: region.y & ~1)
        let cells = (0..<(sized.rows * sized.columns)).map { index in
            let (row, column) = (index / sized.columns, index % sized.columns)
            return Rectangle(x: origin.x + left + (cellWidth + border) * column, y: origin.y + top + (cellHeight + border) * row, width: cellWidth, height: cellHeight)
        }
        return Region(name: region.name, frame: Rectangle(x: origin.x, y: origin.y, width: width, height: height), cells: cells,
                      assignments: sized.assignments, background: yuv(region.background))
    }

    /// A side given (16 up to the canvas, made even) or what the canvas leaves past `position`.
    static func side(_ value: Int, position: Int, limit: Int, key: String) throws(HisuiLayoutError) -> Int {
        guard value != 0 else { return max(0, limit - position) & ~1 }
        guard (16...max(16, limit)).contains(value) else { throw .badValue(key: key, why: "must be from 16 to \(limit), not \(value)") }
        return value & ~1
    }

    /// RGB to BT.601 studio-range YUV, as the encoders expect.
    static func yuv(_ rgb: [Int]) -> (y: UInt8, u: UInt8, v: UInt8) {
        let (r, g, b) = (Double(rgb[0]), Double(rgb[1]), Double(rgb[2]))
        let y = 16 + (65.738 * r + 129.057 * g + 25.064 * b) / 256
        let u = 128 + (-37.945 * r - 74.494 * g + 112.439 * b) / 256
        let v = 128 + (112.439 * r - 94.154 * g - 18.285 * b) / 256
        func byte(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        return (byte(y), byte(u), byte(v))
    }
}
