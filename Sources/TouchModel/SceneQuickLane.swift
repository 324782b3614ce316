// The quick lane: a plain tap's two frames in one pass (issue 17).
//
// A plain tap, the commonest thing a kiosk sees, begins with one finger going down while nothing else is down and ends
// with that finger's lift. The general path (Scene.swift, SceneGestures.swift) takes those frames through the
// machinery every frame may need: the gesture and stuck-contact timers, each recognizer's arbitration and what failing
// or recognizing does to the others, held lifts, the application beneath. For such a frame most of it finds nothing to
// do, yet a wake-up runs every function of it, and in the emulated guest each distinct function a wake-up runs costs
// more than its instructions (docs/performance.md, "Sixteenth pass").
//
// The quick lane takes a frame only when it can tell, before it changes anything, that the general path would do
// exactly what it does:
//
// - one sample, not earlier than the scene's time, and no application beneath (filter mode);
// - a touch-down: no contact down or ignored and no lift held back; every recognizer untouched (possible, nothing seen,
//   no timer, not waiting); and each recognizer that takes the touch fails on it at once (one of no fingers; an edge
//   swipe does not take a touch-down outside its strip at all), so no arbitration can follow;
// - a lift: the contact is the only one down, not stuck, and every recognizer is untouched or finished with this touch
//   as its only one, so nothing delays the lift and the finished ones only reset.
//
// Otherwise it returns false having changed nothing, and the general path runs. The work it does is the general path's
// own functions (tracking, lift, dispatch, the recognizers' touch-down and reset), not copies of them. QuickLaneTests
// runs random sequences through two scenes, with and without the lane, and requires the same output and the same state
// after every step.

extension Scene {
    /// Handles `frame` in the quick lane and returns true, or returns false having changed nothing.
    mutating func handleQuickly(_ frame: Frame, into output: inout Output) -> Bool {
        guard settings.app == nil, frame.samples.count == 1, frame.time >= now else { return false }
        let sample = frame.samples[0]
        switch sample.phase {
        case .began:
            guard let location = sample.location, location.isFinite else { return false }
            return quickTouchDown(sample.contact, at: location, time: frame.time, into: &output)
        case .ended:
            return quickLift(sample.contact, at: sample.location, time: frame.time, into: &output)
        case .moved, .cancelled:
            return false
        }
    }

    /// What a touch-down in the quick lane makes besides its contact, point and time: the control it lands on, the
    /// recognizers that see it (each of which fails on it at once) and the control's tap count. Two touch-downs with
    /// the same outcome, in the same state, make the same output but for those three (Engine+TouchPlan.swift in the
    /// daemon relies on it, and its tests check it).
    public struct QuickDown: Hashable, Sendable {
        public var control: Int?
        /// Bit `i`: recognizer `i` sees the touch.
        public var recognizers: UInt64
        public var tapCount: Int
    }

    /// The outcome of a touch-down at `location` at `time` in the quick lane, asked without changing anything; nil when
    /// the lane would not take it, when the control it lands on follows the finger with its value (a slider or a
    /// segmented control: its output depends on the point), or with more than 64 recognizers.
    public func quickDown(at location: Point, time: Instant) -> QuickDown? {
        guard settings.app == nil, time >= now, location.isFinite, contacts.isEmpty, ignoredContacts.isEmpty,
            heldLifts == 0, settings.maximumContacts > 0, recognizers.count <= 64
        else { return nil }
        var seeing: UInt64 = 0
        for index in recognizers.indices {
            guard isUntouched(index) else { return nil }
            if sees(index, at: location) {
                guard GestureProgress.failsFirstTouch(at: location, for: recognizers[index].recognizer.rules) else {
                    return nil
                }
                seeing |= 1 << UInt64(index)
            }
        }
        guard let hit = hitTest(location) else { return QuickDown(control: nil, recognizers: seeing, tapCount: 0) }
        guard slots[hit].contact == nil else { return nil }
        switch slots[hit].control.kind {
        case .button, .toggle: break
        case .slider, .segmented: return nil
        }
        return QuickDown(control: hit, recognizers: seeing, tapCount: slots[hit].taps.count(at: location, time: time))
    }

