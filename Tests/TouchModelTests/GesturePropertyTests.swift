import Testing

@testable import TouchModel

/// The scene's invariants with random gesture recognizers over random contact sequences
/// (docs/uikit-semantics.md §3, §8): every touchDown still ends in exactly one of touchUpInside,
/// touchUpOutside, touchCancel, even when recognizers cancel controls or hold their lifts back;
/// every recognizer's events follow its table; once every finger lifted and every timer fired,
/// nothing is left tracking, held or pending; the same input gives the same output; nothing traps.
@Suite("Scene properties with random gesture recognizers")
struct GesturePropertyTests {
    static let cases = 8
    static let sequencesPerCase = 25

    static func makeScene(seed: UInt64) throws -> Scene {
        var random = PropertyTestRandom(seed: seed ^ 0x5DEE_CE66)
        var table = TargetActionTable()
        table.add(target: .target("sink"), action: "any", for: .allEvents)
        let controls = [
            Control(
                id: "button", shape: .rect(Rect(x: 50, y: 50, width: 100, height: 60)), parent: "main", actions: table),
            Control(
                id: "round", shape: .circle(Circle(center: Point(x: 300, y: 80), radius: 40)), actions: table,
                toApp: random.chance(0.5)),
            Control(
                id: "toggle", kind: .toggle, shape: .rect(Rect(x: 50, y: 200, width: 80, height: 40)), parent: "main",
                actions: table),
            Control(
                id: "slider", kind: .slider(Control.Slider(minimum: -1, maximum: 1)),
                shape: .rect(Rect(x: 200, y: 200, width: 300, height: 30)), parent: "other", actions: table),
            Control(
                id: "segments", kind: .segmented(Control.Segmented(count: 4)),
                shape: .rect(Rect(x: 100, y: 400, width: 400, height: 50)), actions: table),
        ]
        let count = 2 + random.int(0..<6)
        var gestures: [GestureRecognizer] = []
        for index in 0..<count {
            let kind: GestureRecognizer.Kind
            var fingers = 1 + random.int(0..<2)
            switch random.int(0..<5) {
            case 0:
                kind = .tap(
                    GestureRecognizer.Tap(
                        taps: 1 + random.int(0..<3), maximumDuration: random.chance(0.5) ? 200_000 : nil,
                        allowableMovement: 10 + random.unit() * 20))
            case 1:
                kind = .longPress(
                    GestureRecognizer.LongPress(
                        minimumDuration: UInt64(100_000 + random.int(0..<600_000)), allowableMovement: 20))
            case 2:
                let edges: [GestureRecognizer.Edge.Side?] = [nil, .left, .top]
                kind = .swipe(
                    GestureRecognizer.Swipe(
                        directions: GestureRecognizer.Directions(rawValue: UInt8(1 + random.int(0..<15))),
                        minimumDistance: 20 + random.unit() * 60, maximumDuration: random.chance(0.5) ? 300_000 : nil,
                        edge: edges[random.int(0..<edges.count)].map {
                            GestureRecognizer.Edge(
                                side: $0, margin: 100, bounds: Rect(x: 0, y: 0, width: 800, height: 600))
                        }))
            case 3:
                kind = .pan(GestureRecognizer.Pan(minimumDistance: 10 + random.unit() * 50))
            default:
                kind = .pinch(GestureRecognizer.Pinch(threshold: 5 + random.unit() * 10))
                fingers = 2
            }
            var shape: Shape?
            if random.chance(0.6) {
                shape = .rect(
                    Rect(
                        x: random.unit() * 500, y: random.unit() * 400, width: 100 + random.unit() * 400,
                        height: 100 + random.unit() * 300))
            }
            let attachments: [(parent: String?, control: String?)] = [
                (nil, nil), (nil, nil), ("main", nil), ("other", nil), (nil, "button"), (nil, "segments"),
            ]
            let attachment = attachments[random.int(0..<attachments.count)]
            // Only earlier recognizers may be required to fail, so there is no cycle.
            let requires = index > 0 && random.chance(0.3) ? ["g\(random.int(0..<index))"] : []
            let simultaneous = index > 0 && random.chance(0.3) ? ["g\(random.int(0..<index))"] : []
            var gesture = GestureRecognizer(
                id: "g\(index)", kind: kind, fingers: fingers, shape: shape, parent: attachment.parent,
                control: attachment.control, cancelsTouches: random.chance(0.7), delaysTouchesEnded: random.chance(0.7),
                simultaneousWith: simultaneous, requiresFailureOf: requires, delaysTouchesBegan: random.chance(0.4))
            gesture.add(target: .responderChain, action: "gesture", for: [.recognized, .ended, .failed])
            gesture.add(target: .target("sink"), action: "any", for: [.began, .changed, .cancelled])
            gestures.append(gesture)
        }
        return try Scene(
            controls: controls, gestures: gestures,
            groups: [Group(id: "main", shape: .rect(Rect(x: 0, y: 0, width: 800, height: 600))), Group(id: "other")],
            screens: [Screen(id: "main", groups: ["main"]), Screen(id: "other", groups: ["other"])],
            applicationTarget: "app",
            targets: [Target(name: "sink", actions: .all), Target(name: "app", respondsTo: ["gesture"])],
            settings: Scene.Settings(
                maximumContacts: 4, stuckContactTimeout: 2_000_000,
                // Filter mode in most runs: the application beneath the controls, with or without its limits.
                app: random.chance(0.8)
                    ? AppSettings(
                        maximumContacts: random.int(0..<3), swallowAfterIdle: random.chance(0.3) ? 300_000 : 0)
                    : nil))
    }

