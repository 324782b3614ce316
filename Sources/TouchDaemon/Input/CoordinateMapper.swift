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

    /// Normalises an absolute axis value the way libinput does: (value − minimum) / (range + 1).
    static func normalise(_ value: Int, minimum: Int, maximum: Int) -> Double? {
        guard maximum > minimum else { return nil }
        // Doubles hold every Int32 axis value exactly; the subtraction happens in Double, so it cannot overflow.
        return (Double(value) - Double(minimum)) / (Double(maximum) - Double(minimum) + 1)
    }
}
