import TouchModel

/// `[[control]]`: the keys of every control, and the kinds of control with the keys of each.
extension Schema {
    static let control = Section(ControlKeys()) { key, kind in "'\(key)' does not apply to a \(kind)" }

    /// In the order messages list them.
    static let controlKinds: [ControlKind] = [
        ControlKind(name: .button) { _ in (.button, nil) },
        ControlKind(name: .toggle) { _ in (.toggle, nil) },
        ControlKind(name: .slider, decode: decodeSlider),
        ControlKind(name: .segmented) { table in
            let keys = Schema.control
            let count = table.read(keys.segments)
            let axis = table[keys.axis]
            // Not checkable without a valid count; the count's problem is reported.
            guard let count else { return (nil, nil) }
            let value = table.read(keys.value, as: .integer(0...(count - 1))).map(Double.init)
            return (.segmented(Control.Segmented(count: count, axis: axis)), value)
        },
    ]
}

/// A kind of control: its name and how its keys are read.
struct ControlKind: Sendable {
    let name: Control.Kind.Name
    /// Reads the kind's keys: the model's kind (nil after a problem that leaves none) and the initial value.
    let decode: @Sendable (_ table: TableReader) -> (kind: Control.Kind?, value: Double?)
}

struct ControlKeys: KeyTable {
    let id = Schema.id(example: "pay")
    let kind = Setting(
        "kind", .oneOf(Schema.controlKinds.map(\.name.rawValue)), default: Control.Kind.Name.button.rawValue,
        example: "kind = \"slider\"")
    let parent = Schema.parent(allowed: "the id of a declared group", example: "checkout-bar")
    let shape = ShapeKey(
        required: true, allowed: "exactly one of the three", example: "circle = { cx = 1640, cy = 610, r = 50 }")
    let z = Setting("z", .integer(-1_000...1_000), default: 0, example: "z = 5")
    let enabled = Setting("enabled", .boolean, default: true, example: "enabled = false")
    let selected = Setting("selected", .boolean, default: false, example: "selected = true")
    let value = Key(
        "value", .value(type: "number or integer"), absent: "slider: `min`; segmented: `0`",
        kinds: ["slider", "segmented"],
        allowed: "slider: a number in `min`…`max` (snapped to `step`); segmented: an integer 0…`segments`−1",
        example: "value = 60")
    let dragOutset = Key(
        "drag_outset", .number(0...1_000, unit: "px"), absent: Self.tracking(Schema.tracking.dragOutset),
        example: "drag_outset = 30")
    let repeatInterval = Key(
        "repeat_interval_ms", .milliseconds(1...5_000), absent: Self.tracking(Schema.tracking.repeatInterval),
        example: "repeat_interval_ms = 250")
    let repeatSlop = Key(
        "repeat_slop", .number(0...1_000, unit: "px"), absent: Self.tracking(Schema.tracking.repeatSlop),
        example: "repeat_slop = 20")
    let target = Schema.target(of: "control")
    let label = Schema.label
    let hint = Schema.hint

    // Keys of some kinds.
    let minimum = Setting(
        "min", .number(-1e9...1e9), default: 0, kinds: ["slider"], allowed: "−1e9…1e9", example: "min = 0")
    let maximum = Setting(
        "max", .number(-1e9...1e9), default: 1, kinds: ["slider"], allowed: "−1e9…1e9; must be greater than `min`",
        example: "max = 100")
    let axis = Setting(
        "axis", .choice, default: Control.Axis.horizontal, kinds: ["slider", "segmented"],
        example: "axis = \"vertical\"")
    let continuous = Setting("continuous", .boolean, default: true, kinds: ["slider"], example: "continuous = false")
    let step = Key(
        "step", .number(-.greatestFiniteMagnitude ... .greatestFiniteMagnitude), absent: "absent: any value",
        kinds: ["slider"], allowed: "greater than 0 and at most `max` − `min`",
        doc: "the value snaps to the nearest `min + k·step` (k = 0, 1, 2…) that lies in `min`…`max`, while the finger "
            + "moves, for the declared `value` and for the control socket's `set`",
        example: "step = 5")
    let segments = Key(
        "segments", .integer(1...64), required: true, kinds: ["segmented"], example: "segments = 4")

    let actions = Key(
        "actions", .tables(Schema.controlAction.schema, limit: ConfigurationLoader.Limits.actionsPerControl),
        absent: "none", allowed: "at most 64 entries. See [Control actions](#control-actions)",
        example: "actions = [{ events = [\"touchUpInside\"], action = \"pay\" }]")
    let toApp = Setting(
        "to_app", .boolean, default: true, shown: "`true` (or its group's)",
        doc: "filter mode: `false` makes touches that begin on the control touchd's alone: they never reach the "
            + "application (a dead zone, a touchd-only button). See [`[filter]`](#filter)",
        example: "to_app = false")
    let isPrivate = Setting(
        "private", .boolean, default: false,
        doc: "`true`: the control's touches are keystrokes (a PIN pad's digits). Its control events, its `state` "
            + "events, the events of gesture recognizers attached to it (`control = ID`) and its live state "
            + "(`selected`, `highlighted`, `tracking`, `value`) reach only controller clients of the control socket; "
            + "observers see its id, kind, `enabled` and `\"private\":true`, nothing of its touches. Actions still go "
            + "to their targets. See [security.md](security.md#who-can-do-what)",
        example: "private = true")

    /// `` `[tracking]` value (70) ``: a control's default that `[tracking]` sets.
    private static func tracking<Value>(_ setting: Setting<Value>) -> String {
        "`[tracking]` value (\(setting.rule.show(setting.defaultValue).filter { $0 != "`" }))"
    }
}

@Sendable private func decodeSlider(_ table: TableReader) -> (kind: Control.Kind?, value: Double?) {
    let keys = Schema.control
    let minimum = table[keys.minimum]
    let maximum = table[keys.maximum]
    if minimum >= maximum {
        table.report(
            keys.maximum.name,
            "max (\(TableReader.format(maximum))) must be greater than min (\(TableReader.format(minimum)))")
    }
    let axis = table[keys.axis]
    let continuous = table[keys.continuous]
    let step = decodeStep(table, minimum: minimum, maximum: maximum)
    let value = table.read(keys.value, as: .number(-1e9...1e9))
    if let value, minimum < maximum, !(minimum...maximum).contains(value) {
        table.report(
            keys.value.name,
            "\(TableReader.format(value)) is outside the slider's range min…max "
                + "(\(TableReader.format(minimum))…\(TableReader.format(maximum)))")
    }
    guard minimum < maximum else { return (nil, value) }
    return (
        .slider(Control.Slider(minimum: minimum, maximum: maximum, axis: axis, isContinuous: continuous, step: step)),
        value
    )
}

/// A slider's `step`: absent or refused (nil; the problem is reported), else a number above 0 and at most
/// `max − min`, so that the value grid `min + k·step` holds at least `min` and one step more.
private func decodeStep(_ table: TableReader, minimum: Double, maximum: Double) -> Double? {
    let key = Schema.control.step
    guard let step = table.read(key) else { return nil }
    guard step > 0 else {
        table.report(key.name, "must be greater than 0 (the value snaps to min + k·step)")
        return nil
    }
    guard minimum < maximum else { return nil }  // max's own problem is reported
    guard step <= maximum - minimum else {
        table.report(
            key.name,
            "\(TableReader.format(step)) is larger than the slider's range (max − min = "
                + "\(TableReader.format(maximum - minimum))): the value could never leave min")
        return nil
    }
    return step
}