    /// The random operations of PropertyTests with bursts of quick taps on the controls (contact 7)
    /// mixed in, so multi-tap recognizers undecided over a control hold lifts back.
    static func operations(seed: UInt64) -> [PropertyTests.Operation] {
        var random = PropertyTestRandom(seed: seed ^ 0xA5A5_5A5A)
        let centres = [Point(x: 100, y: 80), Point(x: 300, y: 80), Point(x: 90, y: 220), Point(x: 300, y: 425)]
        var result: [PropertyTests.Operation] = []
        for operation in PropertyTests.operations(seed: seed) {
            result.append(operation)
            guard random.chance(0.08) else { continue }
            let start: Instant
            switch operation {
            case .frame(let frame): start = frame.time
            case .advance(let time), .setEnabled(_, _, let time), .remove(_, let time), .activate(_, let time),
                .setValue(_, _, let time):
                start = time
            }
            let point = centres[random.int(0..<centres.count)]
            var time = start.microseconds
            for _ in 0..<(1 + random.int(0..<3)) {
                time += 10_000
                result.append(.frame(Frame(time: Instant(microseconds: time), samples: [.began(7, at: point)])))
                time += 50_000
                result.append(.frame(Frame(time: Instant(microseconds: time), samples: [.ended(7)])))
                time += 50_000 + UInt64(random.int(0..<200_000))
            }
        }
        return result
    }

