import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// The fit through touchd's own mapping: after it, ``CoordinateMapper`` puts every touch on its target, whatever the
/// rotation and region.
@Suite("touchd calibrate: the fit")
struct CalibrationFitTests {
    /// How a badly fitted glass reports the finger's normalised point: scale, a 2° turn, an offset.
    static let skew: [Double] = {
        let angle = 2.0 * Double.pi / 180
        return [1.05 * cos(angle), -0.95 * sin(angle), -0.02, 1.05 * sin(angle), 0.95 * cos(angle), 0.03]
    }()

    /// The raw touch for an output point: the mapping with no calibration undone, then the skew.
    static func touch(at point: Point, fit: CalibrationFit) -> Point {
        let back = fit.mapper(calibration: CoordinateMapper.identity).unmap(point)!
        return AffineFit.apply(skew, to: Point(x: back.x, y: back.y))!
    }

    static func fit(_ rotation: Configuration.Rotation, region: Rect?) -> CalibrationFit {
        let output = Configuration.Output(width: 1280, height: 800, rotation: .normal)
        return CalibrationFit(
            output: output, device: Configuration.DeviceMatch(name: "panel", region: region, rotation: rotation))
    }

    @Test(
        "recovers the skew exactly with every rotation, on the whole output and on a region",
        arguments: Configuration.Rotation.allCases, [nil, Rect(x: 640, y: 100, width: 640, height: 600)])
    func recovers(rotation: Configuration.Rotation, region: Rect?) throws {
        let fit = Self.fit(rotation, region: region)
        let targets = fit.targets
        #expect(targets.count == 5)
        #expect(targets.filter { $0.role == .check }.count == 1)
        let touches = targets.map { Self.touch(at: $0.point, fit: fit) }
        let solution = try fit.solve(targets: targets, touches: touches, maximumError: 3).get()
        // The written matrix is the skew's inverse, to its six decimals.
        let product = CoordinateMapper.compose(solution.matrix, after: Self.skew)
        for (got, want) in zip(product, CoordinateMapper.identity) { #expect(abs(got - want) < 1e-5) }
        #expect(solution.maximumError < 0.05)
        // touchd's own mapping, built from a configuration with the matrix, lands every touch on its target.
        var entry = fit.device!
        entry.calibration = solution.matrix
        let mapper = CoordinateMapper(output: fit.output, device: entry)
        for (target, touch) in zip(targets, touches) {
            #expect(mapper.map(x: touch.x, y: touch.y)!.distance(to: target.point) < 0.05)
        }
        // And points that were no target too.
        for point in [Point(x: 700, y: 150), Point(x: 1200, y: 650), Point(x: 900, y: 420)] {
            let inside = (region ?? Rect(x: 0, y: 0, width: 1280, height: 800)).contains(point)
            guard inside else { continue }
            let touch = Self.touch(at: point, fit: fit)
            #expect(mapper.map(x: touch.x, y: touch.y)!.distance(to: point) < 0.05)
        }
    }

    @Test("a touch that slipped is refused with the bound named; the errors are still given")
    func slipped() {
        let fit = Self.fit(.right, region: nil)
        let targets = fit.targets
        var touches = targets.map { Self.touch(at: $0.point, fit: fit) }
        touches[1].x += 0.02  // 25.6 px on this axis before the rotation
        guard
            case .failure(.tooLarge(let solution, let bound)) = fit.solve(
                targets: targets, touches: touches, maximumError: 3)
        else {
            Issue.record("a slipped touch was accepted")
            return
        }
        #expect(bound == 3)
        #expect(solution.maximumError > 3)
        #expect(solution.errors.count == 5)
        let failure = CalibrationFit.Failure.tooLarge(solution, bound: 3)
        #expect(failure.description.contains("above --max-error-px 3.00"))
        #expect(failure.description.contains("nothing was written"))
    }

    @Test("a slipped check point alone is refused too")
    func slippedCheck() {
        let fit = Self.fit(.normal, region: nil)
        let targets = fit.targets
        var touches = targets.map { Self.touch(at: $0.point, fit: fit) }
        touches[4].y += 0.01
        guard case .failure(.tooLarge(let solution, _)) = fit.solve(targets: targets, touches: touches, maximumError: 3)
        else {
            Issue.record("a slipped check point was accepted")
            return
        }
        #expect(solution.errors.firstIndex(of: solution.maximumError) == 4)
    }

    @Test("bad input: the same spot touched every time, a missing touch, a position that is not finite")
    func badInput() {
        let fit = Self.fit(.normal, region: nil)
        let targets = fit.targets
        let same = Array(repeating: Point(x: 0.5, y: 0.5), count: 5)
        #expect(fit.solve(targets: targets, touches: same, maximumError: 3) == .failure(.fit(.collinear)))
        #expect(
            fit.solve(targets: targets, touches: Array(same.prefix(4)), maximumError: 3)
                == .failure(.countMismatch(targets: 5, touches: 4)))
        var touches = targets.map { Self.touch(at: $0.point, fit: fit) }
        touches[0] = Point(x: .infinity, y: 0.1)
        #expect(fit.solve(targets: targets, touches: touches, maximumError: 3) == .failure(.fit(.notFinite(index: 0))))
        // Two corners touched in each other's place: no affine map fits, and the errors say so.
        var crossed = targets.map { Self.touch(at: $0.point, fit: fit) }
        crossed.swapAt(0, 1)
        #expect((try? fit.solve(targets: targets, touches: crossed, maximumError: 3).get()) == nil)
    }

