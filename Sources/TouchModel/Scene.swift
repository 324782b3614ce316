/// The façade of the model: controls, groups, screens and targets, fed with contact frames.
///
/// `handle(_:)` takes one input frame, `advance(to:)` only moves time forward; both return an
/// ``Output`` with the control events and resolved actions in order, diagnostics, and the next
/// deadline at which the caller must call `advance(to:)` even if no input arrives. Nothing here
/// reads a clock, performs I/O or traps on input.
///
/// Routing: a contact is hit-tested once, at touch-down, against the exact shapes of the enabled
/// controls of the active screen, top-most first (higher `z`, then later declared); disabled
/// controls are transparent. A control tracks at most one contact and a contact at most one control.
///
/// Gesture recognizers see every sample before the controls do and arbitrate with them as
/// docs/uikit-semantics.md §8 says (SceneGestures.swift).
public struct Scene: Sendable {
    /// Limits that protect the scene from misbehaving input.
    public struct Settings: Hashable, Sendable {
        /// Contacts beyond this many are ignored until they lift (libinput tracks at most 32).
        public var maximumContacts: Int
        /// A tracked contact that sends nothing for this long is cancelled as stuck (dust, firmware
        /// bug), in microseconds; 0 disables the check.
        public var stuckContactTimeout: UInt64
        /// The application beneath touchd's controls (filter mode): nil when touchd only reads beside it, so no
        /// ``Output/Entry/app(_:)`` entries are made.
        public var app: AppSettings?

        public init(maximumContacts: Int = 10, stuckContactTimeout: UInt64 = 30_000_000, app: AppSettings? = nil) {
            self.maximumContacts = maximumContacts
            self.stuckContactTimeout = stuckContactTimeout
            self.app = app
        }
    }

    /// The scene's declarations are inconsistent: every problem found, in declaration order.
    public struct BuildError: Error, Hashable, Sendable, CustomStringConvertible {
        public var problems: [String]

        public var description: String { problems.joined(separator: "\n") }
    }

    struct Slot: Sendable {
        var control: Control
        var tracker = ControlTracker()
        var taps: TapCounter
        /// The contact being tracked.
        var contact: ContactID?
        /// The touch being tracked (contact ids are reused; a held lift outlives its contact).
        var serial: TouchSerial?
        /// Where the tracked touch lifted, while a recognizer delays the lift.
        var heldLift: Point?
        /// The value when tracking began, to tell a non-continuous slider whether it changed.
        var valueAtTouchDown = 0.0
        /// True while the touchUp events of a lift inside are sent (UIKit clears highlighted after them).
        var holdsHighlight = false
        /// Enclosing groups, innermost first.
        var ancestors: [Int]
        /// The screens in which the control can be touched; empty for every screen.
        var screens: [Int]
        var isRemoved = false
        /// The resolution of each of the control's target-action entries, in the table's order (``rebuildBindings()``).
        var bindings: [EntryResolution] = []
    }

    struct ContactState: Sendable {
        var serial: TouchSerial
        var location: Point
        var control: Int?
        var lastActivity: Instant
    }

    public let settings: Settings
    /// Whether the control and gesture events are written into the output as records (``Output/Entry/event(_:)``,
    /// ``Output/Entry/gesture(_:)``), as they are unless a caller turns it off. The actions they fire are written
    /// either way, and the output counts the events either way (``Output/controlEventCount``). The daemon turns it
    /// off while nothing reads the records (no debug lines, no observer, no watcher): building, moving and freeing
    /// them was a large part of a tap's work.
    package var recordsEvents = true
    /// The time of the latest call.
    public internal(set) var now: Instant = .zero

    var slots: [Slot] = []
    var controlIndex: [String: Int] = [:]
    var groups: [Group] = []
    var screens: [Screen] = []
    var activeScreenIndex: Int?
    private var applicationTarget: String?
    /// By name. Looked up for every entry whenever the scene resolves them (``rebuildBindings()``), so sorted rather
    /// than hashed (``SortedMap``).
    var targets = SortedMap<String, Target>()
    /// How many target-action entries the scene has resolved since it was built: work counted, so that a test can check
    /// that a change resolves what it can affect and no more.
    private(set) var entriesResolved = 0
    var contacts: SmallMap<ContactID, ContactState> = [:]
    var ignoredContacts: SmallSet<ContactID> = []
    private var grid = SpatialGrid(boxes: [])
    var recognizers: [GestureSlot] = []
    var recognizerIndex: [String: Int] = [:]
    var nextSerial: TouchSerial = 0
    /// How many controls hold a lift back for a recognizer.
    var heldLifts = 0
    /// The touches that move later in the frame being handled (recognizers judge a frame's moves
    /// together).
    var movesLaterInFrame: SmallSet<TouchSerial> = []
    /// What the application beneath touchd sees (filter mode; SceneApp.swift).
    var app = AppView()

