import Testing
import TouchModel

@Suite("AffineFit: least squares for a 2×3 matrix")
struct AffineFitTests {
    static let sources = [
        Point(x: 0.1, y: 0.1), Point(x: 0.9, y: 0.1), Point(x: 0.9, y: 0.9), Point(x: 0.1, y: 0.9),
        Point(x: 0.5, y: 0.5),
    ]

    @Test("recovers an exact affine map: offset, scale and a small rotation")
    func exact() throws {
        let matrix = [1.04, -0.03, 0.02, 0.035, 0.96, -0.015]
        let targets = Self.sources.map { AffineFit.apply(matrix, to: $0)! }
        let fitted = try AffineFit.fit(from: Self.sources, to: targets).get()
        for (got, want) in zip(fitted, matrix) { #expect(abs(got - want) < 1e-12) }
    }

    @Test("with noise, the fit is the least-squares one: its residuals sum to zero on each axis")
    func leastSquares() throws {
        let targets = [
            Point(x: 0.11, y: 0.1), Point(x: 0.9, y: 0.12), Point(x: 0.88, y: 0.9), Point(x: 0.1, y: 0.91),
            Point(x: 0.52, y: 0.49),
        ]
        let fitted = try AffineFit.fit(from: Self.sources, to: targets).get()
        var sumX = 0.0
        var sumY = 0.0
        for (source, target) in zip(Self.sources, targets) {
            let mapped = AffineFit.apply(fitted, to: source)!
            sumX += mapped.x - target.x
            sumY += mapped.y - target.y
        }
        #expect(abs(sumX) < 1e-12)
        #expect(abs(sumY) < 1e-12)
    }

    @Test("far from the origin it stays exact (the fit is centred)")
    func offset() throws {
        let sources = Self.sources.map { Point(x: $0.x * 10 + 5000, y: $0.y * 10 - 3000) }
        let matrix = [0.5, 0.1, -7, -0.2, 2, 11]
        let fitted = try AffineFit.fit(from: sources, to: sources.map { AffineFit.apply(matrix, to: $0)! }).get()
        for (got, want) in zip(fitted, matrix) { #expect(abs(got - want) < 1e-7) }
    }

    @Test("refuses too few points, points on a line and points that are not finite")
    func refusals() {
        let two = Array(Self.sources.prefix(2))
        #expect(AffineFit.fit(from: two, to: two) == .failure(.tooFewPoints(2)))
        let line = [Point(x: 0, y: 0), Point(x: 0.5, y: 0.5), Point(x: 1, y: 1), Point(x: 0.25, y: 0.25)]
        #expect(AffineFit.fit(from: line, to: Self.sources) == .failure(.collinear))
        let same = Array(repeating: Point(x: 0.3, y: 0.3), count: 4)
        #expect(AffineFit.fit(from: same, to: Self.sources) == .failure(.collinear))
        var bad = Self.sources
        bad[2] = Point(x: .nan, y: 0)
        #expect(AffineFit.fit(from: bad, to: Self.sources) == .failure(.notFinite(index: 2)))
        #expect(AffineFit.apply([1, 0, 0], to: Point(x: 0, y: 0)) == nil)
    }
}
