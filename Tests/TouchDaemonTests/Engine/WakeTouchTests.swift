import Testing
import TouchModel

@testable import TouchDaemon

/// The touch that wakes an idle kiosk: UIKit's touch that wakes the screen belongs to nobody.
/// With `[idle]`, a touch-down while the screen is idle fires `wake` and nothing else: no control, no gesture, and in
/// filter mode not the application, until every finger of that wake has lifted. `[idle] wake_touch_reaches_controls =
/// true` gives the old behaviour back.
@Suite("Engine: the wake touch")
struct WakeTouchTests {
    typealias Driver = EngineHarness.Driver

    /// EngineLiveTests' `[idle]` (2 s) with extra lines in the `[idle]` table and, optionally, filter mode.
    static func configuration(idleKeys: String = "", filter: String? = nil) -> String {
        var text = EngineLiveTests.idleConfiguration().replacingOccurrences(
            of: "[idle]\n", with: "[idle]\n\(idleKeys)\n")
        if let filter {
            text = text.replacingOccurrences(
                of: "[targets.e2e]", with: "[filter]\nenabled = true\n\(filter)\n\n[targets.e2e]")
        }
        return text
    }

    /// Touch-script output of `text` on `script`, as `touchd simulate` prints it.
    static func simulate(_ text: String, _ script: String) throws -> [String] {
        var simulation = try Simulation(configuration: try EngineHarness.load(text))
        return simulation.lines(.scriptText(script))
    }

    @Test("the wake touch on a control fires only wake; the next touch is the control's")
    func wakeTouchReachesNoControl() throws {
        var driver = try EngineLiveTests.started(Self.configuration())
        _ = driver.plug(1)
        _ = driver.wait(2_000)
        // On control a: before the fix it got touchDown, touchUpInside… under the wake.
        let wake = driver.tap(at: 200, 200)
        #expect(EngineLiveTests.idleDeliveries(wake) == ["wake:welcome", "wake:chained"])
        #expect(EngineHarness.deliveries(wake).allSatisfy { $0.hasPrefix("idle:") })
        // The clock starts again at the wake touch's lift, and the next tap is an ordinary one.
        #expect(driver.engine.nextDeadline == Instant(microseconds: driver.now + 2_000_000))
        let next = driver.tap(at: 200, 200)
        #expect(EngineHarness.deliveries(next) == ["a:touchDown", "a:touchUpInside"])
    }

    @Test("every finger that lands while the wake touch is down is part of it; gestures see none of them")
    func fingersOfTheWake() throws {
        var driver = try EngineLiveTests.started(Self.configuration())
        _ = driver.plug(1)
        _ = driver.wait(2_000)
        var effects = driver.frame([.down(0, 500, 500)])
        // The idle clock does not run while the wake touch is down.
        #expect(driver.engine.nextDeadline == nil)
        effects += driver.frame([.down(1, 200, 200)], after: 30)
        // Three fingers held in admin's corner: not recognized.
        effects += driver.frame([.down(2, 50, 850), .down(3, 100, 850), .down(4, 150, 850)], after: 30)
        effects += driver.wait(1_000)
        effects += driver.frame([.up(0), .up(1), .up(2), .up(3)], after: 10)
        #expect(driver.engine.nextDeadline == nil)
        effects += driver.frame([.up(4)], after: 10)
        #expect(EngineHarness.deliveries(effects) == ["idle:wake", "idle:wake"])
        #expect(driver.engine.nextDeadline == Instant(microseconds: driver.now + 2_000_000))
        // A cancel of the scene's contacts (a reload, a suspend) has nothing of the wake to cancel.
        #expect(driver.engine.scene.contactCount == 0)
    }