    /// Builds a scene, or throws every inconsistency at once: duplicate ids, unknown parents,
    /// groups, screens, controls, recognizers or targets, parent cycles, invalid shapes, explicit
    /// targets that do not respond to their action.
    ///
    /// - Parameters:
    ///   - controls: in declaration order (later lies on top at equal `z`).
    ///   - gestures: the recognizers, in declaration order (the order in which they see touches).
    ///   - activeScreen: the screen shown first; defaults to the first screen.
    ///   - applicationTarget: the handler target at the end of every responder chain.
    public init(
        controls: [Control],
        gestures: [GestureRecognizer] = [],
        groups: [Group] = [],
        screens: [Screen] = [],
        activeScreen: String? = nil,
        applicationTarget: String? = nil,
        targets: [Target] = [],
        settings: Settings = Settings()
    ) throws(BuildError) {
        self.settings = settings
        var problems: [String] = []

        for target in targets {
            if self.targets.updateValue(target, forKey: target.name) != nil {
                problems.append("duplicate target \(target.name)")
            }
        }
        func checkTarget(_ name: String?, _ owner: String) {
            if let name, self.targets[name] == nil { problems.append("\(owner): unknown target \(name)") }
        }

        var groupIndex: [String: Int] = [:]
        for (index, group) in groups.enumerated() {
            if groupIndex.updateValue(index, forKey: group.id) != nil { problems.append("duplicate group \(group.id)") }
            if let shape = group.shape, !shape.isValid { problems.append("group \(group.id): invalid shape") }
            checkTarget(group.target, "group \(group.id)")
        }
        for group in groups {
            if let parent = group.parent, groupIndex[parent] == nil {
                problems.append("group \(group.id): unknown parent \(parent)")
            }
        }
        /// Enclosing groups of a parent, innermost first; nil when the chain has a cycle.
        func chain(from parent: String?) -> [Int]? {
            var result: [Int] = []
            var next = parent
            while let id = next, let index = groupIndex[id] {
                if result.contains(index) { return nil }
                result.append(index)
                next = groups[index].parent
            }
            return result
        }
        for group in groups where chain(from: group.parent)?.contains(groupIndex[group.id] ?? -1) ?? true {
            problems.append("group \(group.id): parent cycle")
        }

        var screenIndex: [String: Int] = [:]
        var groupScreens: [Int: [Int]] = [:]
        for (index, screen) in screens.enumerated() {
            if screenIndex.updateValue(index, forKey: screen.id) != nil {
                problems.append("duplicate screen \(screen.id)")
            }
            checkTarget(screen.target, "screen \(screen.id)")
            for group in screen.groups {
                if let groupAt = groupIndex[group] {
                    groupScreens[groupAt, default: []].append(index)
                } else {
                    problems.append("screen \(screen.id): unknown group \(group)")
                }
            }
        }
        if let activeScreen, screenIndex[activeScreen] == nil {
            problems.append("unknown active screen \(activeScreen)")
        }
        checkTarget(applicationTarget, "application")

        for (index, control) in controls.enumerated() {
            if controlIndex.updateValue(index, forKey: control.id) != nil {
                problems.append("duplicate control \(control.id)")
            }
            if !control.shape.isValid { problems.append("control \(control.id): invalid shape") }
            if let parent = control.parent, groupIndex[parent] == nil {
                problems.append("control \(control.id): unknown parent \(parent)")
            }
            checkTarget(control.target, "control \(control.id)")
            for entry in control.actions.entries {
                guard let name = entry.target.name else { continue }
                if let target = self.targets[name] {
                    if !target.responds(to: entry.action) {
                        problems.append("control \(control.id): target \(name) does not respond to \(entry.action)")
                    }
                } else {
                    problems.append("control \(control.id): unknown target \(name)")
                }
            }
            let ancestors = chain(from: control.parent) ?? []
            var controlScreens: [Int] = []
            for group in ancestors {
                for screen in groupScreens[group, default: []] where !controlScreens.contains(screen) {
                    controlScreens.append(screen)
                }
            }
            slots.append(
                Slot(
                    control: control,
                    taps: TapCounter(interval: control.repeatInterval, slop: control.repeatSlop),
                    ancestors: ancestors,
                    screens: controlScreens
                )
            )
        }
        var recognizerIndex: [String: Int] = [:]
        for (index, gesture) in gestures.enumerated()
        where recognizerIndex.updateValue(index, forKey: gesture.id) != nil {
            problems.append("duplicate gesture \(gesture.id)")
        }
        for gesture in gestures {
            let owner = "gesture \(gesture.id)"
            if let shape = gesture.shape, !shape.isValid { problems.append("\(owner): invalid shape") }
            var region = gesture.shape
            var ancestors: [Int] = []
            var screensOf: [Int] = []
            var control: Int?
            if let parent = gesture.parent {
                if let group = groupIndex[parent] {
                    ancestors = [group] + (chain(from: groups[group].parent) ?? [])
                    region = region ?? groups[group].shape
                } else {
                    problems.append("\(owner): unknown parent \(parent)")
                }
            }
            if let id = gesture.control {
                if let index = controlIndex[id] {
                    control = index
                    ancestors = slots[index].ancestors
                    region = region ?? slots[index].control.shape
                } else {
                    problems.append("\(owner): unknown control \(id)")
                }
            }
            for group in ancestors {
                for screen in groupScreens[group, default: []] where !screensOf.contains(screen) {
                    screensOf.append(screen)
                }
            }
            for entry in gesture.actions {
                guard let name = entry.target.name else { continue }
                if let target = self.targets[name] {
                    if !target.responds(to: entry.action) {
                        problems.append("\(owner): target \(name) does not respond to \(entry.action)")
                    }
                } else {
                    problems.append("\(owner): unknown target \(name)")
                }
            }
            var slot = GestureSlot(
                recognizer: gesture, region: region, control: control, ancestors: ancestors, screens: screensOf)
            for other in gesture.simultaneousWith {
                if let index = recognizerIndex[other] {
                    slot.simultaneous.insert(index)
                } else {
                    problems.append("\(owner): unknown gesture \(other) in simultaneous_with")
                }
            }
            for other in gesture.requiresFailureOf {
                if let index = recognizerIndex[other] {
                    slot.requiresFailureOf.append(index)
                } else {
                    problems.append("\(owner): unknown gesture \(other) in requires_failure_of")
                }
            }
            recognizers.append(slot)
        }
        // simultaneous_with works from either side (UIKit asks both delegates).
        for index in recognizers.indices {
            for other in recognizers[index].simultaneous where other != index {
                recognizers[other].simultaneous.insert(index)
            }
        }
        guard problems.isEmpty else { throw BuildError(problems: problems) }
        self.recognizerIndex = recognizerIndex

        self.groups = groups
        self.screens = screens
        self.activeScreenIndex = activeScreen.flatMap { screenIndex[$0] } ?? (screens.isEmpty ? nil : 0)
        self.applicationTarget = applicationTarget
        rebuildIndex()
        rebuildBindings()
    }

