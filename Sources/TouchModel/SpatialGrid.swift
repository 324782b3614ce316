/// A uniform grid over the controls' bounding boxes, so a touch-down looks at the few controls
/// whose boxes cover its cell instead of every control.
///
/// The cell lists are stored compressed (one offsets array and one items array) and each list
/// keeps the order in which the boxes were given, which the scene makes top-most first.
struct SpatialGrid: Sendable {
    private var originX = 0.0
    private var originY = 0.0
    private var cellWidth = 1.0
    private var cellHeight = 1.0
    private var columns = 0
    private var rows = 0
    /// `cellStart[cell]..<cellStart[cell + 1]` indexes `items` for one cell.
    private var cellStart: [Int] = [0]
    private var items: [Int] = []

    /// The most cells the grid uses, whatever the number of controls.
    static let maximumCells = 65_536

    /// Coordinates are clamped to ±this many pixels for bucketing only, so that the union of valid
    /// boxes stays finite; the exact shape test decides containment.
    static let reach = 1e15

    /// Builds the grid. `boxes` holds (control index, bounding box), top-most first; boxes that are
    /// not valid (non-finite) are left out.
    init(boxes: [(index: Int, box: Rect)]) {
        let valid = boxes.filter { $0.box.isValid }.map { (index: $0.index, box: SpatialGrid.clamp($0.box)) }
        guard let first = valid.first else { return }
        let bounds = valid.dropFirst().reduce(first.box) { $0.union($1.box) }
        guard bounds.isValid else { return }

        let cellCount = Double(Swift.min(SpatialGrid.maximumCells, Swift.max(1, valid.count)))
        let width = Swift.max(bounds.width, 1)
        let height = Swift.max(bounds.height, 1)
        // Roughly square cells, about one per control. Both factors are finite and in 1...cellCount.
        let idealColumns = (cellCount * width / height).squareRoot().rounded()
        let columnCount = Swift.min(cellCount, Swift.max(1, idealColumns.isFinite ? idealColumns : 1))
        let rowCount = Swift.min(cellCount, Swift.max(1, (cellCount / columnCount).rounded(.up)))
        columns = Int(columnCount)
        rows = Int(rowCount)
        originX = bounds.minX
        originY = bounds.minY
        cellWidth = width / columnCount
        cellHeight = height / rowCount

        var counts = [Int](repeating: 0, count: columns * rows + 1)
        for entry in valid {
            forEachCell(of: entry.box) { counts[$0 + 1] += 1 }
        }
        for cell in 0..<(columns * rows) {
            counts[cell + 1] += counts[cell]
        }
        cellStart = counts
        items = [Int](repeating: 0, count: counts[columns * rows])
        var next = counts
        for entry in valid {
            forEachCell(of: entry.box) { cell in
                items[next[cell]] = entry.index
                next[cell] += 1
            }
        }
    }

    /// The control indices whose boxes cover the cell of `point`, top-most first; empty for a point
    /// that is not finite. A point beyond the grid gets the nearest edge cell: the caller's exact
    /// shape test rejects what is not there, and no rounding at the far edges can lose a hit.
    func candidates(at point: Point) -> ArraySlice<Int> {
        guard columns > 0, point.isFinite else { return [] }
        let cell =
            SpatialGrid.index(point.y, origin: originY, size: cellHeight, count: rows) * columns
            + SpatialGrid.index(point.x, origin: originX, size: cellWidth, count: columns)
        return items[cellStart[cell]..<cellStart[cell + 1]]
    }

    private static func clamp(_ box: Rect) -> Rect {
        let minX = Swift.min(reach, Swift.max(-reach, box.minX))
        let minY = Swift.min(reach, Swift.max(-reach, box.minY))
        let maxX = Swift.min(reach, Swift.max(-reach, box.maxX))
        let maxY = Swift.min(reach, Swift.max(-reach, box.maxY))
        return Rect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    private func forEachCell(of box: Rect, _ body: (Int) -> Void) {
        let firstColumn = SpatialGrid.index(box.minX, origin: originX, size: cellWidth, count: columns)
        let lastColumn = SpatialGrid.index(box.maxX, origin: originX, size: cellWidth, count: columns)
        let firstRow = SpatialGrid.index(box.minY, origin: originY, size: cellHeight, count: rows)
        let lastRow = SpatialGrid.index(box.maxY, origin: originY, size: cellHeight, count: rows)
        for row in firstRow...lastRow {
            for column in firstColumn...lastColumn {
                body(row * columns + column)
            }
        }
    }

    /// The cell index along one axis, clamped to `0..<count`; never traps on NaN or infinity.
    private static func index(_ value: Double, origin: Double, size: Double, count: Int) -> Int {
        let position = ((value - origin) / size).rounded(.down)
        guard position >= 0 else { return 0 }  // also NaN
        guard position < Double(count - 1) else { return count - 1 }
        return Int(position)
    }
}
