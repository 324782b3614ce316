import TouchModel

/// What `touchd calibrate` computes, with no I/O: where the targets go, and the `calibration` matrix that makes touchd's
/// own mapping (``CoordinateMapper``: libinput's matrix, then `calibration`, then `rotation`, then `region`) put each
/// touch on its target.
///
/// The touches are libinput's positions (normalised, libinput's own matrix applied), exactly what `calibration` is
/// applied to. Each target is taken back through the region and the rotation (both exact and linear), and the affine
/// matrix from the touches to those points is fitted by least squares (``AffineFit``). Rotations are multiples of 90°
/// and the region only scales, so each output pixel axis is one row of the matrix times a constant: the least squares
/// in normalised coordinates are the least squares in output pixels.
struct CalibrationFit: Hashable, Sendable {
    /// One target shown to the installer, in output pixels.
    struct Target: Hashable, Sendable {
        enum Role: String, Hashable, Sendable {
            /// Used for the fit.
            case fit
            /// Left out of the fit, to check it: a touch that slipped shows here if not in the fit's own residuals.
            case check
        }

        var point: Point
        var role: Role
    }

    /// The matrix as written (rounded to ``decimals`` places) and each touch's distance from its target through it.
    struct Solution: Hashable, Sendable {
        /// Row-major 2×3, the `[[device]]` entry's `calibration`.
        var matrix: [Double]
        /// Per target, in output pixels, in the targets' order.
        var errors: [Double]
        var maximumError: Double { errors.max() ?? 0 }
    }

    /// Why no matrix came out, or why the one that did is refused.
    enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        case fit(AffineFit.Failure)
        /// A target that the mapping cannot take back (a region with no area).
        case unmappable(index: Int)
        /// A coefficient beyond what the configuration accepts, or a matrix with no inverse.
        case unusable([Double])
        /// The touches do not agree with one affine matrix: one slipped (or the panel is not linear).
        case tooLarge(Solution, bound: Double)
        case countMismatch(targets: Int, touches: Int)

