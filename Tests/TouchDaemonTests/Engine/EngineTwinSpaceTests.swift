import Testing
import TouchModel

@testable import TouchDaemon

/// `[filter] twin_space = "output"` in the engine (docs/kiosk.md, "Which twin_space"): each twin reports the point
/// touchd's controls saw, normalised over the whole output, so that a compositor that scales a touchscreen's range
/// straight onto its output (cage, wlroots without a per-device transform) hands the application that very point.
///
/// Every check compares two things the engine produced for the same touch: the position a full-screen `to_app`
/// button's action carries (where touchd's controls saw the finger) and where a compositor puts the twin's report.
@Suite("Engine: the twin in output space")
struct EngineTwinSpaceTests {
    /// A portrait output by default (cage -r on a landscape panel), one full-screen button that reaches the app and
    /// reports its touch-down, and `extra` (rotation, calibration, [[device]] entries).
    static func configuration(
        width: Int = 800, height: Int = 1280, rotation: Int = 0, twinSpace: String = "output", extra: String = ""
    ) -> String {
        """
        [output]
        width = \(width)
        height = \(height)
        rotation = \(rotation)

        [filter]
        enabled = true
        twin_space = "\(twinSpace)"

        [targets.e2e]
        socket = "/run/e2e.sock"
        responds_to = ["seen"]

        [[control]]
        id = "all"
        kind = "button"
        frame = { x = 0, y = 0, width = "100%", height = "100%" }
        actions = [{ events = ["touchDown"], target = "e2e", action = "seen" }]
        \(extra)
        """
    }

    /// A driver whose touchscreens `ids` the loop grabbed and twinned, with the axes the engine planned for them.
    static func filtering(_ text: String, devices ids: [Int] = [1], names: [String]? = nil) throws -> (
        EngineHarness.Driver, [Int: TwinAxes]
    ) {
        var driver = try EngineHarness.Driver(text)
        var axes: [Int: TwinAxes] = [:]
        for (index, id) in ids.enumerated() {
            for case .filterDevices(_, _, let planned) in driver.plug(id, name: names?[index] ?? "panel") {
                axes = planned
            }
        }
        let results = ids.enumerated().map { index, id in
            (device: EngineHarness.Driver.device(id, name: names?[index] ?? "panel"), outcome: GrabOutcome.grabbed)
        }
        _ = driver.engine.filterApplied(results)
        return (driver, axes)
    }

    /// What a compositor that maps a touchscreen onto its output without turning it does with the twin's report:
    /// the twin writes the normalised position as an axis value (Twin.deviceValue), libinput normalises it again
    /// over the axis' range, the compositor scales it onto the output.
    static func delivered(_ change: TwinChange, axes: OutputAxes, output: (width: Double, height: Double)) -> Point? {
        guard let x = change.x, let y = change.y else { return nil }
        let valueX = Twin.deviceValue(x, 0, axes.xMaximum)
        let valueY = Twin.deviceValue(y, 0, axes.yMaximum)
        guard let nx = CoordinateMapper.normalise(Int(valueX), minimum: 0, maximum: Int(axes.xMaximum)),
            let ny = CoordinateMapper.normalise(Int(valueY), minimum: 0, maximum: Int(axes.yMaximum))
        else { return nil }
        return Point(x: nx * output.width, y: ny * output.height)
    }

    /// Taps at `deviceX, deviceY` (normalised panel coordinates, ×1000 as the driver takes them) on `device` and
    /// returns where touchd's control saw it and where the compositor delivers the twin's report.
    static func tap(
        _ driver: inout EngineHarness.Driver, at deviceX: Double, _ deviceY: Double, device: Int = 1,
        axes: [Int: TwinAxes], output: (width: Double, height: Double) = (800, 1280)
    ) throws -> (seen: Point, app: Point, frameDevice: Int) {
        let effects = driver.frame([.down(0, deviceX, deviceY)], device: device)
        let seen = try #require(EngineHarness.deliveryValues(effects).first { $0.action == "seen" })
        let frame = try #require(EngineFilterTests.frames(effects).first)
        let change = try #require(frame.changes.first { $0.phase == .down })
        guard case .output(let outputAxes) = try #require(axes[frame.device]) else {
            Issue.record("the twin of device \(frame.device) is not in output space")
            throw CancellationError()
        }
        let app = try #require(delivered(change, axes: outputAxes, output: output))
        _ = driver.frame([.up(0)], device: device, after: 50)
        return (Point(x: try #require(seen.x), y: try #require(seen.y)), app, frame.device)
    }

    static let samples: [(Double, Double)] = [(20, 30), (980, 40), (30, 970), (500, 500), (730, 210)]

    @Test("every rotation: the app gets the point touchd's control saw", arguments: [0, 90, 180, 270])
    func rotations(_ rotation: Int) throws {
        // A landscape output for 0 and 180, portrait for 90 and 270, as a compositor turned with -r shows it.
        let turned = rotation == 90 || rotation == 270
        let output: (width: Double, height: Double) = turned ? (800, 1280) : (1280, 800)
        var (driver, axes) = try Self.filtering(
            Self.configuration(width: Int(output.width), height: Int(output.height), rotation: rotation))
        for (x, y) in Self.samples {
            let result = try Self.tap(&driver, at: x, y, axes: axes, output: output)
            #expect(
                abs(result.app.x - result.seen.x) < 0.1 && abs(result.app.y - result.seen.y) < 0.1,
                "rotation \(rotation), panel (\(x), \(y)): touchd saw \(result.seen), the app gets \(result.app)")
        }
    }

