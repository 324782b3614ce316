import Testing

@testable import TouchModel

/// The tracking table checked row by row against a specification written from docs/uikit-semantics.md §3 in
/// another form: a state is a pair of facts (tracking, inside), an input is a phase plus facts
/// (inside, repeat), and the events follow from the rules "crossing first, then the phase event".
@Suite("ControlTracker transition table")
struct TrackerTableTests {
    /// What a tracker state means, as facts.
    struct StateFacts: Equatable, CustomStringConvertible {
        var isTracking: Bool
        var isInside: Bool

        static let idle = StateFacts(isTracking: false, isInside: false)

        init(isTracking: Bool, isInside: Bool) {
            self.isTracking = isTracking
            self.isInside = isInside
        }

        init(_ state: ControlTracker.State) {
            switch state {
            case .idle: self.init(isTracking: false, isInside: false)
            case .trackingInside: self.init(isTracking: true, isInside: true)
            case .trackingOutside: self.init(isTracking: true, isInside: false)
            }
        }

        var description: String { isTracking ? (isInside ? "tracking inside" : "tracking outside") : "idle" }
    }

    /// What an input means, as facts.
    enum Phase: Equatable {
        /// beginTracking; `tapCount` 1 or 2 (2 stands for "2 or more").
        case down(tapCount: Int)
        /// continueTracking at a location inside or outside the enlarged shape.
        case move(isInside: Bool)
        /// endTracking at a location inside or outside the enlarged shape.
        case up(isInside: Bool)
        /// cancelTracking.
        case cancel

        init(_ input: ControlTracker.Input) {
            switch input {
            case .down: self = .down(tapCount: 1)
            case .downRepeat: self = .down(tapCount: 2)
            case .moveInside: self = .move(isInside: true)
            case .moveOutside: self = .move(isInside: false)
            case .upInside: self = .up(isInside: true)
            case .upOutside: self = .up(isInside: false)
            case .cancel: self = .cancel
            }
        }
    }

    /// The expected row, from first principles (docs/uikit-semantics.md §3 and §4).
    struct Expectation: Equatable {
        var next: StateFacts
        var events: [Control.Event]
        var isExpected: Bool
    }

    /// The crossing event, if inside changed: §3.2 and §3.3 ("enter/exit first").
    static func crossing(from wasInside: Bool, to isInside: Bool) -> [Control.Event] {
        if wasInside == isInside { return [] }
        return isInside ? [.touchDragEnter] : [.touchDragExit]
    }

    static func specification(_ state: ControlTracker.State, _ input: ControlTracker.Input) -> Expectation {
        let now = StateFacts(state)
        // An impossible row changes nothing and sends nothing.
        let impossible = Expectation(next: now, events: [], isExpected: false)
        switch Phase(input) {
        case .down(let tapCount):
            // A control tracks one contact at a time: a down while tracking cannot reach it.
            guard !now.isTracking else { return impossible }
            var events: [Control.Event] = [.touchDown]
            if tapCount >= 2 { events.append(.touchDownRepeat) }
            return Expectation(next: StateFacts(isTracking: true, isInside: true), events: events, isExpected: true)
        case .move(let isInside):
            guard now.isTracking else { return impossible }
            let events = crossing(from: now.isInside, to: isInside) + [isInside ? .touchDragInside : .touchDragOutside]
            return Expectation(next: StateFacts(isTracking: true, isInside: isInside), events: events, isExpected: true)
        case .up(let isInside):
            guard now.isTracking else { return impossible }
            let events = crossing(from: now.isInside, to: isInside) + [isInside ? .touchUpInside : .touchUpOutside]
            return Expectation(next: .idle, events: events, isExpected: true)
        case .cancel:
            guard now.isTracking else { return impossible }
            return Expectation(next: .idle, events: [.touchCancel], isExpected: true)
        }
    }

    /// Drives a fresh tracker into `state` through expected rows only.
    static func tracker(in state: ControlTracker.State) -> ControlTracker {
        var tracker = ControlTracker()
        switch state {
        case .idle:
            break
        case .trackingInside:
            _ = tracker.handle(.down)
        case .trackingOutside:
            _ = tracker.handle(.down)
            _ = tracker.handle(.moveOutside)
        }
        return tracker
    }

