import Testing

@testable import TouchModel

/// The scene's grid-based hit test against a brute-force reference: the top-most control by
/// (z, declaration index) among the touchable controls whose exact shape, and every enclosing
/// group's shape, holds the point (docs/uikit-semantics.md §2 "disabled is transparent", §3 "exact shape").
@Suite("Hit-testing through the scene")
struct HitTestTests {
    /// A scene's declarations plus what the test changed since, to compute the expected hit.
    struct Layout {
        var controls: [Control]
        var groups: [Group] = []
        var screens: [Screen] = []
        var activeScreen: String?
        var removed: Set<String> = []

        func makeScene() throws -> Scene {
            try Scene(
                controls: controls, groups: groups, screens: screens, activeScreen: activeScreen,
                settings: Scene.Settings(maximumContacts: 10, stuckContactTimeout: 0))
        }

        /// The groups enclosing `control`, innermost first.
        func ancestors(of control: Control) -> [Group] {
            var result: [Group] = []
            var next = control.parent
            while let id = next, let group = groups.first(where: { $0.id == id }) {
                result.append(group)
                next = group.parent
            }
            return result
        }

        /// Brute force: every control checked, the best by (z, index) wins.
        func expectedHit(_ point: Point) -> String? {
            var best: (z: Int, index: Int)?
            var winner: String?
            for (index, control) in controls.enumerated() {
                guard control.isEnabled, !removed.contains(control.id), control.shape.contains(point) else { continue }
                let chain = ancestors(of: control)
                guard chain.allSatisfy({ $0.shape?.contains(point) ?? true }) else { continue }
                let onScreens = screens.filter { screen in chain.contains { screen.groups.contains($0.id) } }
                if !onScreens.isEmpty {
                    guard let activeScreen, onScreens.contains(where: { $0.id == activeScreen }) else { continue }
                }
                if let current = best, (control.z, index) < current { continue }
                best = (control.z, index)
                winner = control.id
            }
            return winner
        }
    }

    /// Touches `point` with a fresh contact and lifts it; the control that got touchDown, if any.
    static func actualHit(_ scene: inout Scene, _ point: Point, time: inout UInt64) -> String? {
        time += 1000
        let output = scene.handle(Frame(time: Instant(microseconds: time), samples: [.began(0, at: point), .ended(0)]))
        let downs = output.events.filter { $0.event == .touchDown }
        return downs.first?.control
    }

    // MARK: - Random layouts

    static func randomShape(_ random: inout PropertyTestRandom, fractional: Bool) -> Shape {
        func coordinate(_ scale: Double) -> Double {
            let value = random.unit() * scale
            return fractional ? value : value.rounded()
        }
        let x = coordinate(1000) - 50
        let y = coordinate(1000) - 50
        switch random.int(0..<10) {
        case 0..<5:
            let width = random.chance(0.08) ? 0 : coordinate(300)
            let height = random.chance(0.08) ? 0 : coordinate(300)
            return .rect(Rect(x: x, y: y, width: width, height: height))
        case 5..<7:
            let radius = random.chance(0.08) ? 0 : coordinate(150)
            return .circle(Circle(center: Point(x: x, y: y), radius: radius))
        default:
            let count = 3 + random.int(0..<6)
            var vertices: [Point] = []
            for _ in 0..<count {
                vertices.append(Point(x: x + coordinate(250) - 125, y: y + coordinate(250) - 125))
            }
            return .polygon(Polygon(vertices: vertices))
        }
    }

    static func randomLayout(seed: UInt64, count: Int, fractional: Bool, groups useGroups: Bool) -> Layout {
        var random = PropertyTestRandom(seed: seed)
        var layout = Layout(controls: [])
        if useGroups {
            layout.groups = [
                Group(id: "g0", shape: .rect(Rect(x: 0, y: 0, width: 600, height: 600))),
                Group(id: "g1", parent: "g0", shape: .circle(Circle(center: Point(x: 300, y: 300), radius: 250))),
                Group(id: "g2", shape: .rect(Rect(x: 400, y: 400, width: 600, height: 600))),
                Group(id: "g3"),
                Group(
                    id: "g4",
                    shape: .polygon(
                        Polygon(vertices: [
                            Point(x: 0, y: 1000), Point(x: 500, y: 200), Point(x: 1000, y: 1000),
                        ]))),
            ]
            layout.screens = [Screen(id: "s0", groups: ["g0", "g3"]), Screen(id: "s1", groups: ["g2"])]
            layout.activeScreen = random.chance(0.5) ? "s0" : "s1"
        }
        for index in 0..<count {
            let parent: String? = useGroups && random.chance(0.6) ? "g\(random.int(0..<5))" : nil
            layout.controls.append(
                Control(
                    id: "c\(index)", shape: randomShape(&random, fractional: fractional), parent: parent,
                    z: random.int(-2..<3), isEnabled: random.chance(0.8)))
        }
        if random.chance(0.3) {
            // A huge backdrop under everything.
            layout.controls.append(
                Control(id: "backdrop", shape: .rect(Rect(x: -1e6, y: -1e6, width: 2e6, height: 2e6)), z: -3))
        }
        return layout
    }