    @Test("the measured cage touch: the app gets touchd's (652, 200), not the stretched raw point")
    func measuredTouch() throws {
        var (driver, axes) = try Self.filtering(Self.configuration(rotation: 90))
        // (300, 200) of a 1920×1080 panel, as the driver takes normalised positions: ×1000.
        let result = try Self.tap(&driver, at: 300.0 / 1920 * 1000, 200.0 / 1080 * 1000, axes: axes)
        // touchd's rotation 90: (1 − y, x) of the output.
        #expect(abs(result.seen.x - (1 - 200.0 / 1080) * 800) < 0.01)
        #expect(abs(result.seen.y - 300.0 / 1920 * 1280) < 0.01)
        #expect(abs(result.app.x - result.seen.x) < 0.1 && abs(result.app.y - result.seen.y) < 0.1)
    }

    @Test("a [[device]] calibration matrix and rotation: the app gets the point touchd's control saw")
    func calibration() throws {
        let entry = """

            [[device]]
            match_name = "panel"
            rotation = 90
            calibration = [1.05, 0.02, -0.03, -0.01, 0.97, 0.02]
            """
        var (driver, axes) = try Self.filtering(Self.configuration(extra: entry))
        // Inside the margin the matrix moves points by, so that each lands on the output (and the button).
        for (x, y) in [(60.0, 70.0), (940, 80), (70, 930), (500, 500), (730, 210)] {
            let result = try Self.tap(&driver, at: x, y, axes: axes)
            #expect(
                abs(result.app.x - result.seen.x) < 0.1 && abs(result.app.y - result.seen.y) < 0.1,
                "panel (\(x), \(y)): touchd saw \(result.seen), the app gets \(result.app)")
        }
    }

    @Test("two panels on one output: each panel's twin lands on its own region")
    func twoPanels() throws {
        let entries = """

            [[device]]
            match_name = "top"
            region = { x = 0, y = 0, width = "100%", height = "50%" }
            rotation = 90

            [[device]]
            match_name = "bottom"
            region = { x = 0, y = 640, width = "100%", height = "50%" }
            rotation = 90
            """
        var (driver, axes) = try Self.filtering(
            Self.configuration(extra: entries), devices: [1, 2], names: ["top", "bottom"])
        for device in [1, 2] {
            for (x, y) in Self.samples {
                let result = try Self.tap(&driver, at: x, y, device: device, axes: axes)
                #expect(result.frameDevice == device)
                #expect(abs(result.app.x - result.seen.x) < 0.1 && abs(result.app.y - result.seen.y) < 0.1)
                // Its region: the top half for the first panel, the bottom half for the second.
                #expect(device == 1 ? result.app.y <= 640 : result.app.y >= 640, "panel \(device): \(result.app)")
            }
        }
    }

    @Test("twin_space = \"device\" forwards the panel's own coordinates, as before, whatever the rotation")
    func deviceSpace() throws {
        var (driver, axes) = try Self.filtering(Self.configuration(rotation: 90, twinSpace: "device"))
        #expect(axes == [1: .device])
        let frames = EngineFilterTests.frames(driver.frame([.down(0, 300, 200)]))
        let change = try #require(frames.first?.changes.first)
        #expect(abs((change.x ?? 0) - 0.3) < 1e-9 && abs((change.y ?? 0) - 0.2) < 1e-9)
    }

    @Test("a reload that changes twin_space re-plans the twins with their new axes; they are grabbed anew")
    func reloadChangesSpace() throws {
        var (driver, axes) = try Self.filtering(Self.configuration(twinSpace: "device"))
        #expect(axes == [1: .device])
        let effects = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration(twinSpace: "output"))), path: "engine.toml",
            now: driver.now)
        let plans = effects.compactMap {
            if case .filterDevices(let d, _, let a) = $0 { (d.map(\.id), a) } else { nil }
        }
        #expect(plans.count == 1)
        #expect(plans.first?.0 == [1])
        guard case .output = plans.first?.1[1] else {
            Issue.record("the new plan's twin is not in output space: \(String(describing: plans.first?.1))")
            return
        }
        // Until the loop says it made the new twin, nothing goes to the old one.
        #expect(EngineFilterTests.frames(driver.tap(at: 500, 500)).isEmpty)
        _ = driver.engine.filterApplied([(EngineHarness.Driver.device(1), .grabbed)])
        #expect(EngineFilterTests.frames(driver.tap(at: 500, 500)).count == 2)
        // The same file again plans nothing.
        let again = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration(twinSpace: "output"))), path: "engine.toml",
            now: driver.now)
        #expect(EngineFilterTests.plans(again).isEmpty)
    }

    @Test("check explains the choice")
    func checkSummary() throws {
        let output = try EngineHarness.load(Self.configuration(rotation: 90))
        #expect(output.summary.contains { $0.hasPrefix("twin_space = \"output\"") && $0.contains("800×1280") })
        let device = try EngineHarness.load(Self.configuration(rotation: 90, twinSpace: "device"))
        let line = try #require(device.summary.first { $0.hasPrefix("twin_space = \"device\"") })
        // A turned panel under device space: say what a compositor that does not turn touch would do.
        #expect(line.contains("twin_space = \"output\" makes them agree"))
        let plain = try EngineHarness.load(Self.configuration(width: 1280, height: 800, twinSpace: "device"))
        #expect(plain.summary.contains { $0.hasPrefix("twin_space = \"device\"") && !$0.contains("makes them agree") })
    }
}