        var description: String {
            switch self {
            case .fit(let failure): failure.description
            case .unmappable(let index): "target \(index + 1) cannot be mapped back through the rotation and region"
            case .unusable(let matrix):
                "the fitted matrix \(CoordinateMapper.describe(matrix)) is not usable (a coefficient beyond ±10000, or "
                    + "no inverse): were the targets touched in order?"
            case .tooLarge(let solution, let bound):
                "the largest error, \(CalibrationFit.pixels(solution.maximumError)) px at point "
                    + "\((solution.errors.firstIndex(of: solution.maximumError) ?? 0) + 1), is above --max-error-px "
                    + "\(CalibrationFit.pixels(bound)): a touch slipped; nothing was written, run it again"
            case .countMismatch(let targets, let touches): "\(targets) targets but \(touches) touches"
            }
        }
    }

    /// Decimal places of the written coefficients: 10⁻⁶ of the panel is 0.03 px on the largest output touchd accepts.
    static let decimals = 6
    /// How far in from the region's edges the corner targets sit, as a fraction of its size: near enough to the
    /// edges to fix the scale well, far enough that a finger reaches them past a bezel.
    static let inset = 0.1

    /// touchd's mapping settings of the panel: `[output]` and the panel's `[[device]]` entry (nil when none matches:
    /// the entry `calibrate` adds, with the output's rotation and no region).
    var output: Configuration.Output
    var device: Configuration.DeviceMatch?

    /// The region the panel covers, in output pixels.
    var region: Rect { device?.region ?? output.bounds }

    /// Four targets near the corners, fitted, then the centre, checked.
    var targets: [Target] {
        let r = region
        func at(_ u: Double, _ v: Double) -> Point { Point(x: r.minX + u * r.width, y: r.minY + v * r.height) }
        let (low, high) = (Self.inset, 1 - Self.inset)
        return [
            Target(point: at(low, low), role: .fit), Target(point: at(high, low), role: .fit),
            Target(point: at(high, high), role: .fit), Target(point: at(low, high), role: .fit),
            Target(point: at(0.5, 0.5), role: .check),
        ]
    }

    /// The mapping with `calibration` in the panel's entry.
    func mapper(calibration: [Double]) -> CoordinateMapper {
        var entry = device ?? Configuration.DeviceMatch()
        entry.calibration = calibration
        return CoordinateMapper(output: output, device: entry)
    }

    /// Fits the matrix to `touches` (libinput's normalised positions, one per target, in order) and checks every
    /// touch against `maximumError` output pixels.
    func solve(targets: [Target], touches: [Point], maximumError: Double) -> Result<Solution, Failure> {
        guard targets.count == touches.count else {
            return .failure(.countMismatch(targets: targets.count, touches: touches.count))
        }
        // The targets, with the rotation and region undone: where `calibration` must send each touch.
        let plain = mapper(calibration: CoordinateMapper.identity)
        var wanted: [Point] = []
        for (index, target) in targets.enumerated() {
            guard let back = plain.unmap(target.point) else { return .failure(.unmappable(index: index)) }
            wanted.append(Point(x: back.x, y: back.y))
        }
        let fitted = targets.indices.filter { targets[$0].role == .fit }
        let matrix: [Double]
        switch AffineFit.fit(from: fitted.map { touches[$0] }, to: fitted.map { wanted[$0] }) {
        case .success(let result): matrix = result.map(Self.rounded)
        case .failure(let failure): return .failure(.fit(failure))
        }
        let determinant = matrix[0] * matrix[4] - matrix[1] * matrix[3]
        guard matrix.allSatisfy({ abs($0) <= 10_000 }), abs(determinant) > 1e-9 else {
            return .failure(.unusable(matrix))
        }
        // Through touchd's own mapping, with the matrix as it will be written.
        let calibrated = mapper(calibration: matrix)
        var errors: [Double] = []
        for (index, touch) in touches.enumerated() {
            guard let point = calibrated.map(x: touch.x, y: touch.y) else {
                return .failure(.fit(.notFinite(index: index)))
            }
            errors.append(point.distance(to: targets[index].point))
        }
        let solution = Solution(matrix: matrix, errors: errors)
        guard solution.maximumError <= maximumError else {
            return .failure(.tooLarge(solution, bound: maximumError))
        }
        return .success(solution)
    }

    /// Where an output point is on a display of `width` × `height` pixels that shows the output turned by
    /// `displayRotation`, in the sense of touchd's `rotation` for a panel lying square on that display (`cage -r`
    /// shows the picture so that `rotation = 90` puts such a panel's touches on it: `displayRotation` 90). The output
    /// is scaled to fill the display. Nil for a point that is not finite.
    static func onScreen(
        _ point: Point, output: Configuration.Output, displayRotation: Configuration.Rotation, width: Int, height: Int
    ) -> Point? {
        let picture = CoordinateMapper(
            output: Configuration.Output(width: output.width, height: output.height, rotation: displayRotation))
        guard let display = picture.unmap(point) else { return nil }
        return Point(x: display.x * Double(width), y: display.y * Double(height))
    }

    /// `value` rounded to ``decimals`` places, as written; no negative zero.
    static func rounded(_ value: Double) -> Double {
        guard value.isFinite else { return value }
        let result = (value * 1_000_000).rounded() / 1_000_000
        return result == 0 ? 0 : result
    }

    /// A coefficient as TOML: a float with up to six decimals and at least one (`1.0`, `-0.012345`). Nil when not
    /// finite or beyond ±10000.
    static func toml(_ value: Double) -> String? {
        guard value.isFinite, abs(value) <= 10_000 else { return nil }
        let micro = Int64((value * 1_000_000).rounded())
        let negative = micro < 0
        let magnitude = negative ? -micro : micro
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.count > 1, fraction.hasSuffix("0") { fraction.removeLast() }
        return (negative ? "-" : "") + String(magnitude / 1_000_000) + "." + fraction
    }

    /// `calibration = [a, b, c, d, e, f]`; nil when a coefficient cannot be written.
    static func tomlLine(_ matrix: [Double]) -> String? {
        let numbers = matrix.compactMap(toml)
        guard matrix.count == 6, numbers.count == 6 else { return nil }
        return "calibration = [\(numbers.joined(separator: ", "))]"
    }

    /// A pixel figure as printed: two decimals.
    static func pixels(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e12 else { return "\(value)" }
        let hundredths = Int64((value * 100).rounded())
        let magnitude = hundredths < 0 ? -hundredths : hundredths
        let fraction = String(magnitude % 100)
        return (hundredths < 0 ? "-" : "") + "\(magnitude / 100)." + (fraction.count == 1 ? "0" : "") + fraction
    }

    /// The udev property that gives libinput the same mapping instead: touchd's matrix after libinput's present one
    /// (`current`, nil for none), for use **instead of** the entry's `calibration` (which must then be left out).
    static func udevMatrix(_ matrix: [Double], after current: [Double]?) -> String {
        let combined = CoordinateMapper.compose(matrix, after: current ?? CoordinateMapper.identity)
        return combined.map { toml(rounded($0)) ?? "0" }.map { $0.hasSuffix(".0") ? String($0.dropLast(2)) : $0 }
            .joined(separator: " ")
    }
}
