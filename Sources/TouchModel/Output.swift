/// One control event, as it was sent.
public struct ControlEventRecord: Hashable, Sendable {
    public var time: Instant
    public var control: String
    /// A single event.
    public var event: Control.Event
    /// The contact that caused it; nil for programmatic sends.
    public var contact: ContactID?
    /// Where the contact was; nil for programmatic sends.
    public var location: Point?
    /// The control's state right after the event.
    public var state: Control.State
    /// The control's value (sliders and segmented controls).
    public var value: Double?

    public init(
        time: Instant, control: String, event: Control.Event, contact: ContactID?, location: Point?,
        state: Control.State, value: Double?
    ) {
        self.time = time
        self.control = control
        self.event = event
        self.contact = contact
        self.location = location
        self.state = state
        self.value = value
    }
}

/// One event of a gesture recognizer, as it was sent.
public struct GestureEventRecord: Hashable, Sendable {
    public var time: Instant
    public var gesture: String
    /// A single event.
    public var event: GestureRecognizer.Event
    /// The recognizer's state right after the event.
    public var state: GestureRecognizer.State
    /// The contacts of the gesture that were down, in the order they went down.
    public var contacts: [ContactID]
    /// The centre of the gesture's fingers (their last known place when they lifted); nil when it
    /// had no finger down since its last reset.
    public var location: Point?
    /// A pan's mean finger movement since touch-down.
    public var translation: Point?
    /// A pinch's finger spread relative to when every finger was down.
    public var scale: Double?
    /// A swipe's direction.
    public var direction: GestureRecognizer.Directions?

    public init(
        time: Instant, gesture: String, event: GestureRecognizer.Event, state: GestureRecognizer.State,
        contacts: [ContactID], location: Point?, translation: Point? = nil, scale: Double? = nil,
        direction: GestureRecognizer.Directions? = nil
    ) {
        self.time = time
        self.gesture = gesture
        self.event = event
        self.state = state
        self.contacts = contacts
        self.location = location
        self.translation = translation
        self.scale = scale
        self.direction = direction
    }
}

/// An action resolved to where it goes.
///
/// Who sent it and who handles it are one shared ``ActionBinding``, the scene's resolution of the entry that fired: a
/// copy of the action is one reference, not four strings. The names read and write through it; setting one
/// gives this action a binding of its own.
public struct ResolvedAction: Hashable, Sendable {
    public var time: Instant
    /// The sender, the action, the target and the responder.
    public private(set) var binding: ActionBinding
    /// The event (or, for a programmatic send, the events) that fired the entry; empty for a
    /// gesture's action.
    public var event: Control.Event
    public var contact: ContactID?
    public var location: Point?
    public var value: Double?
    /// The gesture event that fired the entry, for a gesture recognizer's action; nil for a control's.
    public var gestureEvent: GestureRecognizer.Event?

    public init(
        time: Instant, control: String, event: Control.Event, action: String, target: String?,
        responder: Responder?, contact: ContactID?, location: Point?, value: Double?,
        gestureEvent: GestureRecognizer.Event? = nil
    ) {
        self.init(
            time: time, binding: ActionBinding(sender: control, action: action, target: target, responder: responder),
            event: event, contact: contact, location: location, value: value, gestureEvent: gestureEvent)
    }

    public init(
        time: Instant, binding: ActionBinding, event: Control.Event, contact: ContactID?, location: Point?,
        value: Double?, gestureEvent: GestureRecognizer.Event? = nil
    ) {
        self.time = time
        self.binding = binding
        self.event = event
        self.contact = contact
        self.location = location
        self.value = value
        self.gestureEvent = gestureEvent
    }

    /// The id of the sender: a control, or a gesture recognizer when ``gestureEvent`` is set (ids
    /// are unique across controls and recognizers in a configuration).
    public var control: String {
        get { binding.sender }
        set { binding = ActionBinding(sender: newValue, action: action, target: target, responder: responder) }
    }

    public var action: String {
        get { binding.action }
        set { binding = ActionBinding(sender: control, action: newValue, target: target, responder: responder) }
    }

    /// The target that handles the action, or nil when no responder did ("unhandled").
    public var target: String? {
        get { binding.target }
        set { binding = ActionBinding(sender: control, action: action, target: newValue, responder: responder) }
    }

    /// The responder whose target handled it: the control itself for an explicit target, the
    /// first responder up the chain for a nil target, nil when unhandled.
    public var responder: Responder? {
        get { binding.responder }
        set { binding = ActionBinding(sender: control, action: action, target: target, responder: newValue) }
    }

    /// Whether a responder handled the action.
    public var isHandled: Bool { target != nil }
}

/// Why the model cancelled a control's tracking.
public enum CancelReason: String, Hashable, Sendable {
    /// The input layer cancelled the contact (device removed, palm, libinput's TOUCH_CANCEL).
    case contactCancelled
    /// The control was disabled while tracking.
    case disabled
    /// The control was removed (reload) while tracking.
    case removed
    /// The control's screen stopped being the active one.
    case screenChanged
    /// A second `began` arrived for a contact that was still down.
    case contactRestarted
    /// The contact sent nothing for longer than the stuck-contact timeout.
    case stuck
    /// A gesture recognizer that cancels touches recognized the contact's gesture.
    case gestureRecognized
}

