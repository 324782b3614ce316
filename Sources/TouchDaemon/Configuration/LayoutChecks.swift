import TouchModel

/// What `touchd check` warns about in a layout that loads but cannot work as written: a group that no screen shows,
/// a control that no touch can reach, two controls that overlap in part. Pure: the loader hands it the decoded values
/// and turns the findings into positioned warnings.
enum LayoutChecks {
    /// One warning: the key path it belongs to and its text.
    struct Finding: Hashable, Sendable {
        var keyPath: String
        var message: String
    }

    /// The groups that no screen lists, neither themselves nor a group around them, while screens exist: what they
    /// hold is active on every screen, which is rarely what a layout of screens means. Only the outermost such group
    /// of a tree is named, so that one forgotten page gives one line.
    static func unlistedGroups(_ groups: [Group], screens: [Screen], paths: [String: String]) -> [Finding] {
        guard !screens.isEmpty else { return [] }
        let listed = Set(screens.flatMap(\.groups))
        let known = Set(groups.map(\.id))
        var findings: [Finding] = []
        for group in groups where !listed.contains(group.id) {
            // The outermost group of its tree (a parent that is unknown is the parent's own problem).
            if let parent = group.parent, known.contains(parent) { continue }
            if holdsListed(group.id, groups: groups, listed: listed) { continue }
            guard let path = paths[group.id] else { continue }
            findings.append(
                Finding(
                    keyPath: path,
                    message:
                        "no [[screen]] lists group '\(group.id)' (nor a group inside it): its controls are active on "
                        + "every screen; add it to a screen's groups"))
        }
        return findings
    }

    /// Whether a group inside `id` (at any depth) is listed: then `id` only organises the screens' groups.
    private static func holdsListed(_ id: String, groups: [Group], listed: Set<String>) -> Bool {
        var inside: Set<String> = [id]
        var grew = true
        // Bounded by the number of groups: each round adds at least one or stops (cycles are reported elsewhere).
        var rounds = 0
        while grew, rounds <= groups.count {
            grew = false
            rounds += 1
            for group in groups where !inside.contains(group.id) {
                if let parent = group.parent, inside.contains(parent) {
                    if listed.contains(group.id) { return true }
                    inside.insert(group.id)
                    grew = true
                }
            }
        }
        return false
    }

    /// The controls whose whole shape lies under an enabled control above them (a higher `z`, or a later declaration
    /// at equal `z`) that is touchable whenever they are: hit-testing always picks the one above, so no touch reaches
    /// them. Only covers that are certain are reported (a circle or convex polygon above, a rectangle, clips of the
    /// groups around the one above that hold the one below too); `line` says where a control's table starts.
    static func hiddenControls(
        _ controls: [Control], groups: [Group], screens: [Screen], paths: [String: String],
        line: (String) -> Int?
    ) -> [Finding] {
        let contexts = contexts(of: controls, groups: groups, screens: screens)
        let boxes = controls.map(\.shape.boundingBox)
        let grid = CoverGrid(boxes)
        var budget = pairBudget
        var findings: [Finding] = []
        for (below, control) in controls.enumerated() {
            var cover: Int?
            for above in grid.candidates(around: boxes[below]) where above != below && boxes[above].holds(boxes[below])
            {
                // A pathological file (thousands of controls stacked on one spot) stops here, not the load.
                guard budget > 0 else { return findings }
                budget -= 1
                let upper = controls[above]
                guard upper.isEnabled, upper.z > control.z || (upper.z == control.z && above > below) else { continue }
                guard contexts[below].screens.isSubset(of: contexts[above].screens) else { continue }
                guard covers(upper.shape, control.shape),
                    contexts[above].clips.allSatisfy({ covers($0, control.shape) })
                else { continue }
                // The top-most cover is the one a touch finds.
                if let current = cover,
                    controls[current].z > upper.z || (controls[current].z == upper.z && current > above)
                {
                    continue
                }
                cover = above
            }
            guard let cover, let path = paths[control.id], let coverPath = paths[controls[cover].id] else { continue }
            let upper = controls[cover]
            let place = line(coverPath).map { "line \($0), " } ?? ""
            let why = upper.z > control.z ? "z \(upper.z) above \(control.z)" : "same z, declared later"
            findings.append(
                Finding(
                    keyPath: path,
                    message:
                        "control '\(control.id)' lies entirely under control '\(upper.id)' (\(place)\(coverPath); "
                        + "\(why)), which is enabled: no touch can reach '\(control.id)'"))
        }
        return findings
    }

