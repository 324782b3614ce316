import Testing

@testable import TouchModel

/// Points, rectangles, circles, polygons, shapes with an outset, and `Instant` arithmetic.
@Suite("Geometry")
struct GeometryTests {
    static let nonFinite: [Double] = [.nan, .infinity, -.infinity, -.nan, .signalingNaN]

    /// Points with at least one coordinate that is not finite.
    static var nonFinitePoints: [Point] {
        nonFinite.flatMap { bad in
            [Point(x: bad, y: 10), Point(x: 10, y: bad), Point(x: bad, y: bad), Point(x: 0, y: bad)]
        }
    }

    static let square = Rect(x: 10, y: 20, width: 30, height: 40)
    /// An L: the notch is the top-right square (20…40, 0…20).
    static let lShape = Polygon(vertices: [
        Point(x: 0, y: 0), Point(x: 20, y: 0), Point(x: 20, y: 20), Point(x: 40, y: 20), Point(x: 40, y: 40),
        Point(x: 0, y: 40),
    ])
    static let triangle = Polygon(vertices: [Point(x: 0, y: 0), Point(x: 100, y: 0), Point(x: 0, y: 100)])

    // MARK: - Rect

    @Test("rectangles are half-open: the left and top edges are in, the right and bottom edges out")
    func rectHalfOpen() {
        let rect = Self.square
        #expect(rect.contains(Point(x: 10, y: 20)))
        #expect(rect.contains(Point(x: 39.999, y: 59.999)))
        #expect(rect.contains(Point(x: 40.nextDown, y: 60.nextDown)))
        #expect(!rect.contains(Point(x: 40, y: 30)))
        #expect(!rect.contains(Point(x: 20, y: 60)))
        #expect(!rect.contains(Point(x: 40, y: 60)))
        #expect(!rect.contains(Point(x: 10.nextDown, y: 30)))
        #expect(!rect.contains(Point(x: 20, y: 20.nextDown)))
        #expect(rect.minX == 10 && rect.minY == 20 && rect.maxX == 40 && rect.maxY == 60)
        #expect(rect.center == Point(x: 25, y: 40))
    }

    @Test("two rectangles sharing an edge never both hold a point on it")
    func sharedEdges() {
        let left = Rect(x: 0, y: 0, width: 50, height: 50)
        let right = Rect(x: 50, y: 0, width: 50, height: 50)
        let below = Rect(x: 0, y: 50, width: 50, height: 50)
        for y in stride(from: 0.0, to: 50, by: 0.5) {
            let point = Point(x: 50, y: y)
            #expect(left.contains(point) != right.contains(point))
        }
        for x in stride(from: 0.0, to: 50, by: 0.5) {
            let point = Point(x: x, y: 50)
            #expect(left.contains(point) != below.contains(point))
        }
    }

    @Test("an empty rectangle holds nothing")
    func emptyRect() {
        let empty = Rect(x: 5, y: 5, width: 0, height: 0)
        #expect(!empty.contains(Point(x: 5, y: 5)))
        #expect(!Rect(x: 5, y: 5, width: 10, height: 0).contains(Point(x: 6, y: 5)))
        #expect(empty.isValid)
    }

    @Test("outset grows every side with square corners")
    func rectOutset() {
        let grown = Self.square.outset(by: 5)
        #expect(grown == Rect(x: 5, y: 15, width: 40, height: 50))
        // Square corners: the corner of the grown rectangle is in, as with UIKit's inset bounds.
        let shape = Shape.rect(Self.square)
        #expect(shape.contains(Point(x: 40 + 4.9, y: 60 + 4.9), outset: 5))
        #expect(shape.contains(Point(x: 10 - 5, y: 20 - 5), outset: 5))
        #expect(!shape.contains(Point(x: 40 + 5, y: 30), outset: 5))
        #expect(!shape.contains(Point(x: 10 - 5.001, y: 30), outset: 5))
        // A zero or negative outset means the exact shape.
        #expect(!shape.contains(Point(x: 40, y: 30), outset: 0))
        #expect(!shape.contains(Point(x: 40, y: 30), outset: -3))
        #expect(shape.contains(Point(x: 39, y: 30), outset: -3))
        #expect(!shape.contains(Point(x: 40, y: 30), outset: .nan))
    }

