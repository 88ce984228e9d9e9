/// Where each present sender goes on the canvas: the automatic grid (as many columns as the
/// square root rounds up to, rows as needed), each picture fitted into its cell without
/// stretching, centred, the rest black.
public struct Rectangle: Sendable, Equatable {
    public var x: Int, y: Int, width: Int, height: Int

    public init(x: Int, y: Int, width: Int, height: Int) { (self.x, self.y, self.width, self.height) = (x, y, width, height) }
}

public enum GridLayout {
    /// Cells for `count` senders on a `width`×`height` canvas, row by row; even coordinates and
    /// sizes (I420 chroma is half size).
    public static func cells(count: Int, width: Int, height: Int) -> [Rectangle] {
        guard count > 0 else { return [] }
        var columns = 1
        while columns * columns < count { columns += 1 }
        let rows = (count + columns - 1) / columns
        let (cellWidth, cellHeight) = ((width / columns) & ~1, (height / rows) & ~1)
        let top = ((height - cellHeight * rows) / 2) & ~1
        return (0..<count).map { index in
            let (row, column) = (index / columns, index % columns)
            // A last row that is not full is centred, as video-conference grids do.
            let inRow = row == rows - 1 ? count - row * columns : columns
            let left = ((width - cellWidth * inRow) / 2) & ~1
            return Rectangle(x: left + column * cellWidth, y: top + row * cellHeight, width: cellWidth, height: cellHeight)
        }
    }

    /// The largest `pictureWidth`:`pictureHeight` rectangle inside `cell`, centred.
    public static func fit(width pictureWidth: Int, height pictureHeight: Int, in cell: Rectangle) -> Rectangle {
        guard pictureWidth > 0, pictureHeight > 0 else { return cell }
        var width = cell.width
        var height = width * pictureHeight / pictureWidth
        if height > cell.height {
            height = cell.height
            width = height * pictureWidth / pictureHeight
        }
        (width, height) = (max(2, width & ~1), max(2, height & ~1))
        return Rectangle(x: (cell.x + (cell.width - width) / 2) & ~1, y: (cell.y + (cell.height - height) / 2) & ~1, width: width, height: height)
    }
}
