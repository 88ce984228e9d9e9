/// A plain aligned text table for people; `-` stands for a missing value.
struct TextTable {
    enum Alignment { case left, right }

    var columns: [(title: String, alignment: Alignment)]
    var rows: [[String]] = []

    init(_ columns: [(String, Alignment)]) {
        self.columns = columns.map { (title: $0.0, alignment: $0.1) }
    }

    mutating func add(_ row: [String?]) {
        rows.append(row.map { value in
            guard let value, !value.isEmpty else { return "-" }
            // One line per row, whatever the data holds; other control characters made visible.
            return TerminalText.escaped(String(value.map { $0.isNewline || $0 == "\t" ? " " : $0 }))
        })
    }

    func rendered() -> String {
        var widths = columns.map { $0.title.count }
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: max(0, widths[index] - cell.count))
                let isLast = index == cells.count - 1
                switch columns[index].alignment {
                case .left: parts.append(isLast ? cell : cell + padding)
                case .right: parts.append(padding + cell)
                }
            }
            return parts.joined(separator: "  ")
        }
        var lines = [line(columns.map(\.title))]
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}
