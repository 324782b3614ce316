import TouchModel

/// Maps a device position, normalised to 0…1 on both axes, onto output pixels: libinput's
/// calibration matrix first, then the configured rotation, then the output (or the part of it the
/// device covers). Results may lie outside the output; hit-testing treats them as touching nothing.
struct CoordinateMapper: Hashable, Sendable {
    /// Row-major 2×3 matrix applied to normalised coordinates, as libinput's calibration.
    var calibration: [Double]
    var rotation: Configuration.Rotation
    /// Where the device lands on the output.
    var region: Rect

    init(output: Configuration.Output, region: Rect? = nil) {
        self.calibration = output.calibration ?? [1, 0, 0, 0, 1, 0]
        self.rotation = output.rotation
        self.region = region ?? output.bounds
    }

    /// The output position of a normalised device position; nil when the input is not finite.
    func map(x: Double, y: Double) -> Point? {
        guard x.isFinite, y.isFinite, calibration.count == 6 else { return nil }
        let cx = calibration[0] * x + calibration[1] * y + calibration[2]
        let cy = calibration[3] * x + calibration[4] * y + calibration[5]
        let (rx, ry): (Double, Double)
        switch rotation {
        case .right: (rx, ry) = (1 - cy, cx)  // libinput's "90° clockwise" matrix: 0 -1 1 / 1 0 0
        case .inverted: (rx, ry) = (1 - cx, 1 - cy)
        case .left: (rx, ry) = (cy, 1 - cx)
        case .normal: (rx, ry) = (cx, cy)
        }
        let point = Point(x: region.minX + rx * region.width, y: region.minY + ry * region.height)
        return point.isFinite ? point : nil
    }

    /// The normalised device position of an output position: ``map(x:y:)`` undone (filter mode forwards the
    /// application's touches in device coordinates). Nil when the input is not finite or the calibration matrix has
    /// no inverse.
    func unmap(_ point: Point) -> (x: Double, y: Double)? {
        guard point.isFinite, region.width > 0, region.height > 0, calibration.count == 6 else { return nil }
        let rx = (point.x - region.minX) / region.width
        let ry = (point.y - region.minY) / region.height
        let (cx, cy): (Double, Double)
        switch rotation {
        case .right: (cx, cy) = (ry, 1 - rx)
        case .inverted: (cx, cy) = (1 - rx, 1 - ry)
        case .left: (cx, cy) = (1 - ry, rx)
        case .normal: (cx, cy) = (rx, ry)
        }
        return Self.invert(calibration, x: cx, y: cy)
    }

    /// Solves `matrix · (x, y, 1) = (px, py)` for a row-major 2×3 affine matrix; nil when it is singular.
    static func invert(_ matrix: [Double], x px: Double, y py: Double) -> (x: Double, y: Double)? {
        guard matrix.count == 6 else { return nil }
        let (a, b, c, d, e, f) = (matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5])
        let determinant = a * e - b * d
        guard determinant.isFinite, abs(determinant) > 1e-12 else { return nil }
        let (u, v) = (px - c, py - f)
        let x = (e * u - b * v) / determinant
        let y = (a * v - d * u) / determinant
        return x.isFinite && y.isFinite ? (x, y) : nil
    }

    /// Normalises an absolute axis value the way libinput does: (value − minimum) / (range + 1).
    static func normalise(_ value: Int, minimum: Int, maximum: Int) -> Double? {
        guard maximum > minimum else { return nil }
        // Doubles hold every Int32 axis value exactly; the subtraction happens in Double, so it cannot overflow.
        return (Double(value) - Double(minimum)) / (Double(maximum) - Double(minimum) + 1)
    }
}
