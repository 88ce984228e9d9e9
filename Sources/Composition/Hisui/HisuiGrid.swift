/// Where a source sits in its region's grid, and which wins when two in one cell overlap in
/// time: the lower priority (hisui's rule; show_oldest counts up, show_newest down).
public struct HisuiCellAssignment: Sendable, Equatable {
    public var cell: Int
    public var priority: Int
}

/// hisui's grid rules for one region (docs/layout_region.md): how many cells the sources
/// need, the grid's shape, and which cell each source keeps for the whole composition.
enum HisuiGrid {
    /// Cells needed: every source (reuse none) or the most overlapping any one source
    /// (hisui's count), plus the excluded cells that fall within that count.
    static func requiredCells(_ sources: [HisuiSource], reuse: HisuiRegion.Reuse, excluded: [Int]) -> Int {
        var needed = reuse == .none ? sources.count : sources.map { one in sources.filter { one.overlaps($0) }.count }.max() ?? 0
        for index in Set(excluded).sorted() {
            guard index < needed else { break }
            needed += 1
        }
        return needed
    }

    /// Rows and columns: as square as possible (one more column than rows allowed) when
    /// unconstrained, else filled along the tighter limit.
    static func dimensions(maxRows: Int, maxColumns: Int, sources needed: Int) -> (rows: Int, columns: Int) {
        let rowLimit = maxRows == 0 ? Int.max : maxRows
        let columnLimit = maxColumns == 0 ? Int.max : maxColumns
        if rowLimit == .max && columnLimit == .max {
            var columns = 1
            while columns * columns < needed { columns += 1 }
            var rows = max(1, columns - 1)
            if rows * columns < needed { rows += 1 }
            return (rows, columns)
        }
        if columnLimit <= rowLimit {
            return (max(1, min(rowLimit, ceilDivide(needed, columnLimit))), max(1, min(needed, columnLimit)))
        }
        return (max(1, min(needed, rowLimit)), max(1, min(columnLimit, ceilDivide(needed, rowLimit))))
    }

    static func ceilDivide(_ a: Int, _ b: Int) -> Int { b == .max ? (a > 0 ? 1 : 0) : (a + b - 1) / b }

    private enum Cell: Equatable { case excluded, fresh, used(until: Int64) }

    /// Each source's cell, taking sources by start time: the first free cell (one whose
    /// source has ended, when reusing), else — when reusing — the cell that frees soonest,
    /// sharing it by priority; with reuse none a source finding no fresh cell is not shown.
    static func assign(_ sources: [HisuiSource], reuse: HisuiRegion.Reuse, cells count: Int, excluded: [Int]) -> [String: HisuiCellAssignment] {
        var cells = [Cell](repeating: .fresh, count: count)
        for index in excluded where index < count { cells[index] = .excluded }
        var assigned: [String: HisuiCellAssignment] = [:]
        var priority = Int.max / 2
        for source in sources.sorted(by: { ($0.start, $0.end, $0.connectionID) < ($1.start, $1.end, $1.connectionID) }) {
            if reuse == .none {
                guard let index = cells.firstIndex(of: .fresh) else { break }
                cells[index] = .used(until: source.end)
                assigned[source.connectionID] = HisuiCellAssignment(cell: index, priority: priority)
                continue
            }
            if let index = cells.firstIndex(where: { cell in
                switch cell {
                case .fresh: true
                case .used(let until): until < source.start
                case .excluded: false
                }
            }) {
                cells[index] = .used(until: source.end)
                assigned[source.connectionID] = HisuiCellAssignment(cell: index, priority: priority)
                continue
            }
            let soonest = cells.enumerated().compactMap { entry -> (index: Int, until: Int64)? in
                if case .used(let until) = entry.element { return (entry.offset, until) }
                return nil
            }.min { ($0.until, $0.index) < ($1.until, $1.index) }
            guard let soonest else { continue }
            cells[soonest.index] = .used(until: max(soonest.until, source.end))
            priority += reuse == .showOldest ? 1 : -1
            assigned[source.connectionID] = HisuiCellAssignment(cell: soonest.index, priority: priority)
        }
        return assigned
    }
}
