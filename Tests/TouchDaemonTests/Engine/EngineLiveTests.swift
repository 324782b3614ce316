import Logging
import Testing
import TouchModel

@testable import TouchDaemon

/// The engine's live-operation parts, driven directly: `[idle]` (idle and wake from the engine's own deadline, no
/// timer), the `contact` events of `touchd ctl monitor`, and reloads asked for over the control socket.
@Suite("Engine: idle, monitor, reload over the socket")
struct EngineLiveTests {
    typealias Driver = EngineHarness.Driver

    /// EngineTests' configuration with an `[idle]` of 2 s, a screen to show at idle and an application target.
    static func idleConfiguration(timeout: Int = 2) -> String {
        EngineHarness.configuration()
            .replacingOccurrences(
                of: #"responds_to = ["a", "b", "a2", "admin", "back"]"#,
                with: #"responds_to = ["a", "b", "a2", "admin", "back", "attract", "welcome", "chained"]"#)
                + """

                [application]
                target = "e2e"

                [[group]]
                id = "main"

                [[group]]
                id = "poster"

                [[screen]]
                id = "home"
                groups = ["main"]

                [[screen]]
                id = "attract"
                groups = ["poster"]

                [idle]
                timeout_s = \(timeout)
                screen = "attract"
                actions = [
                  { events = ["idle"], target = "e2e", action = "attract" },
                  { events = ["wake"], target = "e2e", action = "welcome" },
                  { events = ["idle", "wake"], action = "chained" },
                ]

                """
    }

    /// A driver whose engine started at the driver's clock, as `touchd run` starts it.
    static func started(_ text: String) throws -> Driver {
        var driver = try Driver(text)
        let configuration = try EngineHarness.load(text)
        driver.engine = Engine(configuration: configuration, scene: try configuration.makeScene())
        _ = driver.engine.started(now: driver.now)
        return driver
    }

    static func idleDeliveries(_ effects: [Effect]) -> [String] {
        EngineHarness.deliveryValues(effects).filter { $0.control == Engine.idleSender }.map {
            "\($0.event):\($0.action)"
        }
    }

    // MARK: - Idle

    @Test("idle fires once timeout_s after start when nobody touches, switching the screen; wake at the next touch")
    func idleAfterStart() throws {
        var driver = try Self.started(Self.idleConfiguration())
        _ = driver.plug(1)
        #expect(driver.engine.nextDeadline == Instant(microseconds: driver.now + 2_000_000))
        #expect(Self.idleDeliveries(driver.wait(1_999)).isEmpty)
        let idle = driver.wait(1)
        #expect(Self.idleDeliveries(idle) == ["idle:attract", "idle:chained"])
        #expect(driver.engine.scene.activeScreen == "attract")
        // The nil-target action went to the application target, as the end of the responder chain.
        #expect(EngineHarness.deliveryValues(idle).last?.responder == "application")
        #expect(EngineHarness.deliveryValues(idle).allSatisfy { $0.device == nil && $0.contact == nil })
        // Once: no deadline is left, however long nobody comes.
        #expect(driver.engine.nextDeadline == nil)
        #expect(driver.wait(600_000).isEmpty)

        // The touch-down wakes it; the wake goes before the touch's own events.
        let down = driver.frame([.down(0, 500, 500)])
        #expect(Self.idleDeliveries(down) == ["wake:welcome", "wake:chained"])
        #expect(driver.engine.nextDeadline == nil)
        let up = driver.frame([.up(0)], after: 50)
        #expect(Self.idleDeliveries(up).isEmpty)
        // Idle again timeout_s after that lift; a wake comes only after an idle.
        #expect(driver.engine.nextDeadline == Instant(microseconds: driver.now + 2_000_000))
        let again = driver.frame([.down(0, 500, 500)], after: 500)
        #expect(Self.idleDeliveries(again).isEmpty)
        #expect(driver.engine.nextDeadline == nil)
    }

    @Test("idle waits for the last of several fingers to lift, and the deadline moves with each lift")
    func idleAfterLastLift() throws {
        var driver = try Self.started(Self.idleConfiguration())
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 200, 200), .down(1, 700, 200)])
        _ = driver.frame([.up(0)], after: 1_000)
        #expect(driver.engine.idleClock.deadline == nil)
        #expect(Self.idleDeliveries(driver.wait(5_000)).isEmpty)
        _ = driver.frame([.up(1)], after: 10)
        let lift = driver.now
        #expect(driver.engine.nextDeadline == Instant(microseconds: lift + 2_000_000))
        #expect(Self.idleDeliveries(driver.wait(2_000)) == ["idle:attract", "idle:chained"])
    }

    @Test("timeout_s = 0 turns idle off: no deadline, no idle, no wake")
    func idleOff() throws {
        var driver = try Self.started(Self.idleConfiguration(timeout: 0))
        _ = driver.plug(1)
        #expect(driver.engine.nextDeadline == nil)
        #expect(Self.idleDeliveries(driver.tap(at: 500, 500) + driver.wait(600_000)).isEmpty)
    }

    @Test("a reload restarts the clock; an idle kiosk stays idle and wakes with the new file's actions")
    func idleAcrossReload() throws {
        var driver = try Self.started(Self.idleConfiguration())
        _ = driver.plug(1)
        _ = driver.wait(2_000)
        let changed = Self.idleConfiguration().replacingOccurrences(of: #"action = "welcome""#, with: #"action = "a""#)
        _ = driver.engine.reload(.loaded(try EngineHarness.load(changed)), path: "engine.toml", now: driver.now)
        #expect(driver.engine.nextDeadline == nil)
        #expect(Self.idleDeliveries(driver.frame([.down(0, 500, 500)])) == ["wake:a", "wake:chained"])
        _ = driver.frame([.up(0)])
        // Not idle: a reload counts as a lift.
        _ = driver.engine.reload(.loaded(try EngineHarness.load(changed)), path: "engine.toml", now: driver.now)
        #expect(driver.engine.nextDeadline != nil)
    }

    // MARK: - Monitor

    /// The `contact` events among the effects, as JSON.
    static func contactLines(_ effects: [Effect]) throws -> [JSONValue] {
        try effects.compactMap { effect -> JSONValue? in
            guard case .control(.event(let event)) = effect, event.members.hasPrefix(#""kind":"contact""#) else {
                return nil
            }
            return try JSONValue.parse(Array(("{" + event.members + "}").utf8))
        }
    }

    @Test("without a contact subscriber a frame builds no contact event; kind contact is never part of 'every kind'")
    func monitorCostsNothingUnwatched() throws {
        var driver = try Driver()
        _ = driver.plug(1)
        #expect(!driver.engine.subscriptions.watchesContacts)
        #expect(try Self.contactLines(driver.tap(at: 200, 200)).isEmpty)
        // A subscription to every kind does not include live contacts.
        _ = driver.request(.subscribe(ControlSubscriptionFilter()))
        #expect(!driver.engine.subscriptions.watchesContacts)
        #expect(try Self.contactLines(driver.tap(at: 200, 200)).isEmpty)
    }

    @Test("a monitor sees each sample with its device, position, control (or null) and the events it caused")
    func monitorLines() throws {
        var driver = try Driver()
        _ = driver.plug(1)
        let subscribed = driver.request(.subscribe(ControlSubscriptionFilter(kinds: ["contact"])), client: 9)
        #expect(
            EngineHarness.logs(subscribed, at: .notice) == ["control client watches live contacts (positions included)"]
        )
        #expect(driver.engine.subscriptions.contactRecipients == [9])

        // A tap on a control.
        let down = try Self.contactLines(driver.frame([.down(0, 200, 210)]))
        #expect(down.count == 1)
        #expect(down[0]["touch"]?.stringValue == "down")
        #expect(down[0]["contact"]?.int64Value == 0)
        #expect(down[0]["x"]?.doubleValue == 200 && down[0]["y"]?.doubleValue == 210)
        #expect(down[0]["device"]?.stringValue == "event1")
        #expect(down[0]["control"]?.stringValue == "a")
        #expect(down[0]["events"]?.arrayValue?.compactMap(\.stringValue) == ["touchDown"])
        #expect(down[0]["generation"]?.int64Value == 1)
        let up = try Self.contactLines(driver.frame([.up(0)], after: 50))
        #expect(up.count == 1)
        #expect(up[0]["touch"]?.stringValue == "up")
        #expect(up[0]["control"]?.stringValue == "a")
        // The lift has no position of its own: the last known one.
        #expect(up[0]["x"]?.doubleValue == 200)
        #expect(up[0]["events"]?.arrayValue?.compactMap(\.stringValue) == ["touchUpInside", "primaryActionTriggered"])

        // A tap on empty space: control null, no events.
        let empty = try Self.contactLines(driver.tap(at: 500, 500))
        #expect(empty.map { $0["touch"]?.stringValue } == ["down", "up"])
        #expect(empty.allSatisfy { $0["control"] == .null && $0["events"]?.arrayValue?.isEmpty == true })

        // A finger in the long press's corner: the gesture regions that took it are named (the edge swipe watches
        // the whole output, but takes only touches that start in its strip along the edge: not this one).
        let corner = try Self.contactLines(driver.frame([.down(1, 50, 900)]))
        #expect(corner.first?["gestures"]?.arrayValue?.compactMap(\.stringValue) == ["admin"])
        #expect(corner.first?["control"] == .null)
        let cancelled = try Self.contactLines(driver.unplug(1))
        #expect(cancelled.map { $0["touch"]?.stringValue } == ["cancel"])

        // The subscriber is gone: no more lines, and the log says so.
        let gone = driver.engine.handle(.disconnected(9), now: driver.now, edge: { EdgeStatistics() })
        #expect(EngineHarness.logs(gone, at: .info) == ["control client stopped watching live contacts"])
        _ = driver.plug(1)
        #expect(try Self.contactLines(driver.tap(at: 200, 200)).isEmpty)
    }

    @Test("a plain drag is motion (coalesced for a slow reader); a move that exits the control is not")
    func monitorCoalescing() throws {
        var driver = try Driver()
        _ = driver.plug(1)
        _ = driver.request(.subscribe(ControlSubscriptionFilter(kinds: ["contact"])))
        _ = driver.frame([.down(0, 200, 200)])
        func key(_ effects: [Effect]) -> String?? {
            effects.compactMap { effect -> String?? in
                guard case .control(.event(let event)) = effect, event.members.hasPrefix(#""kind":"contact""#) else {
                    return nil
                }
                return .some(event.coalescingKey)
            }.first
        }
        #expect(key(driver.frame([.move(0, 210, 200)])) == .some("contact:0:move"))
        // 300 + 70 px of outset: beyond it, touchDragExit.
        #expect(key(driver.frame([.move(0, 400, 200)])) == .some(nil))
    }

    @Test("contact is a controller's kind: an observer is refused before the engine sees it")
    func monitorNeedsController() {
        #expect(ControlProtocol.needsController(.subscribe(ControlSubscriptionFilter(kinds: ["contact"]))))
        #expect(ControlProtocol.needsController(.subscribe(ControlSubscriptionFilter(kinds: ["control", "contact"]))))
        #expect(!ControlProtocol.needsController(.subscribe(ControlSubscriptionFilter())))
        #expect(!ControlProtocol.needsController(.subscribe(ControlSubscriptionFilter(kinds: ["control"]))))
        #expect(ControlProtocol.needsController(.reload))
        #expect(
            ControlProtocol.controllerReason(.subscribe(ControlSubscriptionFilter(kinds: ["contact"])))?
                .contains("PIN") == true)
    }

    // MARK: - Reload over the socket

    @Test("reload asks the loop to read the file; the requester gets the new generation or every problem")
    func reloadRequested() throws {
        var driver = try Driver()
        let asked = driver.request(.reload, client: 4)
        let requester = try #require(
            asked.compactMap { if case .reloadConfiguration(let requester) = $0 { requester } else { nil } }.first)
        #expect(requester == ControlRequester(client: 4, id: .number(1)))

        let taken = driver.engine.reload(
            .loaded(try EngineHarness.load(EngineHarness.configuration())), path: "engine.toml", now: driver.now,
            requesters: [requester])
        let answer = EngineHarness.responses(taken).compactMap {
            if case .response(4, .number(1), let result) = $0 { result } else { nil }
        }
        #expect(answer == [#"{"generation":2,"controls":2}"#])

        let problems = (1...150).map { "engine.toml:\($0):1: error: broken" }
        let refused = driver.engine.reload(
            .refused(problems), path: "engine.toml", now: driver.now, requesters: [requester])
        let errors = EngineHarness.responses(refused).compactMap {
            if case .failure(4, .number(1), let error) = $0 { error } else { nil }
        }
        let error = try #require(errors.first)
        #expect(error.code == .invalidConfiguration)
        #expect(error.problems?.count == ControlError.maximumProblems)
        #expect(error.problems?.first == "engine.toml:1:1: error: broken")
        #expect(error.message.contains("150 problems") && error.message.contains("generation 2 stays in use"))
        let line = ControlProtocol.failure(id: .number(1), error: error)
        let parsed = try JSONValue.parse(Array(line.utf8))
        #expect(parsed["error"]?["problems"]?.arrayValue?.count == ControlError.maximumProblems)
        #expect(driver.engine.generation == 2)
    }
}
