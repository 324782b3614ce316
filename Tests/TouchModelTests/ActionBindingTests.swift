import Testing

@testable import TouchModel

/// The scene resolves each target-action entry when it changes, not on every event: these check that what it
/// keeps is always what the declarations say now, that an event's action carries the kept binding, and that an entry
/// whose answer did not change keeps its binding object.
@Suite("Action bindings")
struct ActionBindingTests {
    static let screens = ["one", "two"]
    static let targetNames = ["t0", "t1", "t2"]
    static let actionNames = ["x", "y", "z"]

    /// Two screens with a group each, a control in each group and one outside, a recognizer in the first group; every
    /// responder has a target, so a nil target's chain stops at a different link as targets come and go.
    static func makeScene() throws -> Scene {
        var tap = GestureRecognizer(id: "tap", kind: .tap(.init()), parent: "g1")
        tap.add(target: .responderChain, action: "y", for: .recognized)
        tap.add(target: .target("t1"), action: "x", for: .recognized)
        var inOne = TargetActionTable()
        inOne.add(target: .responderChain, action: "x", for: .touchUpInside)
        inOne.add(target: .target("t0"), action: "y", for: .touchDown)
        var outside = TargetActionTable()
        outside.add(target: .responderChain, action: "z", for: .allTouchEvents)
        return try Scene(
            controls: [
                Control(
                    id: "c1", shape: .rect(Rect(x: 0, y: 0, width: 100, height: 100)), parent: "g1", target: "t2",
                    actions: inOne),
                Control(id: "c2", shape: .rect(Rect(x: 200, y: 0, width: 100, height: 100)), parent: "g2"),
                Control(id: "free", shape: .rect(Rect(x: 400, y: 0, width: 100, height: 100)), actions: outside),
            ],
            gestures: [tap],
            groups: [Group(id: "g1", target: "t1"), Group(id: "g2", target: "t0")],
            screens: [
                Screen(id: "one", groups: ["g1"], target: "t2"), Screen(id: "two", groups: ["g2"], target: "t1"),
            ],
            applicationTarget: "t0",
            targets: [
                Target(name: "t0", respondsTo: ["x", "y", "z"]), Target(name: "t1", respondsTo: ["x"]),
                Target(name: "t2", respondsTo: ["y", "z"]),
            ])
    }

