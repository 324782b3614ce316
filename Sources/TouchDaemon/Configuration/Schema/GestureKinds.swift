import TouchModel

/// `[[gesture]]`: the keys of every recognizer, and the kinds of recognizer with the keys of each.
///
/// Adding a kind of gesture: its recognizer in TouchModel (a case of `GestureRecognizer.Kind` with its settings in
/// GestureRecognizer.swift, how it recognizes in GestureProgress.swift, what it reports in SceneGestures.swift), then
/// here its keys (with `kinds: [NAME]`, or its name added to the `kinds` of a key it shares) and its entry in
/// ``Schema/gestureKinds``; docs/configuration.md's table follows (ConfigurationDocs).
extension Schema {
    static let gesture = Section(GestureKeys()) { key, kind in "'\(key)' does not apply to a \(kind) gesture" }

    /// In the order messages list them.
    static let gestureKinds: [GestureKind] = [
        GestureKind(name: "tap") { table, context in
            let keys = Schema.gesture
            return .tap(
                GestureRecognizer.Tap(
                    taps: table[keys.taps], maximumDuration: table.read(keys.maximumDuration),
                    allowableMovement: table[keys.allowableMovement],
                    // A tap's repeat window and slop are [tracking]'s, like a control's touchDownRepeat.
                    interval: context.tracking.repeatInterval, slop: context.tracking.repeatSlop))
        },
        GestureKind(name: "long_press") { table, _ in
            let keys = Schema.gesture
            return .longPress(
                GestureRecognizer.LongPress(
                    minimumDuration: table[keys.minimumDuration], allowableMovement: table[keys.allowableMovement]))
        },
        GestureKind(name: "swipe") { table, context in
            let keys = Schema.gesture
            let directions = table[keys.directions]
            let minimumDistance = table[keys.minimumDistance]
            let maximumDuration = table.read(keys.maximumDuration)
            let side = table.read(keys.edge)
            let margin = table[keys.edgeMargin]
            return .swipe(
                GestureRecognizer.Swipe(
                    directions: directions, minimumDistance: minimumDistance, maximumDuration: maximumDuration,
                    // An edge is an edge of the output.
                    edge: side.map { GestureRecognizer.Edge(side: $0, margin: margin, bounds: context.bounds) }))
        },
        GestureKind(name: "pan") { table, _ in
            .pan(GestureRecognizer.Pan(minimumDistance: table[Schema.gesture.minimumDistance]))
        },
        GestureKind(name: "pinch", minimumFingers: 2) { _, _ in .pinch(GestureRecognizer.Pinch()) },
    ]
}

/// A kind of gesture recognizer: its name in the file, the fewest fingers it works with, and how its keys make the
/// model's recognizer kind.
struct GestureKind: Sendable {
    /// What a kind's keys are read with.
    struct Context {
        /// A tap's repeat window and slop.
        var tracking: Configuration.Tracking
        /// The output, whose edges an edge swipe starts at.
        var bounds: Rect
    }

    /// `long_press`, as `kind` names it; the model's `GestureRecognizer.Kind.name`.
    let name: String
    /// `fingers`' default and least value.
    let minimumFingers: Int
    /// Reads the kind's keys (problems are reported; a refused value leaves its default).
    let decode: @Sendable (_ table: TableReader, _ context: Context) -> GestureRecognizer.Kind

    init(
        name: String, minimumFingers: Int = 1,
        decode: @escaping @Sendable (_ table: TableReader, _ context: Context) -> GestureRecognizer.Kind
    ) {
        self.name = name
        self.minimumFingers = minimumFingers
        self.decode = decode
    }
}

struct GestureKeys: KeyTable {
    typealias Limits = ConfigurationLoader.Limits