/// Something the caller should log or count. The model never fails on input: it reports.
public enum Diagnostic: Hashable, Sendable, CustomStringConvertible {
    /// A `moved`, `ended` or `cancelled` for a contact that is not down.
    case unknownContact(ContactID, ContactSample.Phase)
    /// A `began` for a contact that is already down; the earlier touch was cancelled.
    case contactRestarted(ContactID)
    /// A sample without a usable location (missing, NaN or infinite); it was ignored.
    case invalidLocation(ContactID, ContactSample.Phase)
    /// A contact beyond the maximum number of contacts; it is ignored until it lifts.
    case contactLimitReached(ContactID, limit: Int)
    /// A contact landed on a control that already tracks another contact; the control ignores it.
    case controlBusy(control: String, contact: ContactID, trackedContact: ContactID)
    /// The model cancelled a control's tracking.
    case trackingCancelled(control: String, contact: ContactID, reason: CancelReason)
    /// A frame older than the previous one; it was handled as if at the previous time.
    case timeWentBackwards(from: Instant, to: Instant)
    /// A request named a control, screen or target that does not exist.
    case unknownControl(String)
    case unknownScreen(String)
    case unknownTarget(String)
    case unknownGesture(String)
    /// An explicit target that does not implement the action (the configuration layer refuses
    /// these at load time; this reports one added programmatically).
    case targetDoesNotRespond(control: String, target: String, action: String)
    /// A value that is not a finite number was offered to a control; it was ignored.
    case invalidValue(control: String)
    /// A row of the tracking table that cannot happen: a bug in the model, reported, not trapped.
    case unexpectedTransition(control: String, state: ControlTracker.State, input: ControlTracker.Input)
    /// A row of a recognizer's table that cannot happen: a bug in the model, reported, not trapped.
    case unexpectedGestureTransition(
        gesture: String, state: GestureRecognizer.State, input: GestureRecognizer.Input)

    public var description: String {
        switch self {
        case .unknownContact(let contact, let phase):
            "\(phase) for unknown contact \(contact)"
        case .contactRestarted(let contact):
            "contact \(contact) began again while down; the earlier touch was cancelled"
        case .invalidLocation(let contact, let phase):
            "\(phase) of contact \(contact) has no finite location; ignored"
        case .contactLimitReached(let contact, let limit):
            "contact \(contact) ignored: \(limit) contacts are already down"
        case .controlBusy(let control, let contact, let tracked):
            "contact \(contact) ignored by control \(control), which tracks contact \(tracked)"
        case .trackingCancelled(let control, let contact, let reason):
            "control \(control) stopped tracking contact \(contact): \(reason.rawValue)"
        case .timeWentBackwards(let from, let to):
            "time went backwards from \(from) to \(to); kept \(from)"
        case .unknownControl(let id): "unknown control \(id)"
        case .unknownScreen(let id): "unknown screen \(id)"
        case .unknownTarget(let name): "unknown target \(name)"
        case .unknownGesture(let id): "unknown gesture \(id)"
        case .targetDoesNotRespond(let control, let target, let action):
            "target \(target) of control \(control) does not respond to action \(action)"
        case .invalidValue(let control): "control \(control): value is not a finite number; ignored"
        case .unexpectedTransition(let control, let state, let input):
            "bug: control \(control): \(state.rawValue) → \(input.rawValue) is not a valid transition"
        case .unexpectedGestureTransition(let gesture, let state, let input):
            "bug: gesture \(gesture): \(state.rawValue) → \(input.rawValue) is not a valid transition"
        }
    }
}

/// What one call into the scene produced, in the order it happened.
public struct Output: Hashable, Sendable {
    /// An event or an action, in order: each event is followed by the actions it fired.
    public enum Entry: Hashable, Sendable {
        case event(ControlEventRecord)
        case action(ResolvedAction)
        /// A gesture recognizer's event; the actions it fired follow.
        case gesture(GestureEventRecord)
        /// A change the application beneath touchd sees (filter mode only).
        case app(AppTouchRecord)
    }

    public var entries: [Entry] = []
    public var diagnostics: [Diagnostic] = []
    /// When the caller must call ``Scene/advance(to:)`` next even if no input arrives; nil when
    /// nothing is pending (an idle scene never needs waking).
    public var nextDeadline: Instant?
    /// How many control events and gesture events the call caused, whether or not the scene wrote their records
    /// (``Scene/recordsEvents``).
    public var controlEventCount = 0
    public var gestureEventCount = 0

    public init() {}

    /// Empties the output for the next call into the scene, keeping its arrays' room: a caller that hands the scene
    /// one output on every frame makes and frees no array per frame.
    public mutating func removeAllKeepingCapacity() {
        entries.removeAllKeepingCapacity()
        diagnostics.removeAllKeepingCapacity()
        nextDeadline = nil
        controlEventCount = 0
        gestureEventCount = 0
    }

    /// The control events, in order.
    public var events: [ControlEventRecord] {
        entries.compactMap {
            if case .event(let record) = $0 { record } else { nil }
        }
    }

    /// The gesture recognizers' events, in order.
    public var gestures: [GestureEventRecord] {
        entries.compactMap {
            if case .gesture(let record) = $0 { record } else { nil }
        }
    }

    /// What the application saw, in order.
    public var appTouches: [AppTouchRecord] {
        entries.compactMap {
            if case .app(let record) = $0 { record } else { nil }
        }
    }

    /// The resolved actions, in order.
    public var actions: [ResolvedAction] {
        entries.compactMap {
            if case .action(let action) = $0 { action } else { nil }
        }
    }
}