    /// A small deterministic generator (SplitMix64), so a failing seed replays.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
    }

    /// One random change of the kinds that can change an answer, or one that cannot.
    static func change(_ scene: inout Scene, _ random: inout Random, at time: Instant) {
        let controls = ["c1", "c2", "free"]
        let slot: TargetSlot = random.next(3) == 0 ? .responderChain : .target(random.pick(targetNames))
        switch random.next(8) {
        case 0:
            let responds = actionNames.filter { _ in random.next(2) == 0 }
            scene.addTarget(Target(name: random.pick(targetNames), respondsTo: responds))
        case 1: scene.removeTarget(named: random.pick(targetNames))
        case 2:
            _ = scene.addAction(
                control: random.pick(controls), target: slot, action: random.pick(actionNames),
                for: random.pick([.touchDown, .touchUpInside, .allTouchEvents]))
        case 3:
            _ = scene.removeAction(
                control: random.pick(controls), target: random.next(2) == 0 ? nil : slot,
                action: random.next(2) == 0 ? nil : random.pick(actionNames), for: .allTouchEvents)
        case 4:
            _ = scene.addGestureAction(gesture: "tap", target: slot, action: random.pick(actionNames), for: .recognized)
        case 5: _ = scene.activateScreen(random.pick(screens), at: time)
        case 6: _ = scene.setEnabled(random.pick(controls), random.next(2) == 0, at: time)
        default: _ = scene.removeControl(random.pick(controls), at: time)
        }
    }

    @Test("after every change the kept resolutions are the declarations' answers", arguments: 0..<40)
    func keptResolutionsAreCurrent(seed: UInt64) throws {
        var scene = try Self.makeScene()
        #expect(scene.bindingsAreCurrent())
        var random = Random(state: seed)
        for step in 0..<60 {
            let time = Instant(microseconds: UInt64(step + 1) * 1000)
            Self.change(&scene, &random, at: time)
            let current = scene.bindingsAreCurrent()
            #expect(current, "seed \(seed), step \(step)")
            // Firing every entry gives the kept answers: each action names what its binding says.
            for control in ["c1", "free"] {
                let output = scene.sendActions(for: .allEvents, control: control, at: time)
                for case .action(let action) in output.entries {
                    #expect(action.control == control)
                    #expect(action.binding.sender == control)
                }
            }
        }
    }

    @Test("a change resolves what it can affect: an entry added to each of many controls costs each table once")
    func changesResolveOnlyWhatTheyAffect() throws {
        let count = 300
        var table = TargetActionTable()
        table.add(target: .responderChain, action: "x", for: .touchUpInside)
        let controls = (0..<count).map { index in
            Control(
                id: "c\(index)",
                shape: .rect(Rect(x: Double(index % 30) * 10, y: Double(index / 30) * 10, width: 9, height: 9)),
                actions: table)
        }
        var scene = try Scene(controls: controls, targets: [Target(name: "t", respondsTo: ["x", "y"])])
        #expect(scene.entriesResolved == count, "built: every entry once")
        // A subscriber adds an entry to every control, as the control socket's subscriptions do.
        var before = scene.entriesResolved
        for index in 0..<count {
            #expect(scene.addAction(control: "c\(index)", target: .target("t"), action: "y", for: .touchDown) == [])
        }
        #expect(scene.entriesResolved - before == 2 * count, "each control's two entries, once")
        before = scene.entriesResolved
        _ = scene.removeAction(control: "c0", target: .target("t"), action: "y", for: .touchDown)
        #expect(scene.entriesResolved - before == 1)
        // A new target can answer any chain: every entry again, once.
        before = scene.entriesResolved
        scene.addTarget(Target(name: "u", respondsTo: ["z"]))
        #expect(scene.entriesResolved - before == 2 * count - 1)
        #expect(scene.bindingsAreCurrent())
    }

    @Test("the check is not vacuous: a table changed behind the scene's back is stale")
    func staleTableIsCaught() throws {
        var scene = try Self.makeScene()
        #expect(scene.bindingsAreCurrent())
        scene.slots[0].control.actions.add(target: .responderChain, action: "z", for: .touchDown)
        #expect(!scene.bindingsAreCurrent())
        scene.rebuildBindings()
        #expect(scene.bindingsAreCurrent())
        scene.targets["t1"] = Target(name: "t1", respondsTo: ["y"])
        #expect(!scene.bindingsAreCurrent())
    }

    @Test("an explicit target, the responder chain and the diagnostics resolve as before")
    func resolutions() throws {
        var scene = try Self.makeScene()
        var output = scene.sendActions(for: [.touchDown, .touchUpInside], control: "c1", at: .milliseconds(1))
        var actions = output.entries.compactMap { if case .action(let action) = $0 { action } else { nil } }
        // c1's nil-target x: its own target t2 does not respond to x, its group's t1 does.
        #expect(actions.map(\.action) == ["x", "y"])
        #expect(actions.map(\.target) == ["t1", "t0"])
        #expect(actions.map(\.responder) == [.group("g1"), .control("c1")])
        // A target that stops responding drops the explicit entry with the reason, every time it fires.
        scene.addTarget(Target(name: "t0", respondsTo: ["z"]))
        output = scene.sendActions(for: .touchDown, control: "c1", at: .milliseconds(2))
        #expect(output.entries.isEmpty)
        #expect(output.diagnostics == [.targetDoesNotRespond(control: "c1", target: "t0", action: "y")])
        // The free control's chain: no control target, no group, screen one's t2 responds to z.
        output = scene.sendActions(for: .touchDown, control: "free", at: .milliseconds(3))
        actions = output.entries.compactMap { if case .action(let action) = $0 { action } else { nil } }
        #expect(actions.map(\.target) == ["t2"])
        #expect(actions.map(\.responder) == [.screen("one")])
        // Another screen: its t1 does not respond to z, the application's t0 does.
        _ = scene.activateScreen("two", at: .milliseconds(4))
        output = scene.sendActions(for: .touchDown, control: "free", at: .milliseconds(5))
        actions = output.entries.compactMap { if case .action(let action) = $0 { action } else { nil } }
        #expect(actions.map(\.target) == ["t0"])
        #expect(actions.map(\.responder) == [.application])
        // Nobody: unhandled, delivered with no target.
        scene.removeTarget(named: "t0")
        output = scene.sendActions(for: .touchDown, control: "free", at: .milliseconds(6))
        actions = output.entries.compactMap { if case .action(let action) = $0 { action } else { nil } }
        #expect(actions.count == 1)
        #expect(actions.first?.isHandled == false)
    }

    @Test("a touch's actions carry the kept binding, and a change that leaves an answer alone keeps its object")
    func bindingsKeepTheirIdentity() throws {
        var scene = try Self.makeScene()
        func tapActions(_ time: UInt64) -> [ResolvedAction] {
            var actions: [ResolvedAction] = []
            for output in [
                scene.handle(Frame(time: .milliseconds(time), samples: [.began(1, at: Point(x: 50, y: 50))])),
                scene.handle(Frame(time: .milliseconds(time + 10), samples: [.ended(1)])),
            ] {
                actions += output.entries.compactMap { if case .action(let action) = $0 { action } else { nil } }
            }
            return actions
        }
        let first = tapActions(10)
        let touchUp = try #require(first.first { $0.event == .touchUpInside })
        #expect(touchUp.target == "t1")
        let second = tapActions(1000)
        let again = try #require(second.first { $0.event == .touchUpInside })
        #expect(again.binding === touchUp.binding, "two touches share the entry's binding")
        // Another screen does not change c1's answer (its group handles x): the same object.
        _ = scene.activateScreen("two", at: .milliseconds(2000))
        _ = scene.activateScreen("one", at: .milliseconds(2001))
        let third = tapActions(3000)
        let afterScreens = try #require(third.first { $0.event == .touchUpInside })
        #expect(afterScreens.binding === touchUp.binding)
        // A target that now answers first changes it: a new binding with the new answer.
        scene.addTarget(Target(name: "t2", respondsTo: ["x", "y", "z"]))
        let fourth = tapActions(4000)
        let changed = try #require(fourth.first { $0.event == .touchUpInside })
        #expect(changed.binding !== touchUp.binding)
        #expect(changed.target == "t2")
        #expect(changed.responder == .control("c1"))
    }

    @Test("a resolved action's names read and write through its binding, with value semantics")
    func resolvedActionNames() {
        let original = ResolvedAction(
            time: .zero, control: "c", event: .touchDown, action: "a", target: "t", responder: .control("c"),
            contact: 1, location: nil, value: nil)
        var copy = original
        copy.action = "b"
        #expect(original.action == "a")
        #expect(copy.action == "b")
        #expect(copy.control == "c" && copy.target == "t" && copy.responder == .control("c"))
        #expect(copy != original)
        copy.action = "a"
        #expect(copy == original, "equal names are equal actions, whatever the binding objects")
        #expect(copy.hashValue == original.hashValue)
    }
}
