import TouchModel

/// The control socket's subscribers, as the input thread sees them: each one is a weak target in the scene
/// (UIKit's target-action: a target the control does not retain), registered on the controls and gesture recognizers it subscribed to, for the events it asked
/// for, and removed the moment its connection closes. Its events are the actions resolved to that target, so they
/// come in the same order as every other target's, and a subscriber never holds or delays a touch.
///
/// Kinds that are not control or gesture events (state, screen, device, config) do not go through the scene; the
/// input thread asks ``recipients(of:control:isPrivate:)`` who gets them.
///
/// A private control (`private = true`) and the gesture recognizers attached to it are never registered for an
/// observer's subscription, and its state events skip observers: on a PIN pad its touches are the keystrokes, which
/// only controllers may watch, as they alone may watch live positions.
struct ControlSubscriptions {
    /// The kinds of events a subscriber can ask for (docs/control-socket.md, "Events").
    enum Kind: String, CaseIterable, Sendable {
        case control, gesture, state, screen, device, config
        /// Speech mode started or ended, or its focus moved (docs/accessibility.md).
        case speech
        /// Live contacts with their positions (`touchd ctl monitor`): controllers only, and only when asked for by
        /// name, never part of "every kind".
        case contact

        /// The kinds a subscription without `kinds` gets.
        static let byDefault: Set<Kind> = Set(allCases).subtracting([.contact])
    }

    /// A checked filter, ready to install.
    struct Subscription: Hashable, Sendable {
        var kinds: Set<Kind>
        /// nil: every control (including the controls of a later configuration).
        var controls: Set<String>?
        var controlEvents: Control.Event
        /// nil: every gesture.
        var gestures: Set<String>?
        var gestureEvents: GestureRecognizer.Event
        /// Whether the subscriber is a controller, which alone gets the events of private controls.
        var seesPrivateControls = false
    }

    /// The action name subscribers' entries carry; never a configured action (they are validated names without ':').
    static let action = "subscriber"
    private static let prefix = "control-socket:"

    private(set) var subscriptions: [ControlClientID: Subscription] = [:]
    /// The subscribers of kind `contact`, in connection order; kept as subscriptions change, so a frame asks only
    /// ``watchesContacts``.
    private(set) var contactRecipients: [ControlClientID] = []

    /// Whether anyone watches live contacts: the one question the input path asks when nobody does.
    var watchesContacts: Bool { !contactRecipients.isEmpty }

    /// The scene target standing for a connection. Configured target names cannot contain ':', so it never clashes.
    static func targetName(of client: ControlClientID) -> String { prefix + String(client) }

    /// The connection a scene target stands for, or nil for a configured target.
    static func client(ofTarget name: String?) -> ControlClientID? {
        guard let name, name.hasPrefix(prefix) else { return nil }
        return ControlClientID(name.dropFirst(prefix.count))
    }

    /// Checks `filter` against the configuration and the scene and makes it the connection's subscription, replacing
    /// any earlier one. Nothing changes when the filter names something unknown.
    mutating func subscribe(
        _ client: ControlClientID, filter: ControlSubscriptionFilter, role: ControlRole, scene: inout Scene,
        configuration: Configuration
    ) -> ControlError? {
        var subscription: Subscription
        switch Self.check(filter, scene: scene, configuration: configuration) {
        case .failure(let error): return error
        case .success(let checked): subscription = checked
        }
        subscription.seesPrivateControls = role == .controller
        remove(client, scene: &scene)
        subscriptions[client] = subscription
        install(client, subscription, in: &scene, configuration: configuration)
        if subscription.kinds.contains(.contact) { contactRecipients = recipients(of: .contact) }
        return nil
    }

    /// Forgets the connection's subscription and its weak target.
    mutating func remove(_ client: ControlClientID, scene: inout Scene) {
        guard subscriptions.removeValue(forKey: client) != nil else { return }
        scene.removeTarget(named: Self.targetName(of: client))
        contactRecipients.removeAll { $0 == client }
    }

    /// After a reload: installs every subscription in the new scene, whose configuration is `configuration` (which
    /// controls are private may have changed). Controls and gestures that no longer exist are dropped from the filters.
    mutating func reinstall(in scene: inout Scene, configuration: Configuration) {
        let controls = Set(scene.controlIDs)
        let gestures = Set(scene.gestureIDs)
        for client in subscriptions.keys.sorted() {
            guard var subscription = subscriptions[client] else { continue }
            subscription.controls = subscription.controls?.intersection(controls)
            subscription.gestures = subscription.gestures?.intersection(gestures)
            subscriptions[client] = subscription
            install(client, subscription, in: &scene, configuration: configuration)
        }
    }

    /// The subscribers that want an event of `kind` (about `control`, for control-related kinds), in connection
    /// order; controllers only when the control is private.
    func recipients(of kind: Kind, control: String? = nil, isPrivate: Bool = false) -> [ControlClientID] {
        subscriptions.filter { _, subscription in
            guard subscription.kinds.contains(kind), !isPrivate || subscription.seesPrivateControls else {
                return false
            }
            guard let control, let wanted = subscription.controls else { return true }
            return wanted.contains(control)
        }.keys.sorted()
    }

