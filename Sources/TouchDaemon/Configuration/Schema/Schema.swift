import TOML
import TouchModel

/// The configuration file's keys, one table per section: what each key holds, its range, its default, the kinds of
/// entry it belongs to and a line of doc. ``ConfigurationLoader`` reads every key through it (so unknown keys, their
/// suggestions and range problems come from here), and the key tables of docs/configuration.md are rendered from it
/// (``ConfigurationDocs``; a test fails when they drift).
///
/// Adding a key: declare it in its section's keys struct, then read it where the section is decoded. The `[[control]]`,
/// `[[gesture]]` and `[targets.NAME]` tables, whose keys depend on the entry's kind, are in files of their own with
/// their kinds.
enum Schema {
    static let root = Section(RootKeys())
    static let output = Section(OutputKeys())
    static let input = Section(InputKeys())
    static let device = Section(DeviceKeys())
    static let tracking = Section(TrackingKeys())
    static let controlSocket = Section(ControlSocketKeys())
    static let filter = Section(FilterKeys())
    static let application = Section(ApplicationKeys())
    static let applicationEvents = Section(ApplicationEventKeys())
    static let screen = Section(ScreenKeys())
    static let group = Section(GroupKeys())
    static let controlAction = Section(ActionKeys.control)
    static let gestureAction = Section(ActionKeys.gesture)
    static let idleAction = Section(ActionKeys.idle)
    static let idle = Section(IdleKeys())
    /// `frame` and a device's `region`; their keys are coordinates (ShapeReader.swift).
    static let rect = Section(RectKeys())
    static let circle = Section(CircleKeys())
    static let environment = Section(EnvironmentKeys())

    // MARK: - Keys several sections share

    /// The `id` of a control, group, screen or gesture.
    static func id(example: String) -> Key<String> {
        Key(
            "id",
            .string(allowed: "[id rule](#ids-and-names); unique across controls, groups, screens and gestures") {
                isValidID($0) ? nil : "'\($0)' is not a valid id: \(idRule)"
            }, required: true, example: "id = \"\(example)\"")
    }

    /// The `target` of a group, screen or control: its link in the responder chain.
    static func target(of what: String, example: String = "kiosk") -> Key<String> {
        Key(
            "target", .string, allowed: "a declared target: this \(what)'s handler in the responder chain",
            example: "target = \"\(example)\"")
    }

    /// The `parent` group of a group, control or gesture.
    static func parent(absent: String = "absent (top level)", allowed: String, example: String) -> Key<String> {
        Key("parent", .string, absent: absent, allowed: allowed, example: "parent = \"\(example)\"")
    }

    /// A socket path, as a socket target and `[control_socket]` give it.
    static func socketPath(allowed: String) -> Rule<String> {
        .string(allowed: allowed, problem: SocketPath.problem)
    }
}

/// The sections of the file.
struct RootKeys: KeyTable {
    typealias Limits = ConfigurationLoader.Limits
    let output = Key("output", .table(Schema.output.schema), example: "[output]")
    let input = Key("input", .table(Schema.input.schema), example: "[input]")
    let device = Key("device", .tables(Schema.device.schema, limit: Limits.devices), example: "[[device]]")
    let tracking = Key("tracking", .table(Schema.tracking.schema), example: "[tracking]")
    let controlSocket = Key("control_socket", .table(Schema.controlSocket.schema), example: "[control_socket]")
    let filter = Key("filter", .table(Schema.filter.schema), example: "[filter]")
    let targets = Key("targets", .table(Schema.targets.schema), example: "[targets.NAME]")
    let application = Key("application", .table(Schema.application.schema), example: "[application]")
    let applicationEvents = Key(
        "application_events", .table(Schema.applicationEvents.schema), example: "[application_events]")
    let screen = Key("screen", .tables(Schema.screen.schema, limit: Limits.screens), example: "[[screen]]")
    let group = Key("group", .tables(Schema.group.schema, limit: Limits.groups), example: "[[group]]")
    let control = Key("control", .tables(Schema.control.schema, limit: Limits.controls), example: "[[control]]")
    let gesture = Key("gesture", .tables(Schema.gesture.schema, limit: Limits.gestures), example: "[[gesture]]")
    let idle = Key("idle", .table(Schema.idle.schema), example: "[idle]")
    let accessibility = Key("accessibility", .table(Schema.accessibility.schema), example: "[accessibility]")
    let element = Key("element", .tables(Schema.element.schema, limit: Limits.elements), example: "[[element]]")
}

struct OutputKeys: KeyTable {
    let width = Key("width", .number(1...32_768), required: true, example: "width = 1920")
    let height = Key("height", .number(1...32_768), required: true, example: "height = 1080")
    let rotation = Setting("rotation", .rotation, default: .normal, example: "rotation = 90")
    let calibration = Key(
        "calibration", .calibration, absent: "absent: no matrix applied",
        example: "calibration = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]")
}

