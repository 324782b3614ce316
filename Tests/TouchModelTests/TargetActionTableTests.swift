import Testing

@testable import TouchModel

/// The target-action table (docs/uikit-semantics.md §6) and the tap counter behind touchDownRepeat (§4).
@Suite("Target-action table")
struct TargetActionTableTests {
    typealias Entry = TargetActionTable.Entry

    static let a = TargetSlot.target("a")
    static let b = TargetSlot.target("b")
    static let chain = TargetSlot.responderChain

    static func entry(_ target: TargetSlot, _ action: String, _ events: Control.Event) -> Entry {
        Entry(target: target, action: action, events: events)
    }

    // MARK: - add

    @Test("an empty mask adds nothing")
    func addEmpty() {
        var table = TargetActionTable()
        table.add(target: Self.a, action: "x", for: [])
        #expect(table.entries.isEmpty)
        table.add(target: Self.a, action: "x", for: .touchDown)
        table.add(target: Self.a, action: "x", for: [])
        #expect(table.entries == [Self.entry(Self.a, "x", .touchDown)], "an empty add does not move the entry")
        table.add(target: Self.b, action: "y", for: .touchUpInside)
        table.add(target: Self.a, action: "x", for: [])
        #expect(table.entries.map(\.action) == ["x", "y"])
    }