    @Test("a negative outset shrinks, never below zero size")
    func rectShrink() {
        #expect(Self.square.outset(by: -5) == Rect(x: 15, y: 25, width: 20, height: 30))
        let collapsed = Self.square.outset(by: -100)
        #expect(collapsed.width == 0 && collapsed.height == 0)
        #expect(collapsed.center == Self.square.center)
        #expect(collapsed.isValid)
    }

    @Test("union is the smallest rectangle around both")
    func union() {
        let a = Rect(x: 0, y: 0, width: 10, height: 10)
        let b = Rect(x: 20, y: -5, width: 5, height: 5)
        #expect(a.union(b) == Rect(x: 0, y: -5, width: 25, height: 15))
        #expect(b.union(a) == a.union(b))
        #expect(a.union(a) == a)
    }

    @Test("rectangle validity")
    func rectValidity() {
        #expect(Self.square.isValid)
        #expect(!Rect(x: 0, y: 0, width: -1, height: 5).isValid)
        #expect(!Rect(x: 0, y: 0, width: 5, height: -0.001).isValid)
        #expect(!Rect(x: .nan, y: 0, width: 5, height: 5).isValid)
        #expect(!Rect(x: 0, y: .infinity, width: 5, height: 5).isValid)
        #expect(!Rect(x: 0, y: 0, width: .infinity, height: 5).isValid)
        #expect(!Rect(x: 0, y: 0, width: 5, height: .nan).isValid)
        // Finite parts whose far edge overflows.
        #expect(!Rect(x: 1e308, y: 0, width: 1e308, height: 5).isValid)
        #expect(Rect(x: -1e308, y: 0, width: 1e308, height: 5).isValid)
    }

    // MARK: - Circle

    @Test("circles hold their rim")
    func circle() {
        let circle = Circle(center: Point(x: 50, y: 50), radius: 10)
        #expect(circle.contains(Point(x: 50, y: 50)))
        #expect(circle.contains(Point(x: 60, y: 50)))
        #expect(circle.contains(Point(x: 50, y: 40)))
        #expect(circle.contains(Point(x: 56, y: 58)))  // 6-8-10
        #expect(!circle.contains(Point(x: 60.001, y: 50)))
        #expect(!circle.contains(Point(x: 58, y: 58)))  // the bounding box's corner
        #expect(circle.boundingBox == Rect(x: 40, y: 40, width: 20, height: 20))
        let dot = Circle(center: Point(x: 3, y: 4), radius: 0)
        #expect(dot.contains(Point(x: 3, y: 4)))
        #expect(!dot.contains(Point(x: 3, y: 4.001)))
        #expect(dot.isValid)
    }

    @Test("circle outset grows the radius")
    func circleOutset() {
        let shape = Shape.circle(Circle(center: Point(x: 0, y: 0), radius: 10))
        #expect(shape.contains(Point(x: 30, y: 0), outset: 20))
        #expect(shape.contains(Point(x: 18, y: 24), outset: 20))  // distance 30
        #expect(!shape.contains(Point(x: 21.3, y: 21.3), outset: 20))  // the corner of a square outset
        #expect(!shape.contains(Point(x: 30.01, y: 0), outset: 20))
    }

    @Test("circle validity")
    func circleValidity() {
        #expect(!Circle(center: Point(x: 0, y: 0), radius: -1).isValid)
        #expect(!Circle(center: Point(x: 0, y: 0), radius: .infinity).isValid)
        #expect(!Circle(center: Point(x: 0, y: 0), radius: .nan).isValid)
        #expect(!Circle(center: Point(x: .nan, y: 0), radius: 1).isValid)
    }

    // MARK: - Polygon