    @Test(
        "every row matches the specification", arguments: ControlTracker.State.allCases, ControlTracker.Input.allCases)
    func row(state: ControlTracker.State, input: ControlTracker.Input) {
        let expected = Self.specification(state, input)
        let row = ControlTracker.transition(from: state, on: input)
        #expect(StateFacts(row.next) == expected.next, "\(state) → \(input): next")
        #expect(row.events == expected.events, "\(state) → \(input): events")
        #expect(row.isExpected == expected.isExpected, "\(state) → \(input): expected")
        // Every event of a row is one separate dispatch: a single bit.
        for event in row.events {
            #expect(event.rawValue.nonzeroBitCount == 1, "\(state) → \(input): \(event) is not a single event")
        }
    }

    @Test(
        "handle takes the row and leaves the state alone on impossible rows",
        arguments: ControlTracker.State.allCases, ControlTracker.Input.allCases)
    func handle(state: ControlTracker.State, input: ControlTracker.Input) {
        var tracker = Self.tracker(in: state)
        #expect(tracker.state == state)
        let row = tracker.handle(input)
        #expect(row == ControlTracker.transition(from: state, on: input))
        let expected = Self.specification(state, input)
        #expect(StateFacts(tracker.state) == expected.next)
        if !row.isExpected {
            #expect(tracker.state == state)
        }
    }

    @Test("isTracking, isTouchInside and isHighlighted per state", arguments: ControlTracker.State.allCases)
    func flags(state: ControlTracker.State) {
        let tracker = Self.tracker(in: state)
        let facts = StateFacts(state)
        #expect(tracker.isTracking == facts.isTracking)
        #expect(tracker.isTouchInside == (facts.isTracking && facts.isInside))
        // §3: highlighted follows "inside" while tracking and is false when not tracking.
        #expect(tracker.isHighlighted == (facts.isTracking && facts.isInside))
        if !tracker.isTracking {
            #expect(!tracker.isHighlighted)
            #expect(!tracker.isTouchInside)
        }
    }

    @Test("a fresh tracker is idle")
    func freshTracker() {
        let tracker = ControlTracker()
        #expect(tracker.state == .idle)
        #expect(!tracker.isTracking && !tracker.isHighlighted && !tracker.isTouchInside)
    }

    @Test(
        "every row leaves highlight equal to inside-while-tracking",
        arguments: ControlTracker.State.allCases, ControlTracker.Input.allCases)
    func highlightAfterRow(state: ControlTracker.State, input: ControlTracker.Input) {
        var tracker = Self.tracker(in: state)
        _ = tracker.handle(input)
        let facts = StateFacts(tracker.state)
        #expect(tracker.isHighlighted == (facts.isTracking && facts.isInside))
    }

    /// Every walk of up to five inputs from idle: the events of the expected rows form well-ordered
    /// sessions (crossings alternate, exit first; one ending per touchDown).
    @Test("walks through the table produce well-formed sessions")
    func walks() {
        let inputs = ControlTracker.Input.allCases
        var walks: [[ControlTracker.Input]] = [[]]
        var failures: [String] = []
        for _ in 0..<5 {
            walks = walks.flatMap { walk in inputs.map { walk + [$0] } }
            for walk in walks {
                var tracker = ControlTracker()
                var inside: Bool?
                var problems: [String] = []
                for input in walk {
                    let row = tracker.handle(input)
                    for event in row.events {
                        switch event {
                        case .touchDown:
                            if inside != nil { problems.append("touchDown while tracking") }
                            inside = true
                        case .touchDragExit:
                            if inside != true { problems.append("exit while not inside") }
                            inside = false
                        case .touchDragEnter:
                            if inside != false { problems.append("enter while not outside") }
                            inside = true
                        case .touchDragInside, .touchUpInside:
                            if inside != true { problems.append("\(event) while not inside") }
                        case .touchDragOutside, .touchUpOutside:
                            if inside != false { problems.append("\(event) while not outside") }
                        default:
                            break
                        }
                        if event == .touchUpInside || event == .touchUpOutside || event == .touchCancel {
                            if inside == nil { problems.append("\(event) while not tracking") }
                            inside = nil
                        }
                    }
                    if tracker.isTracking != (inside != nil) { problems.append("isTracking disagrees") }
                    if tracker.isTouchInside != (inside == true) { problems.append("isTouchInside disagrees") }
                }
                if !problems.isEmpty { failures.append("walk \(walk): \(problems)") }
            }
        }
        expectNoFailures(failures)
    }