    // MARK: - Input

    /// Handles one input frame: every sample in order, at the frame's time.
    public mutating func handle(_ frame: Frame) -> Output {
        var output = Output()
        // A touch-down or a lift makes an event and an action or two: room for them without regrowing.
        output.entries.reserveCapacity(4)
        handle(frame, into: &output)
        return output
    }

    /// ``handle(_:)`` into `output`, which it empties first (keeping its arrays' room): the same output, written
    /// where the caller keeps it, so that a caller with one output for every frame makes and frees no array per frame.
    public mutating func handle(_ frame: Frame, into output: inout Output) {
        output.removeAllKeepingCapacity()
        begin(at: frame.time, into: &output)
        if !recognizers.isEmpty {
            movesLaterInFrame = []
            for sample in frame.samples where sample.phase == .moved && sample.location?.isFinite == true {
                if let serial = contacts[sample.contact]?.serial { movesLaterInFrame.insert(serial) }
            }
        }
        defer { movesLaterInFrame = [] }
        for sample in frame.samples {
            switch sample.phase {
            case .began: contactBegan(sample, into: &output)
            case .moved: contactMoved(sample, into: &output)
            case .ended: contactEnded(sample, into: &output)
            case .cancelled: contactCancelled(sample, into: &output)
            }
            if settings.app != nil {
                if contacts.isEmpty { appAllLifted() } else { appContactsDown() }
            }
        }
        output.nextDeadline = nextDeadline
    }