    @Test("the same target and action merge into one entry moved to the end")
    func addMerges() {
        var table = TargetActionTable()
        table.add(target: Self.a, action: "x", for: .touchDown)
        table.add(target: Self.b, action: "y", for: .touchUpInside)
        table.add(target: Self.chain, action: "z", for: .valueChanged)
        table.add(target: Self.a, action: "x", for: .touchUpInside)
        #expect(
            table.entries == [
                Self.entry(Self.b, "y", .touchUpInside),
                Self.entry(Self.chain, "z", .valueChanged),
                Self.entry(Self.a, "x", [.touchDown, .touchUpInside]),
            ])
        // Adding events it already has still moves it to the end.
        table.add(target: Self.b, action: "y", for: .touchUpInside)
        #expect(table.entries.map(\.action) == ["z", "x", "y"])
        #expect(table.entries.last?.events == .touchUpInside)
        // The responder-chain marker merges like any target.
        table.add(target: Self.chain, action: "z", for: .touchDown)
        #expect(table.entries.map(\.action) == ["x", "y", "z"])
        #expect(table.entries.last == Self.entry(Self.chain, "z", [.valueChanged, .touchDown]))
    }

    @Test("different actions or targets are kept, in order")
    func addKeepsDistinct() {
        var table = TargetActionTable()
        table.add(target: Self.a, action: "x", for: .touchDown)
        table.add(target: Self.a, action: "y", for: .touchDown)
        table.add(target: Self.b, action: "x", for: .touchDown)
        table.add(target: Self.chain, action: "x", for: .touchDown)
        #expect(
            table.entries == [
                Self.entry(Self.a, "x", .touchDown), Self.entry(Self.a, "y", .touchDown),
                Self.entry(Self.b, "x", .touchDown), Self.entry(Self.chain, "x", .touchDown),
            ])
    }

    // MARK: - remove

    static func sample() -> TargetActionTable {
        var table = TargetActionTable()
        table.add(target: a, action: "x", for: [.touchDown, .touchUpInside])
        table.add(target: b, action: "x", for: [.touchDown, .valueChanged])
        table.add(target: a, action: "y", for: .touchUpInside)
        table.add(target: chain, action: "z", for: [.touchDown, .touchUpInside])
        return table
    }

    @Test("remove with a target clears the events from every entry of that target")
    func removeTarget() {
        var table = Self.sample()
        table.remove(target: Self.a, action: nil, for: .touchUpInside)
        #expect(
            table.entries == [
                Self.entry(Self.a, "x", .touchDown), Self.entry(Self.b, "x", [.touchDown, .valueChanged]),
                Self.entry(Self.chain, "z", [.touchDown, .touchUpInside]),
            ], "a.y lost its only event and is deleted")
    }

    @Test("remove with a target and an action touches only that entry")
    func removeTargetAction() {
        var table = Self.sample()
        table.remove(target: Self.a, action: "x", for: .touchDown)
        #expect(
            table.entries == [
                Self.entry(Self.a, "x", .touchUpInside), Self.entry(Self.b, "x", [.touchDown, .valueChanged]),
                Self.entry(Self.a, "y", .touchUpInside), Self.entry(Self.chain, "z", [.touchDown, .touchUpInside]),
            ])
        table.remove(target: Self.a, action: "x", for: .allEvents)
        #expect(table.entries.map(\.action) == ["x", "y", "z"])
        #expect(table.allTargets == [Self.b, Self.a, Self.chain])
        // An action the target does not have changes nothing.
        let before = table
        table.remove(target: Self.a, action: "nope", for: .allEvents)
        #expect(table == before)
    }

    @Test("remove with a nil target clears the events for every target")
    func removeEveryTarget() {
        var table = Self.sample()
        table.remove(target: nil, action: nil, for: .touchDown)
        #expect(
            table.entries == [
                Self.entry(Self.a, "x", .touchUpInside), Self.entry(Self.b, "x", .valueChanged),
                Self.entry(Self.a, "y", .touchUpInside), Self.entry(Self.chain, "z", .touchUpInside),
            ])
        table.remove(target: nil, action: "x", for: .allEvents)
        #expect(
            table.entries == [Self.entry(Self.a, "y", .touchUpInside), Self.entry(Self.chain, "z", .touchUpInside)])
        table.remove(target: nil, action: nil, for: .allEvents)
        #expect(table.entries.isEmpty)
        #expect(table.allTargets.isEmpty)
        #expect(table.allControlEvents.isEmpty)
    }

    @Test("removing the responder-chain marker is not removing every target")
    func removeResponderChainEntries() {
        var table = Self.sample()
        table.remove(target: .responderChain, action: nil, for: .allEvents)
        #expect(table.entries.map(\.target) == [Self.a, Self.b, Self.a])
    }

    @Test("removing events an entry does not have keeps it")
    func removeUnrelatedEvents() {
        var table = Self.sample()
        table.remove(target: nil, action: nil, for: .allEditingEvents)
        #expect(table == Self.sample())
        table.remove(target: Self.a, action: nil, for: [])
        #expect(table == Self.sample())
    }

    @Test("removeAll(target:) forgets a target that went away")
    func removeAllTarget() {
        var table = Self.sample()
        table.removeAll(target: "a")
        #expect(table.entries.map(\.target) == [Self.b, Self.chain])
        table.removeAll(target: "missing")
        #expect(table.entries.count == 2)
    }

    // MARK: - dispatch and introspection

    @Test("the dispatch list keeps insertion order and holds each entry once")
    func dispatchList() {
        let table = Self.sample()
        #expect(table.dispatchList(for: .touchDown).map(\.action) == ["x", "x", "z"])
        #expect(table.dispatchList(for: .touchDown).map(\.target) == [Self.a, Self.b, Self.chain])
        #expect(table.dispatchList(for: .touchUpInside).map(\.action) == ["x", "y", "z"])
        // An entry that matches several of the events still fires once.
        let both = table.dispatchList(for: [.touchDown, .touchUpInside, .valueChanged])
        #expect(both.map(\.action) == ["x", "x", "y", "z"])
        #expect(both == table.entries)
        #expect(table.dispatchList(for: .touchCancel).isEmpty)
        #expect(table.dispatchList(for: []).isEmpty)
    }

    @Test("the dispatch list is a copy")
    func dispatchListIsACopy() {
        var table = Self.sample()
        let list = table.dispatchList(for: .touchDown)
        table.remove(target: nil, action: nil, for: .allEvents)
        #expect(list.count == 3)
    }

    @Test("allTargets lists each target once, nil as the responder-chain marker")
    func allTargets() {
        var table = TargetActionTable()
        #expect(table.allTargets.isEmpty)
        table.add(target: Self.b, action: "x", for: .touchDown)
        table.add(target: Self.chain, action: "x", for: .touchDown)
        table.add(target: Self.a, action: "x", for: .touchDown)
        table.add(target: Self.b, action: "y", for: .touchDown)
        #expect(table.allTargets == [Self.b, Self.chain, Self.a])
        #expect(table.allTargets.map(\.name) == ["b", nil, "a"])
        #expect(TargetSlot(nil) == .responderChain)
        #expect(TargetSlot("a") == Self.a)
        #expect(Self.chain.description == "(responder chain)")
        #expect(Self.a.description == "a")
    }

    @Test("allControlEvents is the union of every mask")
    func allControlEvents() {
        #expect(Self.sample().allControlEvents == [.touchDown, .touchUpInside, .valueChanged])
        #expect(TargetActionTable().allControlEvents == [])
    }

    @Test("actions(for:event:) lists the target's actions for the event, nil when none")
    func actionsForTarget() {
        let table = Self.sample()
        #expect(table.actions(for: Self.a, event: .touchUpInside) == ["x", "y"])
        #expect(table.actions(for: Self.a, event: .touchDown) == ["x"])
        #expect(table.actions(for: Self.b, event: .valueChanged) == ["x"])
        #expect(table.actions(for: Self.chain, event: .touchUpInside) == ["z"])
        #expect(table.actions(for: Self.b, event: .touchUpInside) == nil)
        #expect(table.actions(for: .target("c"), event: .allEvents) == nil)
        #expect(table.actions(for: Self.a, event: []) == nil)
    }

    // MARK: - Through a scene

    static func scene(_ controls: [Control]) throws -> Scene {
        try Scene(
            controls: controls,
            targets: [Target(name: "sink", actions: .all), Target(name: "tap", respondsTo: ["tap"])],
            settings: Scene.Settings(stuckContactTimeout: 0))
    }

    static func button(_ id: String = "b", x: Double = 0, actions: TargetActionTable = TargetActionTable()) -> Control {
        Control(id: id, shape: .rect(Rect(x: x, y: 0, width: 100, height: 100)), actions: actions)
    }

    /// Runs frames and returns the events sent, as names.
    static func events(_ scene: inout Scene, _ frames: [(UInt64, [ContactSample])]) -> [String] {
        frames.flatMap { time, samples in
            scene.handle(Frame(time: .milliseconds(time), samples: samples)).events.map { $0.event.description }
        }
    }

    static func tap(_ time: UInt64, at point: Point = Point(x: 50, y: 50), hold: UInt64 = 50) -> [(
        UInt64, [ContactSample]
    )] {
        [(time, [.began(1, at: point)]), (time + hold, [.ended(1)])]
    }

    @Test("three quick taps give touchDown, then touchDown and touchDownRepeat twice (§4)")
    func threeTaps() throws {
        var scene = try Self.scene([Self.button()])
        let events = Self.events(&scene, Self.tap(0) + Self.tap(200) + Self.tap(400, at: Point(x: 60, y: 40)))
        #expect(
            events == [
                "touchDown", "touchUpInside", "primaryActionTriggered",
                "touchDown", "touchDownRepeat", "touchUpInside", "primaryActionTriggered",
                "touchDown", "touchDownRepeat", "touchUpInside", "primaryActionTriggered",
            ])
    }

    @Test("the repeat window runs from the lift, not the touch-down")
    func windowFromLift() throws {
        var scene = try Self.scene([Self.button()])
        // Held for a second, lifted at 1000 ms, down again at 1300 ms.
        let events = Self.events(&scene, Self.tap(0, hold: 1000) + Self.tap(1300))
        #expect(events.filter { $0 == "touchDownRepeat" }.count == 1)
    }

    @Test("a touch-down after the interval, or beyond the slop, counts 1")
    func outsideIntervalOrSlop() throws {
        var late = try Self.scene([Self.button()])
        // Lift at 50 ms; the window is 350 ms, so 401 ms is too late.
        #expect(!Self.events(&late, Self.tap(0) + Self.tap(401)).contains("touchDownRepeat"))
        var onTime = try Self.scene([Self.button()])
        #expect(Self.events(&onTime, Self.tap(0) + Self.tap(399)).contains("touchDownRepeat"))

        var far = try Self.scene([Self.button()])
        let farEvents = Self.events(
            &far, Self.tap(0, at: Point(x: 10, y: 10)) + Self.tap(100, at: Point(x: 10 + 27.1, y: 10 + 36.1)))
        #expect(!farEvents.contains("touchDownRepeat"), "45.1 px away is beyond the 45 px slop")
        var near = try Self.scene([Self.button()])
        let nearEvents = Self.events(
            &near, Self.tap(0, at: Point(x: 10, y: 10)) + Self.tap(100, at: Point(x: 10 + 27, y: 10 + 36)))
        #expect(nearEvents.contains("touchDownRepeat"), "45 px away is within the slop")

        // After a late tap the count starts again: the next quick tap is a repeat of that one.
        var restarted = try Self.scene([Self.button()])
        let restartedEvents = Self.events(&restarted, Self.tap(0) + Self.tap(1000) + Self.tap(1200))
        #expect(restartedEvents.filter { $0 == "touchDownRepeat" }.count == 1)
        #expect(restartedEvents.last(where: { $0.hasPrefix("touchDown") }) == "touchDownRepeat")
    }

    @Test("a lift outside resets the count")
    func upOutsideResets() throws {
        var scene = try Self.scene([Self.button()])
        let events = Self.events(
            &scene,
            Self.tap(0) + [
                (100, [.began(1, at: Point(x: 50, y: 50))]), (150, [.moved(1, to: Point(x: 500, y: 50))]),
                (200, [.ended(1)]),
            ] + Self.tap(300))
        #expect(events.contains("touchUpOutside"))
        #expect(events.filter { $0 == "touchDownRepeat" }.count == 1, "only the down that followed the first tap")
        #expect(events.last(where: { $0.hasPrefix("touchDown") }) == "touchDown")
    }

    @Test("a cancel resets the count")
    func cancelResets() throws {
        var scene = try Self.scene([Self.button()])
        let events = Self.events(
            &scene, Self.tap(0) + [(100, [.began(1, at: Point(x: 50, y: 50))]), (150, [.cancelled(1)])] + Self.tap(200))
        #expect(events.contains("touchCancel"))
        #expect(events.last(where: { $0.hasPrefix("touchDown") }) == "touchDown")
    }

    @Test("tap counts belong to one control")
    func perControl() throws {
        var scene = try Self.scene([Self.button("left"), Self.button("right", x: 100)])
        let events = Self.events(&scene, Self.tap(0, at: Point(x: 95, y: 50)) + Self.tap(100, at: Point(x: 105, y: 50)))
        #expect(!events.contains("touchDownRepeat"))
    }

    @Test("one entry for touchDown and touchDownRepeat fires twice on a repeat")
    func repeatIsASeparateDispatch() throws {
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "down", for: [.touchDown, .touchDownRepeat])
        var scene = try Self.scene([Self.button(actions: table)])
        _ = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 50, y: 50)), .ended(1)]))
        let output = scene.handle(Frame(time: .milliseconds(100), samples: [.began(1, at: Point(x: 50, y: 50))]))
        #expect(output.actions.map(\.action) == ["down", "down"])
        #expect(output.actions.map(\.event) == [.touchDown, .touchDownRepeat])
        #expect(output.entries.count == 4)
    }

    @Test("actions follow the table's order and a removed target receives nothing")
    func sceneDispatch() throws {
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "first", for: .touchUpInside)
        table.add(target: .responderChain, action: "tap", for: .touchUpInside)
        table.add(target: .target("sink"), action: "second", for: [.touchUpInside, .touchDown])
        var scene = try Scene(
            controls: [Self.button(actions: table)], applicationTarget: "tap",
            targets: [Target(name: "sink", actions: .all), Target(name: "tap", respondsTo: ["tap"])])
        let output = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 1, y: 1)), .ended(1)]))
        #expect(output.actions.map(\.action) == ["second", "first", "tap", "second"])
        #expect(output.actions.map(\.target) == ["sink", "sink", "tap", "sink"])
        #expect(output.actions[2].responder == .application)
        scene.removeTarget(named: "sink")
        #expect(scene.actions(of: "b")?.allTargets == [.responderChain])
        let after = scene.handle(Frame(time: .seconds(1), samples: [.began(1, at: Point(x: 1, y: 1)), .ended(1)]))
        #expect(after.actions.map(\.action) == ["tap"])
    }

    @Test("sendActions fires each matching entry once, with no control event")
    func sendActions() throws {
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "both", for: [.touchDown, .touchUpInside])
        table.add(target: .target("sink"), action: "changed", for: .valueChanged)
        table.add(target: .responderChain, action: "tap", for: .touchUpInside)
        var scene = try Self.scene([Self.button(actions: table)])
        let output = scene.sendActions(for: [.touchDown, .touchUpInside], control: "b", at: .zero)
        #expect(output.events.isEmpty)
        #expect(output.actions.map(\.action) == ["both", "tap"])
        #expect(output.actions.first?.event == [.touchDown, .touchUpInside])
        #expect(output.actions.last?.isHandled == false, "nobody in the chain responds to tap")
        let missing = scene.sendActions(for: .touchDown, control: "nope", at: .zero)
        #expect(missing.diagnostics == [.unknownControl("nope")])
    }

    @Test("a subscriber added to a gesture as a weak target gets its events until it goes away")
    func gestureWeakTarget() throws {
        let tap = GestureRecognizer(
            id: "corner", kind: .tap(GestureRecognizer.Tap(taps: 1)), fingers: 1,
            shape: .rect(Rect(x: 0, y: 0, width: 100, height: 100)))
        var scene = try Scene(controls: [], gestures: [tap], targets: [Target(name: "tap", respondsTo: ["tap"])])
        #expect(scene.gestureIDs == ["corner"])
        #expect(
            scene.addGestureAction(gesture: "nope", target: .responderChain, action: "x", for: .recognized) == [
                .unknownGesture("nope")
            ])
        #expect(
            scene.addGestureAction(gesture: "corner", target: .target("ghost"), action: "x", for: .recognized) == [
                .unknownTarget("ghost")
            ])
        scene.addTarget(Target(name: "client-1", actions: .all))
        #expect(
            scene.addGestureAction(gesture: "corner", target: .target("client-1"), action: "event", for: .recognized)
                .isEmpty)
        let output = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 10, y: 10)), .ended(1)]))
        #expect(output.actions.map(\.target) == ["client-1"])
        #expect(output.actions.first?.gestureEvent == .recognized)
        scene.removeTarget(named: "client-1")
        let after = scene.handle(
            Frame(time: .seconds(1), samples: [.began(1, at: Point(x: 10, y: 10)), .ended(1)]))
        #expect(after.actions.isEmpty)
    }

    @Test("addAction refuses unknown targets and targets that do not respond")
    func addActionValidation() throws {
        var scene = try Self.scene([Self.button()])
        #expect(
            scene.addAction(control: "b", target: .target("ghost"), action: "x", for: .touchDown) == [
                .unknownTarget("ghost")
            ])
        #expect(
            scene.addAction(control: "b", target: .target("tap"), action: "x", for: .touchDown)
                == [.targetDoesNotRespond(control: "b", target: "tap", action: "x")])
        #expect(
            scene.addAction(control: "nope", target: .responderChain, action: "x", for: .touchDown) == [
                .unknownControl("nope")
            ])
        #expect(scene.actions(of: "b")?.entries.isEmpty == true)
        #expect(scene.addAction(control: "b", target: .target("tap"), action: "tap", for: .touchDown).isEmpty)
        #expect(scene.addAction(control: "b", target: .responderChain, action: "x", for: .touchUpInside).isEmpty)
        #expect(scene.actions(of: "b")?.allTargets == [.target("tap"), .responderChain])
        #expect(scene.removeAction(control: "b", target: nil, action: nil, for: .touchDown).isEmpty)
        #expect(scene.actions(of: "b")?.allTargets == [.responderChain])
    }

    @Test("a nil target walks control, groups innermost first, the active screen, the application")
    func responderChain() throws {
        var table = TargetActionTable()
        for action in ["own", "inner", "outer", "screen", "app", "none"] {
            table.add(target: .responderChain, action: action, for: .touchUpInside)
        }
        func target(_ name: String, _ actions: [String]) -> Target { Target(name: name, respondsTo: actions) }
        var scene = try Scene(
            controls: [
                Control(
                    id: "b", shape: .rect(Rect(x: 0, y: 0, width: 10, height: 10)), parent: "inner", target: "tc",
                    actions: table)
            ],
            groups: [Group(id: "outer", target: "to"), Group(id: "inner", parent: "outer", target: "ti")],
            screens: [Screen(id: "s", groups: ["outer"], target: "ts")],
            applicationTarget: "ta",
            targets: [
                target("tc", ["own"]), target("ti", ["inner", "outer"]), target("to", ["outer", "screen"]),
                target("ts", ["screen", "app"]), target("ta", ["app", "own"]),
            ])
        let output = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 5, y: 5)), .ended(1)]))
        let resolved = output.actions.map { "\($0.action)→\($0.responder?.id ?? "unhandled")" }
        #expect(resolved == ["own→b", "inner→inner", "outer→inner", "screen→outer", "app→s", "none→unhandled"])
        #expect(output.actions.map(\.target) == ["tc", "ti", "ti", "to", "ts", nil])
    }

    // MARK: - TapCounter directly

    @Test("TapCounter counts repeats within interval and slop")
    func tapCounter() {
        var counter = TapCounter(interval: 350_000, slop: 45)
        let here = Point(x: 0, y: 0)
        #expect(counter.touchDown(at: here, time: .milliseconds(0)) == 1)
        counter.touchEnded(at: .milliseconds(50), tapped: true)
        #expect(counter.touchDown(at: here, time: .milliseconds(400)) == 2, "exactly the interval is within")
        counter.touchEnded(at: .milliseconds(450), tapped: true)
        #expect(counter.touchDown(at: Point(x: 45, y: 0), time: .milliseconds(500)) == 3)
        counter.touchEnded(at: .milliseconds(550), tapped: true)
        // Slop is measured from the previous tap's touch-down (45, 0), not from the first one.
        #expect(counter.touchDown(at: Point(x: 90, y: 0), time: .milliseconds(600)) == 4)
        counter.touchEnded(at: .milliseconds(650), tapped: false)
        #expect(counter.touchDown(at: Point(x: 90, y: 0), time: .milliseconds(700)) == 1)
        counter.touchEnded(at: .milliseconds(750), tapped: true)
        #expect(counter.touchDown(at: Point(x: 90, y: 0), time: Instant(microseconds: 750_000 + 350_001)) == 1)
    }

    @Test("TapCounter ignores a touch-down before the lift and non-finite locations")
    func tapCounterOddInput() {
        var counter = TapCounter(interval: 350_000, slop: 45)
        _ = counter.touchDown(at: Point(x: 0, y: 0), time: .milliseconds(100))
        counter.touchEnded(at: .milliseconds(200), tapped: true)
        #expect(counter.touchDown(at: Point(x: 0, y: 0), time: .milliseconds(150)) == 1)
        counter.touchEnded(at: .milliseconds(200), tapped: true)
        #expect(counter.touchDown(at: Point(x: .nan, y: 0), time: .milliseconds(250)) == 1)
        // touchEnded without a touch-down forgets the last tap.
        var lonely = TapCounter(interval: 350_000, slop: 45)
        lonely.touchEnded(at: .zero, tapped: true)
        #expect(lonely.touchDown(at: Point(x: 0, y: 0), time: .milliseconds(1)) == 1)
    }
}

extension Instant {
    /// Test shorthand.
    fileprivate static func seconds(_ seconds: UInt64) -> Instant { .milliseconds(seconds * 1000) }
}
