// What the application (the control socket, a reload) can read and change in a scene.

extension Scene {
    // MARK: - Queries

    /// The controls' ids in declaration order (removed controls left out).
    public var controlIDs: [String] {
        slots.filter { !$0.isRemoved }.map(\.control.id)
    }

    /// The control called `id` with its current `isEnabled`, `isSelected` and `value`.
    public func control(_ id: String) -> Control? {
        controlIndex[id].map { slots[$0].control }
    }

    /// The state of the control called `id`: highlighted, disabled, selected.
    public func state(of id: String) -> Control.State? {
        controlIndex[id].map(state(at:))
    }

    /// Whether the control called `id` is tracking a contact (UIKit's `isTracking`).
    public func isTracking(_ id: String) -> Bool {
        controlIndex[id].map { slots[$0].tracker.isTracking } ?? false
    }

    /// The contact that the control called `id` tracks.
    public func trackedContact(of id: String) -> ContactID? {
        controlIndex[id].flatMap { slots[$0].contact }
    }

    /// The control's target-action table.
    public func actions(of id: String) -> TargetActionTable? {
        controlIndex[id].map { slots[$0].control.actions }
    }

    /// The screen being shown, if the scene has screens.
    public var activeScreen: String? {
        activeScreenIndex.map { screens[$0].id }
    }

    /// The screens' ids in declaration order.
    public var screenIDs: [String] { screens.map(\.id) }

    /// The names of the targets the scene knows.
    public var targetNames: [String] { targets.keys }

    /// How many contacts are down (ignored ones excluded).
    public var contactCount: Int { contacts.count }

    func state(at index: Int) -> Control.State {
        // Field by field, not a copy of the slot: this runs for every event.
        var state: Control.State = []
        if slots[index].tracker.isHighlighted || slots[index].holdsHighlight { state.insert(.highlighted) }
        if !slots[index].control.isEnabled { state.insert(.disabled) }
        if slots[index].control.isSelected { state.insert(.selected) }
        return state
    }

    // MARK: - Changes

    /// Enables or disables a control. Disabling a control that tracks a contact cancels it
    /// (touchCancel): on a kiosk, disabling means "stop now".
    public mutating func setEnabled(_ id: String, _ enabled: Bool, at time: Instant) -> Output {
        change(id, at: time) { scene, index, output in
            scene.slots[index].control.isEnabled = enabled
            if !enabled { scene.cancelTracking(index, reason: .disabled, into: &output) }
        }
    }

    /// Sets `isSelected`. Like UIKit's programmatic change, this sends no event.
    public mutating func setSelected(_ id: String, _ selected: Bool, at time: Instant) -> Output {
        change(id, at: time) { scene, index, _ in scene.slots[index].control.isSelected = selected }
    }

    /// Sets a slider's value (clamped) or a segmented control's index (rounded and clamped). Sends
    /// no event; a value that is not finite is refused with a diagnostic.
    public mutating func setValue(_ id: String, _ value: Double, at time: Instant) -> Output {
        change(id, at: time) { scene, index, output in
            guard value.isFinite else {
                output.diagnostics.append(.invalidValue(control: id))
                return
            }
            switch scene.slots[index].control.kind {
            case .slider(let slider):
                scene.slots[index].control.value = slider.clamp(value)
            case .segmented(let segmented):
                scene.slots[index].control.value = Swift.min(Double(segmented.count - 1), Swift.max(0, value.rounded()))
            case .button, .toggle:
                scene.slots[index].control.value = value
            }
        }
    }

    /// Removes a control; one that tracks a contact is cancelled first.
    public mutating func removeControl(_ id: String, at time: Instant) -> Output {
        change(id, at: time) { scene, index, output in
            scene.cancelTracking(index, reason: .removed, into: &output)
            scene.slots[index].isRemoved = true
            scene.controlIndex[id] = nil
            scene.rebuildIndex()
        }
    }