struct InputKeys: KeyTable {
    let seat = Setting(
        "seat",
        .string(allowed: "1–64 ASCII letters, digits, `-`, `_`") { seat in
            seat.isEmpty || seat.count > ConfigurationLoader.Limits.idLength
                || !seat.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
                ? "'\(seat)' is not a seat name (like seat0)" : nil
        }, default: "seat0", example: "seat = \"seat1\"")
    let ignoreVirtual = Setting(
        "ignore_virtual", .boolean, default: false,
        doc: "`true`: never use a virtual input device (one whose sysfs path is under `/sys/devices/virtual/`, such as "
            + "a uinput clone of the panel), whatever the `[[device]]` entries say; recommended for kiosks whose panel "
            + "is on a physical port ([security.md](security.md#devices-that-copy-the-panel)). Leave it `false` when "
            + "the panel itself comes from a user-space driver through uinput",
        example: "ignore_virtual = true")
}

struct DeviceKeys: KeyTable {
    let name = Key(
        "match_name", .string, absent: "absent (any name)",
        allowed: "a shell glob (`fnmatch(3)`: `*`, `?`, `[…]`); any string is accepted, a pattern that matches nothing "
            + "uses no device",
        example: "match_name = \"ILITEK*\"")
    let vendor = Key("match_vendor", .hexID, absent: "absent (any vendor)", example: "match_vendor = \"0x222a\"")
    let product = Key(
        "match_product", .hexID, absent: "absent (any product)", allowed: "as `match_vendor`",
        example: "match_product = 0x0001")
    let path = Key(
        "match_path", .string, absent: "absent (any path)", allowed: "a shell glob, as `match_name`",
        example: "match_path = \"/dev/input/by-path/*-event\"")
    let region = Key(
        "region", .table(Schema.rect.schema, type: "table `{ x, y, width, height }`"),
        absent: "absent: the whole output",
        allowed: "a rectangle, [coordinate rules](#shapes-and-coordinates), inside the output",
        example: "region = { x = 0, y = 0, width = \"50%\", height = \"100%\" }")
    let rotation = Key(
        "rotation", .rotation, absent: "absent: `[output] rotation`",
        allowed: "0, 90, 180, 270 (degrees clockwise), as `[output]`", example: "rotation = 180")
    let calibration = Key(
        "calibration", .calibration, absent: "absent: `[output] calibration`",
        allowed: "as `[output]`: each −10000…10000, with an inverse",
        example: "calibration = [1.0, 0.0, 0.02, 0.0, 1.0, -0.01]")

    /// The matchers, of which an entry needs at least one.
    var matchers: [String] { [name.name, vendor.name, product.name, path.name] }
}

struct TrackingKeys: KeyTable {
    let dragOutset = Setting(
        "drag_outset", .number(0...1_000, unit: "px"), default: Control.defaultDragOutset,
        example: "drag_outset = 40")
    let repeatInterval = Setting(
        "repeat_interval_ms", .milliseconds(1...5_000), default: Control.defaultRepeatInterval,
        example: "repeat_interval_ms = 300")
    let repeatSlop = Setting(
        "repeat_slop", .number(0...1_000, unit: "px"), default: Control.defaultRepeatSlop, example: "repeat_slop = 30")
    let maximumContacts = Setting("max_contacts", .integer(1...32), default: 10, example: "max_contacts = 5")
    let stuckContactTimeout = Setting(
        "stuck_contact_timeout_ms",
        Rule<UInt64>(
            type: "integer (ms)", allowed: "`0` (never), or 1000…3600000",
            read: { table, key in
                guard let value = table.integer(key, in: 0...3_600_000) else { return nil }
                guard value == 0 || value >= 1_000 else {
                    table.report(key, "\(value) is out of range: 0 (never) or 1000…3600000")
                    return nil
                }
                return Rule.scaled(value, by: 1_000)
            }, show: { "`\($0 / 1_000)`" }), default: 30_000_000, example: "stuck_contact_timeout_ms = 10000")
}

struct ControlSocketKeys: KeyTable {
    let enabled = Setting("enabled", .boolean, default: true, example: "enabled = false")
    let socket = Setting(
        "socket", Schema.socketPath(allowed: "an absolute path of at most 107 bytes, without NUL, not ending in `/`"),
        default: "/run/touchd/control.sock", example: "socket = \"/run/kiosk/touchd.sock\"")
    let group = Setting(
        "group", Self.groupName(allowed: "a group name (letters, digits, `-`, `_`, `.`, ≤ 32 bytes)"),
        default: "touchd-clients", example: "group = \"kiosk\"")
    let adminGroup = Setting(
        "admin_group", Self.groupName(allowed: "a group name"), default: "touchd-admin",
        example: "admin_group = \"wheel\"")
    let maximumClients = Setting("max_clients", .integer(1...1_024), default: 32, example: "max_clients = 8")