    /// Moves time to `time` with no input: fires whatever was due (stuck contacts).
    public mutating func advance(to time: Instant) -> Output {
        var output = Output()
        begin(at: time, into: &output)
        return finish(output)
    }

    private mutating func contactBegan(_ sample: ContactSample, into output: inout Output) {
        let id = sample.contact
        guard let location = sample.location, location.isFinite else {
            output.diagnostics.append(.invalidLocation(id, .began))
            return
        }
        ignoredContacts.remove(id)
        if contacts[id] != nil {
            output.diagnostics.append(.contactRestarted(id))
            endContact(id, reason: .contactRestarted, into: &output)
        }
        guard contacts.count < settings.maximumContacts else {
            ignoredContacts.insert(id)
            output.diagnostics.append(.contactLimitReached(id, limit: settings.maximumContacts))
            return
        }
        let serial = nextSerial
        nextSerial += 1
        let wasIdle = contacts.isEmpty
        contacts[id] = ContactState(serial: serial, location: location, control: nil, lastActivity: now)
        // Recognizers see the touch first.
        if !recognizers.isEmpty { gesturesTouchDown(serial, contact: id, at: location, into: &output) }
        let hit = hitTest(location)
        // The application is the view beneath every control: it learns of the touch after them.
        defer {
            if settings.app != nil {
                appTouchBegan(serial, contact: id, at: location, control: hit, wasIdle: wasIdle, into: &output)
            }
        }
        guard let index = hit else { return }
        if let tracked = slots[index].contact {
            output.diagnostics.append(
                .controlBusy(control: slots[index].control.id, contact: id, trackedContact: tracked))
            return
        }
        contacts[id]?.control = index
        beginTracking(index, contact: id, serial: serial, at: location, into: &output)
    }

    /// A free control starts tracking a touch that went down on it: touchDown (and touchDownRepeat), and a slider's
    /// value. The caller has recorded the contact as the control's.
    mutating func beginTracking(
        _ index: Int, contact id: ContactID, serial: TouchSerial, at location: Point, into output: inout Output
    ) {
        slots[index].contact = id
        slots[index].serial = serial
        slots[index].valueAtTouchDown = slots[index].control.value
        let taps = slots[index].taps.touchDown(at: location, time: now)
        let valueChanged = follow(index, to: location)
        apply(taps > 1 ? .downRepeat : .down, to: index, contact: id, at: location, into: &output)
        if valueChanged { sendValueChanged(from: index, contact: id, location: location, into: &output) }
    }

    private mutating func contactMoved(_ sample: ContactSample, into output: inout Output) {
        let id = sample.contact
        guard var state = contacts[id] else {
            if !ignoredContacts.contains(id) { output.diagnostics.append(.unknownContact(id, .moved)) }
            return
        }
        guard let location = sample.location, location.isFinite else {
            output.diagnostics.append(.invalidLocation(id, .moved))
            return
        }
        state.location = location
        state.lastActivity = now
        contacts[id] = state
        if !recognizers.isEmpty {
            gesturesTouchMoved(state.serial, to: location, into: &output)
            // Recognizing may have cancelled the control.
            guard let current = contacts[id] else { return }
            state = current
        }
        if settings.app != nil { appTouchMoved(state.serial, to: location, into: &output) }
        guard let index = state.control else { return }
        let control = slots[index].control
        // UIControl updates touchInside and the highlight, then calls continueTracking, where a slider takes its new
        // value and sends valueChanged, and only then sends the drag events of the move.
        let valueChanged = follow(index, to: location)
        apply(
            ControlTracker.input(forMoveTo: location, in: control.shape, outset: control.dragOutset),
            to: index, contact: id, at: location, into: &output
        ) { scene, output in
            if valueChanged { scene.sendValueChanged(from: index, contact: id, location: location, into: &output) }
        }
    }

