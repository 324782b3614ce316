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