    /// A rectangle on a control where every touch-down in the quick lane has the same outcome, and that outcome: what
    /// ``quickDown(at:time:)`` answers for any point inside it (``QuickDownArea/contains(_:at:)``) while the scene stays
    /// as it is. Engine+TouchPlan.swift in the daemon answers a touch-down from its plan with one comparison instead of
    /// the hit-test and the recognizers' questions.
    public struct QuickDownArea: Hashable, Sendable {
        /// Half-open bounds, as ``Rect/contains(_:)`` takes them.
        public var minX: Double
        public var minY: Double
        public var maxX: Double
        public var maxY: Double
        public var outcome: QuickDown
        /// The control's last tap's repeat window closes then: the outcome holds for touch-downs after it, and within
        /// it for those farther than `repeatSlop` from where that tap went down (`repeatFrom`), which are first taps too.
        public var repeatWindowEnd: Instant?
        public var repeatFrom: Point?
        public var repeatSlop: Double

        /// Whether a touch-down at `point` at `time` has ``outcome`` (given a time not earlier than the scene's).
        public func contains(_ point: Point, at time: Instant) -> Bool {
            guard point.x >= minX && point.x < maxX && point.y >= minY && point.y < maxY else { return false }
            guard let end = repeatWindowEnd, time <= end else { return true }
            // TapCounter.count(at:time:)'s own comparison, negated: a repeat is at most the slop away.
            guard let from = repeatFrom else { return false }
            return !(point.distance(to: from) <= repeatSlop)
        }
    }

