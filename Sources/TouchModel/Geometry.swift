/// A location in output pixels. The origin is the top-left corner, y grows downwards.
public struct Point: Hashable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    /// True when both coordinates are finite (neither NaN nor infinite).
    public var isFinite: Bool { x.isFinite && y.isFinite }

    /// The Euclidean distance to `other`.
    public func distance(to other: Point) -> Double {
        let dx = other.x - x
        let dy = other.y - y
        return (dx * dx + dy * dy).squareRoot()
    }

    public var description: String { "(\(x), \(y))" }
}

/// A width and a height in output pixels.
public struct Size: Hashable, Sendable {
    public var width: Double
    public var height: Double

    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }
}

/// An axis-aligned rectangle. Containment is half-open (`minX ≤ x < maxX`), so two controls that
/// share an edge never both contain a point on it.
public struct Rect: Hashable, Sendable, CustomStringConvertible {
    public var origin: Point
    public var size: Size

    public init(origin: Point, size: Size) {
        self.origin = origin
        self.size = size
    }

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.init(origin: Point(x: x, y: y), size: Size(width: width, height: height))
    }

    public var minX: Double { origin.x }
    public var minY: Double { origin.y }
    public var maxX: Double { origin.x + size.width }
    public var maxY: Double { origin.y + size.height }
    public var width: Double { size.width }
    public var height: Double { size.height }
    public var center: Point { Point(x: origin.x + size.width / 2, y: origin.y + size.height / 2) }

    /// True when every coordinate is finite and the size is not negative.
    public var isValid: Bool {
        origin.isFinite && size.width.isFinite && size.height.isFinite && size.width >= 0 && size.height >= 0
            && maxX.isFinite && maxY.isFinite
    }

    /// Whether `point` lies inside (half-open on the right and bottom edges). NaN never lies inside.
    public func contains(_ point: Point) -> Bool {
        point.x >= minX && point.x < maxX && point.y >= minY && point.y < maxY
    }

    /// This rectangle grown by `amount` on every side (shrunk when negative, never below zero size).
    public func outset(by amount: Double) -> Rect {
        let width = Swift.max(0, size.width + 2 * amount)
        let height = Swift.max(0, size.height + 2 * amount)
        return Rect(x: center.x - width / 2, y: center.y - height / 2, width: width, height: height)
    }

    /// The smallest rectangle that holds both.
    public func union(_ other: Rect) -> Rect {
        let minX = Swift.min(self.minX, other.minX)
        let minY = Swift.min(self.minY, other.minY)
        let maxX = Swift.max(self.maxX, other.maxX)
        let maxY = Swift.max(self.maxY, other.maxY)
        return Rect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    public var description: String { "{x \(minX), y \(minY), w \(width), h \(height)}" }
}

/// A circle; containment includes the rim.
public struct Circle: Hashable, Sendable {
    public var center: Point
    public var radius: Double

    public init(center: Point, radius: Double) {
        self.center = center
        self.radius = radius
    }

    /// Finite center and radius, not negative, and a bounding box that is finite too.
    public var isValid: Bool { center.isFinite && radius.isFinite && radius >= 0 && boundingBox.isValid }

    public func contains(_ point: Point) -> Bool {
        let dx = point.x - center.x
        let dy = point.y - center.y
        return dx * dx + dy * dy <= radius * radius
    }

    public var boundingBox: Rect {
        Rect(x: center.x - radius, y: center.y - radius, width: 2 * radius, height: 2 * radius)
    }
}

/// A simple polygon given by its vertices in order; containment follows the even-odd rule.
public struct Polygon: Hashable, Sendable {
    public var vertices: [Point]

    public init(vertices: [Point]) {
        self.vertices = vertices
    }

    /// At least three vertices, all finite.
    public var isValid: Bool { vertices.count >= 3 && vertices.allSatisfy(\.isFinite) }

    public func contains(_ point: Point) -> Bool {
        guard vertices.count >= 3, point.isFinite else { return false }
        var inside = false
        var previous = vertices[vertices.count - 1]
        for current in vertices {
            // The edge crosses the horizontal line through the point, to the right of it.
            if (current.y > point.y) != (previous.y > point.y) {
                let crossingX = (previous.x - current.x) * (point.y - current.y) / (previous.y - current.y) + current.x
                if point.x < crossingX { inside.toggle() }
            }
            previous = current
        }
        return inside
    }

    /// The distance from `point` to the polygon's outline.
    public func distanceToOutline(_ point: Point) -> Double {
        guard var previous = vertices.last else { return .infinity }
        var best = Double.infinity
        for current in vertices {
            best = Swift.min(best, Polygon.distance(from: point, toSegment: previous, current))
            previous = current
        }
        return best
    }

    public var boundingBox: Rect {
        guard let first = vertices.first else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        var minX = first.x
        var minY = first.y
        var maxX = first.x
        var maxY = first.y
        for vertex in vertices.dropFirst() {
            minX = Swift.min(minX, vertex.x)
            minY = Swift.min(minY, vertex.y)
            maxX = Swift.max(maxX, vertex.x)
            maxY = Swift.max(maxY, vertex.y)
        }
        return Rect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    static func distance(from point: Point, toSegment a: Point, _ b: Point) -> Double {
        let abx = b.x - a.x
        let aby = b.y - a.y
        let lengthSquared = abx * abx + aby * aby
        guard lengthSquared > 0 else { return point.distance(to: a) }
        let t = Swift.min(1, Swift.max(0, ((point.x - a.x) * abx + (point.y - a.y) * aby) / lengthSquared))
        return point.distance(to: Point(x: a.x + t * abx, y: a.y + t * aby))
    }
}

/// The exact outline of a control, group or gesture region.
public enum Shape: Hashable, Sendable {
    case rect(Rect)
    case circle(Circle)
    case polygon(Polygon)

    /// Whether the exact shape holds `point` (the hit-test at touch-down).
    public func contains(_ point: Point) -> Bool {
        switch self {
        case .rect(let rect): rect.contains(point)
        case .circle(let circle): circle.contains(point)
        case .polygon(let polygon): polygon.contains(point)
        }
    }

    /// Whether the shape enlarged by `outset` pixels on every side holds `point` (the test while
    /// tracking: inside/outside, enter/exit, highlight and touchUpInside versus touchUpOutside).
    public func contains(_ point: Point, outset: Double) -> Bool {
        guard outset > 0 else { return contains(point) }
        switch self {
        case .rect(let rect):
            // Square corners, as UIKit's inset bounds. The edges are moved one by one (not through
            // a width) so that a huge outset cannot turn them into NaN.
            return point.x >= rect.minX - outset && point.x < rect.maxX + outset
                && point.y >= rect.minY - outset && point.y < rect.maxY + outset
        case .circle(let circle):
            return Circle(center: circle.center, radius: circle.radius + outset).contains(point)
        case .polygon(let polygon):
            return polygon.contains(point) || polygon.distanceToOutline(point) <= outset
        }
    }

    /// The smallest axis-aligned rectangle around the shape.
    public var boundingBox: Rect {
        switch self {
        case .rect(let rect): rect
        case .circle(let circle): circle.boundingBox
        case .polygon(let polygon): polygon.boundingBox
        }
    }

    /// True when every coordinate is finite and sizes are not negative.
    public var isValid: Bool {
        switch self {
        case .rect(let rect): rect.isValid
        case .circle(let circle): circle.isValid
        case .polygon(let polygon): polygon.isValid && polygon.boundingBox.isValid
        }
    }
}