    /// Shows another screen. Controls that can no longer be touched stop tracking (touchCancel).
    public mutating func activateScreen(_ id: String, at time: Instant) -> Output {
        var output = Output()
        begin(at: time, into: &output)
        guard let index = screens.firstIndex(where: { $0.id == id }) else {
            output.diagnostics.append(.unknownScreen(id))
            return finish(output)
        }
        activeScreenIndex = index
        rebuildBindings()
        for control in slots.indices where slots[control].contact != nil && !isTouchable(control) {
            cancelTracking(control, reason: .screenChanged, into: &output)
        }
        return finish(output)
    }

    /// Fires the control's actions for `events` as if they happened (UIKit's `sendActions(for:)`):
    /// each entry whose mask meets `events` fires once, in order. No control event is recorded.
    public mutating func sendActions(for events: Control.Event, control id: String, at time: Instant) -> Output {
        change(id, at: time) { scene, index, output in
            let control = scene.slots[index].control
            let value: Double? = control.hasValue ? control.value : nil
            for (entry, declared) in control.actions.entries.enumerated()
            where !declared.events.isDisjoint(with: events) {
                scene.fire(
                    scene.controlResolution(index, entry), event: declared.events.intersection(events), contact: nil,
                    location: nil, value: value, gestureEvent: nil, into: &output)
            }
        }
    }

    /// Registers a target, replacing one with the same name.
    public mutating func addTarget(_ target: Target) {
        targets[target.name] = target
        rebuildBindings()
    }

    /// A target went away (a control-socket client disconnected): it and every entry naming it
    /// are forgotten, so it never receives anything again (UIKit's weak targets).
    public mutating func removeTarget(named name: String) {
        targets[name] = nil
        for index in slots.indices {
            slots[index].control.actions.removeAll(target: name)
        }
        for index in recognizers.indices {
            recognizers[index].recognizer.removeAll(target: name)
        }
        rebuildBindings()
    }

    /// Adds a target-action entry to a control. An explicit target must exist and respond to the
    /// action; otherwise nothing is added and a diagnostic says why.
    public mutating func addAction(
        control id: String, target: TargetSlot, action: String, for events: Control.Event
    ) -> [Diagnostic] {
        guard let index = controlIndex[id] else { return [.unknownControl(id)] }
        if let name = target.name {
            guard let known = targets[name] else { return [.unknownTarget(name)] }
            guard known.responds(to: action) else {
                return [.targetDoesNotRespond(control: id, target: name, action: action)]
            }
        }
        slots[index].control.actions.add(target: target, action: action, for: events)
        rebuildBindings(control: index)
        return []
    }

    /// Adds a target-action entry to a gesture recognizer, with the same rules as ``addAction(control:target:action:for:)``.
    public mutating func addGestureAction(
        gesture id: String, target: TargetSlot, action: String, for events: GestureRecognizer.Event
    ) -> [Diagnostic] {
        guard let index = recognizers.firstIndex(where: { $0.recognizer.id == id }) else {
            return [.unknownGesture(id)]
        }
        if let name = target.name {
            guard let known = targets[name] else { return [.unknownTarget(name)] }
            guard known.responds(to: action) else {
                return [.targetDoesNotRespond(control: id, target: name, action: action)]
            }
        }
        recognizers[index].recognizer.add(target: target, action: action, for: events)
        rebuildBindings(gesture: index)
        return []
    }

    /// Removes events from a control's entries (see ``TargetActionTable/remove(target:action:for:)``).
    public mutating func removeAction(
        control id: String, target: TargetSlot?, action: String?, for events: Control.Event
    ) -> [Diagnostic] {
        guard let index = controlIndex[id] else { return [.unknownControl(id)] }
        slots[index].control.actions.remove(target: target, action: action, for: events)
        rebuildBindings(control: index)
        return []
    }

    private mutating func change(
        _ id: String, at time: Instant, _ body: (inout Scene, Int, inout Output) -> Void
    ) -> Output {
        var output = Output()
        begin(at: time, into: &output)
        if let index = controlIndex[id] {
            body(&self, index, &output)
        } else {
            output.diagnostics.append(.unknownControl(id))
        }
        return finish(output)
    }
}