    /// Runs one sequence and returns its outputs and every violation.
    static func run(seed: UInt64) throws -> (outputs: [Output], violations: [String], heldLifts: Int) {
        var scene = try makeScene(seed: seed)
        var heldLifts = 0
        var operations = Self.operations(seed: seed)
        // Long after the last lift: every timer has fired, every held lift is decided.
        operations.append(.advance(Instant(microseconds: UInt64.max / 2)))
        var outputs: [Output] = []
        var violations: [String] = []
        /// The contact each control tracks, from its touchDown to its single ending.
        var open: [String: ContactID?] = [:]
        var gestureStates: [String: GestureRecognizer.State] = [:]
        var lastGestureEvent: [String: GestureRecognizer.Event] = [:]
        /// The application's touches that went down and have not ended (filter mode).
        var appOpen: Set<UInt64> = []
        var appEnded: Set<UInt64> = []
        let endings: Control.Event = [.touchUpInside, .touchUpOutside, .touchCancel]
        for (step, operation) in operations.enumerated() {
            let output = operation.run(on: &scene)
            outputs.append(output)
            if scene.heldLifts > 0 { heldLifts += 1 }
            // A control tracks a touch that is down, or one whose lift an undecided recognizer holds.
            for slot in scene.slots {
                guard let contact = slot.contact, let serial = slot.serial else { continue }
                let isDown = scene.contacts[contact]?.serial == serial
                let isHeld = slot.heldLift != nil && scene.isLiftDelayed(serial)
                if !isDown && !isHeld {
                    violations.append("seed \(seed) step \(step): \(slot.control.id) tracks a touch that is gone")
                }
            }
            func fail(_ message: String) { violations.append("seed \(seed) step \(step) (\(operation)): \(message)") }
            for diagnostic in output.diagnostics {
                switch diagnostic {
                case .unexpectedTransition, .unexpectedGestureTransition: fail("model reported a bug: \(diagnostic)")
                default: break
                }
            }
            for entry in output.entries {
                switch entry {
                case .event(let record):
                    let id = record.control
                    if record.event == .touchDown {
                        if open[id] != nil { fail("touchDown of \(id) before its previous touch ended") }
                        open[id] = .some(record.contact)
                    } else if endings.contains(record.event) {
                        if open[id] == nil { fail("\(record.event) of \(id) without an open touch (a second ending?)") }
                        open[id] = nil
                    } else if record.event != .valueChanged && record.event != .primaryActionTriggered
                        && open[id] == nil
                    {
                        fail("\(record.event) of \(id) outside a touch")
                    }
                case .gesture(let record):
                    var previous = gestureStates[record.gesture] ?? .possible
                    if previous.isFinished { previous = .possible }  // it may have reset since
                    // `recognized` is the second dispatch of the row that sent `began`.
                    if record.event == .recognized, lastGestureEvent[record.gesture] == .began {
                        if record.state != .began {
                            fail("\(record.gesture): recognized after began in \(record.state)")
                        }
                        lastGestureEvent[record.gesture] = record.event
                        continue
                    }
                    lastGestureEvent[record.gesture] = record.event
                    let explained = GestureRecognizer.Input.allCases.contains {
                        let row = GestureRecognizer.transition(from: previous, on: $0)
                        return row.isExpected && row.next == record.state && row.events.contains(record.event)
                    }
                    if !explained { fail("\(record.gesture): \(record.event) to \(record.state) from \(previous)") }
                    gestureStates[record.gesture] = record.state
                case .action(let action):
                    if action.gestureEvent != nil, scene.gestureState(of: action.control) == nil {
                        fail("gesture action from unknown recognizer \(action.control)")
                    }
                case .app(let record):
                    // Each application touch: one down, moves, then exactly one up or cancel; never more down at
                    // once than the limit.
                    switch record.phase {
                    case .down:
                        if appOpen.contains(record.touch) || appEnded.contains(record.touch) {
                            fail("application touch \(record.touch) went down twice")
                        }
                        appOpen.insert(record.touch)
                        if let limit = scene.settings.app?.maximumContacts, limit > 0, appOpen.count > limit {
                            fail("the application has \(appOpen.count) touches down, above its limit of \(limit)")
                        }
                        if record.location == nil { fail("application touch-down without a place") }
                    case .move:
                        if !appOpen.contains(record.touch) {
                            fail("application move of touch \(record.touch) not down")
                        }
                    case .up, .cancel:
                        if appOpen.remove(record.touch) == nil {
                            fail("application \(record.phase) of touch \(record.touch) that is not down")
                        }
                        appEnded.insert(record.touch)
                    }
                }
            }
        }
        if !open.isEmpty { violations.append("seed \(seed): touches never ended on \(open.keys.sorted())") }
        if !appOpen.isEmpty { violations.append("seed \(seed): application touches never ended: \(appOpen.sorted())") }
        for id in scene.gestureIDs where scene.gestureState(of: id) != .possible {
            violations.append("seed \(seed): \(id) left \(scene.gestureState(of: id).map(\.rawValue) ?? "?")")
        }
        if scene.heldLifts != 0 { violations.append("seed \(seed): \(scene.heldLifts) lifts still held") }
        if scene.nextDeadline != nil { violations.append("seed \(seed): a deadline is still set") }
        if scene.recognizers.contains(where: { $0.pending != nil }) {
            violations.append("seed \(seed): a recognition still waits")
        }
        return (outputs, violations, heldLifts)
    }

