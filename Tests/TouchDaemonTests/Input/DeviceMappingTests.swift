import Foundation
import Logging
import Testing
import TouchModel

@testable import TouchDaemon

/// `[[device]]` entries with their own `rotation` and `calibration`, what `check` says about the
/// matrices in effect, and a `libinput record` file replayed through a rotated entry (rotation tested without hardware).
@Suite("per-device rotation and calibration")
struct DeviceMappingTests {
    /// A portrait ticket machine: the output turned 90°, a second panel mounted upside down with its own matrix.
    static let text = """
        [output]
        width = 1080
        height = 1920
        rotation = 90

        [[device]]
        match_name = "Touch 1"
        region = { x = 0, y = 0, width = 1080, height = 960 }

        [[device]]
        match_name = "Touch 2"
        region = { x = 0, y = 960, width = 1080, height = 960 }
        rotation = 180
        calibration = [1.0, 0.0, 0.02, 0.0, 1.0, -0.01]

        """

    @Test("the keys are read; an entry without them keeps the output's")
    func keysAreRead() throws {
        let configuration = try EngineHarness.load(Self.text)
        #expect(configuration.devices.map(\.rotation) == [nil, .inverted])
        #expect(configuration.devices.map(\.calibration) == [nil, [1.0, 0.0, 0.02, 0.0, 1.0, -0.01]])
        #expect(CoordinateMapper(output: configuration.output, device: configuration.devices[0]).rotation == .right)
        #expect(CoordinateMapper(output: configuration.output, device: configuration.devices[1]).rotation == .inverted)
    }

    @Test("check prints touchd's matrix for the output and for each entry with its own")
    func checkSaysWhichMatrix() throws {
        let configuration = try EngineHarness.load(Self.text)
        #expect(
            configuration.mappingSummary == [
                "touchd's matrix [0 -1 1; 1 0 0] (rotation 90°, calibration none), applied after libinput's own (udev "
                    + "LIBINPUT_CALIBRATION_MATRIX; touchd run logs it per device)",
                "device[1]: touchd's matrix [-1 0 0.98; 0 -1 1.01] (rotation 180°, calibration [1 0 0.02; 0 1 -0.01])",
            ])
        // Every entry with both of its own: the output's matrix serves no device.
        var own = configuration
        own.devices = own.devices.map { device in
            var device = device
            device.rotation = device.rotation ?? .normal
            device.calibration = device.calibration ?? CoordinateMapper.identity
            return device
        }
        #expect(own.mappingSummary.first?.contains(", used by no device (every [[device]] entry has its own)") == true)
        #expect(own.mappingSummary.count == 3)
        // Nothing turned or calibrated: no line, positions pass through as libinput reports them.
        let plain = try EngineHarness.load("[output]\nwidth = 800\nheight = 480\n")
        #expect(plain.mappingSummary.isEmpty)
    }

    @Test("the start log names libinput's matrix, touchd's and the one in effect")
    func startLogSaysWhichMatrix() throws {
        var device = TouchRouterTests.device(1, name: "Touch 2")
        device.libinputCalibration = [0, 1, 0, -1, 0, 1]  // udev: LIBINPUT_CALIBRATION_MATRIX="0 1 0 -1 0 1"
        let configuration = try EngineHarness.load(Self.text)
        let mapper = CoordinateMapper(output: configuration.output, device: configuration.devices[1])
        let metadata = Engine.matrixMetadata(device, mapper)
        #expect(metadata["device.libinput_matrix"] == "[0 1 0; -1 0 1]")
        #expect(metadata["device.touchd_matrix"] == "[-1 0 0.98; 0 -1 1.01]")
        #expect(metadata["device.rotation"] == "180")
        // touchd's after libinput's: x' = −(1 − x... ) worked out in docs/configuration.md.
        #expect(metadata["device.matrix"] == "[0 -1 0.98; 1 0 0.01]")
    }

    @Test("touchd run's 'touchscreen added' line carries the matrices of the entry that matched")
    func engineLogsTheMatrix() throws {
        var driver = try EngineHarness.Driver(Self.text)
        var device = EngineHarness.Driver.device(1, name: "Touch 2")
        device.libinputCalibration = [0, 1, 0, -1, 0, 1]
        let effects = driver.engine.handle([.deviceAdded(device)], now: driver.now)
        let metadata = effects.compactMap { effect -> Logger.Metadata? in
            if case .log(_, "touchscreen added", let metadata) = effect { metadata } else { nil }
        }
        #expect(metadata.count == 1)
        #expect(metadata.first?["device.touchd_matrix"] == "[-1 0 0.98; 0 -1 1.01]")
        #expect(metadata.first?["device.libinput_matrix"] == "[0 1 0; -1 0 1]")
        #expect(metadata.first?["device.matrix"] == "[0 -1 0.98; 1 0 0.01]")
    }

    /// The recipe of docs/configuration.md: record the panel with `libinput record`, replay it with `simulate`. The
    /// same raw touch lands where each entry's rotation puts it.
    @Test("a libinput recording replays through each entry's rotation")
    func recordingReplaysThroughRotation() throws {
        let configuration = try EngineHarness.load(Self.text)
        // Raw (1024, 512) of 0…4095 on both panels.
        let frame: [[Int]] = [
            [0, 0, 3, 47, 0], [0, 0, 3, 57, 7], [0, 0, 3, 53, 1024], [0, 0, 3, 54, 512], [0, 0, 0, 0, 0],
        ]
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 1, frames: [frame]),
            RecordingFixture.device(node: 2, frames: [frame]))
        let frames = try LibinputRecording.frames(
            from: text, output: configuration.output, allowList: configuration.devices
        ).get()
        let points: [Point] = frames.flatMap(\.samples).filter { $0.phase == .began }.compactMap(\.location)
        try #require(points.count == 2)
        func near(_ point: Point, _ x: Double, _ y: Double) -> Bool {
            abs(point.x - x) < 1e-6 && abs(point.y - y) < 1e-6
        }
        // x = 1024/4096 = 0.25, y = 512/4096 = 0.125.
        // Touch 1, the output's 90°: (1 − 0.125, 0.25) on the top half.
        #expect(near(points[0], 945, 240), "\(points[0])")
        // Touch 2, its own matrix then 180°: (1 − 0.27, 1 − 0.115) on the bottom half.
        #expect(near(points[1], 788.4, 1809.6), "\(points[1])")
    }
}