    /// A portable POSIX group name, as `groupadd` accepts it.
    static func groupName(allowed: String) -> Rule<String> {
        .string(allowed: allowed) { name in
            isGroupName(name)
                ? nil : "'\(name)' is not a group name (letters, digits, '-', '_', '.', at most 32 bytes)"
        }
    }

    static func isGroupName(_ name: String) -> Bool {
        guard let first = name.first, name.utf8.count <= 32, first != "-" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
    }
}

struct FilterKeys: KeyTable {
    let enabled = Setting(
        "enabled", .boolean, default: false,
        doc: "`true`: grab the touchscreens touchd uses and forward what the application should see",
        example: "enabled = true")
    let appMaxContacts = Setting(
        "app_max_contacts", .integer(0...32), default: 0, shown: "`0` (no limit)",
        doc: "the most touches the application has down at once; a touch beyond it never reaches the application, "
            + "not even when another lifts (no surprise touch-down in the middle of a gesture)",
        example: "app_max_contacts = 1")
    let swallowAfterIdle = Setting(
        "swallow_after_idle_s", .fractionalSeconds(0...86_400), default: 0, shown: "`0` (never)",
        doc: "after this long with no touch (start and reload count from the last lift), the next touch, and every "
            + "touch that begins while it is down, is touchd's alone (its controls still get it; with `[idle]`, the "
            + "wake touch reaches nobody anyway: see [`[idle]`](#idle))",
        example: "swallow_after_idle_s = 60")
    let cancelWith = Setting(
        "cancel_with", .choice, default: Configuration.Filter.CancelWith.lift,
        doc: "how the application's copy of a touch ends when touchd claims it. `\"lift\"` ends it as a lift where the "
            + "finger is, which every compositor handles; `\"palm\"` sends libinput's touch cancel (`MT_TOOL_PALM`), "
            + "which Weston, GNOME and KDE pass on as `wl_touch.cancel` but cage drops (its touch point would stay "
            + "down)",
        example: "cancel_with = \"palm\"")
    let twinSpace = Setting(
        "twin_space", .choice, default: Configuration.Filter.TwinSpace.device,
        doc: "the coordinates each twin reports. `\"device\"` gives the panel's own device coordinates (touchd's "
            + "`rotation`, `calibration` and `region` undone): for a compositor that maps and turns the touchscreen "
            + "itself (GNOME, KDE). `\"output\"` gives the point touchd's controls saw, normalised over the whole "
            + "`[output]`, on axes with the output's size and aspect: for a compositor that maps a touchscreen onto its "
            + "output without turning it (cage; sway and labwc when the touchscreen is mapped to no output). See "
            + "[kiosk.md](kiosk.md#which-twin_space)",
        example: "twin_space = \"output\"")
    let grabSiblings = Setting(
        "grab_siblings", .boolean, default: true,
        doc: "also grab each filtered panel's sibling pointer nodes (a mouse or tablet node of the same USB or HID "
            + "device, as `touchd identify` lists them), so the compositor sees only the twin: no cursor, no second "
            + "click per tap. `false` leaves them to the compositor. See [kiosk.md](kiosk.md#sibling-nodes)",
        example: "grab_siblings = false")
}

struct ApplicationKeys: KeyTable {
    let target = Key(
        "target", .string, absent: "absent: the chain ends without a handler",
        allowed: "the name of a declared target", example: "target = \"kiosk\"")
}

struct ApplicationEventKeys: KeyTable {
    let event = AnyNameKey(
        title: "*any event name*", type: "integer", allowed: "0…3, each bit named at most once",
        example: "doorOpened = 0")
}

struct EnvironmentKeys: KeyTable {
    let variable = AnyNameKey(
        title: "*a variable name*", type: "string", allowed: "at most 4096 bytes, without NUL",
        example: "LC_ALL = \"C\"")
}

struct ScreenKeys: KeyTable {
    let id = Schema.id(example: "checkout")
    let groups = Key(
        "groups", .strings(limit: ConfigurationLoader.Limits.groups), required: true,
        allowed: "0–1000 ids of declared groups", example: "groups = [\"checkout-bar\", \"settings\"]")
    let target = Schema.target(of: "screen")
    let initial = Setting(
        "initial", .boolean, default: false, allowed: "at most one screen may be `true`", example: "initial = true")
    let title = Key(
        "title", Schema.speechText("title"), absent: "absent: the screen's id is not spoken",
        doc: "speech mode says it when the screen is shown (docs/accessibility.md)", example: "title = \"Fares\"")
    let lang = Key(
        "lang",
        .string(allowed: "a language tag as speech-dispatcher takes it: 2–35 ASCII letters, digits and `-`") {
            ScreenKeys.isLanguageTag($0) ? nil : "'\($0)' is not a language tag (like \"de\", \"en-GB\")"
        }, absent: "absent: `[accessibility] lang`",
        doc: "the language speech mode speaks this screen in", example: "lang = \"de\"")