    /// Random points, points on and next to the controls' edges, far and non-finite points.
    static func points(for layout: Layout, _ random: inout PropertyTestRandom, count: Int) -> [Point] {
        var points: [Point] = []
        for _ in 0..<count {
            switch random.int(0..<10) {
            case 0..<4:
                points.append(Point(x: random.unit() * 1300 - 150, y: random.unit() * 1300 - 150))
            case 4..<6:
                points.append(
                    Point(x: (random.unit() * 1300 - 150).rounded(), y: (random.unit() * 1300 - 150).rounded()))
            case 6..<9:
                guard let control = layout.controls.randomElement(using: &random) else { continue }
                points.append(edgePoint(of: control.shape, &random))
            default:
                let odd: [Double] = [.nan, .infinity, -.infinity, 1e300, -1e300, .greatestFiniteMagnitude, 0, -0.0]
                points.append(Point(x: odd.randomElement(using: &random)!, y: random.unit() * 1000))
            }
        }
        return points
    }

    static func edgePoint(of shape: Shape, _ random: inout PropertyTestRandom) -> Point {
        let box = shape.boundingBox
        let xs = [
            box.minX, box.minX.nextDown, box.minX.nextUp, box.maxX, box.maxX.nextDown, box.maxX.nextUp, box.center.x,
        ]
        let ys = [
            box.minY, box.minY.nextDown, box.minY.nextUp, box.maxY, box.maxY.nextDown, box.maxY.nextUp, box.center.y,
        ]
        switch shape {
        case .polygon(let polygon) where random.chance(0.5):
            return polygon.vertices.randomElement(using: &random)!
        default:
            return Point(x: xs.randomElement(using: &random)!, y: ys.randomElement(using: &random)!)
        }
    }

    /// Compares the scene with the brute force on `points`; returns the disagreements.
    static func disagreements(_ layout: Layout, _ scene: inout Scene, _ points: [Point], time: inout UInt64) -> [String]
    {
        var failures: [String] = []
        for point in points {
            let expected = layout.expectedHit(point)
            let actual = actualHit(&scene, point, time: &time)
            if expected != actual {
                failures.append("\(point): expected \(expected ?? "nothing"), got \(actual ?? "nothing")")
            }
        }
        return failures
    }

    @Test("random layouts: the grid agrees with brute force", arguments: Array(UInt64(1)...12))
    func randomLayouts(seed: UInt64) throws {
        let count = [1, 2, 5, 20, 80, 250][Int(seed % 6)]
        var layout = Self.randomLayout(seed: seed, count: count, fractional: seed % 2 == 0, groups: seed % 3 == 0)
        var scene = try layout.makeScene()
        var random = PropertyTestRandom(seed: seed &* 7919)
        var time: UInt64 = 0
        var failures = Self.disagreements(layout, &scene, Self.points(for: layout, &random, count: 1500), time: &time)
        expectNoFailures(failures, "seed \(seed): ")

        // Enable, disable and remove controls, switch screens, and compare again.
        for round in 0..<4 {
            for _ in 0..<Swift.max(1, count / 4) {
                let index = random.int(0..<layout.controls.count)
                let id = layout.controls[index].id
                if random.chance(0.1) {
                    _ = scene.removeControl(id, at: Instant(microseconds: time))
                    layout.removed.insert(id)
                } else {
                    let enabled = random.chance(0.5)
                    _ = scene.setEnabled(id, enabled, at: Instant(microseconds: time))
                    layout.controls[index].isEnabled = enabled
                }
            }
            if !layout.screens.isEmpty {
                let screen = random.chance(0.5) ? "s0" : "s1"
                _ = scene.activateScreen(screen, at: Instant(microseconds: time))
                layout.activeScreen = screen
            }
            failures = Self.disagreements(layout, &scene, Self.points(for: layout, &random, count: 400), time: &time)
            expectNoFailures(failures, "seed \(seed) round \(round): ")
        }
    }