    private mutating func contactEnded(_ sample: ContactSample, into output: inout Output) {
        let id = sample.contact
        guard var state = contacts[id] else {
            if ignoredContacts.remove(id) == nil { output.diagnostics.append(.unknownContact(id, .ended)) }
            return
        }
        if let location = sample.location {
            if location.isFinite {
                state.location = location
            } else {
                output.diagnostics.append(.invalidLocation(id, .ended))
            }
        }
        contacts[id] = state
        if !recognizers.isEmpty {
            // A lift moves the touch to where it lifted, then lifts it.
            if sample.location != nil { gesturesTouchMoved(state.serial, to: state.location, into: &output) }
            gesturesTouchLifted(state.serial, into: &output)
        }
        // The application, beneath the controls, learns of the lift after them.
        defer { if settings.app != nil { appTouchLifted(state.serial, at: state.location, into: &output) } }
        // Recognizing may have cancelled the control.
        guard let ended = contacts.removeValue(forKey: id), let index = ended.control else { return }
        if isLiftDelayed(ended.serial) {
            slots[index].heldLift = ended.location
            heldLifts += 1
            return
        }
        lift(index, contact: id, at: ended.location, into: &output)
    }

    private mutating func contactCancelled(_ sample: ContactSample, into output: inout Output) {
        let id = sample.contact
        guard contacts[id] != nil else {
            if ignoredContacts.remove(id) == nil { output.diagnostics.append(.unknownContact(id, .cancelled)) }
            return
        }
        endContact(id, reason: .contactCancelled, into: &output)
    }

    /// Forgets a contact, cancelling its control's tracking (with the contact's last location).
    private mutating func endContact(_ id: ContactID, reason: CancelReason, into output: inout Output) {
        guard let state = contacts[id] else { return }
        if settings.app != nil { appTouchCancelled(state.serial, into: &output) }
        if !recognizers.isEmpty { gesturesTouchCancelled(state.serial, into: &output) }
        if let index = contacts[id]?.control { cancelTracking(index, reason: reason, into: &output) }
        contacts[id] = nil
    }

    // MARK: - Tracking

    /// Runs the tracking table and dispatches the row's events. `beforeEvents` runs once the tracker is in its new
    /// state and before the row's events are sent: UIKit's continueTracking and endTracking, where a slider sends
    /// valueChanged ahead of the drag or up event of the same touch.
    private mutating func apply(
        _ input: ControlTracker.Input, to index: Int, contact: ContactID, at location: Point, into output: inout Output,
        beforeEvents: (inout Scene, inout Output) -> Void = { _, _ in }
    ) {
        let before = slots[index].tracker.state
        let transition = slots[index].tracker.handle(input)
        guard transition.isExpected else {
            output.diagnostics.append(
                .unexpectedTransition(control: slots[index].control.id, state: before, input: input))
            return
        }
        beforeEvents(&self, &output)
        for event in transition.events {
            send(event, from: index, contact: contact, location: location, into: &output)
        }
    }

    /// A slider's value follows the contact. The value changes before the touch events of the same
    /// sample are sent, so they carry it; returns whether a continuous slider must now announce it
    /// (valueChanged comes before a move's drag events, after a touch-down's touchDown).
    private mutating func follow(_ index: Int, to location: Point) -> Bool {
        guard case .slider(let slider) = slots[index].control.kind else { return false }
        let value = slider.value(at: location, in: slots[index].control.shape.boundingBox)
        guard value != slots[index].control.value else { return false }
        slots[index].control.value = value
        return slider.isContinuous
    }

