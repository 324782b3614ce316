import Testing
import TouchModel

@testable import TouchDaemon

/// The axes of a twin in output space (`[filter] twin_space = "output"`): ranges with the output's size and aspect
/// and a resolution that gives the output the physical size the panel measures, so that a compositor reading the twin
/// sees a touchscreen the shape of its output.
@Suite("Twin: output-space axes")
struct TwinAxesTests {
    static func output(_ width: Double, _ height: Double, rotation: Configuration.Rotation = .normal)
        -> Configuration.Output
    {
        Configuration.Output(width: width, height: height, rotation: rotation, calibration: nil)
    }

    @Test(
        "the ranges have the output's aspect, the resolution its size as the panel measures it",
        arguments: [Configuration.Rotation.normal, .right, .inverted, .left])
    func wholeOutput(_ rotation: Configuration.Rotation) throws {
        // A 16:10 panel of 250 × 156.25 mm, shown landscape (0°, 180°) or portrait (90°, 270°).
        let (panelWidth, panelHeight) = (250.0, 156.25)
        let turned = rotation == .right || rotation == .left
        let output = Self.output(turned ? 800 : 1280, turned ? 1280 : 800, rotation: rotation)
        let axes = OutputAxes(
            output: output, mapper: CoordinateMapper(output: output), widthMillimetres: panelWidth,
            heightMillimetres: panelHeight)
        let (x, y) = Twin.absInfo(axes)
        #expect(x.minimum == 0 && y.minimum == 0)
        let units = (x: Double(x.maximum) + 1, y: Double(y.maximum) + 1)
        // The aspect of the output, and at least one unit per pixel.
        #expect(abs(units.x / units.y - output.width / output.height) < 1e-9)
        #expect(units.x >= output.width && units.y >= output.height)
        // One resolution for both axes: square units, and the turned panel's size within 1 %.
        #expect(x.resolution == y.resolution && x.resolution > 0)
        let size = (width: units.x / Double(x.resolution), height: units.y / Double(y.resolution))
        let expected = turned ? (panelHeight, panelWidth) : (panelWidth, panelHeight)
        #expect(abs(size.width / expected.0 - 1) < 0.01, "\(size) for \(expected)")
        #expect(abs(size.height / expected.1 - 1) < 0.01, "\(size) for \(expected)")
        #expect(x.fuzz == 0 && y.fuzz == 0)
    }

    @Test("a panel on half of the output gives an output twice its size")
    func region() throws {
        let output = Self.output(1280, 1600)
        let mapper = CoordinateMapper(output: output, region: Rect(x: 0, y: 800, width: 1280, height: 800))
        let axes = OutputAxes(output: output, mapper: mapper, widthMillimetres: 250, heightMillimetres: 156.25)
        let height = (Double(axes.yMaximum) + 1) / Double(axes.resolution)
        #expect(abs(height / (2 * 156.25) - 1) < 0.01)
    }

    @Test("a panel without a physical size: the twin reports none either (resolution 0, as the panel)")
    func noSize() {
        let output = Self.output(800, 1280, rotation: .right)
        let axes = OutputAxes(
            output: output, mapper: CoordinateMapper(output: output), widthMillimetres: nil, heightMillimetres: nil)
        #expect(axes.resolution == 0)
        #expect(axes.xMaximum > 0 && axes.yMaximum > 0)
    }

    @Test("the largest output the schema allows fits the axes; a fractional size keeps its aspect")
    func bounds() {
        let largest = Self.output(32_768, 32_768)
        let axes = OutputAxes(
            output: largest, mapper: CoordinateMapper(output: largest), widthMillimetres: 0.1, heightMillimetres: 0.1)
        #expect(Double(axes.xMaximum) + 1 == 32_768 * Double(OutputAxes.unitsPerPixel))
        // 0.1 mm over 32768 pixels: more units per millimetre than the bound; kept at the bound.
        #expect(axes.resolution == 1_000_000)
        let fractional = Self.output(1366.5, 768)
        let other = OutputAxes(
            output: fractional, mapper: CoordinateMapper(output: fractional), widthMillimetres: nil,
            heightMillimetres: nil)
        #expect(abs((Double(other.xMaximum) + 1) / Double(OutputAxes.unitsPerPixel) - 1366.5) < 1e-9)
    }

    @Test("positions are normalised over the whole output, off-output positions kept (the twin clamps them)")
    func normalised() throws {
        let output = Self.output(800, 1280)
        let inside = try #require(OutputAxes.normalised(Point(x: 200, y: 320), on: output))
        #expect(inside.x == 0.25 && inside.y == 0.25)
        let outside = try #require(OutputAxes.normalised(Point(x: -8, y: 1280), on: output))
        #expect(outside.x < 0 && outside.y == 1)
        #expect(Twin.deviceValue(outside.x, 0, 12_799) == 0)
        #expect(OutputAxes.normalised(Point(x: .nan, y: 0), on: output) == nil)
    }
}