    private func install(
        _ client: ControlClientID, _ subscription: Subscription, in scene: inout Scene, configuration: Configuration
    ) {
        let name = Self.targetName(of: client)
        scene.addTarget(Target(name: name, actions: .all))
        let sees = subscription.seesPrivateControls
        if subscription.kinds.contains(.control) && !subscription.controlEvents.isEmpty {
            for control in scene.controlIDs where subscription.controls?.contains(control) ?? true {
                guard sees || !configuration.isPrivate(control: control) else { continue }
                _ = scene.addAction(
                    control: control, target: .target(name), action: Self.action, for: subscription.controlEvents)
            }
        }
        if subscription.kinds.contains(.gesture) && !subscription.gestureEvents.isEmpty {
            for gesture in scene.gestureIDs where subscription.gestures?.contains(gesture) ?? true {
                guard sees || !configuration.isPrivate(gesture: gesture) else { continue }
                _ = scene.addGestureAction(
                    gesture: gesture, target: .target(name), action: Self.action, for: subscription.gestureEvents)
            }
        }
    }

    /// The subscription a filter asks for, or the first name in it that the configuration does not know.
    static func check(
        _ filter: ControlSubscriptionFilter, scene: Scene, configuration: Configuration
    ) -> Result<Subscription, ControlError> {
        var kinds = Kind.byDefault
        if let names = filter.kinds {
            kinds = []
            for name in names {
                guard let kind = Kind(rawValue: name) else {
                    return .failure(
                        ControlError(
                            code: .unknownKind,
                            message:
                                "no event kind called '\(name)' (\(Kind.allCases.map(\.rawValue).joined(separator: ", ")))"
                        )
                    )
                }
                kinds.insert(kind)
            }
        }
        let knownControls = Set(scene.controlIDs)
        if let unknown = filter.controls?.first(where: { !knownControls.contains($0) }) {
            return .failure(
                ControlError(
                    code: .unknownControl, message: Engine.unknown("control", unknown, among: scene.controlIDs)))
        }
        let knownGestures = Set(scene.gestureIDs)
        if let unknown = filter.gestures?.first(where: { !knownGestures.contains($0) }) {
            return .failure(
                ControlError(
                    code: .unknownGesture, message: Engine.unknown("gesture", unknown, among: scene.gestureIDs)))
        }
        var controlEvents = Control.Event.allEvents
        var gestureEvents = GestureRecognizer.Event.named.reduce(into: GestureRecognizer.Event()) {
            $0.formUnion($1.event)
        }
        if let names = filter.events {
            controlEvents = []
            gestureEvents = []
            for name in names {
                if let event = configuration.controlEvent(named: name) {
                    controlEvents.formUnion(event)
                } else if let event = GestureRecognizer.Event(name: name) {
                    gestureEvents.formUnion(event)
                } else {
                    let names = configuration.controlEventNames + GestureRecognizer.Event.named.map(\.name)
                    return .failure(
                        ControlError(code: .unknownEvent, message: Engine.unknown("event", name, among: names)))
                }
            }
        }
        return .success(
            Subscription(
                kinds: kinds, controls: filter.controls.map(Set.init), controlEvents: controlEvents,
                gestures: filter.gestures.map(Set.init), gestureEvents: gestureEvents))
    }

    /// The event a subscriber gets for an action resolved to its weak target, or nil when `action` went to a
    /// configured target. Touch positions are left out: on a PIN pad they are keystrokes.
    static func event(
        for action: ResolvedAction, configuration: Configuration, device: String?, generation: Int
    ) -> ControlEvent? {
        guard let client = client(ofTarget: action.target) else { return nil }
        var line = JSONLine()
        let timeMicroseconds = Int(clamping: action.time.microseconds)
        var coalescingKey: String?
        if let gestureEvent = action.gestureEvent {
            line.add("kind", Kind.gesture.rawValue)
            line.add("time_us", timeMicroseconds)
            line.add("gesture", action.control)
            line.add("event", gestureEvent.description)
            if gestureEvent == .changed { coalescingKey = "gesture:\(action.control):changed" }
        } else {
            let event = configuration.name(of: action.event)
            line.add("kind", Kind.control.rawValue)
            line.add("time_us", timeMicroseconds)
            line.add("control", action.control)
            line.add("event", event)
            if let contact = action.contact { line.add("contact", contact) }
            if let value = action.value { line.add("value", value) }
            // Motion: drags, and a value that follows a finger. The latest one is what matters to a slow reader.
            let isMotion =
                action.event == .touchDragInside || action.event == .touchDragOutside
                || (action.event == .valueChanged && action.contact != nil && action.value != nil)
            if isMotion { coalescingKey = "control:\(action.control):\(event)" }
        }
        if let device { line.add("device", device) }
        line.add("generation", generation)
        return ControlEvent(recipients: [client], members: line.members, coalescingKey: coalescingKey)
    }
}

extension Configuration {
    /// The control event (or mask) called `name`: UIKit's names and the `[application_events]` names.
    func controlEvent(named name: String) -> Control.Event? {
        Control.Event(name: name) ?? applicationEvents[name]
    }

    /// Every name ``controlEvent(named:)`` knows, for suggestions.
    var controlEventNames: [String] {
        Control.Event.namedEvents.map(\.name) + Control.Event.namedMasks.map(\.name) + applicationEvents.keys.sorted()
    }
}