    @Test("a convex polygon")
    func convex() {
        let triangle = Self.triangle
        #expect(triangle.contains(Point(x: 10, y: 10)))
        #expect(triangle.contains(Point(x: 49, y: 49)))
        #expect(!triangle.contains(Point(x: 51, y: 51)))
        #expect(!triangle.contains(Point(x: -1, y: 10)))
        #expect(!triangle.contains(Point(x: 10, y: -1)))
        #expect(!triangle.contains(Point(x: 10, y: 101)))
        // The winding direction does not matter.
        let reversed = Polygon(vertices: triangle.vertices.reversed())
        for point in [Point(x: 10, y: 10), Point(x: 49, y: 49), Point(x: 51, y: 51), Point(x: -1, y: 10)] {
            #expect(reversed.contains(point) == triangle.contains(point))
        }
    }

    @Test("a concave polygon leaves its notch out")
    func concave() {
        let l = Self.lShape
        #expect(l.contains(Point(x: 10, y: 10)))
        #expect(l.contains(Point(x: 30, y: 30)))
        #expect(l.contains(Point(x: 10, y: 30)))
        #expect(!l.contains(Point(x: 30, y: 10)), "the notch")
        #expect(!l.contains(Point(x: 39, y: 1)), "the notch")
        #expect(!l.contains(Point(x: 50, y: 30)))
        #expect(l.boundingBox == Rect(x: 0, y: 0, width: 40, height: 40))
    }

    @Test("a self-intersecting polygon follows the even-odd rule")
    func evenOdd() {
        // A pentagram: the pentagon in the middle is covered twice, so it is outside.
        let star = Polygon(vertices: [
            Point(x: 50, y: 0), Point(x: 79, y: 90), Point(x: 2, y: 35), Point(x: 98, y: 35), Point(x: 21, y: 90),
        ])
        #expect(!star.contains(Point(x: 50, y: 50)), "the doubly covered centre")
        #expect(star.contains(Point(x: 50, y: 10)), "a tip")
        #expect(star.contains(Point(x: 10, y: 37)), "a tip")
        #expect(!star.contains(Point(x: 5, y: 5)))
        // A bow tie: the left and right triangles are in, the gaps above and below the crossing out.
        let bowtie = Polygon(vertices: [
            Point(x: 0, y: 0), Point(x: 10, y: 10), Point(x: 10, y: 0), Point(x: 0, y: 10),
        ])
        #expect(bowtie.contains(Point(x: 2, y: 5)))
        #expect(bowtie.contains(Point(x: 8, y: 5)))
        #expect(!bowtie.contains(Point(x: 5, y: 2)))
        #expect(!bowtie.contains(Point(x: 5, y: 8)))
    }

    @Test("polygon outset is a distance to the outline")
    func polygonOutset() {
        let shape = Shape.polygon(Self.triangle)
        // 10 px outside the left edge, and 10 px beyond the corner at the origin (diagonally).
        #expect(shape.contains(Point(x: -10, y: 50), outset: 10))
        #expect(!shape.contains(Point(x: -10.01, y: 50), outset: 10))
        #expect(shape.contains(Point(x: -7, y: -7), outset: 10))  // distance 9.9
        #expect(!shape.contains(Point(x: -8, y: -8), outset: 10))  // distance 11.3: round corners
        // Beyond the hypotenuse x + y = 100: distance (x + y - 100) / √2.
        #expect(shape.contains(Point(x: 55, y: 55), outset: 10))  // 7.07
        #expect(!shape.contains(Point(x: 58, y: 58), outset: 10))  // 11.3
        // The notch of the L is inside once the outset reaches it.
        let l = Shape.polygon(Self.lShape)
        #expect(!l.contains(Point(x: 30, y: 5)))
        #expect(!l.contains(Point(x: 30, y: 5), outset: 5))
        #expect(l.contains(Point(x: 30, y: 5), outset: 15))
        #expect(l.contains(Point(x: 25, y: 5), outset: 5))
    }

