import TouchModel

/// A validated configuration: everything in it is in range and refers to things that exist.
/// Built only by ``ConfigurationLoader``; the model types inside are ready for a ``Scene``.
struct Configuration: Sendable {
    /// A quarter turn, clockwise, in degrees: the values `rotation` takes (xrandr's normal, right, inverted, left).
    enum Rotation: Int, Hashable, Sendable, CaseIterable {
        case normal = 0
        case right = 90
        case inverted = 180
        case left = 270

        /// The turn as a row-major 2×3 matrix on normalised coordinates (libinput's matrices for 90°, 180°, 270°
        /// clockwise), for printing the combined matrix; ``CoordinateMapper`` applies the same turn.
        var matrix: [Double] {
            switch self {
            case .normal: [1, 0, 0, 0, 1, 0]
            case .right: [0, -1, 1, 1, 0, 0]
            case .inverted: [-1, 0, 1, 0, -1, 1]
            case .left: [0, 1, 0, -1, 0, 1]
            }
        }
    }

    /// The screen the touchscreen covers.
    struct Output: Hashable, Sendable {
        var width: Double
        var height: Double
        /// How the panel is turned, clockwise.
        var rotation: Rotation
        /// libinput's 2×3 calibration matrix, row-major; nil leaves the device's own.
        var calibration: [Double]?

        var bounds: Rect { Rect(x: 0, y: 0, width: width, height: height) }
    }

    /// An allow-list entry: a touchscreen is used when every given matcher matches.
    struct DeviceMatch: Hashable, Sendable {
        var name: String?
        var vendor: Int?
        var product: Int?
        var path: String?
        /// The part of the output this device covers; nil for the whole output.
        var region: Rect?
        /// How this panel is turned, used instead of `[output] rotation`; nil keeps the output's.
        var rotation: Rotation? = nil
        /// touchd's 2×3 calibration matrix for this panel, used instead of `[output] calibration`; nil keeps the
        /// output's. Applied after libinput's own (a udev `LIBINPUT_CALIBRATION_MATRIX`), never instead of it.
        var calibration: [Double]? = nil
    }

    /// `[tracking]`; the defaults are the schema's (Schema.swift), as for every section below.
    struct Tracking: Hashable, Sendable {
        var dragOutset = Schema.tracking.dragOutset.defaultValue
        var repeatInterval = Schema.tracking.repeatInterval.defaultValue
        var repeatSlop = Schema.tracking.repeatSlop.defaultValue
        var maximumContacts = Schema.tracking.maximumContacts.defaultValue
        var stuckContactTimeout = Schema.tracking.stuckContactTimeout.defaultValue
    }

    /// Where actions go. Its kinds, and their settings, are in TargetKinds.swift.
    struct TargetDefinition: Hashable, Sendable {
        var name: String
        var kind: Kind
        var respondsTo: [String]
    }

    /// `[control_socket]`: the control socket (docs/control-socket.md). Read at start only.
    struct ControlSocket: Hashable, Sendable {
        /// false: no control socket.
        var enabled = Schema.controlSocket.enabled.defaultValue
        /// Where touchd creates the socket when systemd did not pass one.
        var path = Schema.controlSocket.socket.defaultValue
        /// The socket file's group in standalone mode, and the group whose members may connect as observers.
        var group = Schema.controlSocket.group.defaultValue
        /// Members may also change things (controllers).
        var adminGroup = Schema.controlSocket.adminGroup.defaultValue
        var maximumClients = Schema.controlSocket.maximumClients.defaultValue
    }

    /// `[filter]`: touchd between the touchscreen and the application (docs/kiosk.md).
    struct Filter: Hashable, Sendable {
        /// How the application's copy of a touch ends when touchd claims it.
        enum CancelWith: String, Hashable, Sendable, CaseIterable {
            /// A lift where the touch is: every compositor ends the touch (cage ignores libinput's cancel).
            case lift
            /// `MT_TOOL_PALM`: libinput's TOUCH_CANCEL, `wl_touch.cancel` for compositors that pass it on.
            case palm
        }

        /// The coordinates a twin reports (docs/kiosk.md, "Which twin_space").
        enum TwinSpace: String, Hashable, Sendable, CaseIterable {
            /// The panel's own device coordinates: touchd's mapping and libinput's matrix undone.
            case device
            /// The output's coordinates, normalised over the whole `[output]`: touchd's whole mapping applied.
            case output
        }

        /// Grab the touchscreens touchd uses and forward what the application should see.
        var enabled = Schema.filter.enabled.defaultValue
        /// The most touches the application has down at once; 0 for no limit.
        var appMaxContacts = Schema.filter.appMaxContacts.defaultValue
        /// After this long with nothing down, in microseconds, the next touch is touchd's alone; 0 never.
        var swallowAfterIdle = Schema.filter.swallowAfterIdle.defaultValue
        var cancelWith = Schema.filter.cancelWith.defaultValue
        var twinSpace = Schema.filter.twinSpace.defaultValue
        /// Also grab each filtered panel's sibling pointer nodes (docs/kiosk.md, "Sibling nodes").
        var grabSiblings = Schema.filter.grabSiblings.defaultValue

