import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// A slider's `step` where the configuration and the control socket meet it: the declared value snaps, and so does
/// the control socket's `set`, whose answer carries the snapped value.
@Suite("sliders: step")
struct SliderStepTests {
    static let configuration = """
        [output]
        width = 1080
        height = 1920

        [[control]]
        id = "quantity"
        kind = "slider"
        frame = { x = 90, y = 1100, width = 900, height = 150 }
        min = 1
        max = 10
        step = 2
        value = 4

        """

    @Test("the declared value and the control socket's set snap to min + k·step")
    func setSnaps() throws {
        var driver = try EngineHarness.Driver(Self.configuration)
        // 4 is (4 − 1) / 2 = 1.5 steps, rounded to 2: 5.
        #expect(driver.engine.scene.control("quantity")?.value == 5)
        let answer = driver.request(.set(control: "quantity", enabled: nil, selected: nil, value: 6.9))
        // 2.95 steps: 3 → 7.
        #expect(driver.engine.scene.control("quantity")?.value == 7)
        #expect(
            answer.contains { effect in
                guard case .control(.response(_, _, let result)) = effect else { return false }
                return result.contains(#""value":7"#)
            })
        // Beyond max: the last step inside the range (10 is not on the grid 1, 3, 5, 7, 9).
        _ = driver.request(.set(control: "quantity", enabled: nil, selected: nil, value: 1e9))
        #expect(driver.engine.scene.control("quantity")?.value == 9)
    }
}