    // MARK: - Hand-made layouts

    static func check(
        _ layout: Layout, _ points: [Point], _ comment: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var scene = try layout.makeScene()
        var time: UInt64 = 0
        let failures = disagreements(layout, &scene, points, time: &time)
        expectNoFailures(failures, "\(comment): ", sourceLocation: sourceLocation)
    }

    static func rect(_ id: String, _ x: Double, _ y: Double, _ w: Double, _ h: Double, z: Int = 0) -> Control {
        Control(id: id, shape: .rect(Rect(x: x, y: y, width: w, height: h)), z: z)
    }

    @Test("overlaps: higher z wins, then later declaration; disabled controls are transparent")
    func overlaps() throws {
        var layout = Layout(controls: [
            Self.rect("under", 0, 0, 100, 100),
            Self.rect("over", 50, 50, 100, 100),
            Self.rect("low", 0, 0, 200, 200, z: -1),
            Self.rect("high", 180, 180, 50, 50, z: 1),
        ])
        let points = [Point(x: 10, y: 10), Point(x: 60, y: 60), Point(x: 150, y: 150), Point(x: 190, y: 190)]
        var scene = try layout.makeScene()
        var time: UInt64 = 0
        #expect(points.map { Self.actualHit(&scene, $0, time: &time) } == ["under", "over", "low", "high"])
        _ = scene.setEnabled("over", false, at: Instant(microseconds: time))
        layout.controls[1].isEnabled = false
        #expect(Self.actualHit(&scene, Point(x: 60, y: 60), time: &time) == "under")
        #expect(layout.expectedHit(Point(x: 60, y: 60)) == "under")
        _ = scene.removeControl("under", at: Instant(microseconds: time))
        #expect(Self.actualHit(&scene, Point(x: 60, y: 60), time: &time) == "low")
    }

    @Test("degenerate shapes: a zero-size rectangle is never hit, a zero-radius circle only at its centre")
    func degenerate() throws {
        let layout = Layout(controls: [
            Self.rect("flat", 10, 10, 0, 50),
            Self.rect("dot", 30, 30, 0, 0),
            Control(id: "pin", shape: .circle(Circle(center: Point(x: 70, y: 70), radius: 0))),
            Control(
                id: "line",
                shape: .polygon(
                    Polygon(vertices: [
                        Point(x: 0, y: 0), Point(x: 50, y: 50), Point(x: 100, y: 100),
                    ]))),
        ])
        try Self.check(
            layout,
            [
                Point(x: 10, y: 20), Point(x: 30, y: 30), Point(x: 70, y: 70), Point(x: 70, y: 70.000_001),
                Point(x: 25, y: 25), Point(x: 50, y: 50),
            ],
            "degenerate")
        var scene = try layout.makeScene()
        var time: UInt64 = 0
        #expect(Self.actualHit(&scene, Point(x: 70, y: 70), time: &time) == "pin")
        // A scene whose only control is a point.
        var single = try Layout(controls: [layout.controls[2]]).makeScene()
        #expect(Self.actualHit(&single, Point(x: 70, y: 70), time: &time) == "pin")
        #expect(Self.actualHit(&single, Point(x: 70.5, y: 70), time: &time) == nil)
    }

    @Test("off-grid and non-finite points hit nothing")
    func offGrid() throws {
        let layout = Layout(controls: [Self.rect("a", 100, 100, 50, 50), Self.rect("b", 300, 300, 10, 10)])
        try Self.check(
            layout,
            [
                Point(x: 0, y: 0), Point(x: 1000, y: 1000), Point(x: -1e300, y: 120), Point(x: 120, y: 1e300),
                Point(x: .nan, y: 120), Point(x: 120, y: .infinity), Point(x: -.infinity, y: -.infinity),
                Point(x: 310, y: 305), Point(x: 305, y: 310), Point(x: 120, y: 120),
            ],
            "off grid")
    }

    @Test("huge boxes whose union overflows are still hit")
    func hugeUnion() throws {
        let layout = Layout(controls: [
            Self.rect("west", -1e308, -10, 1e308, 1000),
            Self.rect("east", 0, -10, 1e308, 1000),
        ])
        for control in layout.controls {
            #expect(control.shape.isValid)
        }
        try Self.check(layout, [Point(x: -5, y: 5), Point(x: 5, y: 5), Point(x: 1e307, y: 5)], "huge union")
    }