    @Test("targets on a display that shows the picture turned: where a square panel's touch would reach them")
    func onScreen() {
        let portrait = Configuration.Output(width: 800, height: 1280, rotation: .right)
        // cage -r: the picture's top-left corner is where a panel with rotation 90 reports (0, 0) of the picture.
        let corner = CalibrationFit.onScreen(
            Point(x: 0, y: 0), output: portrait, displayRotation: .right, width: 1280, height: 800)
        let panel = CoordinateMapper(output: portrait)
        let back = panel.map(x: corner!.x / 1280, y: corner!.y / 800)!
        #expect(back.distance(to: Point(x: 0, y: 0)) < 1e-9)
        for rotation in Configuration.Rotation.allCases {
            let output = Configuration.Output(width: 1000, height: 600, rotation: rotation)
            let point = Point(x: 250, y: 150)
            let screen = CalibrationFit.onScreen(
                point, output: output, displayRotation: rotation, width: 1920, height: 1080)!
            let mapped = CoordinateMapper(output: output).map(x: screen.x / 1920, y: screen.y / 1080)!
            #expect(mapped.distance(to: point) < 1e-9)
        }
        let flat = Configuration.Output(width: 1280, height: 800, rotation: .normal)
        #expect(
            CalibrationFit.onScreen(
                Point(x: 640, y: 200), output: flat, displayRotation: .normal, width: 2560, height: 1600)
                == Point(x: 1280, y: 400))
    }

    @Test("coefficients are written as TOML floats with six decimals at most")
    func numbers() {
        #expect(CalibrationFit.toml(1) == "1.0")
        #expect(CalibrationFit.toml(-0.0123456789) == "-0.012346")
        #expect(CalibrationFit.toml(0.0000001) == "0.0")
        #expect(CalibrationFit.toml(-10000) == "-10000.0")
        #expect(CalibrationFit.toml(10001) == nil)
        #expect(CalibrationFit.toml(.nan) == nil)
        #expect(CalibrationFit.tomlLine([1, 0, 0.5, 0, 1, -0.25]) == "calibration = [1.0, 0.0, 0.5, 0.0, 1.0, -0.25]")
        #expect(CalibrationFit.tomlLine([1, 0]) == nil)
        #expect(CalibrationFit.pixels(0.005) == "0.01")
        #expect(CalibrationFit.pixels(12.3) == "12.30")
    }

    @Test("the udev matrix is touchd's after libinput's present one")
    func udev() {
        #expect(CalibrationFit.udevMatrix([1, 0, 0.02, 0, 1, -0.01], after: nil) == "1 0 0.02 0 1 -0.01")
        // libinput turns 270° already: the rule must hold both.
        #expect(
            CalibrationFit.udevMatrix([1, 0, 0.02, 0, 1, -0.01], after: [0, 1, 0, -1, 0, 1]) == "0 1 0.02 -1 0 0.99")
    }
}