    let id = Schema.id(example: "admin")
    let kind = Key(
        "kind", .oneOf(Schema.gestureKinds.map(\.name)), required: true, example: "kind = \"long_press\"")
    let fingers = Key(
        "fingers", .integer(1...10),
        absent: "`1`"
            + Schema.gestureKinds.filter { $0.minimumFingers > 1 }.map { " (`\($0.minimumFingers)` for `\($0.name)`)" }
            .joined(),
        allowed: "1…10"
            + Schema.gestureKinds.filter { $0.minimumFingers > 1 }.map {
                "; at least \($0.minimumFingers) for `\($0.name)`"
            }.joined(),
        example: "fingers = 3")
    let shape = ShapeKey(
        absent: "absent: the whole output", allowed: "at most one of the three",
        example: "frame = { x = 0, y = 0, width = 200, height = 200 }")
    let parent = Schema.parent(
        absent: "absent", allowed: "the id of a declared group; not together with `control`", example: "settings")
    let control = Key(
        "control", .string, allowed: "the id of a declared control; not together with `parent`",
        example: "control = \"logo\"")
    let cancelsTouches = Setting(
        "cancels_touches", .boolean, default: true,
        doc: "when recognized, controls that track its touches get touchCancel", example: "cancels_touches = false")
    let delaysTouchesEnded = Setting(
        "delays_touches_ended", .boolean, default: true,
        doc: "a lift waits while the recognizer is undecided (in filter mode the application's lift too; a cancel "
            + "instead if it recognizes)",
        example: "delays_touches_ended = false")
    let delaysTouchesBegan = Setting(
        "delays_touches_began", .boolean, default: false,
        doc: "filter mode: while the recognizer is undecided about a touch, the application does not see it; it gets "
            + "the touch (where the finger is then) when the recognizer fails, never when it recognizes",
        example: "delays_touches_began = true")
    let simultaneousWith = Setting(
        "simultaneous_with", .strings(limit: Limits.gestures), default: [],
        allowed: "at most 256 ids of declared gestures, not itself", example: "simultaneous_with = [\"zoom\"]")
    let requiresFailureOf = Setting(
        "requires_failure_of", .strings(limit: Limits.gestures), default: [],
        allowed: "at most 256 ids of declared gestures, not itself, and no cycle (a gesture that waits for itself, "
            + "even through others, is an error)",
        example: "requires_failure_of = [\"double-tap\"]")

    // Keys of some kinds.
    let taps = Setting("taps", .integer(1...10), default: 1, kinds: ["tap"], example: "taps = 2")
    let minimumDuration = Setting(
        "minimum_duration_ms", .milliseconds(1...60_000), default: 500_000, kinds: ["long_press"],
        example: "minimum_duration_ms = 2000")
    let maximumDuration = Key(
        "maximum_duration_ms", .milliseconds(1...60_000), absent: "absent (no limit)", kinds: ["tap", "swipe"],
        example: "maximum_duration_ms = 300")
    let allowableMovement = Setting(
        "allowable_movement", .number(0...1_000, unit: "px"), default: 10, kinds: ["tap", "long_press"],
        example: "allowable_movement = 20")
    let minimumDistance = Setting(
        "minimum_distance", .number(1...10_000, unit: "px"), default: 100, kinds: ["swipe", "pan"],
        example: "minimum_distance = 200")
    let directions = Setting(
        "directions", .directions, default: .all, kinds: ["swipe"], example: "directions = [\"left\", \"right\"]")
    let edge = Key(
        "edge", Rule<GestureRecognizer.Edge.Side>.choice, absent: "absent (any start)", kinds: ["swipe"],
        example: "edge = \"top\"")
    let edgeMargin = Setting(
        "edge_margin", .number(1...1_000, unit: "px"), default: 30, kinds: ["swipe"], example: "edge_margin = 50")

    let actions = Key(
        "actions", .tables(Schema.gestureAction.schema, limit: Limits.actionsPerControl), absent: "none",
        allowed: "at most 64 entries, see below",
        example: "actions = [{ events = [\"recognized\"], target = \"kiosk\", action = \"admin\" }]")
}

/// The events of a gesture recognizer that actions can name.
enum GestureEvents {
    static let all = GestureRecognizer.Event.named.map(\.name)
}
