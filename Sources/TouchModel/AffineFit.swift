/// A least-squares fit of a 2×3 affine matrix to point pairs: the calibration `touchd calibrate` computes.
///
/// `(x, y) ↦ (a·x + b·y + c, d·x + e·y + f)`, row-major `[a, b, c, d, e, f]`, as libinput writes its calibration
/// matrix. Each output row is fitted on its own (the two rows share no coefficient), by the normal equations of the
/// three unknowns, solved with partial pivoting. Pure: no I/O, no clock.
public enum AffineFit {
    /// Why no matrix could be fitted.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Fewer than three pairs: an affine map has three unknowns per row.
        case tooFewPoints(Int)
        /// A coordinate is NaN or infinite.
        case notFinite(index: Int)
        /// The sources lie on one line (or on one point): they fix no matrix.
        case collinear

        public var description: String {
            switch self {
            case .tooFewPoints(let count): "an affine fit needs at least 3 points, got \(count)"
            case .notFinite(let index): "point \(index + 1) is not a finite position"
            case .collinear: "the touches lie on one line, so they fix no matrix (was the same spot touched twice?)"
            }
        }
    }

    /// The matrix that maps `sources` onto `targets` with the least sum of squared errors, each row on its own.
    /// `sources` and `targets` pair up by index; extra elements of the longer one are ignored.
    public static func fit(from sources: [Point], to targets: [Point]) -> Result<[Double], Failure> {
        let count = min(sources.count, targets.count)
        guard count >= 3 else { return .failure(.tooFewPoints(count)) }
        for index in 0..<count where !sources[index].isFinite || !targets[index].isFinite {
            return .failure(.notFinite(index: index))
        }
        // Centred on the sources' mean: the normal equations are then well conditioned whatever the offset.
        var meanX = 0.0
        var meanY = 0.0
        for index in 0..<count {
            meanX += sources[index].x
            meanY += sources[index].y
        }
        meanX /= Double(count)
        meanY /= Double(count)
        // Normal matrix of the rows (u, v, 1), u and v centred.
        var suu = 0.0
        var suv = 0.0
        var svv = 0.0
        var spread = 0.0
        for index in 0..<count {
            let u = sources[index].x - meanX
            let v = sources[index].y - meanY
            suu += u * u
            suv += u * v
            svv += v * v
            spread = max(spread, abs(u), abs(v))
        }
        // Collinear: the 2×2 block is singular, relative to the spread of the points.
        let determinant = suu * svv - suv * suv
        let scale = spread * spread * Double(count)
        guard spread > 0, determinant.isFinite, determinant > 1e-9 * scale * scale else {
            return .failure(.collinear)
        }
        func row(_ value: (Point) -> Double) -> [Double] {
            var su = 0.0
            var sv = 0.0
            var s1 = 0.0
            for index in 0..<count {
                let u = sources[index].x - meanX
                let v = sources[index].y - meanY
                let t = value(targets[index])
                su += u * t
                sv += v * t
                s1 += t
            }
            // With centred sources the constant column is orthogonal to u and v: the constant is the mean target.
            let p = (svv * su - suv * sv) / determinant
            let q = (suu * sv - suv * su) / determinant
            let constant = s1 / Double(count)
            // Back from centred coordinates: t = p·(x − mx) + q·(y − my) + k.
            return [p, q, constant - p * meanX - q * meanY]
        }
        let matrix = row(\.x) + row(\.y)
        guard matrix.allSatisfy(\.isFinite) else { return .failure(.collinear) }
        return .success(matrix)
    }

    /// `matrix · (x, y, 1)`; nil when the matrix does not have six entries or the result is not finite.
    public static func apply(_ matrix: [Double], to point: Point) -> Point? {
        guard matrix.count == 6 else { return nil }
        let result = Point(
            x: matrix[0] * point.x + matrix[1] * point.y + matrix[2],
            y: matrix[3] * point.x + matrix[4] * point.y + matrix[5])
        return result.isFinite ? result : nil
    }
}
