/// Identifies one touch from its touch-down to its lift, unique for the scene's lifetime (contact
/// ids are reused: libinput's seat slots, a script's contact numbers).
typealias TouchSerial = UInt64

/// One touch a recognizer sees.
struct GestureTouch: Hashable, Sendable {
    var serial: TouchSerial
    var contact: ContactID
    var start: Point
    var location: Point
}

/// What one recognizer has seen of its touches since it last reset, and the kind's rules that turn
/// touch-downs, moves, lifts and deadlines into inputs of the state table. Geometry and timing live
/// here, so the table stays a pure function of (state, input).
struct GestureProgress: Hashable, Sendable {
    /// The touches down now, in the order they went down.
    private(set) var down: [GestureTouch] = []
    /// Every touch seen since the last reset, lifted ones included.
    private(set) var sequence: SmallSet<TouchSerial> = []
    /// When the kind's timer fires (long press, tap windows, swipe duration); nil when none runs.
    private(set) var deadline: Instant?
    /// Taps completed in the current tap sequence.
    private var tapCount = 0
    /// Touches that went down in the current tap press.
    private var pressTouches = 0
    private var firstTap: Point?
    private var lastLift: Instant?
    /// A pinch's mean distance of its fingers from their centre, when all were down.
    private var initialSpread: Double?
    /// The swipe's direction once recognized.
    private(set) var direction: GestureRecognizer.Directions?
    /// The centre, translation and scale while the latest finger was still down, so the events of
    /// a lift report where the gesture ended rather than what the remaining fingers show.
    private(set) var lastCentroid: Point?
    private(set) var lastTranslation = Point(x: 0, y: 0)
    private(set) var lastScale = 1.0
    private(set) var lastContacts: [ContactID] = []

    /// Whether the recognizer has seen a touch since it last reset.
    var isEngaged: Bool { !sequence.isEmpty }

    func holds(_ serial: TouchSerial) -> Bool { down.contains { $0.serial == serial } }

    /// The centre of the touches down now; nil when none is.
    var centroid: Point? {
        guard !down.isEmpty else { return nil }
        let sum = down.reduce(Point(x: 0, y: 0)) { Point(x: $0.x + $1.location.x, y: $0.y + $1.location.y) }
        return Point(x: sum.x / Double(down.count), y: sum.y / Double(down.count))
    }

    /// The mean movement of the touches down now since they went down (a pan's translation).
    var translation: Point {
        guard !down.isEmpty else { return Point(x: 0, y: 0) }
        let sum = down.reduce(Point(x: 0, y: 0)) {
            Point(x: $0.x + $1.location.x - $1.start.x, y: $0.y + $1.location.y - $1.start.y)
        }
        return Point(x: sum.x / Double(down.count), y: sum.y / Double(down.count))
    }

    /// The mean distance of the touches from their centre.
    var spread: Double {
        guard let centre = centroid else { return 0 }
        return down.reduce(0) { $0 + $1.location.distance(to: centre) } / Double(down.count)
    }

    /// A pinch's scale: the spread now over the spread when every finger was down (1 before that).
    var scale: Double {
        guard let initialSpread, initialSpread > 0 else { return 1 }
        return spread / initialSpread
    }

    /// The contacts down now, in the order they went down.
    var contacts: [ContactID] { down.map(\.contact) }

    private mutating func note(for kind: GestureRecognizer.Kind) {
        guard let centre = centroid else { return }
        lastCentroid = centre
        // Only a pan's events report a translation and only a pinch's a scale (Scene.sendGesture): the other kinds do
        // not work them out on every touch.
        switch kind {
        case .pan: lastTranslation = translation
        case .pinch: lastScale = scale
        case .tap, .longPress, .swipe: break
        }
        // In place rather than `contacts` (a new array on every touch of every recognizer that watches it): the
        // array is the recognizer's alone again once the events that carried the last one are handled.
        lastContacts.removeAllKeepingCapacity()
        for touch in down { lastContacts.append(touch.contact) }
    }

    /// What the rules below read of a recognizer: its finger count and kind, plain values. Passing these instead of the
    /// whole recognizer (its id, actions and chain) spares a copy of it on every touch.
    struct Rules {
        var fingers: Int
        var kind: GestureRecognizer.Kind
    }

    // MARK: - Facts

    /// A touch went down in the recognizer's region while it is possible.
    mutating func touchDown(
        _ touch: GestureTouch, at now: Instant, for recognizer: Rules
    ) -> GestureRecognizer.Input? {
        let pressStarts = down.isEmpty
        down.append(touch)
        sequence.insert(touch.serial)
        defer { note(for: recognizer.kind) }
        guard down.count <= recognizer.fingers else { return .fail }
        switch recognizer.kind {
        case .tap(let tap):
            if pressStarts {
                if tapCount > 0 {
                    let late = lastLift.map { now.microseconds(since: $0) > tap.interval } ?? true
                    let far = firstTap.map { touch.start.distance(to: $0) > tap.slop } ?? false
                    if late || far { return .fail }
                } else {
                    firstTap = touch.start
                }
                pressTouches = 0
                deadline = tap.maximumDuration.map { now.advanced(by: $0) }
            }
            pressTouches += 1
            return pressTouches > recognizer.fingers ? .fail : nil
        case .longPress(let press):
            if down.count == recognizer.fingers { deadline = now.advanced(by: press.minimumDuration) }
            return nil
        case .swipe(let swipe):
            if swipe.startsOffEdge(touch.start) { return .fail }
            if sequence.count == 1 { deadline = swipe.maximumDuration.map { now.advanced(by: $0) } }
            return nil
        case .pan:
            return nil
        case .pinch:
            if down.count == recognizer.fingers { initialSpread = spread }
            return nil
        }
    }