    @Test("wake_touch_reaches_controls = true: the wake touch is also a tap, as before")
    func optIn() throws {
        var driver = try EngineLiveTests.started(Self.configuration(idleKeys: "wake_touch_reaches_controls = true"))
        _ = driver.plug(1)
        _ = driver.wait(2_000)
        let wake = driver.tap(at: 200, 200)
        #expect(EngineHarness.deliveries(wake) == ["idle:wake", "idle:wake", "a:touchDown", "a:touchUpInside"])
    }

    @Test("a reload while the wake touch is down ends it; the kiosk is awake and its clock runs")
    func reloadDuringWake() throws {
        var driver = try EngineLiveTests.started(Self.configuration())
        _ = driver.plug(1)
        _ = driver.wait(2_000)
        _ = driver.frame([.down(0, 200, 200)])
        let reloaded = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.configuration())), path: "engine.toml", now: driver.now)
        #expect(EngineHarness.deliveries(reloaded).isEmpty)
        #expect(driver.engine.nextDeadline != nil)
        // The router drops the rest of the cancelled contact; a new tap is the control's.
        _ = driver.frame([.up(0)])
        #expect(EngineHarness.deliveries(driver.tap(at: 200, 200)) == ["a:touchDown", "a:touchUpInside"])
    }

    @Test("simulate: a wake_touch line, no control event and no app line for the wake touch")
    func simulateLine() throws {
        let text = Self.configuration(filter: "swallow_after_idle_s = 1")
        let lines = try Self.simulate(
            text,
            """
            3000 down 0 200 200
            3050 up 0
            3400 down 0 210 210
            3450 up 0
            """)
        let at3000 = lines.filter { $0.contains(#""time_ms":3000"#) || $0.contains(#""time_ms":3050"#) }
        #expect(
            at3000 == [
                #"{"type":"action","time_ms":3000,"control":"idle","event":"wake","action":"welcome","target":"e2e","responder":null}"#,
                #"{"type":"action","time_ms":3000,"control":"idle","event":"wake","action":"chained","target":"e2e","responder":"application"}"#,
                #"{"type":"wake_touch","time_ms":3000,"contact":0,"x":200,"y":200}"#,
            ])
        // The next touch, 350 ms after the wake touch lifted, is no wake touch and is not swallowed either: the
        // swallow counts from the wake touch's lift, not from the lift before the idle.
        let next = lines.filter { $0.contains(#""time_ms":3400"#) }
        #expect(next.contains(#"{"type":"app","time_ms":3400,"contact":0,"touch":"down","x":210,"y":210}"#))
        #expect(next.contains { $0.contains(#""control":"a","event":"touchDown""#) })
    }

    @Test("simulate with wake_touch_reaches_controls = true: no wake_touch line, the controls get the touch")
    func simulateOptIn() throws {
        let text = Self.configuration(idleKeys: "wake_touch_reaches_controls = true", filter: "")
        let lines = try Self.simulate(text, "3000 down 0 200 200\n3050 up 0\n")
        #expect(!lines.contains { $0.contains("wake_touch") })
        #expect(lines.contains { $0.contains(#""time_ms":3000,"control":"a","event":"touchDown""#) })
        // No swallow configured: the application gets the wake touch too, as before.
        #expect(lines.contains(#"{"type":"app","time_ms":3000,"contact":0,"touch":"down","x":200,"y":200}"#))
    }

    @Test("the key is read, defaults to false, and check refuses a non-boolean")
    func key() throws {
        #expect(try EngineHarness.load(Self.configuration()).idle.wakeTouchReachesControls == false)
        #expect(
            try EngineHarness.load(Self.configuration(idleKeys: "wake_touch_reaches_controls = true")).idle
                .wakeTouchReachesControls == true)
        let broken = ConfigurationLoader.load(
            text: Self.configuration(idleKeys: "wake_touch_reaches_controls = 1"), path: "engine.toml")
        guard case .failure(let error) = broken else {
            Issue.record("a number for a boolean key was accepted")
            return
        }
        #expect(error.problems.contains { $0.keyPath == "idle.wake_touch_reaches_controls" })
    }
}