    /// The ``QuickDownArea`` of control `index`, when the scene can be sure of one: the control is a rectangle (a button
    /// or a toggle the quick lane takes), every group it lies in a rectangle or no clip, no control above it comes
    /// near it, and each recognizer's region (a rectangle, or any shape far enough away) holds the area or misses it,
    /// with each that sees it taking no touch-down in it (a swipe from an edge it stays clear of) or failing at once
    /// everywhere in it. Nil otherwise;
    /// then only ``quickDown(at:time:)`` can tell. Nil too in a scene of more than ``quickDownAreaControlLimit``
    /// controls: the area is checked against every other control, and the daemon asks for one per planned control
    /// after every wake-up.
    public func quickDownArea(ofControl index: Int) -> QuickDownArea? {
        guard slots.count <= Self.quickDownAreaControlLimit, slots.indices.contains(index),
            case .rect(let rect) = slots[index].control.shape
        else { return nil }
        let windowEnd = slots[index].taps.repeatWindowEnd
        // A first tap, as every touch-down after the repeat window is.
        var probeTime = now
        if let end = windowEnd, end >= probeTime {
            guard end.microseconds < UInt64.max else { return nil }
            probeTime = Instant(microseconds: end.microseconds + 1)
        }
        var area = (minX: rect.minX, minY: rect.minY, maxX: rect.maxX, maxY: rect.maxY)
        for group in slots[index].ancestors {
            switch groups[group].shape {
            case nil: continue
            case .rect(let clip)?:
                area = (
                    Swift.max(area.minX, clip.minX), Swift.max(area.minY, clip.minY), Swift.min(area.maxX, clip.maxX),
                    Swift.min(area.maxY, clip.maxY)
                )
            case .circle?, .polygon?: return nil
            }
        }
        guard area.minX < area.maxX, area.minY < area.maxY else { return nil }
        let probe = Point(x: area.minX, y: area.minY)
        guard let outcome = quickDown(at: probe, time: probeTime), outcome.control == index, outcome.tapCount == 1
        else { return nil }
        /// Whether no point of the area lies in `rect` (both half-open).
        func misses(_ rect: Rect) -> Bool {
            area.maxX <= rect.minX || area.minX >= rect.maxX || area.maxY <= rect.minY || area.minY >= rect.maxY
        }
        /// Whether `shape` holds no point of the area: a rectangle exactly, another shape when its bounding box lies
        /// at least a pixel away (room for a circle's or a polygon's edge).
        func misses(_ shape: Shape) -> Bool {
            if case .rect(let rect) = shape { return misses(rect) }
            let box = shape.boundingBox
            return box.maxX + 1 < area.minX || box.minX - 1 > area.maxX || box.maxY + 1 < area.minY
                || box.minY - 1 > area.maxY
        }
        // No touchable control above this one (earlier in the hit-test's order) may hold a point of the area.
        let z = slots[index].control.z
        for other in slots.indices where other != index && !slots[other].isRemoved && isTouchable(other) {
            let otherZ = slots[other].control.z
            guard otherZ > z || (otherZ == z && other > index) else { continue }
            guard misses(slots[other].control.shape) else { return nil }
        }
        // Each watching recognizer sees all of the area or none of it, and takes no touch-down in it or fails at once
        // wherever it sees it.
        var seeing: UInt64 = 0
        for recognizer in recognizers.indices where isWatching(recognizer) {
            let sees: Bool
            switch recognizers[recognizer].region {
            case nil: sees = true
            case .rect(let region)?
            where area.minX >= region.minX && area.maxX <= region.maxX && area.minY >= region.minY
                && area.maxY <= region.maxY:
                sees = true
            case let region?:
                guard misses(region) else { return nil }
                sees = false
            }
            guard sees else { continue }
            // A swipe from an edge the whole area stays clear of takes no touch-down in it (``takes(_:at:)``).
            if startsOffEdgeEverywhere(
                recognizers[recognizer].recognizer, minX: area.minX, minY: area.minY, maxX: area.maxX,
                maxY: area.maxY)
            {
                continue
            }
            guard recognizers[recognizer].recognizer.fingers < 1 else { return nil }
            seeing |= 1 << UInt64(recognizer)
        }
        guard seeing == outcome.recognizers else { return nil }
        return QuickDownArea(
            minX: area.minX, minY: area.minY, maxX: area.maxX, maxY: area.maxY, outcome: outcome,
            repeatWindowEnd: windowEnd, repeatFrom: slots[index].taps.lastTapLocation,
            repeatSlop: slots[index].taps.slop)
    }

    /// The most controls (removed ones included) a scene may have for ``quickDownArea(ofControl:)`` to work one out.
    public static let quickDownAreaControlLimit = 256

    /// Whether `recognizer` is a swipe from an edge that every point of the half-open bounds stays more than the margin
    /// away from (``GestureRecognizer/Swipe/startsOffEdge(_:)`` everywhere), so that it takes no first touch there.
    private func startsOffEdgeEverywhere(
        _ recognizer: GestureRecognizer, minX: Double, minY: Double, maxX: Double, maxY: Double
    ) -> Bool {
        guard case .swipe(let swipe) = recognizer.kind, let edge = swipe.edge else { return false }
        // `Edge.holds` subtracts a point's coordinate from an edge's or the other way round: monotonic, so the point of
        // the bounds nearest the edge decides for all of them (a right or bottom one is below the open bound).
        switch edge.side {
        case .left: return minX - edge.bounds.minX > edge.margin
        case .right: return edge.bounds.maxX - maxX > edge.margin
        case .top: return minY - edge.bounds.minY > edge.margin
        case .bottom: return edge.bounds.maxY - maxY > edge.margin
        }
    }

    /// How many controls the scene has (removed ones included: an index stays the same while the scene lives).
    public var controlSlotCount: Int { slots.count }