    static func isLanguageTag(_ tag: String) -> Bool {
        (2...35).contains(tag.utf8.count) && tag.first?.isLetter == true && tag.last != "-"
            && tag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }
}

struct GroupKeys: KeyTable {
    let id = Schema.id(example: "checkout-bar")
    let parent = Schema.parent(allowed: "the id of a declared group; no cycles", example: "checkout")
    let shape = ShapeKey(
        absent: "absent: no clip", allowed: "at most one of the three",
        example: "frame = { x = 0, y = 760, width = \"100%\", height = 320 }")
    let target = Schema.target(of: "group", example: "click")
    let toApp = Setting(
        "to_app", .boolean, default: true,
        doc: "filter mode: the default of `to_app` for the controls inside (the innermost group that says wins; a "
            + "control's own key wins over any group)",
        example: "to_app = false")
}

/// The entries of a control's, a gesture's or `[idle]`'s `actions`.
struct ActionKeys: KeyTable {
    let events: Key<[String]>
    let action: Key<String>
    let target: Key<String>

    static let control = ActionKeys(
        events: Key(
            "events", .strings(limit: 64), required: true,
            allowed: "1–64 names: [events, masks](#events-and-masks) or `[application_events]` names",
            example: "events = [\"touchUpInside\"]"),
        action: "pay", target: "absent: the responder chain")
    static let gesture = ActionKeys(
        events: Key(
            "events", .strings(limit: 8), required: true,
            allowed: "1–8 of " + GestureEvents.all.map { "`\"\($0)\"`" }.joined(separator: ", "),
            example: "events = [\"recognized\"]"),
        action: "admin", target: "absent")
    static let idle = ActionKeys(
        events: Key(
            "events", .strings(limit: 8), required: true,
            allowed: "1–8 of "
                + Configuration.Idle.Event.allCases.map { "`\"\($0.rawValue)\"`" }.joined(separator: ", "),
            example: "events = [\"idle\"]"),
        action: "attract", target: "absent: `[application] target`")

    private init(events: Key<[String]>, action example: String, target absent: String) {
        self.events = events
        action = Key(
            "action", .string, required: true, allowed: "an [action name](#ids-and-names)",
            example: "action = \"\(example)\"")
        target = Key(
            "target", .string, absent: absent, allowed: "a declared target whose `responds_to` holds `action`",
            example: "target = \"kiosk\"")
    }
}

struct IdleKeys: KeyTable {
    let timeout = Setting(
        "timeout_s", .seconds(0...Configuration.Idle.maximumTimeoutSeconds), default: 0, shown: "`0` (off)",
        allowed: "0…604800 (a week)", example: "timeout_s = 120")
    let screen = Key(
        "screen", .string, absent: "absent: the screen stays", allowed: "a declared [`[[screen]]`](#screen) id",
        example: "screen = \"attract\"")
    let actions = Key(
        "actions", .tables(Schema.idleAction.schema, limit: ConfigurationLoader.Limits.actionsPerControl),
        absent: "`[]`",
        allowed: "at most 64; each as a [control action](#control-actions), with `events` from `idle`, `wake`",
        example: "actions = [{ events = [\"idle\"], target = \"kiosk\", action = \"attract\" }]")
    let wakeTouchReachesControls = Setting(
        "wake_touch_reaches_controls", .boolean, default: false,
        doc: "`true`: the touch that wakes the kiosk is also an ordinary touch for touchd's controls and gestures (and "
            + "for the application in filter mode, unless `[filter] swallow_after_idle_s` swallows it); `false`: it "
            + "reaches nobody",
        example: "wake_touch_reaches_controls = true")
}

/// A coordinate: pixels, or a percentage of the output's size as a string (ShapeReader.swift).
private func coordinate(_ name: String, _ example: String) -> Key<TOMLValue> {
    Key(name, .value(type: "number or string"), required: true, example: "\(name) = \(example)")
}

struct RectKeys: KeyTable {
    let x = coordinate("x", "0")
    let y = coordinate("y", "\"75%\"")
    let width = coordinate("width", "\"100%\"")
    let height = coordinate("height", "\"25%\"")
}

struct CircleKeys: KeyTable {
    let cx = coordinate("cx", "\"50%\"")
    let cy = coordinate("cy", "\"50%\"")
    let r = coordinate("r", "\"10%\"")
}
