import TouchModel

/// Maps a device position, normalised to 0…1 on both axes, onto output pixels: touchd's calibration matrix first,
/// then the configured rotation, then the output (or the part of it the device covers). Results may lie outside the
/// output; hit-testing treats them as touching nothing.
///
/// The position comes from libinput with libinput's own calibration (a udev `LIBINPUT_CALIBRATION_MATRIX`) already
/// applied; touchd never changes that one. A `[[device]]` entry's `rotation` and `calibration` are used instead of
/// `[output]`'s for the devices it matches (docs/configuration.md, "Rotation and calibration").
struct CoordinateMapper: Hashable, Sendable {
    /// The calibration's six coefficients, held inline: a mapper is copied out of the router's table on every touch
    /// event, and an array would be retained and released with each copy. Nil when the configured matrix
    /// does not have six entries (the loader refuses such a matrix; a mapper made from one maps nothing).
    private var affine: Affine?
    var rotation: Configuration.Rotation
    /// Where the device lands on the output.
    var region: Rect

    static let identity: [Double] = [1, 0, 0, 0, 1, 0]

    /// A row-major 2×3 matrix: (x, y) ↦ (a·x + b·y + c, d·x + e·y + f).
    private struct Affine: Hashable, Sendable {
        var a, b, c, d, e, f: Double

        init?(_ matrix: [Double]) {
            guard matrix.count == 6 else { return nil }
            (a, b, c, d, e, f) = (matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5])
        }

        var entries: [Double] { [a, b, c, d, e, f] }

        /// Solves `self · (x, y, 1) = (px, py)`; nil when the matrix is singular.
        @inline(__always)
        func solve(x px: Double, y py: Double) -> (x: Double, y: Double)? {
            let determinant = a * e - b * d
            guard determinant.isFinite, abs(determinant) > 1e-12 else { return nil }
            let (u, v) = (px - c, py - f)
            let x = (e * u - b * v) / determinant
            let y = (a * v - d * u) / determinant
            return x.isFinite && y.isFinite ? (x, y) : nil
        }
    }

    /// Row-major 2×3 matrix applied to normalised coordinates, as libinput's calibration (empty when the configured
    /// one did not have six entries).
    var calibration: [Double] { affine?.entries ?? [] }

    init(output: Configuration.Output, region: Rect? = nil) {
        self.affine = Affine(output.calibration ?? Self.identity)
        self.rotation = output.rotation
        self.region = region ?? output.bounds
    }

    /// The mapping of a device matched by `device` (nil: no `[[device]]` entry, the output's settings alone): the
    /// entry's rotation and calibration where it gives them, else the output's.
    init(output: Configuration.Output, device: Configuration.DeviceMatch?) {
        self.affine = Affine(device?.calibration ?? output.calibration ?? Self.identity)
        self.rotation = device?.rotation ?? output.rotation
        self.region = device?.region ?? output.bounds
    }

    /// touchd's whole transformation of normalised coordinates, calibration then rotation, as one row-major 2×3
    /// matrix (before the scaling onto the output or region): what `check` and the start log print.
    var matrix: [Double] {
        guard let affine else { return Self.identity }
        return Self.compose(rotation.matrix, after: affine.entries)
    }

    /// `outer · inner` for row-major 2×3 affine matrices: `inner` applied first.
    static func compose(_ outer: [Double], after inner: [Double]) -> [Double] {
        guard outer.count == 6, inner.count == 6 else { return identity }
        let (a, b, c, d, e, f) = (outer[0], outer[1], outer[2], outer[3], outer[4], outer[5])
        let (p, q, r, s, t, u) = (inner[0], inner[1], inner[2], inner[3], inner[4], inner[5])
        return [a * p + b * s, a * q + b * t, a * r + b * u + c, d * p + e * s, d * q + e * t, d * r + e * u + f]
    }

    /// A matrix as `check` and the log print it: `[a b c; d e f]`, up to 4 decimals, no negative zero.
    static func describe(_ matrix: [Double]) -> String {
        func number(_ value: Double) -> String {
            guard value.isFinite else { return "?" }
            let rounded = (value * 10_000).rounded() / 10_000
            if rounded == 0 { return "0" }
            if rounded == rounded.rounded(), abs(rounded) < 1e9 { return String(Int64(rounded)) }
            return String(rounded)
        }
        guard matrix.count == 6 else { return "[?]" }
        let row1 = matrix[0..<3].map(number).joined(separator: " ")
        let row2 = matrix[3..<6].map(number).joined(separator: " ")
        return "[\(row1); \(row2)]"
    }

    /// The output position of a normalised device position; nil when the input is not finite.
    @inline(__always)
    func map(x: Double, y: Double) -> Point? {
        guard x.isFinite, y.isFinite, let m = affine else { return nil }
        let cx = m.a * x + m.b * y + m.c
        let cy = m.d * x + m.e * y + m.f
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
    @inline(__always)
    func unmap(_ point: Point) -> (x: Double, y: Double)? {
        guard point.isFinite, region.width > 0, region.height > 0, let affine else { return nil }
        let rx = (point.x - region.minX) / region.width
        let ry = (point.y - region.minY) / region.height
        let (cx, cy): (Double, Double)
        switch rotation {
        case .right: (cx, cy) = (ry, 1 - rx)
        case .inverted: (cx, cy) = (1 - rx, 1 - ry)
        case .left: (cx, cy) = (1 - ry, rx)
        case .normal: (cx, cy) = (rx, ry)
        }
        return affine.solve(x: cx, y: cy)
    }

    /// Solves `matrix · (x, y, 1) = (px, py)` for a row-major 2×3 affine matrix; nil when it is singular.
    @inline(__always)
    static func invert(_ matrix: [Double], x px: Double, y py: Double) -> (x: Double, y: Double)? {
        Affine(matrix)?.solve(x: px, y: py)
    }

    /// Normalises an absolute axis value the way libinput does: (value − minimum) / (range + 1).
    @inline(__always)
    static func normalise(_ value: Int, minimum: Int, maximum: Int) -> Double? {
        guard maximum > minimum else { return nil }
        // Doubles hold every Int32 axis value exactly; the subtraction happens in Double, so it cannot overflow.
        return (Double(value) - Double(minimum)) / (Double(maximum) - Double(minimum) + 1)
    }
}
