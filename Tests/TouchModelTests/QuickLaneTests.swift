import Testing

@testable import TouchModel

extension GestureRecognizer.Kind {
    fileprivate var isSwipe: Bool {
        if case .swipe = self { true } else { false }
    }
}

/// The quick lane (SceneQuickLane.swift) against the general path: the same random sequences through two scenes built
/// alike, one with the lane and one without, must give the same output and leave the same state after every step.
@Suite("The quick lane does what the general path does")
struct QuickLaneTests {
    static let cases = 8
    static let sequencesPerCase = 30

    /// A scene of buttons, a toggle, sliders and segments, with random recognizers: mostly swipes from an edge (which
    /// a tap elsewhere fails at once, so the lane takes it), and others with or without regions (which make it step
    /// aside where they see the touch).
    static func makeScene(seed: UInt64, quick: Bool) throws -> Scene {
        var random = PropertyTestRandom(seed: seed ^ 0x51C4_1A7E)
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "any", for: .allEvents)
        table.add(target: .responderChain, action: "tap", for: [.touchUpInside, .primaryActionTriggered])
        let controls = [
            Control(
                id: "button", shape: .rect(Rect(x: 50, y: 50, width: 100, height: 60)), parent: "main", actions: table),
            Control(
                id: "round", shape: .circle(Circle(center: Point(x: 300, y: 80), radius: 40)), dragOutset: 20,
                actions: table),
            Control(
                id: "toggle", kind: .toggle, shape: .rect(Rect(x: 50, y: 200, width: 80, height: 40)), parent: "main",
                actions: table),
            Control(
                id: "slider", kind: .slider(Control.Slider(minimum: -1, maximum: 1)),
                shape: .rect(Rect(x: 200, y: 200, width: 300, height: 30)), parent: "other", actions: table),
            Control(
                id: "fader", kind: .slider(Control.Slider(maximum: 10, axis: .vertical, isContinuous: false, step: 3)),
                shape: .rect(Rect(x: 600, y: 100, width: 30, height: 300)), actions: table),
            Control(
                id: "segments", kind: .segmented(Control.Segmented(count: 4)),
                shape: .rect(Rect(x: 100, y: 400, width: 400, height: 50)), actions: table),
            Control(id: "edge", shape: .rect(Rect(x: 0, y: 300, width: 60, height: 60)), actions: table),
        ]
        var gestures: [GestureRecognizer] = []
        for index in 0..<random.int(0..<4) {
            let kind: GestureRecognizer.Kind
            var shape: Shape?
            switch random.int(0..<6) {
            case 0:
                kind = .tap(GestureRecognizer.Tap(taps: 1 + random.int(0..<2), maximumDuration: 200_000))
            case 1:
                kind = .longPress(
                    GestureRecognizer.LongPress(minimumDuration: UInt64(100_000 + random.int(0..<600_000))))
            default:
                let sides: [GestureRecognizer.Edge.Side] = [.left, .top, .right]
                kind = .swipe(
                    GestureRecognizer.Swipe(
                        directions: .all, minimumDistance: 40,
                        maximumDuration: random.chance(0.5) ? 300_000 : nil,
                        edge: random.chance(0.85)
                            ? GestureRecognizer.Edge(
                                side: sides[random.int(0..<sides.count)], margin: 40,
                                bounds: Rect(x: 0, y: 0, width: 800, height: 600))
                            : nil))
            }
            if random.chance(kind.isSwipe ? 0.3 : 0.8) {
                shape = .rect(
                    Rect(
                        x: random.unit() * 500, y: random.unit() * 400, width: 50 + random.unit() * 300,
                        height: 50 + random.unit() * 200))
            }
            let attachments: [(parent: String?, control: String?)] = [
                (nil, nil), (nil, nil), (nil, nil), ("main", nil), ("other", nil), (nil, "button"),
            ]
            let attachment = attachments[random.int(0..<attachments.count)]
            let requires = index > 0 && random.chance(0.3) ? ["g\(random.int(0..<index))"] : []
            var gesture = GestureRecognizer(
                id: "g\(index)", kind: kind, fingers: 1 + (random.chance(0.2) ? 1 : 0), shape: shape,
                parent: attachment.parent, control: attachment.control, cancelsTouches: random.chance(0.7),
                delaysTouchesEnded: random.chance(0.7), requiresFailureOf: requires)
            gesture.add(target: .responderChain, action: "gesture", for: [.recognized, .ended])
            if random.chance(0.3) { gesture.add(target: .target("sink"), action: "any", for: [.failed]) }
            gestures.append(gesture)
        }
        var scene = try Scene(
            controls: controls, gestures: gestures,
            groups: [Group(id: "main", shape: .rect(Rect(x: 0, y: 0, width: 800, height: 600))), Group(id: "other")],
            screens: [Screen(id: "main", groups: ["main"]), Screen(id: "other", groups: ["other"])],
            applicationTarget: "app",
            targets: [Target(name: "sink", actions: .all), Target(name: "app", respondsTo: ["tap", "gesture"])],
            settings: Scene.Settings(
                maximumContacts: random.chance(0.05) ? 0 : 1 + random.int(0..<4),
                stuckContactTimeout: random.chance(0.2) ? 0 : 2_000_000,
                app: random.chance(0.15) ? AppSettings(maximumContacts: 1, swallowAfterIdle: 0) : nil))
        scene.recordsEvents = random.chance(0.5)
        scene.usesQuickLane = quick
        return scene
    }

    /// Taps, mostly one finger at a time, with PropertyTests' random operations between them: moves, second fingers,
    /// cancels, lifts with and without a location (and some that are not finite), long holds past the stuck-contact
    /// timeout, time going backwards, controls disabled and screens changed.
    static func operations(seed: UInt64) -> [PropertyTests.Operation] {
        var random = PropertyTestRandom(seed: seed ^ 0x0DD_BA11)
        let points = [
            Point(x: 100, y: 80), Point(x: 300, y: 80), Point(x: 90, y: 220), Point(x: 350, y: 215),
            Point(x: 615, y: 250), Point(x: 300, y: 425), Point(x: 20, y: 330), Point(x: 400, y: 10),
            Point(x: 790, y: 300), Point(x: 700, y: 550),
        ]
        func point() -> Point {
            if random.chance(0.2) { return Point(x: random.unit() * 800, y: random.unit() * 600) }
            let base = points[random.int(0..<points.count)]
            return Point(x: base.x + (random.unit() - 0.5) * 30, y: base.y + (random.unit() - 0.5) * 30)
        }
        let base = PropertyTests.operations(seed: seed)
        var result: [PropertyTests.Operation] = []
        var time: UInt64 = 0
        func frame(_ samples: [ContactSample]) {
            result.append(.frame(Frame(time: Instant(microseconds: time), samples: samples)))
        }
        for operation in base {
            if random.chance(0.25) {
                result.append(operation)
                // Its time is its own sequence's, often behind the taps' (time going backwards, for the general
                // path); the taps go on from the later of the two.
                switch operation {
                case .frame(let frame): time = max(time, frame.time.microseconds)
                case .advance(let at), .setEnabled(_, _, let at), .remove(_, let at), .activate(_, let at),
                    .setValue(_, _, let at):
                    time = max(time, at.microseconds)
                }
                // Mostly, every finger lifts before the taps (the lane takes a touch-down only with none down).
                if random.chance(0.7) {
                    time += 1_000
                    frame(PropertyTests.contactIDs.map { .ended($0) })
                }
            }
            guard random.chance(0.5) else { continue }
            for _ in 0..<(1 + random.int(0..<4)) {
                let contact = random.int(0..<3)
                time += UInt64(random.int(0..<300_000))
                frame([.began(contact, at: point())])
                if random.chance(0.2) {
                    time += 20_000
                    frame([.moved(contact, to: point())])
                }
                let second: ContactID? = random.chance(0.1) ? (contact == 0 ? 1 : 0) : nil
                if let second {
                    time += 10_000
                    frame([.began(second, at: point())])
                }
                switch random.int(0..<100) {
                case 0..<5: time += 2_500_000
                case 5..<8: time = time > 30_000 ? time - 30_000 : 0
                default: time += UInt64(10_000 + random.int(0..<120_000))
                }
                switch random.int(0..<100) {
                case 0..<45: frame([.ended(contact)])
                case 45..<85: frame([.ended(contact, at: point())])
                case 85..<90: frame([.ended(contact, at: Point(x: .nan, y: 3))])
                case 90..<95: frame([.cancelled(contact)])
                default: result.append(.advance(Instant(microseconds: time)))
                }
                if let second, random.chance(0.9) {
                    time += 5_000
                    frame([.ended(second)])
                }
            }
            time += 400_000
            result.append(.advance(Instant(microseconds: time)))
        }
        return result
    }

    /// What differs between the two scenes' states, field by field; empty when nothing does.
    static func differences(_ quick: Scene, _ general: Scene) -> [String] {
        var found: [String] = []
        func check<T: Equatable>(_ name: String, _ first: T, _ second: T) {
            if first != second { found.append("\(name): \(first) against \(second)") }
        }
        check("now", quick.now, general.now)
        check("next serial", quick.nextSerial, general.nextSerial)
        check("held lifts", quick.heldLifts, general.heldLifts)
        check("ignored contacts", quick.ignoredContacts, general.ignoredContacts)
        check("next deadline", quick.nextDeadline, general.nextDeadline)
        check("moves later in frame", quick.movesLaterInFrame, general.movesLaterInFrame)
        check("contacts", quick.contacts.keys, general.contacts.keys)
        for (id, state) in quick.contacts {
            guard let other = general.contacts[id] else { continue }
            check("contact \(id) serial", state.serial, other.serial)
            check("contact \(id) location", state.location, other.location)
            check("contact \(id) control", state.control, other.control)
            check("contact \(id) activity", state.lastActivity, other.lastActivity)
        }
        for (slot, other) in zip(quick.slots, general.slots) {
            let id = slot.control.id
            check("\(id) control", slot.control, other.control)
            check("\(id) tracker", slot.tracker, other.tracker)
            check("\(id) taps", slot.taps, other.taps)
            check("\(id) contact", slot.contact, other.contact)
            check("\(id) serial", slot.serial, other.serial)
            check("\(id) held lift", slot.heldLift, other.heldLift)
            check("\(id) value at touch-down", slot.valueAtTouchDown, other.valueAtTouchDown)
            check("\(id) holds highlight", slot.holdsHighlight, other.holdsHighlight)
        }
        for (slot, other) in zip(quick.recognizers, general.recognizers) {
            let id = slot.recognizer.id
            check("\(id) state", slot.state, other.state)
            check("\(id) progress", slot.progress, other.progress)
            check("\(id) pending", slot.pending, other.pending)
        }
        return found
    }

    /// Runs one sequence through both scenes; returns every step at which they differ and the frames the lane took.
    static func compare(seed: UInt64) throws -> (failures: [String], quickFrames: Int, frames: Int) {
        var quick = try makeScene(seed: seed, quick: true)
        var general = try makeScene(seed: seed, quick: false)
        var failures: [String] = []
        var frames = 0
        for (step, operation) in operations(seed: seed).enumerated() {
            if case .frame = operation { frames += 1 }
            let taken = quick.quickFrames
            let first = operation.run(on: &quick)
            let second = operation.run(on: &general)
            let lane = quick.quickFrames > taken ? "quick lane" : "general path"
            if first != second {
                failures.append("seed \(seed) step \(step) (\(operation), \(lane)): output \(first) against \(second)")
            }
            for difference in differences(quick, general) {
                failures.append("seed \(seed) step \(step) (\(operation), \(lane)): \(difference)")
            }
            if !failures.isEmpty { break }
        }
        #expect(general.quickFrames == 0)
        return (failures, quick.quickFrames, frames)
    }

    @Test("random sequences give the same outputs and states with and without the lane", arguments: 0..<cases)
    func sameAsGeneralPath(batch: Int) throws {
        var taken = 0
        var frames = 0
        for index in 0..<Self.sequencesPerCase {
            let seed = UInt64(batch * Self.sequencesPerCase + index)
            let result = try Self.compare(seed: seed)
            expectNoFailures(result.failures)
            taken += result.quickFrames
            frames += result.frames
        }
        // The lane ran, and so did the general path: both sides were compared.
        #expect(taken > frames / 5, "the quick lane took \(taken) of \(frames) frames")
        #expect(taken < frames, "the quick lane took every frame (\(frames))")
    }

    @Test(
        "a tap on a button beside an edge swipe takes the lane both ways, and a tap in a recognizer's region does not")
    func whichFramesTakeTheLane() throws {
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "press", for: .allTouchEvents)
        var swipe = GestureRecognizer(
            id: "back",
            kind: .swipe(
                GestureRecognizer.Swipe(
                    directions: .right, minimumDistance: 150,
                    edge: GestureRecognizer.Edge(
                        side: .left, margin: 30, bounds: Rect(x: 0, y: 0, width: 1000, height: 1000)))))
        swipe.add(target: .target("sink"), action: "back", for: .recognized)
        let press = GestureRecognizer(
            id: "admin", kind: .longPress(GestureRecognizer.LongPress(minimumDuration: 300_000)), fingers: 3,
            shape: .rect(Rect(x: 0, y: 800, width: 200, height: 200)))
        var scene = try Scene(
            controls: [Control(id: "a", shape: .rect(Rect(x: 100, y: 100, width: 200, height: 200)), actions: table)],
            gestures: [swipe, press], targets: [Target(name: "sink", respondsTo: ["press", "back"])])
        scene.recordsEvents = false

        let down = scene.handle(
            Frame(time: Instant(microseconds: 1_000), samples: [.began(0, at: Point(x: 200, y: 200))]))
        #expect(scene.quickFrames == 1)
        #expect(down.actions.map(\.event) == [.touchDown])
        // The swipe does not take a touch that lands away from its edge, so it says nothing (issue 39, item 7).
        #expect(down.gestureEventCount == 0)
        #expect(scene.gestureState(of: "back") == .possible)
        #expect(down.nextDeadline == Instant(microseconds: 1_000 + Scene.Settings().stuckContactTimeout))
        let up = scene.handle(Frame(time: Instant(microseconds: 50_000), samples: [.ended(0)]))
        #expect(scene.quickFrames == 2)
        #expect(up.actions.map(\.event) == [.touchUpInside])
        #expect(scene.gestureState(of: "back") == .possible)
        #expect(up.nextDeadline == nil)

        // In the long press's region: the recognizer takes the touch, so the general path handles it.
        _ = scene.handle(Frame(time: Instant(microseconds: 100_000), samples: [.began(0, at: Point(x: 100, y: 900))]))
        #expect(scene.quickFrames == 2)
    }

    @Test("failsFirstTouch says what a first touch-down answers, for every kind and anywhere")
    func failsFirstTouchAgreesWithTouchDown() {
        var random = PropertyTestRandom(seed: 0xF1257)
        let bounds = Rect(x: 0, y: 0, width: 800, height: 600)
        let kinds: [GestureRecognizer.Kind] = [
            .tap(GestureRecognizer.Tap(taps: 2)), .longPress(GestureRecognizer.LongPress()),
            .swipe(GestureRecognizer.Swipe()),
            .swipe(GestureRecognizer.Swipe(edge: GestureRecognizer.Edge(side: .left, margin: 30, bounds: bounds))),
            .swipe(GestureRecognizer.Swipe(edge: GestureRecognizer.Edge(side: .bottom, margin: 50, bounds: bounds))),
            .pan(GestureRecognizer.Pan()), .pinch(GestureRecognizer.Pinch()),
        ]
        for kind in kinds {
            for fingers in [1, 2] {
                for _ in 0..<200 {
                    let start = Point(x: random.unit() * 900 - 50, y: random.unit() * 700 - 50)
                    let rules = GestureProgress.Rules(fingers: fingers, kind: kind)
                    var progress = GestureProgress()
                    let answer = progress.touchDown(
                        GestureTouch(serial: 1, contact: 0, start: start, location: start), at: .zero, for: rules)
                    #expect(
                        GestureProgress.failsFirstTouch(at: start, for: rules) == (answer == .fail),
                        "\(kind), \(fingers) fingers, at \(start)")
                }
            }
        }
    }
}