    /// A point inside control `index`'s shape where a touch lands on it, if its bounding box's centre is one; and when
    /// its last tap's repeat window closes.
    public func probe(ofControl index: Int) -> (point: Point, repeatWindowEnd: Instant?)? {
        guard slots.indices.contains(index) else { return nil }
        let centre = slots[index].control.shape.boundingBox.center
        guard hitTest(centre) == index else { return nil }
        return (centre, slots[index].taps.repeatWindowEnd)
    }

    /// Whether the recognizer is as it was built: possible, nothing seen, no timer, not waiting.
    private func isUntouched(_ index: Int) -> Bool {
        recognizers[index].state == .possible && recognizers[index].pending == nil
            && !recognizers[index].progress.isEngaged && recognizers[index].progress.deadline == nil
    }

    /// Whether the recognizer takes a touch that goes down at `location` now (the general path's own test).
    private func sees(_ index: Int, at location: Point) -> Bool {
        takes(index, at: location)
    }

    private mutating func quickTouchDown(
        _ id: ContactID, at location: Point, time: Instant, into output: inout Output
    ) -> Bool {
        guard contacts.isEmpty, ignoredContacts.isEmpty, heldLifts == 0, settings.maximumContacts > 0 else {
            return false
        }
        for index in recognizers.indices {
            guard isUntouched(index) else { return false }
            if sees(index, at: location) {
                guard GestureProgress.failsFirstTouch(at: location, for: recognizers[index].recognizer.rules) else {
                    return false
                }
            }
        }
        let hit = hitTest(location)
        if let hit, slots[hit].contact != nil { return false }

        // From here on, what the general path does with such a touch-down, in its order.
        quickFrames &+= 1
        now = time
        let serial = nextSerial
        nextSerial += 1
        contacts[id] = ContactState(serial: serial, location: location, control: hit, lastActivity: now)
        // Each recognizer that sees the touch fails on it (drive's path for a failure: with nothing waiting, no lift
        // held and no application, failing changes nothing else).
        for index in recognizers.indices where sees(index, at: location) {
            let touch = GestureTouch(serial: serial, contact: id, start: location, location: location)
            _ = recognizers[index].progress.touchDown(touch, at: now, for: recognizers[index].recognizer.rules)
            let transition = GestureRecognizer.transition(from: .possible, on: .fail)
            recognizers[index].state = transition.next
            recognizers[index].progress.stopTimer()
            for event in transition.events {
                sendGesture(event, from: index, into: &output)
            }
        }
        if let hit { beginTracking(hit, contact: id, serial: serial, at: location, into: &output) }
        // The only timer now is the contact's own, if a control tracks it.
        output.nextDeadline =
            hit != nil && settings.stuckContactTimeout > 0 ? now.advanced(by: settings.stuckContactTimeout) : nil
        return true
    }

    private mutating func quickLift(
        _ id: ContactID, at lifted: Point?, time: Instant, into output: inout Output
    ) -> Bool {
        guard contacts.count == 1, heldLifts == 0, let state = contacts[id] else { return false }
        if let lifted, !lifted.isFinite { return false }
        if state.control != nil, settings.stuckContactTimeout > 0,
            state.lastActivity.advanced(by: settings.stuckContactTimeout) <= time
        {
            return false
        }
        for index in recognizers.indices where !isUntouched(index) {
            guard recognizers[index].state.isFinished, recognizers[index].pending == nil,
                recognizers[index].progress.deadline == nil, recognizers[index].progress.down.count == 1,
                recognizers[index].progress.down[0].serial == state.serial
            else { return false }
        }

        // From here on, what the general path does with such a lift. A finished recognizer ignores the touch's last
        // move and lift, and resets once it is up.
        quickFrames &+= 1
        now = time
        for index in recognizers.indices where !isUntouched(index) {
            reset(index)
        }
        contacts.removeAll()
        if let index = state.control { lift(index, contact: id, at: lifted ?? state.location, into: &output) }
        // No contact is down and no recognizer has seen a touch: no timer runs.
        output.nextDeadline = nil
        return true
    }
}
