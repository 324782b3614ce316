// Gesture recognizers in the scene and their arbitration with controls and with each other
// (docs/uikit-semantics.md §8):
//
// - Recognizers see every sample before controls do: a touch-down in a recognizer's region joins it
//   (while it is possible), moves and lifts of its touches reach it first. An edge swipe's region for
//   the first touch of a sequence is its strip along the edge: a touch-down elsewhere never joins it, so
//   it does not fail on it (it says nothing about touches it could never take).
// - When a recognizer recognizes (a discrete one ends, a continuous one begins) and cancels touches,
//   every control tracking one of its touches gets touchCancel and no touchUp follows.
// - A control's lift is held back while a recognizer that delays touches ended and has the touch is
//   undecided (possible); it is delivered when they all decide without cancelling it.
// - Controls win single-finger single taps: a one-finger single-tap recognizer that is not attached
//   to the control tracking its touch fails instead of recognizing (UIKit's UIControl refuses it).
// - Two recognizers that share a touch do not recognize together unless one names the other in
//   `simultaneous_with`: the second to try fails, and recognizing fails the undecided others.
// - `requires_failure_of`: a recognizer ready to recognize waits while a recognizer it depends on is
//   undecided and has seen touches; it recognizes when that one fails, and fails when it recognizes.

/// A recognizer in a scene: its declaration, where it listens, and how far it got.
struct GestureSlot: Sendable {
    var recognizer: GestureRecognizer
    var state: GestureRecognizer.State = .possible
    var progress = GestureProgress()
    /// A recognition that waits for the recognizers of `requiresFailureOf` to fail.
    var pending: GestureRecognizer.Input?
    /// The region whose touch-downs the recognizer sees; nil for the whole output.
    var region: Shape?
    /// The control the recognizer is attached to.
    var control: Int?
    /// The groups of the responder chain after the control (or starting with the recognizer's own
    /// group), innermost first.
    var ancestors: [Int]
    /// The screens on which the recognizer watches; empty for every screen.
    var screens: [Int]
    /// Recognizers it may recognize with (both directions of `simultaneous_with`).
    var simultaneous: SmallSet<Int> = []
    var requiresFailureOf: [Int] = []
    /// The resolution of each of the recognizer's target-action entries, in order (``Scene/rebuildBindings()``).
    var bindings: [EntryResolution] = []
}

extension Scene {
    /// How arbitration answers a recognizer that is ready to recognize.
    enum Arbitration {
        case proceed
        /// A recognizer it requires to fail is still undecided.
        case wait
        case refuse
    }

    // MARK: - Queries

    /// The recognizers' ids in declaration order.
    public var gestureIDs: [String] { recognizers.map(\.recognizer.id) }

    /// The state of the recognizer called `id`.
    public func gestureState(of id: String) -> GestureRecognizer.State? {
        recognizerIndex[id].map { recognizers[$0].state }
    }

    // MARK: - Touches

    /// Whether the recognizer takes new touches now: undecided, not waiting, and attached to
    /// something that can be touched (a control that is touchable, a group on the active screen).
    func isWatching(_ index: Int) -> Bool {
        // Field by field, not a copy of the slot: this runs for every recognizer on every touch-down.
        guard recognizers[index].state == .possible, recognizers[index].pending == nil else { return false }
        if let control = recognizers[index].control { return isTouchable(control) }
        guard !recognizers[index].screens.isEmpty else { return true }
        guard let activeScreenIndex else { return false }
        return recognizers[index].screens.contains(activeScreenIndex)
    }

    /// Whether recognizer `index` takes a touch that goes down at `location` now: it watches, its region holds the
    /// point, and a sequence's first touch lands where the recognizer can start (an edge swipe: in its strip). A
    /// touch-down it cannot take leaves it alone and silent, as one outside its frame does; a later finger off the
    /// strip joins the sequence and fails it, since that gesture was begun.
    func takes(_ index: Int, at location: Point) -> Bool {
        guard isWatching(index), recognizers[index].region?.contains(location) ?? true else { return false }
        guard !recognizers[index].progress.isEngaged, case .swipe(let swipe) = recognizers[index].recognizer.kind
        else { return true }
        return !swipe.startsOffEdge(location)
    }

    /// A touch went down: every recognizer that can take it (``takes(_:at:)``) takes it.
    mutating func gesturesTouchDown(
        _ serial: TouchSerial, contact: ContactID, at location: Point, into output: inout Output
    ) {
        for index in recognizers.indices where takes(index, at: location) {
            let touch = GestureTouch(serial: serial, contact: contact, start: location, location: location)
            if let input = recognizers[index].progress.touchDown(
                touch, at: now, for: recognizers[index].recognizer.rules)
            {
                drive(index, input, into: &output)
            }
        }
    }