    @Test("distance to the outline")
    func distanceToOutline() {
        let square = Polygon(vertices: [
            Point(x: 0, y: 0), Point(x: 10, y: 0), Point(x: 10, y: 10), Point(x: 0, y: 10),
        ])
        #expect(square.distanceToOutline(Point(x: 5, y: 5)) == 5)
        #expect(square.distanceToOutline(Point(x: 13, y: 14)) == 5)
        #expect(square.distanceToOutline(Point(x: 5, y: -2)) == 2)
        #expect(Polygon(vertices: []).distanceToOutline(Point(x: 0, y: 0)) == .infinity)
        // A degenerate edge (two equal vertices) is a point.
        let repeated = Polygon(vertices: [Point(x: 0, y: 0), Point(x: 0, y: 0), Point(x: 10, y: 0)])
        #expect(repeated.distanceToOutline(Point(x: -3, y: 4)) == 5)
    }

    @Test("polygon validity and bounding box")
    func polygonValidity() {
        #expect(Self.triangle.isValid)
        #expect(!Polygon(vertices: []).isValid)
        #expect(!Polygon(vertices: [Point(x: 0, y: 0), Point(x: 1, y: 1)]).isValid)
        #expect(!Polygon(vertices: [Point(x: 0, y: 0), Point(x: 1, y: 1), Point(x: .nan, y: 1)]).isValid)
        #expect(!Polygon(vertices: [Point(x: 0, y: 0), Point(x: 1, y: 1), Point(x: 1, y: .infinity)]).isValid)
        #expect(Polygon(vertices: []).boundingBox == Rect(x: 0, y: 0, width: 0, height: 0))
        #expect(Self.triangle.boundingBox == Rect(x: 0, y: 0, width: 100, height: 100))
        // Too few vertices hold nothing.
        #expect(!Polygon(vertices: [Point(x: 0, y: 0), Point(x: 10, y: 10)]).contains(Point(x: 5, y: 5)))
        // Finite vertices whose extent overflows are refused by the shape.
        let huge = Polygon(vertices: [Point(x: -1e308, y: 0), Point(x: 1e308, y: 0), Point(x: 0, y: 10)])
        #expect(huge.isValid)
        #expect(!Shape.polygon(huge).isValid)
    }

    // MARK: - Shape

    @Test("shapes delegate to their outline")
    func shapes() {
        let rect = Shape.rect(Self.square)
        let circle = Shape.circle(Circle(center: Point(x: 0, y: 0), radius: 5))
        let polygon = Shape.polygon(Self.lShape)
        #expect(rect.contains(Point(x: 10, y: 20)) && !rect.contains(Point(x: 40, y: 60)))
        #expect(circle.contains(Point(x: 5, y: 0)) && !circle.contains(Point(x: 4, y: 4)))
        #expect(polygon.contains(Point(x: 10, y: 10)) && !polygon.contains(Point(x: 30, y: 10)))
        #expect(rect.boundingBox == Self.square)
        #expect(circle.boundingBox == Rect(x: -5, y: -5, width: 10, height: 10))
        #expect(polygon.boundingBox == Rect(x: 0, y: 0, width: 40, height: 40))
        #expect(rect.isValid && circle.isValid && polygon.isValid)
        #expect(!Shape.rect(Rect(x: 0, y: 0, width: -1, height: 1)).isValid)
        #expect(!Shape.circle(Circle(center: Point(x: 0, y: 0), radius: -1)).isValid)
        #expect(!Shape.polygon(Polygon(vertices: [])).isValid)
    }

    static let allShapes: [Shape] = [
        .rect(square), .rect(Rect(x: -1e300, y: -1e300, width: 1e300, height: 1e300)),
        .circle(Circle(center: Point(x: 0, y: 0), radius: 5)), .circle(Circle(center: Point(x: 0, y: 0), radius: 0)),
        .polygon(lShape), .polygon(triangle),
    ]