    @Test("random recognizers keep every invariant and are deterministic", arguments: 0..<cases)
    func randomSequences(batch: Int) throws {
        var violations: [String] = []
        for offset in 0..<Self.sequencesPerCase {
            let seed = UInt64(batch * Self.sequencesPerCase + offset) &* 0x9E37_79B9_7F4A_7C15 &+ 7
            let first = try Self.run(seed: seed)
            violations += first.violations
            if try Self.run(seed: seed).outputs != first.outputs {
                violations.append("seed \(seed): two runs differ")
            }
        }
        expectNoFailures(violations, "failing sequences: ")
    }

    @Test("without records the scene writes the same actions, app touches and diagnostics, and counts the events")
    func unrecordedEventsAreCounted() throws {
        var violations: [String] = []
        for seed in UInt64(1)...40 {
            let recorded = try Self.run(seed: seed).outputs
            var scene = try Self.makeScene(seed: seed)
            scene.recordsEvents = false
            var operations = Self.operations(seed: seed)
            operations.append(.advance(Instant(microseconds: UInt64.max / 2)))
            for (step, operation) in operations.enumerated() {
                let output = operation.run(on: &scene)
                let expected = recorded[step]
                var unrecorded = expected
                unrecorded.entries.removeAll {
                    switch $0 {
                    case .event, .gesture: true
                    case .action, .app: false
                    }
                }
                if output != unrecorded { violations.append("seed \(seed) step \(step): the outputs differ") }
                if output.controlEventCount != expected.events.count
                    || output.gestureEventCount != expected.gestures.count
                {
                    violations.append("seed \(seed) step \(step): the counts are not the records'")
                }
            }
        }
        expectNoFailures(violations, "failing sequences: ")
    }

    /// A passing property means little unless the random sequences reach the interesting paths.
    @Test("the random sequences recognize, fail, cancel controls and hold lifts")
    func coverage() throws {
        var events: GestureRecognizer.Event = []
        var cancelledByGesture = false
        var lateLift = false
        var heldLifts = 0
        for seed in UInt64(1)...80 {
            let result = try Self.run(seed: seed)
            heldLifts += result.heldLifts
            let outputs = result.outputs
            for output in outputs {
                for record in output.gestures { events.formUnion(record.event) }
                var recognized = false
                var failed = false
                for entry in output.entries {
                    switch entry {
                    case .gesture(let record):
                        if record.event == .recognized { recognized = true }
                        if record.event == .failed { failed = true }
                    case .event(let record):
                        if recognized && record.event == .touchCancel { cancelledByGesture = true }
                        if failed && record.event == .touchUpInside { lateLift = true }
                    case .action, .app: break
                    }
                }
            }
        }
        #expect(events == [.began, .changed, .recognized, .ended, .cancelled, .failed], "saw only \(events)")
        #expect(cancelledByGesture, "no recognizer ever cancelled a control")
        #expect(lateLift, "no lift was ever delivered after a recognizer failed")
        #expect(heldLifts > 0, "no recognizer ever held a lift back")
    }
}