    /// The screens where each control is active (every screen when none lists it), and the clips around it.
    static func contexts(
        of controls: [Control], groups: [Group], screens: [Screen]
    ) -> [(screens: Set<String>, clips: [Shape])] {
        let groupsByID = Dictionary(groups.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let allScreens = Set(screens.map(\.id))
        return controls.map { control in
            var onScreens: Set<String> = []
            var clips: [Shape] = []
            var next = control.parent
            var steps = 0
            while let id = next, let group = groupsByID[id], steps <= groups.count {
                for screen in screens where screen.groups.contains(id) { onScreens.insert(screen.id) }
                if let shape = group.shape { clips.append(shape) }
                next = group.parent
                steps += 1
            }
            return (onScreens.isEmpty ? allScreens : onScreens, clips)
        }
    }

    /// The pairs of controls whose shapes overlap in part (neither holds the other) on a screen where both are live:
    /// a touch there goes to the one above (a higher `z`, or a later declaration at equal `z`), which the layout
    /// rarely means. The warning goes on the one below and names the one that wins. Only overlaps that are certain
    /// are reported: rectangles and circles (a polygon's are not told), no group clip cutting into either control.
    /// A control wholly under another is ``hiddenControls(_:groups:screens:paths:line:)``'s, and one wholly on top of
    /// another (a small button on a panel) is deliberate: neither is reported here.
    static func overlappingControls(
        _ controls: [Control], groups: [Group], screens: [Screen], paths: [String: String],
        line: (String) -> Int?
    ) -> [Finding] {
        let contexts = contexts(of: controls, groups: groups, screens: screens)
        let boxes = controls.map(\.shape.boundingBox)
        // A sweep along x: only controls whose boxes meet in x are compared.
        let order = controls.indices.sorted { (boxes[$0].minX, $0) < (boxes[$1].minX, $1) }
        var budget = pairBudget
        var findings: [Finding] = []
        for (position, first) in order.enumerated() {
            for second in order[(position + 1)...] {
                guard boxes[second].minX < boxes[first].maxX else { break }
                guard budget > 0 else { return findings }
                budget -= 1
                let (a, b) = (controls[first], controls[second])
                guard overlaps(a.shape, b.shape), !covers(a.shape, b.shape), !covers(b.shape, a.shape),
                    screens.isEmpty || !contexts[first].screens.isDisjoint(with: contexts[second].screens),
                    contexts[first].clips.allSatisfy({ covers($0, a.shape) }),
                    contexts[second].clips.allSatisfy({ covers($0, b.shape) })
                else { continue }
                let (below, above) =
                    a.z > b.z || (a.z == b.z && first > second) ? (second, first) : (first, second)
                let (lower, upper) = (controls[below], controls[above])
                guard let path = paths[lower.id], let upperPath = paths[upper.id] else { continue }
                let place = line(upperPath).map { "line \($0), " } ?? ""
                let why = upper.z > lower.z ? "z \(upper.z) above \(lower.z)" : "same z, declared later"
                let when = upper.isEnabled ? "" : " while it is enabled"
                findings.append(
                    Finding(
                        keyPath: path,
                        message:
                            "control '\(lower.id)' overlaps control '\(upper.id)' (\(place)\(upperPath)) in part: "
                            + "where they overlap, touches go to '\(upper.id)'\(when) (\(why)); move one, or set z "
                            + "to choose"))
            }
        }
        return findings
    }

    /// Whether the shapes share points inside both (an area, not an edge), when that can be told for certain; false
    /// when it cannot (a polygon).
    static func overlaps(_ first: Shape, _ second: Shape) -> Bool {
        switch (first, second) {
        case (.rect(let a), .rect(let b)):
            return a.minX < b.maxX && b.minX < a.maxX && a.minY < b.maxY && b.minY < a.maxY
        case (.rect(let rect), .circle(let circle)), (.circle(let circle), .rect(let rect)):
            let nearest = Point(
                x: Swift.min(Swift.max(circle.center.x, rect.minX), rect.maxX),
                y: Swift.min(Swift.max(circle.center.y, rect.minY), rect.maxY))
            return nearest.distance(to: circle.center) < circle.radius
        case (.circle(let a), .circle(let b)):
            return a.center.distance(to: b.center) < a.radius + b.radius
        case (.polygon, _), (_, .polygon):
            return false
        }
    }

    /// At most this many pairs of controls are compared in depth, so that a file of 10,000 controls stacked on one
    /// spot costs a bounded time at every load; the warnings are advice, and a layout that large is machine-made.
    static let pairBudget = 2_000_000

    /// The controls by the cells of a grid over their bounding boxes (32 × 32, fewer cells for many controls, so that
    /// it holds at most about 500,000 entries however large the boxes): a control can only be covered by one whose box
    /// holds its box's centre, so only the controls in that centre's cell are compared.
    private struct CoverGrid {
        let side: Int
        let origin: Point
        let cell: Size
        var cells: [[Int]]

        init(_ boxes: [Rect]) {
            let all = boxes.dropFirst().reduce(boxes.first ?? Rect(x: 0, y: 0, width: 1, height: 1)) { $0.union($1) }
            var side = 32
            while side > 1, side * side * boxes.count > 500_000 { side -= 1 }
            self.side = side
            origin = all.origin
            cell = Size(width: Swift.max(all.width, 1) / Double(side), height: Swift.max(all.height, 1) / Double(side))
            cells = Array(repeating: [], count: side * side)
            for (index, box) in boxes.enumerated() {
                let (x0, y0) = cellOf(Point(x: box.minX, y: box.minY))
                let (x1, y1) = cellOf(Point(x: box.maxX, y: box.maxY))
                for y in y0...y1 {
                    for x in x0...x1 { cells[y * side + x].append(index) }
                }
            }
        }

        /// The column and row of `point`, clamped to the grid (before any conversion to Int).
        private func cellOf(_ point: Point) -> (Int, Int) {
            func index(_ offset: Double, _ size: Double) -> Int {
                let raw = (offset / size).rounded(.down)
                guard raw.isFinite else { return 0 }
                return Int(Swift.min(Double(side - 1), Swift.max(0, raw)))
            }
            return (index(point.x - origin.x, cell.width), index(point.y - origin.y, cell.height))
        }

        func candidates(around box: Rect) -> [Int] {
            let (x, y) = cellOf(box.center)
            return cells[y * side + x]
        }
    }

    /// Whether every point of `inner` lies in `outer`, when that can be told for certain; false when it cannot.
    static func covers(_ outer: Shape, _ inner: Shape) -> Bool {
        switch outer {
        case .rect(let rect):
            return rect.holds(inner.boundingBox)
        case .circle(let circle):
            switch inner {
            case .rect(let rect): return corners(of: rect).allSatisfy(circle.contains)
            case .circle(let small): return small.center.distance(to: circle.center) + small.radius <= circle.radius
            case .polygon(let polygon): return polygon.vertices.allSatisfy(circle.contains)
            }
        case .polygon(let polygon):
            // Only a convex polygon holds every point between points it holds.
            guard polygon.isConvex else { return false }
            switch inner {
            case .rect(let rect): return corners(of: rect).allSatisfy(polygon.containsClosed)
            case .circle: return false
            case .polygon(let small): return small.vertices.allSatisfy(polygon.containsClosed)
            }
        }
    }

    private static func corners(of rect: Rect) -> [Point] {
        [
            Point(x: rect.minX, y: rect.minY), Point(x: rect.maxX, y: rect.minY),
            Point(x: rect.maxX, y: rect.maxY), Point(x: rect.minX, y: rect.maxY),
        ]
    }
}

extension Rect {
    /// Whether `other` lies inside this rectangle (edges included).
    fileprivate func holds(_ other: Rect) -> Bool {
        other.minX >= minX && other.maxX <= maxX && other.minY >= minY && other.maxY <= maxY
    }
}

extension Polygon {
    /// Every vertex lies on the same side of every edge (or on it), and the polygon has an area: convex and simple
    /// (a pentagram turns the same way at every vertex, but its edges have vertices on both sides).
    fileprivate var isConvex: Bool {
        guard vertices.count >= 3 else { return false }
        var sign = 0.0
        for index in vertices.indices {
            let a = vertices[index]
            let b = vertices[(index + 1) % vertices.count]
            for v in vertices {
                let cross = (b.x - a.x) * (v.y - a.y) - (b.y - a.y) * (v.x - a.x)
                guard cross.isFinite else { return false }
                if cross == 0 { continue }
                if sign == 0 {
                    sign = cross
                } else if (sign > 0) != (cross > 0) {
                    return false
                }
            }
        }
        return sign != 0
    }

    /// For a convex polygon: the point is inside or on the outline.
    fileprivate func containsClosed(_ point: Point) -> Bool {
        contains(point) || distanceToOutline(point) <= 1e-9
    }
}
