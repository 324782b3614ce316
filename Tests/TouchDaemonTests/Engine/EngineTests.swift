import Logging
import Testing
import TouchModel

@testable import TouchDaemon

/// The engine driven directly, from decoded input events to the effects `touchd run` performs, without libinput, a
/// VM or a clock: the same sequence the end-to-end test runs in the guest (hot-plug, tap, drags, two fingers, the
/// long press and the edge swipe, unplug and replug, a single-touch screen, reloads), plus suspend, unusable
/// touchscreens and control-socket answers.
@Suite("Engine")
struct EngineTests {
    // MARK: - The end-to-end sequence

    @Test("a touchscreen plugged after the start is used and the status says so")
    func hotplugAfterStart() throws {
        var driver = try EngineHarness.Driver()
        #expect(driver.engine.status == "waiting for a touchscreen")
        let effects = driver.plug(1, name: "ILITEK")
        #expect(EngineHarness.statuses(effects) == ["1 touchscreen: ILITEK"])
        #expect(EngineHarness.logs(effects, at: .info) == ["touchscreen added"])
        // A touch does not rebuild the status.
        #expect(EngineHarness.statuses(driver.tap(at: 200, 200)).isEmpty)
    }

    @Test("a tap gives touchDown and touchUpInside once, in order, with the device, contact and generation")
    func tapOnce() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let effects = driver.tap(at: 200, 200)
        #expect(EngineHarness.deliveries(effects) == ["a:touchDown", "a:touchUpInside"])
        let first = try #require(EngineHarness.deliveryValues(effects).first)
        #expect(first.action == "a")
        #expect(first.target == "e2e")
        #expect(first.device == "event1")
        #expect(first.contact == 0)
        #expect(first.x == 200 && first.y == 200)
        #expect(first.generation == 1)
        #expect(first.timeMicroseconds == driver.now - 50_000)
        #expect(
            effects.allSatisfy {
                if case .deliver(_, .socket, true) = $0 { true } else { !EngineHarness.isDelivery($0) }
            })
        #expect(driver.engine.statistics.frames == 2)
        #expect(driver.engine.statistics.actions == 2)
    }

    @Test("dragging out past the outset and back gives touchDragExit then touchDragEnter, and ends inside")
    func dragOutAndBack() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        var effects = driver.frame([.down(0, 200, 200)])
        effects += driver.frame([.move(0, 450, 200)])
        effects += driver.frame([.move(0, 200, 200)])
        effects += driver.frame([.up(0)])
        let events = EngineHarness.deliveries(effects)
        #expect(events.first == "a:touchDown")
        #expect(events.last == "a:touchUpInside")
        let exit = try #require(events.firstIndex(of: "a:touchDragExit"))
        let enter = try #require(events.firstIndex(of: "a:touchDragEnter"))
        #expect(exit < enter)
        #expect(events.filter { $0 == "a:touchDragExit" }.count == 1)
    }

    @Test("lifting outside gives touchUpOutside and no touchUpInside")
    func liftOutside() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let effects =
            driver.frame([.down(0, 200, 200)]) + driver.frame([.move(0, 500, 500)]) + driver.frame([.up(0)])
        let events = EngineHarness.deliveries(effects)
        #expect(events.last == "a:touchUpOutside")
        #expect(!events.contains("a:touchUpInside"))
    }

    @Test("two fingers on two controls are tracked independently")
    func twoFingers() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let effects =
            driver.frame([.down(0, 200, 200), .down(1, 700, 200)]) + driver.frame([.up(1)])
            + driver.frame([.up(0)])
        #expect(
            EngineHarness.deliveries(effects) == ["a:touchDown", "b:touchDown", "b:touchUpInside", "a:touchUpInside"])
        #expect(EngineHarness.deliveryValues(effects).map(\.contact) == [0, 1, 1, 0])
    }

    @Test("a three-finger long press in the corner is recognized at its deadline, with no time read by the engine")
    func longPressInCorner() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let down = driver.frame([.down(0, 50, 850), .down(1, 100, 900), .down(2, 150, 950)])
        #expect(EngineHarness.deliveries(down).isEmpty)
        let deadline = try #require(driver.engine.nextDeadline)
        #expect(EngineHarness.deliveries(driver.wait(100)).isEmpty)
        #expect(deadline.microseconds > driver.now)
        let recognized = driver.wait(250)
        #expect(EngineHarness.deliveries(recognized) == ["admin:recognized"])
        #expect(EngineHarness.deliveryValues(recognized).first?.gesture == "admin")
        let lift = driver.frame([.up(0), .up(1), .up(2)])
        #expect(EngineHarness.deliveries(lift).isEmpty)
    }

    @Test("a swipe to the right from the left edge is recognized")
    func edgeSwipe() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        var effects = driver.frame([.down(0, 10, 500)])
        for x in stride(from: 60.0, through: 260.0, by: 50) { effects += driver.frame([.move(0, x, 500)], after: 16) }
        effects += driver.frame([.up(0)], after: 16)
        #expect(EngineHarness.deliveries(effects) == ["back:recognized"])
    }

    @Test("unplugging mid-touch gives touchCancel and the waiting status; a replugged screen works")
    func unplugAndReplug() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 200, 200)])
        let unplugged = driver.unplug(1)
        #expect(EngineHarness.deliveries(unplugged) == ["a:touchCancel"])
        #expect(EngineHarness.statuses(unplugged) == ["waiting for a touchscreen"])
        #expect(EngineHarness.logs(unplugged, at: .info) == ["touchscreen removed", "waiting for a touchscreen"])
        _ = driver.plug(2)
        let tap = driver.tap(at: 200, 200, device: 2)
        #expect(EngineHarness.deliveries(tap) == ["a:touchDown", "a:touchUpInside"])
        #expect(EngineHarness.deliveryValues(tap).first?.device == "event2")
    }

    @Test("a single-touch screen (slot −1) works next to a multitouch one")
    func singleTouchScreen() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1, name: "multi")
        let plugged = driver.plug(2, name: "single", contacts: 1)
        #expect(EngineHarness.statuses(plugged) == ["2 touchscreens: multi, single"])
        let tap = driver.tap(at: 200, 200, device: 2, singleTouch: true)
        #expect(EngineHarness.deliveries(tap) == ["a:touchDown", "a:touchUpInside"])
    }

    @Test("a refused reload keeps the running configuration; a good one replaces it after cancelling what is down")
    func reloads() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let refused = driver.engine.reload(.refused(["x.toml:2:1: error: broken"]), path: "x.toml", now: driver.now)
        #expect(EngineHarness.statuses(refused) == ["reload failed: x.toml:2:1: error: broken"])
        #expect(EngineHarness.logs(refused, at: .error).first == "x.toml:2:1: error: broken")
        #expect(!refused.contains { if case .configureExecutors = $0 { true } else { false } })
        #expect(driver.engine.generation == 1)
        #expect(EngineHarness.deliveryValues(driver.tap(at: 200, 200)).map(\.action) == ["a", "a"])

        // A contact is down on `a` when the new file is taken: it ends in the old layout, before the executors change.
        _ = driver.frame([.down(0, 200, 200)])
        let taken = driver.engine.reload(
            .loaded(try EngineHarness.load(EngineHarness.configuration(actionForA: "a2"))), path: "x.toml",
            now: driver.now)
        let cancel = try #require(taken.firstIndex { if case .deliver = $0 { true } else { false } })
        let configure = try #require(taken.firstIndex { if case .configureExecutors = $0 { true } else { false } })
        #expect(cancel < configure)
        #expect(EngineHarness.deliveries(taken) == ["a:touchCancel"])
        #expect(EngineHarness.deliveryValues(taken).first?.generation == 1)
        #expect(EngineHarness.statuses(taken) == ["1 touchscreen: panel"])
        #expect(driver.engine.generation == 2)
        // The lift of the cancelled contact is dropped; the next tap uses the new file.
        #expect(EngineHarness.deliveries(driver.frame([.up(0)])).isEmpty)
        let after = EngineHarness.deliveryValues(driver.tap(at: 200, 200))
        #expect(after.map(\.action) == ["a2", "a2"])
        #expect(after.map(\.generation) == [2, 2])
    }

    // MARK: - State across a reload (fault-cases.md C16)

    /// A configuration with two screens, a slider and a button, for the carry-over tests.
    static func screens(sliderMaximum: Int = 100, bKind: String = "button") -> String {
        """
        [output]
        width = 1000
        height = 1000

        [targets.e2e]
        socket = "/run/e2e.sock"
        responds_to = ["a", "b", "v"]

        [[screen]]
        id = "main"
        groups = ["all"]

        [[screen]]
        id = "other"
        groups = ["all"]

        [[group]]
        id = "all"
        frame = { x = 0, y = 0, width = 1000, height = 1000 }

        [[control]]
        id = "a"
        kind = "button"
        parent = "all"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "e2e", action = "a" }]

        [[control]]
        id = "b"
        kind = "\(bKind)"
        parent = "all"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "e2e", action = "b" }]

        [[control]]
        id = "v"
        kind = "slider"
        parent = "all"
        frame = { x = 100, y = 600, width = 800, height = 100 }
        min = 0
        max = \(sliderMaximum)
        value = 10
        actions = [{ events = ["valueChanged"], target = "e2e", action = "v" }]

        """
    }

    @Test("a reload keeps the screen and each control's enabled, selected and value; a restart would not")
    func reloadCarriesState() throws {
        var driver = try EngineHarness.Driver(Self.screens())
        _ = driver.plug(1)
        _ = driver.request(.set(control: "a", enabled: false, selected: nil, value: nil))
        _ = driver.request(.set(control: "v", enabled: nil, selected: nil, value: 90))
        _ = driver.request(.screen("other"))
        let reloaded = driver.engine.reload(
            .loaded(try EngineHarness.load(Self.screens())), path: "x.toml", now: driver.now)
        #expect(EngineHarness.logs(reloaded, at: .info).contains("control state carried over the reload"))
        #expect(driver.engine.scene.activeScreen == "other")
        #expect(driver.engine.scene.control("a")?.isEnabled == false)
        #expect(driver.engine.scene.control("v")?.value == 90)
        // Still disabled: a tap on it sends nothing, one on b does.
        #expect(EngineHarness.deliveries(driver.tap(at: 200, 200)).isEmpty)
        #expect(EngineHarness.deliveries(driver.tap(at: 700, 200)) == ["b:touchUpInside"])
    }

    @Test("a value is clamped into a new range, a control whose kind changed starts from the file, and both are said")
    func reloadClampsAndSaysWhatWasNotCarried() throws {
        var driver = try EngineHarness.Driver(Self.screens())
        _ = driver.request(.set(control: "v", enabled: nil, selected: nil, value: 90))
        _ = driver.request(.set(control: "b", enabled: false, selected: nil, value: nil))
        _ = driver.request(.screen("other"))
        let edited = try EngineHarness.load(Self.screens(sliderMaximum: 50, bKind: "toggle"))
        let reloaded = driver.engine.reload(.loaded(edited), path: "x.toml", now: driver.now)
        #expect(driver.engine.scene.control("v")?.value == 50)
        #expect(driver.engine.scene.control("b")?.isEnabled == true)
        let notices = EngineHarness.logs(reloaded, at: .notice)
        #expect(notices.contains("value clamped into the control's new range"))
        #expect(notices.contains("state not carried: the control's kind changed; it starts from the file"))

        // A screen that is gone: the new file's first one is shown, and said.
        var without = edited
        without.screens.removeAll { $0.id == "other" }
        let gone = driver.engine.reload(.loaded(without), path: "x.toml", now: driver.now)
        #expect(EngineHarness.logs(gone, at: .notice).contains("the screen shown is gone with the reload"))
        #expect(driver.engine.scene.activeScreen == "main")
    }

    // MARK: - Beyond the end-to-end test

    @Test("after a suspend the contacts that were down are cancelled and their lift clicks nothing")
    func suspend() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 200, 200)])
        let resumed = driver.engine.resumed(afterSleeping: 30_000_000, now: driver.now)
        #expect(EngineHarness.deliveries(resumed) == ["a:touchCancel"])
        #expect(EngineHarness.logs(resumed) == ["the system was suspended; contacts that were down are cancelled"])
        #expect(EngineHarness.deliveries(driver.frame([.up(0)])).isEmpty)
    }

    /// D5, found in the test VM: a drag that left `a` far behind, then SYN_DROPPED; libinput's resync reports the lift
    /// without the lost motion, at the last position touchd knew (inside `a`). That must not be a tap.
    @Test("after SYN_DROPPED the contacts that were down are cancelled, and their resynced lift clicks nothing")
    func eventsLost() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        _ = driver.frame([.down(0, 200, 200)])
        driver.now += 500_000
        let lost = driver.engine.handle(
            [
                .eventsLost(device: nil),
                .touch(TouchEvent(device: 1, kind: .up, seatSlot: 0, slot: 0, time: driver.now)),
                .touch(TouchEvent(device: 1, kind: .frame, seatSlot: -1, slot: -1, time: driver.now)),
            ], now: driver.now)
        #expect(EngineHarness.deliveries(lost) == ["a:touchCancel"])
        #expect(
            EngineHarness.logs(lost, at: .warning) == [
                "input events were lost (SYN_DROPPED); contacts that were down are cancelled"
            ])
        // The next touch is a fresh one and works.
        #expect(EngineHarness.deliveries(driver.tap(at: 200, 200)) == ["a:touchDown", "a:touchUpInside"])
    }

    @Test("an unusable touchscreen is logged once and shown in the status until it goes")
    func unusableTouchscreen() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1, name: "good")
        let broken = UnusableTouchscreen(sysname: "event9", name: "bad", devnode: nil, reason: "libinput refused it")
        let appeared = driver.engine.unusableTouchscreens([broken])
        #expect(EngineHarness.logs(appeared, at: .warning) == ["touchscreen not usable: libinput refused it"])
        #expect(EngineHarness.statuses(appeared) == ["1 touchscreen: good; not usable: bad (event9)"])
        #expect(driver.engine.unusableTouchscreens([broken]).isEmpty)
        let gone = driver.engine.unusableTouchscreens([])
        #expect(EngineHarness.statuses(gone) == ["1 touchscreen: good"])
    }

    @Test("control requests: state, set, send, screen and subscribe are answered from the engine's scene")
    func controlRequests() throws {
        var driver = try EngineHarness.Driver()
        _ = driver.plug(1)
        let state = EngineHarness.responses(driver.request(.state))
        guard case .response(7, .number(1), let result)? = state.first else {
            Issue.record("no state response: \(state)")
            return
        }
        #expect(result.contains(#""generation":1"#))
        #expect(result.contains(#""sysname":"event1""#))

        // Disabled over the socket: a tap on `a` sends nothing.
        let set = driver.request(.set(control: "a", enabled: false, selected: nil, value: nil))
        #expect(EngineHarness.logs(set, at: .info) == ["control changed over the control socket"])
        #expect(EngineHarness.deliveries(driver.tap(at: 200, 200)).isEmpty)

        let sent = driver.request(.send(control: "b", events: ["touchUpInside"]))
        #expect(EngineHarness.deliveries(sent) == ["b:touchUpInside"])
        // Not caused by input: it does not count in the processing-latency figures.
        #expect(sent.contains { if case .deliver(_, .socket, false) = $0 { true } else { false } })

        let screen = EngineHarness.responses(driver.request(.screen("nowhere")))
        guard case .failure(_, _, let error)? = screen.first else {
            Issue.record("no refusal: \(screen)")
            return
        }
        #expect(error.code == .unknownScreen)
        #expect(error.message == "no screen called 'nowhere'")

        // A subscriber is a weak target: b's events reach it as control events, not as deliveries.
        let subscribed = EngineHarness.responses(
            driver.request(.subscribe(ControlSubscriptionFilter(kinds: ["control"]))))
        guard case .subscribed? = subscribed.first else {
            Issue.record("not subscribed: \(subscribed)")
            return
        }
        let tap = driver.tap(at: 700, 200)
        #expect(EngineHarness.deliveries(tap) == ["b:touchDown", "b:touchUpInside"])
        // touchDown, touchUpInside and the button's primaryActionTriggered: every control event, as subscribed.
        #expect(EngineHarness.responses(tap).count == 3)
        _ = driver.engine.handle(.disconnected(7), now: driver.now, edge: { EdgeStatistics() })
        #expect(EngineHarness.responses(driver.tap(at: 700, 200)).isEmpty)
    }

    /// An observer subscribed to control events received `digit1`, `digit3`, `digit2` touchUpInside in order: the PIN
    /// typed on touchd's own controls. `private = true` keeps a control's events, state changes,
    /// live state and the gestures attached to it from observers; controllers still get them.
    @Test("a private control's events reach controller subscribers only")
    func privateControls() throws {
        let hold = """

            [[gesture]]
            id = "hold"
            kind = "long_press"
            control = "a"
            minimum_duration_ms = 2000

            """
        let text =
            EngineHarness.configuration().replacingOccurrences(
                of: "id = \"a\"\nkind = \"button\"\n", with: "id = \"a\"\nkind = \"button\"\nprivate = true\n")
            + hold
        var driver = try EngineHarness.Driver(text)
        _ = driver.plug(1)
        let observer: ControlClientID = 8
        let controller: ControlClientID = 9
        for (client, role) in [(observer, ControlRole.observer), (controller, .controller)] {
            let filter = ControlSubscriptionFilter()
            let subscribed = EngineHarness.responses(driver.request(.subscribe(filter), client: client, role: role))
            guard case .subscribed(_, _, let snapshot)? = subscribed.first else {
                Issue.record("not subscribed: \(subscribed)")
                return
            }
            // The snapshot shows an observer that `a` exists, not whether a finger is on it.
            let hidden = #"{"id":"a","kind":"button","enabled":true,"private":true}"#
            #expect(snapshot.contains(hidden) == (role == .observer))
        }
        func events(_ effects: [Effect], for client: ControlClientID) -> [String] {
            EngineHarness.responses(effects).compactMap { message -> String? in
                guard case .event(let event) = message, event.recipients.contains(client) else { return nil }
                return event.members
            }
        }
        /// The events that name `a` or the gesture attached to it. (The edge swipe covers the whole screen, `a`
        /// included: its `failed` says a touch happened, not where.)
        func aboutA(_ effects: [Effect], for client: ControlClientID) -> [String] {
            events(effects, for: client).filter { $0.contains(#""control":"a""#) || $0.contains(#""gesture":"hold""#) }
        }
        // A tap on the private control: the controller sees it, the observer nothing at all.
        let tap = driver.tap(at: 200, 200)
        #expect(EngineHarness.deliveries(tap) == ["a:touchDown", "a:touchUpInside"])
        #expect(aboutA(tap, for: observer) == [])
        #expect(aboutA(tap, for: controller).contains { $0.contains(#""gesture":"hold","event":"failed""#) })
        #expect(events(tap, for: controller).contains { $0.contains(#""control":"a","event":"touchUpInside""#) })
        // A state change over the socket: the same.
        let set = driver.request(.set(control: "a", enabled: nil, selected: true, value: nil))
        #expect(events(set, for: observer) == [])
        #expect(events(set, for: controller).count == 1)
        // While a finger is on it, an observer's `state` does not say so.
        _ = driver.frame([.down(0, 200, 200)])
        let polled = EngineHarness.responses(driver.request(.state, client: observer, role: .observer))
        guard case .response(_, _, let state)? = polled.first else {
            Issue.record("no state: \(polled)")
            return
        }
        #expect(state.contains(#"{"id":"a","kind":"button","enabled":true,"private":true}"#))
        #expect(!state.contains(#""id":"a","kind":"button","enabled":true,"selected""#))
        _ = driver.frame([.up(0)])
        // Another control's tap reaches both.
        let other = driver.tap(at: 700, 200)
        #expect(events(other, for: observer).contains { $0.contains(#""control":"b","event":"touchUpInside""#) })
        #expect(events(other, for: controller).contains { $0.contains(#""control":"b","event":"touchUpInside""#) })
        // After a reload the subscriptions follow the new scene, and `a` stays hidden from the observer.
        _ = driver.engine.reload(.loaded(try EngineHarness.load(text)), path: "x.toml", now: driver.now)
        let again = driver.tap(at: 200, 200)
        #expect(aboutA(again, for: observer) == [])
        #expect(events(again, for: controller).contains { $0.contains(#""control":"a","event":"touchUpInside""#) })
    }

    @Test("an unknown name gets the closest known one when it looks like a typo, and no search when too costly")
    func suggestions() throws {
        var driver = try EngineHarness.Driver(Self.screens())
        let refusal = EngineHarness.responses(driver.request(.screen("othr")))
        guard case .failure(_, _, let screen)? = refusal.first else {
            Issue.record("no refusal: \(refusal)")
            return
        }
        #expect(screen.message == "no screen called 'othr' (did you mean 'other'?)")
        let event = EngineHarness.responses(driver.request(.send(control: "a", events: ["touchUpInsid"])))
        guard case .failure(_, _, let unknownEvent)? = event.first else {
            Issue.record("no refusal: \(event)")
            return
        }
        #expect(unknownEvent.message == "no control event called 'touchUpInsid' (did you mean 'touchUpInside'?)")
        #expect(Engine.unknown("control", "zzzz", among: ["a", "b"]) == "no control called 'zzzz'")
        // A 4 KiB name against many controls: no search, just the refusal.
        let long = String(repeating: "x", count: 4096)
        #expect(Engine.unknown("control", long, among: ["x"]) == "no control called '\(long)'")
    }

    @Test("a send naming one event thousands of times logs a bounded line")
    func sendLogIsBounded() throws {
        var driver = try EngineHarness.Driver()
        let names = Array(repeating: "touchUpInside", count: 4_000)
        let effects = driver.request(.send(control: "b", events: names))
        let metadata = effects.compactMap { if case .log(_, _, let metadata) = $0 { metadata } else { nil } }.first
        let events = try #require(metadata?["events"]).description
        #expect(events.hasSuffix("(4000 in all)"))
        #expect(events.utf8.count < 200)
        #expect(Engine.listForLog(["a", "b"]) == "a,b")
    }

    @Test("with nobody reading the records, the same deliveries go out and the statistics count the same events")
    func recordsOnlyWhenRead() throws {
        // The end-to-end sequence's kinds of input: a tap, a drag out and back, an edge swipe that recognizes, a
        // long press, and taps that the edge swipe fails at their touch-down.
        func run(_ driver: inout EngineHarness.Driver) -> [Effect] {
            var effects = driver.plug(1)
            effects += driver.tap(at: 200, 200)
            effects += driver.frame([.down(0, 650, 150)])
            effects += driver.frame([.move(0, 900, 150)])
            effects += driver.frame([.move(0, 700, 150)])
            effects += driver.frame([.up(0)])
            effects += driver.frame([.down(0, 10, 500)])
            effects += driver.frame([.move(0, 200, 500)])
            effects += driver.frame([.up(0)])
            effects += driver.frame([.down(0, 50, 850), .down(1, 100, 900), .down(2, 150, 950)])
            driver.now += 400_000
            effects += driver.engine.advance(to: driver.now)
            effects += driver.frame([.up(0), .up(1), .up(2)])
            effects += driver.tap(at: 250, 250)
            return effects
        }
        var quiet = try EngineHarness.Driver()
        #expect(!quiet.engine.scene.recordsEvents)
        let quietEffects = run(&quiet)

        let configuration = try EngineHarness.load(EngineHarness.configuration())
        var verbose = try EngineHarness.Driver()
        verbose.engine = Engine(configuration: configuration, scene: try configuration.makeScene(), logsDebug: true)
        _ = verbose.engine.started()
        #expect(verbose.engine.scene.recordsEvents)
        let verboseEffects = run(&verbose)

        #expect(EngineHarness.deliveryValues(quietEffects) == EngineHarness.deliveryValues(verboseEffects))
        #expect(
            EngineHarness.deliveries(quietEffects) == [
                "a:touchDown", "a:touchUpInside", "b:touchDown", "b:touchDragExit", "b:touchDragOutside",
                "b:touchDragEnter", "b:touchDragInside", "b:touchUpInside", "back:recognized", "admin:recognized",
                "a:touchDown", "a:touchUpInside",
            ])
        let counted = quiet.engine.statistics
        let recorded = verbose.engine.statistics
        #expect(counted.controlEvents == recorded.controlEvents)
        #expect(counted.gestureEvents == recorded.gestureEvents)
        #expect(counted.actions == recorded.actions)
        // One debug line per record: the counts are the events the records would have shown. The buttons' 10 touch
        // events above and a primaryActionTriggered with each of the 3 touchUpInside.
        let lines = EngineHarness.logs(verboseEffects, at: .debug)
        #expect(counted.controlEvents == lines.count { $0 == "control event" })
        #expect(counted.controlEvents == 13)
        #expect(counted.gestureEvents == lines.count { $0 == "gesture event" })
        #expect(counted.gestureEvents > 2)
        // A reload keeps the records off.
        _ = quiet.engine.reload(.loaded(configuration), path: "engine.toml", now: quiet.now)
        #expect(!quiet.engine.scene.recordsEvents)
    }

    @Test("debug lines are built only when debug logging is on")
    func debugLinesOnlyWhenAsked() throws {
        var quiet = try EngineHarness.Driver()
        _ = quiet.plug(1)
        #expect(EngineHarness.logs(quiet.tap(at: 200, 200), at: .debug).isEmpty)

        let configuration = try EngineHarness.load(EngineHarness.configuration())
        var verbose = try EngineHarness.Driver()
        verbose.engine = Engine(configuration: configuration, scene: try configuration.makeScene(), logsDebug: true)
        _ = verbose.engine.started()
        _ = verbose.plug(1)
        #expect(EngineHarness.logs(verbose.tap(at: 200, 200), at: .debug).contains("control event"))
    }
}
