import TouchModel

/// Places label boxes so that no two overlap (render's labels and its legend), deterministically: the same labels in
/// the same order always land in the same places.
///
/// Each box is tried at its preferred place, then shifted by whole lines up and down and by half widths left and
/// right, nearest first, then anywhere on the picture row by row; every candidate is kept inside the picture when it
/// fits. A box that fits nowhere is not placed (the caller says which labels were left out). Placed boxes sit in a
/// uniform grid of cells, so a check costs the boxes near the candidate, not all of them.
struct LabelPlacer {
    /// The picture: boxes are kept inside it when they fit.
    let bounds: Rect
    /// The space kept free between two boxes.
    let gap: Double
    private(set) var placed: [Rect] = []
    private var cells: [Cell: [Int]] = [:]
    private let cellSize: Double
    /// Sizes the search row by row found no room for: boxes only ever get added, so it would find none for a box at
    /// least as wide and as high either, and a layout with thousands of controls costs one such search per size
    /// instead of one per label.
    private var unplaceable: [(width: Double, height: Double)] = []

    private struct Cell: Hashable {
        var x: Int
        var y: Int
    }

    init(bounds: Rect, gap: Double = 2, cellSize: Double = 64) {
        self.bounds = bounds
        self.gap = gap
        self.cellSize = Swift.max(cellSize, 1)
    }

    /// Places a box of `size` as near `preferred` (its top-left corner) as the boxes placed before allow; nil when it
    /// fits nowhere.
    mutating func place(width: Double, height: Double, preferred: Point) -> Rect? {
        guard width.isFinite, height.isFinite, width > 0, height > 0 else { return nil }
        let stepX = width / 2 + gap
        let stepY = height + gap
        // Rings of shifts around the preferred place, vertical ones first within a ring (a label slides along its
        // control rather than across its neighbours).
        for ring in 0...6 {
            for (i, j) in Self.ring(ring) {
                let candidate = clamp(
                    Rect(
                        x: preferred.x + Double(i) * stepX, y: preferred.y + Double(j) * stepY, width: width,
                        height: height))
                if isFree(candidate) { return commit(candidate) }
            }
        }
        // Anywhere, row by row from the top-left corner, unless a box no larger already found no room.
        if unplaceable.contains(where: { width >= $0.width && height >= $0.height }) { return nil }
        let rowStep = Swift.max(height / 2, 1)
        let columnStep = Swift.max(width / 4, height)
        var y = bounds.minY
        while y + height <= bounds.maxY + 1e-9 {
            var x = bounds.minX
            while x + width <= bounds.maxX + 1e-9 {
                let candidate = Rect(x: x, y: y, width: width, height: height)
                if isFree(candidate) { return commit(candidate) }
                x += columnStep
            }
            y += rowStep
        }
        unplaceable.append((width, height))
        return nil
    }

    /// Places a box exactly where given (the legend, before every other label); nil when that place is taken.
    mutating func placeExactly(_ box: Rect) -> Rect? {
        isFree(box) ? commit(box) : nil
    }

    /// The shifts (in steps) at distance `ring`, in a fixed order: nearest to vertical first, down before up, right
    /// before left.
    static func ring(_ ring: Int) -> [(Int, Int)] {
        guard ring > 0 else { return [(0, 0)] }
        var shifts: [(Int, Int)] = []
        for i in -ring...ring {
            for j in -ring...ring where Swift.max(abs(i), abs(j)) == ring {
                shifts.append((i, j))
            }
        }
        // Sort key: horizontal distance, rightward first, vertical distance, downward first.
        func key(_ shift: (Int, Int)) -> Int {
            let (i, j) = shift
            return ((abs(i) * 2 + (i < 0 ? 1 : 0)) * 64 + abs(j)) * 2 + (j < 0 ? 1 : 0)
        }
        return shifts.sorted { key($0) < key($1) }
    }

    private func clamp(_ box: Rect) -> Rect {
        var x = box.minX
        var y = box.minY
        if box.width <= bounds.width { x = Swift.min(Swift.max(x, bounds.minX), bounds.maxX - box.width) }
        if box.height <= bounds.height { y = Swift.min(Swift.max(y, bounds.minY), bounds.maxY - box.height) }
        return Rect(x: x, y: y, width: box.width, height: box.height)
    }

    private func isFree(_ box: Rect) -> Bool {
        for cell in cells(of: box) {
            for index in self.cells[cell, default: []] where Self.overlap(placed[index], box, gap: gap) {
                return false
            }
        }
        return true
    }

    /// Whether two boxes come closer than `gap` (touching edges at a distance of `gap` do not count).
    static func overlap(_ a: Rect, _ b: Rect, gap: Double = 0) -> Bool {
        a.minX < b.maxX + gap && b.minX < a.maxX + gap && a.minY < b.maxY + gap && b.minY < a.maxY + gap
    }

    private mutating func commit(_ box: Rect) -> Rect {
        placed.append(box)
        for cell in cells(of: box) { cells[cell, default: []].append(placed.count - 1) }
        return box
    }

    /// The grid cells a box (grown by the gap) touches.
    private func cells(of box: Rect) -> [Cell] {
        let x0 = index(box.minX - gap)
        let x1 = index(box.maxX + gap)
        let y0 = index(box.minY - gap)
        let y1 = index(box.maxY + gap)
        var result: [Cell] = []
        for x in x0...Swift.max(x0, x1) {
            for y in y0...Swift.max(y0, y1) { result.append(Cell(x: x, y: y)) }
        }
        return result
    }

    /// A coordinate's cell. Coordinates are finite and bounded by the output's size (at most 32768 px, shapes within
    /// 4 of those), so the clamp only guards the conversion.
    private func index(_ coordinate: Double) -> Int {
        let cell = (coordinate / cellSize).rounded(.down)
        return Int(exactly: Swift.min(Swift.max(cell.isFinite ? cell : 0, -1_000_000), 1_000_000)) ?? 0
    }
}