    /// A touch of the recognizer moved.
    ///
    /// With `settled` false, more of the recognizer's touches move later in the same frame: the
    /// location is only recorded, and the frame is judged at its last move, all at one instant.
    mutating func touchMoved(
        _ serial: TouchSerial, to location: Point, in state: GestureRecognizer.State, for recognizer: Rules,
        settled: Bool = true
    ) -> GestureRecognizer.Input? {
        guard let index = down.firstIndex(where: { $0.serial == serial }) else { return nil }
        down[index].location = location
        note(for: recognizer.kind)
        guard settled else { return nil }
        let moved = down.reduce(0.0) { Swift.max($0, $1.location.distance(to: $1.start)) }
        switch state {
        case .began, .changed: return .update
        case .ended, .cancelled, .failed: return nil
        case .possible: break
        }
        switch recognizer.kind {
        case .tap(let tap):
            return moved > tap.allowableMovement ? .fail : nil
        case .longPress(let press):
            return moved > press.allowableMovement ? .fail : nil
        case .swipe(let swipe):
            guard down.count == recognizer.fingers else { return nil }
            let travel = translation
            let along = Swift.max(abs(travel.x), abs(travel.y))
            guard along >= swipe.minimumDistance else { return nil }
            let across = Swift.min(abs(travel.x), abs(travel.y))
            let heading: GestureRecognizer.Directions =
                abs(travel.x) >= abs(travel.y) ? (travel.x < 0 ? .left : .right) : (travel.y < 0 ? .up : .down)
            guard across <= along * GestureRecognizer.Swipe.maximumSlant, swipe.directions.contains(heading) else {
                return .fail
            }
            direction = heading
            return .recognize
        case .pan(let pan):
            guard down.count == recognizer.fingers else { return nil }
            let travel = translation
            return (travel.x * travel.x + travel.y * travel.y).squareRoot() >= pan.minimumDistance ? .begin : nil
        case .pinch(let pinch):
            guard down.count == recognizer.fingers, let initialSpread else { return nil }
            return abs(spread - initialSpread) >= pinch.threshold ? .begin : nil
        }
    }

    /// A touch of the recognizer lifted (at its last location).
    mutating func touchLifted(
        _ serial: TouchSerial, at now: Instant, in state: GestureRecognizer.State, for recognizer: Rules
    ) -> GestureRecognizer.Input? {
        guard let index = down.firstIndex(where: { $0.serial == serial }) else { return nil }
        // A finished recognizer sends nothing more before it resets, so what it last saw is not read again: on every
        // lift of a touch that a recognizer failed at its touch-down, nothing to note.
        if !state.isFinished { note(for: recognizer.kind) }
        down.remove(at: index)
        switch state {
        case .began, .changed: return .finish
        case .ended, .cancelled, .failed: return nil
        case .possible: break
        }
        switch recognizer.kind {
        case .tap(let tap):
            guard down.isEmpty else { return nil }
            guard pressTouches == recognizer.fingers else { return .fail }
            tapCount += 1
            lastLift = now
            if tapCount >= tap.taps {
                deadline = nil
                return .recognize
            }
            deadline = now.advanced(by: tap.interval)
            return nil
        case .longPress, .swipe, .pan, .pinch:
            return .fail
        }
    }

    /// A touch of the recognizer was cancelled by the input layer or the model.
    mutating func touchCancelled(
        _ serial: TouchSerial, in state: GestureRecognizer.State, for recognizer: Rules
    ) -> GestureRecognizer.Input? {
        guard let index = down.firstIndex(where: { $0.serial == serial }) else { return nil }
        if !state.isFinished { note(for: recognizer.kind) }
        down.remove(at: index)
        return state.isFinished ? nil : .cancel
    }

    /// The kind's timer fired.
    mutating func deadlinePassed(for recognizer: Rules) -> GestureRecognizer.Input {
        deadline = nil
        switch recognizer.kind {
        case .longPress:
            return down.count == recognizer.fingers ? .begin : .fail
        case .tap, .swipe, .pan, .pinch:
            return .fail
        }
    }

    /// Stops the timer: the recognizer left `possible`.
    mutating func stopTimer() {
        deadline = nil
    }

    /// Forgets everything: the state of a new ``GestureProgress()`` (a recognizer resets once its last touch lifted).
    ///
    /// Field by field, in place: the arrays are emptied with their room kept rather than made anew (a recognizer resets
    /// after every touch sequence, and fresh arrays would be made and grown again on its next touch), and no whole
    /// progress is made, copied and destroyed around them. `GestureProgressTests` checks that the result
    /// equals a new progress after every kind of sequence, so a field added above and forgotten here fails there.
    mutating func reset() {
        down.removeAllKeepingCapacity()
        sequence.removeAll()
        deadline = nil
        tapCount = 0
        pressTouches = 0
        firstTap = nil
        lastLift = nil
        initialSpread = nil
        direction = nil
        lastCentroid = nil
        lastTranslation = Point(x: 0, y: 0)
        lastScale = 1.0
        lastContacts.removeAllKeepingCapacity()
    }
}