    @Test("move and lift facts use the shape enlarged by the outset")
    func geometryFacts() {
        let shape = Shape.rect(Rect(x: 100, y: 100, width: 50, height: 50))
        let inside = Point(x: 120, y: 120)
        let inOutset = Point(x: 150 + 69.5, y: 120)
        let beyond = Point(x: 150 + 70, y: 120)
        #expect(ControlTracker.input(forMoveTo: inside, in: shape, outset: 70) == .moveInside)
        #expect(ControlTracker.input(forMoveTo: inOutset, in: shape, outset: 70) == .moveInside)
        #expect(ControlTracker.input(forMoveTo: beyond, in: shape, outset: 70) == .moveOutside)
        #expect(ControlTracker.input(forMoveTo: inOutset, in: shape, outset: 0) == .moveOutside)
        #expect(ControlTracker.input(forLiftAt: inside, in: shape, outset: 70) == .upInside)
        #expect(ControlTracker.input(forLiftAt: inOutset, in: shape, outset: 70) == .upInside)
        #expect(ControlTracker.input(forLiftAt: beyond, in: shape, outset: 70) == .upOutside)
        let nan = Point(x: .nan, y: 120)
        #expect(ControlTracker.input(forMoveTo: nan, in: shape, outset: 70) == .moveOutside)
        #expect(ControlTracker.input(forLiftAt: nan, in: shape, outset: 70) == .upOutside)
    }
}

/// The table as the scene runs it: event order, highlight in each record, cancels and the stuck
/// contact deadline (docs/uikit-semantics.md §2, §3).
@Suite("Scene tracking")
struct SceneTrackingTests {
    static func scene(stuckTimeout: UInt64 = 0) throws -> Scene {
        try Scene(
            controls: [Control(id: "b", shape: .rect(Rect(x: 100, y: 100, width: 100, height: 100)))],
            settings: Scene.Settings(stuckContactTimeout: stuckTimeout))
    }

    static func trace(_ output: Output) -> [String] {
        output.events.map { "\($0.event)\($0.state.contains(.highlighted) ? "+" : "")" }
    }