    mutating func gesturesTouchMoved(_ serial: TouchSerial, to location: Point, into output: inout Output) {
        movesLaterInFrame.remove(serial)
        for index in recognizers.indices where recognizers[index].progress.holds(serial) {
            // The state and the rules, not a copy of the whole slot, as on a lift: this runs on every move.
            let settled =
                movesLaterInFrame.isEmpty || !movesLaterInFrame.contains { recognizers[index].progress.holds($0) }
            let state = recognizers[index].state
            let rules = recognizers[index].recognizer.rules
            if let input = recognizers[index].progress.touchMoved(
                serial, to: location, in: state, for: rules, settled: settled)
            {
                drive(index, input, into: &output)
            }
        }
    }

    mutating func gesturesTouchLifted(_ serial: TouchSerial, into output: inout Output) {
        movesLaterInFrame.remove(serial)
        for index in recognizers.indices where recognizers[index].progress.holds(serial) {
            // The state and the rules, not a copy of the whole slot: this runs on every lift.
            let state = recognizers[index].state
            let rules = recognizers[index].recognizer.rules
            if let input = recognizers[index].progress.touchLifted(serial, at: now, in: state, for: rules) {
                drive(index, input, into: &output)
            }
            resetIfDone(index)
        }
    }

    mutating func gesturesTouchCancelled(_ serial: TouchSerial, into output: inout Output) {
        movesLaterInFrame.remove(serial)
        for index in recognizers.indices where recognizers[index].progress.holds(serial) {
            let state = recognizers[index].state
            let rules = recognizers[index].recognizer.rules
            if let input = recognizers[index].progress.touchCancelled(serial, in: state, for: rules) {
                drive(index, input, into: &output)
            }
            resetIfDone(index)
        }
    }

    /// Fires the recognizers' timers that are due, earliest first (declaration order on a tie).
    mutating func fireGestureDeadlines(into output: inout Output) {
        while let index = earliestGestureDeadline(), let deadline = recognizers[index].progress.deadline,
            deadline <= now
        {
            let input = recognizers[index].progress.deadlinePassed(for: recognizers[index].recognizer.rules)
            drive(index, input, into: &output)
        }
    }

    /// The recognizer whose timer fires first.
    func earliestGestureDeadline() -> Int? {
        var earliest: (index: Int, deadline: Instant)?
        for index in recognizers.indices {
            guard let deadline = recognizers[index].progress.deadline else { continue }
            if earliest.map({ deadline < $0.deadline }) ?? true { earliest = (index, deadline) }
        }
        return earliest?.index
    }

    // MARK: - Transitions

    /// Arbitrates and applies one input to a recognizer, dispatches its events, and carries out
    /// what recognizing or failing means for controls and the other recognizers.
    mutating func drive(_ index: Int, _ proposed: GestureRecognizer.Input, into output: inout Output) {
        var input = proposed
        if recognizers[index].pending != nil {
            // A waiting recognizer only learns that its touches went wrong.
            guard input == .fail || input == .cancel else { return }
            recognizers[index].pending = nil
        }
        let recognizes = input == .begin || input == .recognize
        if recognizes {
            switch arbitrate(index) {
            case .proceed: break
            case .wait:
                recognizers[index].pending = input
                recognizers[index].progress.stopTimer()
                return
            case .refuse: input = .fail
            }
        }
        let before = recognizers[index].state
        let transition = GestureRecognizer.transition(from: before, on: input)
        guard transition.isExpected else {
            output.diagnostics.append(
                .unexpectedGestureTransition(gesture: recognizers[index].recognizer.id, state: before, input: input))
            return
        }
        recognizers[index].state = transition.next
        if transition.next != .possible { recognizers[index].progress.stopTimer() }
        for event in transition.events {
            sendGesture(event, from: index, into: &output)
        }
        if input == .begin || input == .recognize {
            didRecognize(index, into: &output)
        } else if transition.next == .failed {
            didFail(index, into: &output)
        }
        resetIfDone(index)
        releaseHeldLifts(into: &output)
        if settings.app != nil { releaseAppTouches(into: &output) }
    }

    /// Whether a recognizer ready to recognize may do so now (docs/uikit-semantics.md §8).
    func arbitrate(_ index: Int) -> Arbitration {
        let slot = recognizers[index]
        let touches = slot.progress.sequence
        // Controls win single-finger single taps against recognizers that are not their own.
        if slot.recognizer.isSingleTap {
            for control in slots.indices where control != slot.control {
                if let serial = slots[control].serial, touches.contains(serial) { return .refuse }
            }
        }
        for other in recognizers.indices where other != index && !mayRecognizeTogether(index, other) {
            switch recognizers[other].state {
            case .began, .changed, .ended:
                if !touches.isDisjoint(with: recognizers[other].progress.sequence) { return .refuse }
            case .possible, .cancelled, .failed: break
            }
        }
        var waits = false
        for required in slot.requiresFailureOf {
            switch recognizers[required].state {
            case .began, .changed, .ended: return .refuse
            case .cancelled, .failed: break
            case .possible: if recognizers[required].progress.isEngaged { waits = true }
            }
        }
        return waits ? .wait : .proceed
    }

    func mayRecognizeTogether(_ first: Int, _ second: Int) -> Bool {
        recognizers[first].simultaneous.contains(second)
    }