    /// The lift of the tracked contact: the table's events, then the kind's.
    mutating func lift(_ index: Int, contact: ContactID, at location: Point, into output: inout Output) {
        // What the lift decides on, as it is now: the kind and the value, not a copy of the whole control.
        // The shape is still copied once, as the argument below; it does not change while the contact lifts.
        let kind = slots[index].control.kind
        let value = slots[index].control.value
        let input = ControlTracker.input(
            forLiftAt: location, in: slots[index].control.shape, outset: slots[index].control.dragOutset)
        slots[index].contact = nil
        slots[index].serial = nil
        slots[index].holdsHighlight = input == .upInside
        // A non-continuous slider commits its value in endTracking, which UIControl calls before it sends
        // touchUpInside or touchUpOutside.
        let commits: Bool
        if case .slider(let slider) = kind {
            commits = !slider.isContinuous && value != slots[index].valueAtTouchDown
        } else {
            commits = false
        }
        apply(input, to: index, contact: contact, at: location, into: &output) { scene, output in
            if commits { scene.sendValueChanged(from: index, contact: contact, location: location, into: &output) }
        }
        slots[index].taps.touchEnded(at: now, tapped: input == .upInside)
        switch kind {
        case .button:
            if input == .upInside {
                send(.primaryActionTriggered, from: index, contact: contact, location: location, into: &output)
            }
        case .toggle:
            if input == .upInside {
                slots[index].control.isSelected.toggle()
                sendValueChanged(from: index, contact: contact, location: location, into: &output)
            }
        case .slider:
            break  // committed above, before the up event
        case .segmented(let segmented):
            let segment = Double(segmented.segment(at: location, in: slots[index].control.shape.boundingBox))
            if input == .upInside, segment != value {
                slots[index].control.value = segment
                sendValueChanged(from: index, contact: contact, location: location, into: &output)
            }
        }
        slots[index].holdsHighlight = false
    }

    /// Cancels a control's tracking (touchCancel, no touchUp). A non-continuous slider goes back to
    /// its value at touch-down: nothing was committed.
    mutating func cancelTracking(_ index: Int, reason: CancelReason, into output: inout Output) {
        guard let contact = slots[index].contact else { return }
        let serial = slots[index].serial
        // The contact id may already belong to a new touch when the lift was held back.
        let current = contacts[contact].flatMap { $0.serial == serial ? $0 : nil }
        let location = slots[index].heldLift ?? current?.location
        if slots[index].heldLift != nil { heldLifts -= 1 }
        slots[index].contact = nil
        slots[index].serial = nil
        slots[index].heldLift = nil
        if current != nil { contacts[contact]?.control = nil }
        if reason != .contactCancelled && reason != .gestureRecognized {
            output.diagnostics.append(
                .trackingCancelled(control: slots[index].control.id, contact: contact, reason: reason))
        }
        slots[index].taps.touchEnded(at: now, tapped: false)
        if case .slider(let slider) = slots[index].control.kind, !slider.isContinuous {
            slots[index].control.value = slots[index].valueAtTouchDown
        }
        let before = slots[index].tracker.state
        let transition = slots[index].tracker.handle(.cancel)
        guard transition.isExpected else {
            output.diagnostics.append(
                .unexpectedTransition(control: slots[index].control.id, state: before, input: .cancel))
            return
        }
        for event in transition.events {
            send(event, from: index, contact: contact, location: location, into: &output)
        }
    }

    mutating func sendValueChanged(
        from index: Int, contact: ContactID?, location: Point?, into output: inout Output
    ) {
        send(.valueChanged, from: index, contact: contact, location: location, into: &output)
        send(.primaryActionTriggered, from: index, contact: contact, location: location, into: &output)
    }

    // MARK: - Dispatch

    /// Records one event and dispatches it through the control's target-action table.
    private func send(
        _ event: Control.Event, from index: Int, contact: ContactID?, location: Point?, into output: inout Output
    ) {
        // Field by field, not a copy of the control: this runs for every event. Nothing here changes the scene (the
        // function is not mutating), so the table walked is the one the event was sent with.
        let value: Double? = slots[index].control.hasValue ? slots[index].control.value : nil
        output.controlEventCount &+= 1
        if recordsEvents {
            output.entries.append(
                .event(
                    ControlEventRecord(
                        time: now, control: slots[index].control.id, event: event, contact: contact,
                        location: location, state: state(at: index), value: value)))
        }
        // Resolved when the scene last changed: no target looked up by name, no chain walked.
        let entries = slots[index].control.actions.entries
        for entry in entries.indices where !entries[entry].events.isDisjoint(with: event) {
            fire(
                controlResolution(index, entry), event: event, contact: contact, location: location, value: value,
                gestureEvent: nil, into: &output)
        }
    }

    /// The kept resolution of a control's entry; resolved now should the two lists ever disagree (they never should:
    /// every change to a table resolves it again), rather than reading past the end.
    func controlResolution(_ index: Int, _ entry: Int) -> EntryResolution {
        if entry < slots[index].bindings.count { return slots[index].bindings[entry] }
        return resolution(ofControl: index, slots[index].control.actions.entries[entry])
    }