        /// The scene's settings for the application; nil when the filter is off.
        var app: AppSettings? {
            enabled ? AppSettings(maximumContacts: appMaxContacts, swallowAfterIdle: swallowAfterIdle) : nil
        }
    }

    /// A gesture recognizer declaration; ``recognizer`` makes the model's.
    struct Gesture: Hashable, Sendable {
        var id: String
        /// What it recognizes, with the kind's own settings (GestureKinds.swift): the model's, whose tap repeats
        /// within `[tracking]`'s window and slop and whose edge swipe starts at an edge of the output.
        var kind: GestureRecognizer.Kind
        var fingers: Int
        /// The region; nil for the whole output.
        var shape: Shape?
        var parent: String?
        var control: String?
        var cancelsTouches: Bool
        var delaysTouchesEnded: Bool
        var delaysTouchesBegan: Bool
        var simultaneousWith: [String]
        var requiresFailureOf: [String]
        var actions: [GestureAction]
    }

    struct GestureAction: Hashable, Sendable {
        /// Gesture event names (``GestureEvents/all``).
        var events: [String]
        var target: String?
        var action: String
    }

    var output: Output
    var seat: String
    /// `[input] ignore_virtual`: leave alone every virtual input device (``DeviceInfo/isVirtual``), whatever the
    /// `[[device]]` entries say, so a uinput clone of the panel is never used.
    var ignoreVirtual = false
    var devices: [DeviceMatch]
    var tracking: Tracking
    var controlSocket = ControlSocket()
    var filter = Filter()
    /// `[idle]`: the attract loop (Configuration+Idle.swift).
    var idle = Idle()
    var targets: [TargetDefinition]
    var applicationTarget: String?
    /// Names the configuration gives to events of the `applicationReserved` range.
    var applicationEvents: [String: Control.Event]
    var screens: [Screen]
    var groups: [Group]
    var controls: [Control]
    var gestures: [Gesture]
    /// The controls with `private = true`: their events, state changes and live state (and the events of gestures
    /// attached to them) reach controller clients of the control socket only, never observers. The same key
    /// keeps a control's value out of speech.
    var privateControls: Set<String> = []
    /// `[accessibility]`: explore by touch (Configuration+Accessibility.swift).
    var accessibility = Accessibility()
    /// Each control's `label` and `hint`, by id (only those that give one).
    var controlSpeech: [String: Speech] = [:]
    /// `[[element]]`, in declaration order.
    var elements: [Element] = []
    /// Each screen's `title` and `lang`, by id (only those that give one).
    var screenSpeech: [String: ScreenSpeech] = [:]
    /// What may be wrong without making the file unusable (a command target's program missing, for one); `touchd
    /// check` prints them and `touchd run` logs them at every load.
    var warnings: [ConfigurationProblem] = []

    /// A fresh scene for this configuration.
    func makeScene() throws(Scene.BuildError) -> Scene {
        try Scene(
            controls: controls,
            gestures: gestures.map(\.recognizer),
            groups: groups,
            screens: screens,
            applicationTarget: applicationTarget,
            targets: targets.map { Target(name: $0.name, respondsTo: $0.respondsTo) },
            settings: Scene.Settings(
                maximumContacts: tracking.maximumContacts, stuckContactTimeout: tracking.stuckContactTimeout,
                app: filter.app)
        )
    }

    /// Whether an observer of the control socket may learn of `id`'s touches: false for a private control, and for a
    /// gesture recognizer attached to one (`control = ID`).
    func isPrivate(control id: String) -> Bool { privateControls.contains(id) }

    /// Whether gesture `id` is attached to a private control.
    func isPrivate(gesture id: String) -> Bool {
        guard !privateControls.isEmpty else { return false }
        return gestures.first { $0.id == id }?.control.map(privateControls.contains) ?? false
    }

    /// The name of an event, using the configuration's names for application events.
    func name(of event: Control.Event) -> String {
        // Most files name no application events: no walk over an empty dictionary on every action.
        if !applicationEvents.isEmpty, let custom = applicationEvents.first(where: { $0.value == event }) {
            return custom.key
        }
        return event.description
    }
}

extension Configuration.Gesture {
    /// The model's recognizer: the region is the gesture's shape, else its control's or group's (the scene fills that
    /// in), else the whole output.
    var recognizer: GestureRecognizer {
        var recognizer = GestureRecognizer(
            id: id, kind: kind, fingers: fingers, shape: shape, parent: parent, control: control,
            cancelsTouches: cancelsTouches, delaysTouchesEnded: delaysTouchesEnded, simultaneousWith: simultaneousWith,
            requiresFailureOf: requiresFailureOf, delaysTouchesBegan: delaysTouchesBegan)
        for action in actions {
            let events = action.events.reduce(into: GestureRecognizer.Event()) {
                $0.formUnion(GestureRecognizer.Event(name: $1) ?? [])
            }
            recognizer.add(target: TargetSlot(action.target), action: action.action, for: events)
        }
        return recognizer
    }
}