    @Test("points that are not finite are never inside, with or without an outset", arguments: allShapes)
    func nonFiniteNeverInside(shape: Shape) {
        for point in Self.nonFinitePoints {
            #expect(!shape.contains(point), "\(point)")
            for outset in [0, 70, 1e6, -5] {
                #expect(!shape.contains(point, outset: outset), "\(point) outset \(outset)")
            }
        }
    }

    @Test("a valid shape has a valid bounding box that holds the shape", arguments: allShapes)
    func boundingBoxHoldsShape(shape: Shape) {
        #expect(shape.boundingBox.isValid)
        var generator = PropertyTestRandom(seed: 77)
        let box = shape.boundingBox
        for _ in 0..<500 {
            let point = Point(
                x: box.minX + generator.unit() * box.width * 1.5 - box.width * 0.25,
                y: box.minY + generator.unit() * box.height * 1.5 - box.height * 0.25)
            if shape.contains(point) {
                #expect(point.x >= box.minX && point.x <= box.maxX && point.y >= box.minY && point.y <= box.maxY)
            }
        }
    }

    /// Every valid shape must have a valid bounding box, or the spatial index leaves it out and the
    /// control can never be touched.
    @Test("a valid huge circle has a valid bounding box")
    func hugeCircleBoundingBox() {
        let circle = Shape.circle(Circle(center: Point(x: 0, y: 0), radius: 1e308))
        if circle.isValid {
            #expect(circle.boundingBox.isValid, "Shape.isValid accepts a circle whose bounding box overflows")
        }
    }

    @Test("an outset never shrinks the shape", arguments: allShapes)
    func outsetIsMonotonic(shape: Shape) {
        var generator = PropertyTestRandom(seed: 99)
        let box = shape.boundingBox
        let outsets: [Double] = [0.5, 1, 70, 1e6, 1e300, .greatestFiniteMagnitude, .infinity]
        var failures: [String] = []
        for _ in 0..<300 {
            let point = Point(
                x: box.minX + generator.unit() * box.width, y: box.minY + generator.unit() * box.height)
            guard shape.contains(point) else { continue }
            for outset in outsets where !shape.contains(point, outset: outset) {
                failures.append("\(shape) \(point) outset \(outset)")
            }
        }
        expectNoFailures(failures)
    }

    // MARK: - Point

    @Test("points")
    func points() {
        #expect(Point(x: 0, y: 0).distance(to: Point(x: 3, y: 4)) == 5)
        #expect(Point(x: 1, y: 2).isFinite)
        for point in Self.nonFinitePoints {
            #expect(!point.isFinite)
        }
    }

    // MARK: - Instant

    @Test("instants saturate instead of overflowing")
    func instants() {
        #expect(Instant.milliseconds(3).microseconds == 3000)
        #expect(Instant.milliseconds(.max).microseconds == .max)
        #expect(Instant.milliseconds(UInt64.max / 1000 + 1).microseconds == .max)
        #expect(Instant.milliseconds(UInt64.max / 1000).microseconds == UInt64.max / 1000 * 1000)
        #expect(Instant(microseconds: .max - 5).advanced(by: 10).microseconds == .max)
        #expect(Instant(microseconds: .max).advanced(by: .max) == Instant(microseconds: .max))
        #expect(Instant(microseconds: 10).advanced(by: 5).microseconds == 15)
        #expect(Instant(microseconds: 10).microseconds(since: Instant(microseconds: 4)) == 6)
        #expect(Instant(microseconds: 4).microseconds(since: Instant(microseconds: 10)) == 0)
        #expect(Instant(microseconds: .max).microseconds(since: .zero) == .max)
        #expect(Instant(microseconds: 1999).milliseconds == 1)
        #expect(Instant.zero.microseconds == 0)
        #expect(Instant(microseconds: 1) < Instant(microseconds: 2))
        #expect(!(Instant(microseconds: 2) < Instant(microseconds: 2)))
        #expect(Instant(microseconds: 42).description == "42µs")
    }
}