    /// A recognizer recognized: the others that share its touches fail, those waiting for it to fail
    /// fail, and the controls tracking its touches are cancelled when it cancels touches.
    private mutating func didRecognize(_ index: Int, into output: inout Output) {
        // First the application: failing the others below may release touches they delayed, which this recognizer
        // claims (UIKit discards them rather than showing them and cancelling them).
        if settings.app != nil { appGestureRecognized(index, into: &output) }
        let touches = recognizers[index].progress.sequence
        for other in recognizers.indices where other != index && recognizers[other].state == .possible {
            let shares = !touches.isDisjoint(with: recognizers[other].progress.sequence)
            let dependent = recognizers[other].pending != nil && recognizers[other].requiresFailureOf.contains(index)
            if (shares && !mayRecognizeTogether(index, other)) || dependent {
                drive(other, .fail, into: &output)
            }
        }
        guard recognizers[index].recognizer.cancelsTouches else { return }
        for control in slots.indices {
            if let serial = slots[control].serial, touches.contains(serial) {
                cancelTracking(control, reason: .gestureRecognized, into: &output)
            }
        }
    }

    /// A recognizer failed: those waiting for it try again.
    private mutating func didFail(_ index: Int, into output: inout Output) {
        for other in recognizers.indices where recognizers[other].requiresFailureOf.contains(index) {
            guard let pending = recognizers[other].pending else { continue }
            recognizers[other].pending = nil
            drive(other, pending, into: &output)
        }
    }

    /// A finished recognizer whose touches all lifted watches again.
    mutating func resetIfDone(_ index: Int) {
        guard recognizers[index].state.isFinished, recognizers[index].progress.down.isEmpty else { return }
        reset(index)
    }

    /// A finished recognizer watches again, with nothing seen.
    mutating func reset(_ index: Int) {
        // The table's reset row always applies to a finished state.
        recognizers[index].state = GestureRecognizer.transition(from: recognizers[index].state, on: .reset).next
        recognizers[index].progress.reset()
        recognizers[index].pending = nil
    }

    /// Whether a recognizer that delays touches ended still has to decide about this touch.
    func isLiftDelayed(_ serial: TouchSerial) -> Bool {
        // By index, so that no slot is copied: this runs on every lift.
        for index in recognizers.indices
        where recognizers[index].recognizer.delaysTouchesEnded && recognizers[index].state == .possible
            && recognizers[index].progress.sequence.contains(serial)
        {
            return true
        }
        return false
    }

    /// Delivers the held lifts that no recognizer delays any more.
    mutating func releaseHeldLifts(into output: inout Output) {
        guard heldLifts > 0 else { return }
        for index in slots.indices {
            guard let location = slots[index].heldLift, let serial = slots[index].serial, !isLiftDelayed(serial),
                let contact = slots[index].contact
            else { continue }
            slots[index].heldLift = nil
            heldLifts -= 1
            lift(index, contact: contact, at: location, into: &output)
        }
    }

    // MARK: - Dispatch

    /// The kept resolution of a recognizer's entry (see ``controlResolution(_:_:)``).
    func gestureResolution(_ index: Int, _ entry: Int) -> EntryResolution {
        if entry < recognizers[index].bindings.count { return recognizers[index].bindings[entry] }
        return resolution(ofGesture: index, recognizers[index].recognizer.actions[entry])
    }

    /// Records one gesture event and dispatches it through the recognizer's actions. A discrete
    /// recognizer's `recognized` is also its `ended` (UIKit's alias), in one dispatch.
    func sendGesture(_ event: GestureRecognizer.Event, from index: Int, into output: inout Output) {
        // Field by field, not a copy of the slot (recognizer, progress and all): this runs for every gesture event.
        var translation: Point?
        var scale: Double?
        switch recognizers[index].recognizer.kind {
        case .pan: translation = recognizers[index].progress.lastTranslation
        case .pinch: scale = recognizers[index].progress.lastScale
        case .tap, .longPress, .swipe: break
        }
        output.gestureEventCount &+= 1
        if recordsEvents {
            output.entries.append(
                .gesture(
                    GestureEventRecord(
                        time: now, gesture: recognizers[index].recognizer.id, event: event,
                        state: recognizers[index].state, contacts: recognizers[index].progress.lastContacts,
                        location: recognizers[index].progress.lastCentroid, translation: translation, scale: scale,
                        direction: recognizers[index].progress.direction)))
        }
        var mask = event
        if event == .recognized && !recognizers[index].recognizer.kind.isContinuous { mask.insert(.ended) }
        let entries = recognizers[index].recognizer.actions
        for entry in entries.indices where !entries[entry].events.isDisjoint(with: mask) {
            // Its contact and location are the recognizer's latest, as the event's record has them.
            fire(
                gestureResolution(index, entry), event: [], contact: recognizers[index].progress.lastContacts.first,
                location: recognizers[index].progress.lastCentroid, value: nil, gestureEvent: event, into: &output)
        }
    }
}