    /// Fires one resolved entry: its action goes into the output, or its explicit target's problem into the
    /// diagnostics.
    func fire(
        _ resolution: EntryResolution, event: Control.Event, contact: ContactID?, location: Point?, value: Double?,
        gestureEvent: GestureRecognizer.Event?, into output: inout Output
    ) {
        switch resolution {
        case .deliver(let binding):
            output.entries.append(
                .action(
                    ResolvedAction(
                        time: now, binding: binding, event: event, contact: contact, location: location, value: value,
                        gestureEvent: gestureEvent)))
        case .drop(let diagnostic):
            output.diagnostics.append(diagnostic)
        }
    }

    // MARK: - Resolving target-action entries

    /// Resolves every entry of every control and recognizer again. Called when the scene is built and after each change
    /// that could change any answer: a target added or removed, another screen shown. An entry whose answer is the same
    /// keeps its binding, so the engine still recognises it by identity.
    mutating func rebuildBindings() {
        for index in slots.indices { rebuildBindings(control: index) }
        for index in recognizers.indices { rebuildBindings(gesture: index) }
    }

    /// Resolves one control's entries again, after its table changed: the other controls' answers cannot have changed,
    /// so a subscriber that adds an entry to each of N controls costs N tables, not N times every table.
    mutating func rebuildBindings(control index: Int) {
        let entries = slots[index].control.actions.entries
        var bindings: [EntryResolution] = []
        bindings.reserveCapacity(entries.count)
        for entry in entries {
            bindings.append(keeping(resolution(ofControl: index, entry), from: slots[index].bindings))
        }
        slots[index].bindings = bindings
        entriesResolved &+= entries.count
    }

    /// Resolves one recognizer's entries again, after its actions changed.
    mutating func rebuildBindings(gesture index: Int) {
        let entries = recognizers[index].recognizer.actions
        var bindings: [EntryResolution] = []
        bindings.reserveCapacity(entries.count)
        for entry in entries {
            bindings.append(keeping(resolution(ofGesture: index, entry), from: recognizers[index].bindings))
        }
        recognizers[index].bindings = bindings
        entriesResolved &+= entries.count
    }

    /// Whether every kept resolution is what the scene's declarations say now (tests check this after each change).
    func bindingsAreCurrent() -> Bool {
        for index in slots.indices {
            let expected = slots[index].control.actions.entries.map { resolution(ofControl: index, $0) }
            if expected != slots[index].bindings { return false }
        }
        for index in recognizers.indices {
            let expected = recognizers[index].recognizer.actions.map { resolution(ofGesture: index, $0) }
            if expected != recognizers[index].bindings { return false }
        }
        return true
    }

    /// The same resolution as one kept before, so that its binding stays the same object; otherwise `resolution`.
    private func keeping(_ resolution: EntryResolution, from kept: [EntryResolution]) -> EntryResolution {
        kept.first { $0 == resolution } ?? resolution
    }

    /// Which responder an explicit target's actions name: the control or the recognizer that sends them.
    enum ExplicitResponder {
        case control, gesture
    }

    /// What firing a control's entry does now: its explicit target names the control as the responder, and its chain
    /// starts at the control.
    func resolution(ofControl index: Int, _ entry: TargetActionTable.Entry) -> EntryResolution {
        resolution(
            of: entry.target, action: entry.action, sender: slots[index].control.id, explicit: .control,
            control: index, groups: slots[index].ancestors)
    }

    /// What firing a recognizer's entry does now: its explicit target names the recognizer as the responder, and its
    /// chain starts at the recognizer's control, if any, and the groups after it.
    func resolution(ofGesture index: Int, _ entry: GestureRecognizer.Action) -> EntryResolution {
        resolution(
            of: entry.target, action: entry.action, sender: recognizers[index].recognizer.id, explicit: .gesture,
            control: recognizers[index].control, groups: recognizers[index].ancestors)
    }