    @Test("down, out, back in, up inside: events and highlight in order")
    func roundTrip() throws {
        var scene = try Self.scene()
        var trace: [String] = []
        trace += Self.trace(scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 150, y: 150))])))
        #expect(scene.isTracking("b") && scene.state(of: "b") == .highlighted)
        trace += Self.trace(
            scene.handle(Frame(time: .milliseconds(10), samples: [.moved(1, to: Point(x: 400, y: 150))])))
        #expect(scene.isTracking("b") && scene.state(of: "b") == .normal)
        trace += Self.trace(
            scene.handle(Frame(time: .milliseconds(20), samples: [.moved(1, to: Point(x: 260, y: 150))])))
        #expect(scene.state(of: "b") == .highlighted, "260 is within the 70 px outset")
        trace += Self.trace(scene.handle(Frame(time: .milliseconds(30), samples: [.ended(1)])))
        #expect(!scene.isTracking("b") && scene.state(of: "b") == .normal)
        #expect(
            trace == [
                "touchDown+", "touchDragExit", "touchDragOutside", "touchDragEnter+", "touchDragInside+",
                "touchUpInside+", "primaryActionTriggered+",
            ])
    }

    @Test("a lift outside after leaving inside sends exit first, then touchUpOutside")
    func liftOutside() throws {
        var scene = try Self.scene()
        _ = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 150, y: 150))]))
        let output = scene.handle(Frame(time: .milliseconds(10), samples: [.ended(1, at: Point(x: 500, y: 150))]))
        #expect(Self.trace(output) == ["touchDragExit", "touchUpOutside"])
        #expect(scene.state(of: "b") == .normal)
    }

    @Test("disabling while tracking cancels once; the contact then reaches nothing")
    func disableCancels() throws {
        var scene = try Self.scene()
        _ = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 150, y: 150))]))
        let disabled = scene.setEnabled("b", false, at: .milliseconds(5))
        #expect(Self.trace(disabled) == ["touchCancel"])
        #expect(disabled.events.first?.state == .disabled)
        #expect(disabled.diagnostics == [.trackingCancelled(control: "b", contact: 1, reason: .disabled)])
        _ = scene.setEnabled("b", true, at: .milliseconds(6))
        let rest = scene.handle(
            Frame(time: .milliseconds(10), samples: [.moved(1, to: Point(x: 160, y: 160)), .ended(1)]))
        #expect(rest.events.isEmpty)
        #expect(!scene.isTracking("b"))
    }

    /// ControlEventRecord documents `location` as nil only for programmatic sends.
    @Test("a touchCancel for a cancelled or restarted contact carries the contact and its last location")
    func cancelRecordsLocation() throws {
        var scene = try Self.scene()
        _ = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 150, y: 150))]))
        let cancelled = scene.handle(Frame(time: .milliseconds(10), samples: [.cancelled(1)]))
        #expect(cancelled.events.map(\.event) == [.touchCancel])
        #expect(cancelled.events.first?.contact == 1)
        #expect(cancelled.events.first?.location == Point(x: 150, y: 150))

        _ = scene.handle(Frame(time: .milliseconds(20), samples: [.began(2, at: Point(x: 120, y: 120))]))
        let restarted = scene.handle(Frame(time: .milliseconds(30), samples: [.began(2, at: Point(x: 500, y: 500))]))
        #expect(restarted.events.map(\.event) == [.touchCancel])
        #expect(restarted.events.first?.location == Point(x: 120, y: 120))
    }

    @Test("a stuck contact is cancelled exactly at the deadline it announced")
    func stuckDeadline() throws {
        var scene = try Self.scene(stuckTimeout: 1_000_000)
        let down = scene.handle(Frame(time: .milliseconds(100), samples: [.began(1, at: Point(x: 150, y: 150))]))
        #expect(down.nextDeadline == .milliseconds(1100))
        let moved = scene.handle(Frame(time: .milliseconds(600), samples: [.moved(1, to: Point(x: 151, y: 150))]))
        #expect(moved.nextDeadline == .milliseconds(1600))
        let early = scene.advance(to: Instant(microseconds: 1_599_999))
        #expect(early.events.isEmpty)
        #expect(early.nextDeadline == .milliseconds(1600))
        let due = scene.advance(to: .milliseconds(1600))
        #expect(due.events.map(\.event) == [.touchCancel])
        #expect(due.diagnostics == [.trackingCancelled(control: "b", contact: 1, reason: .stuck)])
        #expect(due.nextDeadline == nil)
        // The contact is still down but reaches nothing; its lift is silent.
        #expect(scene.handle(Frame(time: .milliseconds(1700), samples: [.ended(1)])).events.isEmpty)
    }

    @Test("a second contact on a tracking control is ignored by it")
    func secondContact() throws {
        var scene = try Self.scene()
        _ = scene.handle(Frame(time: .zero, samples: [.began(1, at: Point(x: 150, y: 150))]))
        let second = scene.handle(Frame(time: .milliseconds(10), samples: [.began(2, at: Point(x: 160, y: 160))]))
        #expect(second.events.isEmpty)
        #expect(second.diagnostics == [.controlBusy(control: "b", contact: 2, trackedContact: 1)])
        let lift = scene.handle(Frame(time: .milliseconds(20), samples: [.ended(2), .ended(1)]))
        #expect(lift.events.map(\.event) == [.touchUpInside, .primaryActionTriggered])
        #expect(lift.events.allSatisfy { $0.contact == 1 })
    }
}