    @Test("a valid huge circle is hit")
    func hugeCircle() throws {
        let layout = Layout(controls: [
            Self.rect("small", 0, 0, 10, 10),
            Control(id: "world", shape: .circle(Circle(center: Point(x: 0, y: 0), radius: 1e308)), z: -1),
        ])
        // Either the scene refuses the circle or it must be touchable.
        guard var scene = try? layout.makeScene() else { return }
        var time: UInt64 = 0
        #expect(Self.actualHit(&scene, Point(x: 5, y: 5), time: &time) == "small")
        #expect(Self.actualHit(&scene, Point(x: 500, y: 500), time: &time) == "world")
    }

    @Test("fractional edges: points just inside a right or bottom edge still hit")
    func fractionalEdges() throws {
        var random = PropertyTestRandom(seed: 4242)
        var failures: [String] = []
        for round in 0..<60 {
            var controls: [Control] = []
            for index in 0..<(1 + round % 7) {
                controls.append(
                    Control(
                        id: "c\(index)",
                        shape: .rect(
                            Rect(
                                x: random.unit() * 7 - 3, y: random.unit() * 7 - 3, width: random.unit() * 3,
                                height: random.unit() * 3))))
            }
            let layout = Layout(controls: controls)
            var scene = try layout.makeScene()
            var time: UInt64 = 0
            var points: [Point] = []
            for control in controls {
                let box = control.shape.boundingBox
                for x in [box.minX, box.maxX.nextDown, box.center.x] {
                    for y in [box.minY, box.maxY.nextDown, box.center.y] {
                        points.append(Point(x: x, y: y))
                    }
                }
            }
            failures += Self.disagreements(layout, &scene, points, time: &time).map { "round \(round): \($0)" }
        }
        expectNoFailures(failures)
    }

    /// The grid's extent is computed as origin + cell size × count, which can round one ulp short of
    /// the right or bottom edge of the box that defines it.
    @Test("the grid's extent covers the far edge of every box exactly")
    func gridExtentRounding() throws {
        let layout = Layout(controls: [Self.rect("a", -3, 0, 1, 1), Self.rect("b", -2.8, 0, 1.8, 1)])
        let edge = Point(x: (-1.0).nextUp, y: 0.5)
        #expect(layout.controls[1].shape.contains(edge), "b.maxX is \(-2.8 + 1.8)")
        try Self.check(layout, [edge, Point(x: -1.5, y: 0.5)], "one ulp inside b's right edge")
        // A polygon whose right edge is the far edge of the grid.
        let square = Polygon(vertices: [
            Point(x: -2.8, y: 0), Point(x: -0.9999999999999998, y: 0), Point(x: -0.9999999999999998, y: 1),
            Point(x: -2.8, y: 1),
        ])
        let polygonLayout = Layout(controls: [
            Self.rect("a", -3, 0, 1, 1), Control(id: "p", shape: .polygon(square)),
        ])
        try Self.check(polygonLayout, [edge], "one ulp inside the polygon's right edge")
        // A circle's bounding box ends at (0.2 - 2.1) + 4.2 = 2.3, its rim at 0.2 + 2.1 = 2.3000000000000003.
        let ring = Layout(controls: [
            Control(id: "ring", shape: .circle(Circle(center: Point(x: 0.2, y: 0), radius: 2.1)))
        ])
        let rim = Point(x: 0.2 + 2.1, y: 0)
        #expect(ring.controls[0].shape.contains(rim))
        try Self.check(ring, [rim], "the rim of a lone circle")
    }

    @Test("a circle's rim at the far edge of the grid is hit")
    func circleRimAtGridEdge() throws {
        var random = PropertyTestRandom(seed: 31337)
        var failures: [String] = []
        for round in 0..<200 {
            let center = Point(x: random.unit() * 10 - 5, y: random.unit() * 10 - 5)
            let radius = random.unit() * 3 + 0.1
            let layout = Layout(controls: [
                Control(id: "ring", shape: .circle(Circle(center: center, radius: radius))),
                Self.rect("box", center.x - 7.3, center.y - 1.1, 2.9, 2.2),
            ])
            var scene = try layout.makeScene()
            var time: UInt64 = 0
            let rim = [
                Point(x: center.x + radius, y: center.y), Point(x: center.x, y: center.y + radius),
                Point(x: center.x - radius, y: center.y), Point(x: center.x, y: center.y - radius),
            ]
            failures += Self.disagreements(layout, &scene, rim, time: &time).map { "round \(round): \($0)" }
        }
        expectNoFailures(failures)
    }
}