    /// What firing an entry of `sender` does now: an explicit target must exist and implement the action (or the action
    /// is dropped with the reason); a nil target walks the responder chain from `control` and `groups`.
    private func resolution(
        of target: TargetSlot, action: String, sender: String, explicit: ExplicitResponder, control: Int?,
        groups: [Int]
    ) -> EntryResolution {
        switch target {
        case .target(let name):
            guard let known = targets[name] else { return .drop(.unknownTarget(name)) }
            guard known.responds(to: action) else {
                return .drop(.targetDoesNotRespond(control: sender, target: name, action: action))
            }
            let responder: Responder = explicit == .control ? .control(sender) : .gesture(sender)
            return .deliver(ActionBinding(sender: sender, action: action, target: name, responder: responder))
        case .responderChain:
            let handler = firstResponder(for: action, control: control, groups: groups)
            return .deliver(
                ActionBinding(sender: sender, action: action, target: handler?.target, responder: handler?.responder))
        }
    }

    /// Walks control → groups (innermost first) → active screen → application and returns the first responder whose
    /// target implements `action`; for a recognizer, from its control (if any) and the groups after it.
    func firstResponder(for action: String, control index: Int?, groups ancestors: [Int])
        -> (target: String, responder: Responder)?
    {
        func handles(_ name: String?) -> String? {
            guard let name, let target = targets[name], target.responds(to: action) else { return nil }
            return name
        }
        if let index, let name = handles(slots[index].control.target) {
            return (name, .control(slots[index].control.id))
        }
        for group in ancestors {
            if let name = handles(groups[group].target) { return (name, .group(groups[group].id)) }
        }
        if let screen = activeScreenIndex, let name = handles(screens[screen].target) {
            return (name, .screen(screens[screen].id))
        }
        if let name = handles(applicationTarget) { return (name, .application) }
        return nil
    }

    // MARK: - Hit-testing

    /// Whether a control can receive touches now: present, enabled, on the active screen.
    func isTouchable(_ index: Int) -> Bool {
        // Field by field, not a copy of the slot: this runs for every candidate of every touch-down.
        guard !slots[index].isRemoved, slots[index].control.isEnabled else { return false }
        guard !slots[index].screens.isEmpty else { return true }
        guard let activeScreenIndex else { return false }
        return slots[index].screens.contains(activeScreenIndex)
    }

    /// The top-most touchable control whose exact shape, and every enclosing group's shape, holds
    /// `point`. Disabled controls are transparent.
    func hitTest(_ point: Point) -> Int? {
        for index in grid.candidates(at: point) where isTouchable(index) && slots[index].control.shape.contains(point) {
            if slots[index].ancestors.allSatisfy({ groups[$0].shape?.contains(point) ?? true }) {
                return index
            }
        }
        return nil
    }

    /// Rebuilds the spatial index, top-most control first.
    mutating func rebuildIndex() {
        let order = slots.indices.filter { !slots[$0].isRemoved }.sorted {
            (slots[$0].control.z, $0) > (slots[$1].control.z, $1)
        }
        grid = SpatialGrid(boxes: order.map { ($0, slots[$0].control.shape.boundingBox) })
    }

    // MARK: - Time

    mutating func begin(at time: Instant, into output: inout Output) {
        if time < now {
            output.diagnostics.append(.timeWentBackwards(from: now, to: time))
        } else {
            now = time
        }
        if !recognizers.isEmpty { fireGestureDeadlines(into: &output) }
        guard settings.stuckContactTimeout > 0, !contacts.isEmpty else { return }
        // Only tracked contacts can be stuck, and there are at most `maximumContacts` of them: walk
        // those, not every control. Sorting keeps the cancels in control order (deterministic).
        var stuck: [Int] = []
        for state in contacts.values {
            if let index = state.control, state.lastActivity.advanced(by: settings.stuckContactTimeout) <= now {
                stuck.append(index)
            }
        }
        // Nothing is stuck on almost every frame: no sort (one more function on every frame's path).
        guard !stuck.isEmpty else { return }
        for index in stuck.sorted() {
            cancelTracking(index, reason: .stuck, into: &output)
        }
    }

    func finish(_ output: Output) -> Output {
        var output = output
        output.nextDeadline = nextDeadline
        return output
    }

    /// When the earliest tracked contact becomes stuck or the earliest recognizer timer fires; nil
    /// while no control tracks a contact and no timer runs.
    public var nextDeadline: Instant? {
        var earliest = earliestGestureDeadline().flatMap { recognizers[$0].progress.deadline }
        guard settings.stuckContactTimeout > 0 else { return earliest }
        for state in contacts.values where state.control != nil {
            let deadline = state.lastActivity.advanced(by: settings.stuckContactTimeout)
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }
}
