import TOML
import TouchModel

/// Reads shapes (`frame`, `circle`, `polygon`) and rectangles (a device's `region`) in output pixels: coordinates are
/// pixels, or percentages of the output's size written as strings (`"25%"`), within ``ConfigurationLoader/Limits``'
/// reach of the output (docs/configuration.md, "Shapes and coordinates").
struct ShapeReader {
    typealias Limits = ConfigurationLoader.Limits

    /// The output.
    let bounds: Rect
    /// `[output] rotation`, for the hint of a shape outside a rotated output.
    let rotation: Configuration.Rotation

    /// The shape given by exactly one of `frame`, `circle`, `polygon`. Returns nil on a problem, `.some(nil)` when
    /// absent and not required.
    func shape(_ table: TableReader, _ key: ShapeKey) -> Shape?? {
        let present = ShapeKey.names.filter { table.contains($0) }
        guard present.count <= 1 else {
            table.reportTable("give one shape, not \(present.joined(separator: " and "))")
            return nil
        }
        guard let name = present.first else {
            if key.isRequired {
                table.reportTable("missing shape: give frame = { x, y, width, height }, circle or polygon")
            }
            return key.isRequired ? nil : .some(nil)
        }
        let shape: Shape?
        switch name {
        case "frame":
            shape = table.table(name, schema: Schema.rect.schema).flatMap { frame in
                defer { frame.finish() }
                return rect(frame).map(Shape.rect)
            }
        case "circle":
            shape = table.table(name, schema: Schema.circle.schema).flatMap { circle in
                defer { circle.finish() }
                let keys = Schema.circle
                let cx = coordinate(circle, keys.cx, length: bounds.width)
                let cy = coordinate(circle, keys.cy, length: bounds.height)
                let r = coordinate(circle, keys.r, length: Swift.min(bounds.width, bounds.height), positive: true)
                guard let cx, let cy, let r else { return nil }
                return .circle(Circle(center: Point(x: cx, y: cy), radius: r))
            }
        default:
            shape = polygon(table, name).map(Shape.polygon)
        }
        guard let shape else { return nil }
        let box = shape.boundingBox
        if box.maxX <= bounds.minX || box.minX >= bounds.maxX || box.maxY <= bounds.minY || box.minY >= bounds.maxY {
            let (width, height) = (TableReader.format(bounds.width), TableReader.format(bounds.height))
            var message = "the shape lies entirely outside the output (\(width)×\(height))"
            // A rotated panel's size written as the panel's, not as the UI is drawn: the shape fits the other way.
            let swapped = Rect(x: bounds.minX, y: bounds.minY, width: bounds.height, height: bounds.width)
            if rotation == .right || rotation == .left, box.minX >= swapped.minX, box.maxX <= swapped.maxX,
                box.minY >= swapped.minY, box.maxY <= swapped.maxY
            {
                message +=
                    "; with rotation = \(rotation.rawValue), [output] width and height are the screen as the UI is "
                    + "drawn, after rotation: did you mean width = \(height), height = \(width)?"
            }
            table.report(name, message)
            return nil
        }
        return .some(shape)
    }

    /// `{ x, y, width, height }`.
    func rect(_ table: TableReader) -> Rect? {
        let keys = Schema.rect
        let x = coordinate(table, keys.x, length: bounds.width)
        let y = coordinate(table, keys.y, length: bounds.height)
        let width = coordinate(table, keys.width, length: bounds.width, positive: true)
        let height = coordinate(table, keys.height, length: bounds.height, positive: true)
        guard let x, let y, let width, let height else { return nil }
        return Rect(x: x, y: y, width: width, height: height)
    }

    /// `{ x, y }`.
    func point(_ table: TableReader) -> Point? {
        let keys = Schema.point
        let x = coordinate(table, keys.x, length: bounds.width)
        let y = coordinate(table, keys.y, length: bounds.height)
        guard let x, let y else { return nil }
        return Point(x: x, y: y)
    }

    private func polygon(_ table: TableReader, _ key: String) -> Polygon? {
        let log = table.log
        guard let value = table.value(key) else { return nil }
        guard let array = value.array, (3...Limits.polygonVertices).contains(array.count) else {
            table.report(key, "expected 3 to \(Limits.polygonVertices) points, each [x, y]")
            return nil
        }
        var vertices: [Point] = []
        for (index, element) in array.enumerated() {
            let path = "\(table.keyPath(key))[\(index)]"
            guard let pair = element.array, pair.count == 2 else {
                log.report(path, "expected a point [x, y]")
                return nil
            }
            let x = coordinate(pair[0], at: "\(path)[0]", length: bounds.width, positive: false, log: log)
            let y = coordinate(pair[1], at: "\(path)[1]", length: bounds.height, positive: false, log: log)
            guard let x, let y else { return nil }
            vertices.append(Point(x: x, y: y))
        }
        let polygon = Polygon(vertices: vertices)
        // Twice the signed area (shoelace): zero for points on one line, whatever their bounding box.
        var doubleArea = 0.0
        for (index, vertex) in vertices.enumerated() {
            let next = vertices[(index + 1) % vertices.count]
            doubleArea += vertex.x * next.y - next.x * vertex.y
        }
        guard doubleArea.isFinite, abs(doubleArea) > 0 else {
            table.report(key, "the polygon has no area")
            return nil
        }
        return polygon
    }

    /// A coordinate key (required) in pixels, or a percentage of `length` written as a string ("25%").
    private func coordinate(_ table: TableReader, _ key: Key<TOMLValue>, length: Double, positive: Bool = false)
        -> Double?
    {
        guard let value = table.read(key) else { return nil }
        return coordinate(value, at: table.keyPath(key.name), length: length, positive: positive, log: table.log)
    }

    private func coordinate(_ value: TOMLValue, at path: String, length: Double, positive: Bool, log: ProblemLog)
        -> Double?
    {
        let reach = Limits.coordinateReach * length
        var number: Double?
        if let string = value.string {
            guard string.hasSuffix("%"), let percent = Double(string.dropLast()), percent.isFinite else {
                log.report(path, "'\(string)' is not a percentage like \"25%\" (or give pixels as a number)")
                return nil
            }
            // The same reach as pixels: at most `coordinateReach` output sizes.
            let limit = Limits.coordinateReach * 100
            guard (-limit...limit).contains(percent) else {
                log.report(
                    path, "\(string) is out of range -\(TableReader.format(limit))%…\(TableReader.format(limit))%")
                return nil
            }
            number = percent / 100 * length
        } else {
            number = TableReader.number(value, in: -reach...reach, at: path, log: log)
        }
        guard let number else { return nil }
        if positive && number <= 0 {
            log.report(path, "must be greater than 0")
            return nil
        }
        return number
    }
}
