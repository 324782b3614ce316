import Foundation
import Testing

@testable import TouchDaemon

/// The warm-up tap before READY=1 reaches the end of a tap's path (the socket message's bytes) without touching the
/// real engine, whatever the configuration's allow-list and mapping.
@Suite("tap path warm-up")
struct TapPathWarmUpTests {
    @Test("the example's buttons are tapped through to their socket messages")
    func reachesTheMessages() throws {
        let text = try String(contentsOfFile: TestSupport.kioskConfig, encoding: .utf8)
        let configuration = try EngineHarness.load(text)
        #expect(TapPathWarmUp.run(configuration).messages > 0)
        #expect(TapPathWarmUp.run(configuration).forwarded == 0)
    }

    @Test("an allow-list that names another panel, a rotated output and filter mode still reach the messages")
    func allowListRotationFilter() throws {
        let configuration = try EngineHarness.load(
            EngineHarness.configuration()
                + """

                [[device]]
                match_name = "ILITEK"
                rotation = 90

                [filter]
                enabled = true
                """)
        let reached = TapPathWarmUp.run(configuration)
        // Button a's touchDown and touchUpInside (allTouchEvents), button b's likewise.
        #expect(reached.messages >= 4)
        // The tap on the output's centre, on empty space, goes to the application: its down and its lift, certain, so
        // forwarded first (the loop writes those; the engine makes them and writes nothing more).
        #expect(reached.forwardedFirst >= 2)
        #expect(reached.forwarded == 0)
    }

    @Test("the real engine sees nothing of it")
    func leavesTheEngineAlone() throws {
        var driver = try EngineHarness.Driver()
        TapPathWarmUp.run(driver.engine.configuration)
        #expect(driver.engine.statistics.frames == 0)
        #expect(driver.engine.statistics.actions == 0)
        _ = driver.plug(1)
        #expect(EngineHarness.deliveries(driver.tap(at: 200, 200)) == ["a:touchDown", "a:touchUpInside"])
    }

    @Test("a file without controls warms the empty-space path and encodes nothing")
    func noControls() throws {
        let configuration = try EngineHarness.load("[output]\nwidth = 800\nheight = 480\n")
        #expect(TapPathWarmUp.run(configuration) == TapPathWarmUp.Reached())
    }
}
