import TOML

/// Explore by touch (docs/accessibility.md): `[accessibility]`, `[[element]]`, and the keys that say what a control
/// or a screen is called.
extension Schema {
    static let accessibility = Section(AccessibilityKeys())
    static let element = Section(ElementKeys())
    /// An element's `activation_point`.
    static let point = Section(PointKeys())

    /// The longest label, hint, title or announcement: a sentence or two, not a document read aloud.
    static let speechTextLimit = 500

    /// Text touchd speaks: not empty, at most ``speechTextLimit`` characters, no control characters (a line break
    /// would end the SSIP message).
    static func speechText(_ what: String) -> Rule<String> {
        .string(allowed: "1–\(speechTextLimit) characters, no control characters (line breaks included)") { text in
            speechTextProblem(text, what)
        }
    }

    static func speechTextProblem(_ text: String, _ what: String) -> String? {
        if text.allSatisfy({ $0.isWhitespace }) { return "the \(what) is empty: say what the customer hears" }
        if text.count > speechTextLimit {
            return "the \(what) has \(text.count) characters; at most \(speechTextLimit) are spoken"
        }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "the \(what) holds a control character (a line break or tab); write it on one line"
        }
        return nil
    }

    /// A label, on a control or an element.
    static let label = Key(
        "label", speechText("label"), absent: "absent (an error while `[accessibility] enabled`)",
        doc: "what speech mode says for it (docs/accessibility.md): a word or two, as printed on it",
        example: "label = \"Buy ticket\"")
    /// A hint, on a control or an element.
    static let hint = Key(
        "hint", speechText("hint"), absent: "absent: no hint",
        doc: "spoken after the label and 400 ms of quiet (`[accessibility] hint_delay_ms`) while the focus stays",
        example: "hint = \"Opens the list of fares\"")
}

struct AccessibilityKeys: KeyTable {
    let enabled = Setting(
        "enabled", .boolean, default: false,
        doc: "`true`: speech mode can be entered (the start gesture, the control socket's `speech` verb); every "
            + "control and element then needs a `label`",
        example: "enabled = true")
    let startGesture = Key(
        "start_gesture", .string, absent: "absent: only the control socket enters speech mode",
        allowed: "the id of a declared `[[gesture]]`",
        doc: "its recognition enters speech mode, and recognized again in speech mode, leaves it. Mark it on the "
            + "kiosk with a tactile sign",
        example: "start_gesture = \"speech-corner\"")
    let startOnHeadphones = Setting(
        "start_on_headphones", .boolean, default: false,
        doc: "`true`: plugging headphones into the kiosk's jack (an input device's `SW_HEADPHONE_INSERT` going to 1) "
            + "enters speech mode, and unplugging them leaves it when they started it",
        example: "start_on_headphones = true")
    let exitAfterIdle = Setting(
        "exit_after_idle_s", .seconds(0...3_600), default: 120_000_000, shown: "`120`",
        doc: "speech mode ends after this long without a touch (the transaction is over); `0` never",
        example: "exit_after_idle_s = 60")
    let speechSocket = Key(
        "speech_socket",
        Schema.socketPath(allowed: "an absolute path of at most 107 bytes, without NUL, not ending in `/`"),
        absent: "speech-dispatcher's: `$SPEECHD_ADDRESS` (`unix_socket:PATH`), else "
            + "`$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock`",
        doc: "the speech server's SSIP socket. The shipped system unit has no `XDG_RUNTIME_DIR`: give the path of a "
            + "system-wide speech-dispatcher's socket here (docs/accessibility.md)",
        example: "speech_socket = \"/run/speech-dispatcher/speechd.sock\"")
    let introduction = Setting(
        "introduction", Schema.speechText("introduction"), default: AccessibilityKeys.defaultIntroduction,
        shown: "an English introduction (docs/accessibility.md)",
        doc: "spoken at once, with high priority, when speech mode starts: what it is, how to explore, activate, "
            + "leave. Write it in the kiosk's language, naming the start gesture",
        example: "introduction = \"Sprachausgabe an. …\"")
    let farewell = Setting(
        "farewell", Schema.speechText("farewell"), default: "Speech off.", example: "farewell = \"Sprachausgabe aus.\"")
    let doubleTapTimeout = Setting(
        "double_tap_timeout_ms", .milliseconds(40...1_000), default: 300_000,
        doc: "the second touch-down of a double tap comes at most this long after the first lift (TalkBack: 300)",
        example: "double_tap_timeout_ms = 400")
    let doubleTapSlop = Setting(
        "double_tap_slop_mm", .number(1...50, unit: "mm"), default: 10,
        doc: "… and at most this far from the first; a tap moves at most this far",
        example: "double_tap_slop_mm = 12")
    let hintDelay = Setting(
        "hint_delay_ms", .milliseconds(0...5_000), default: 400_000,
        doc: "a hint follows its label this long after the speech server finished saying it (`702 END`), if the "
            + "focus stayed (TalkBack: 400 after the end; `simulate`: after the label began)",
        example: "hint_delay_ms = 600")
    let swipeDistance = Setting(
        "swipe_min_distance_mm", .number(2...100, unit: "mm"), default: 10,
        doc: "a swipe covers at least this distance …", example: "swipe_min_distance_mm = 8")
    let swipeTime = Setting(
        "swipe_time_ms", .milliseconds(20...1_000), default: 150_000,
        doc: "… within this long of touching down; slower is exploring. Two fingers down within it are a two-finger "
            + "tap",
        example: "swipe_time_ms = 200")
    let hysteresis = Setting(
        "hysteresis_px", .number(0...100, unit: "px"), default: 6,
        doc: "how far beyond an item's edge the exploring finger goes before it leaves the item",
        example: "hysteresis_px = 10")
    let pixelsPerMillimetre = Setting(
        "pixels_per_mm", .number(0.5...100, unit: "px/mm"), default: 4,
        doc: "the panel's density, to turn the distances above into pixels (a 21.5\" 1920×1080 panel: 4.0; 15.6\": "
            + "5.6)",
        example: "pixels_per_mm = 5.6")
    let language = Setting(
        "lang",
        .string(allowed: "a language tag as speech-dispatcher takes it: 2–35 ASCII letters, digits and `-`") {
            ScreenKeys.isLanguageTag($0) ? nil : "'\($0)' is not a language tag (like \"de\", \"en-GB\")"
        }, default: "en",
        doc: "the language speech mode speaks in on a screen without its own `lang` (and without screens): every "
            + "utterance names one, so such a screen never keeps the previous screen's. Write the `introduction` "
            + "and `farewell` in it",
        example: "lang = \"de\"")
    let passthrough = Key(
        "passthrough", .tables(Schema.rect.schema, limit: 16), absent: "`[]`",
        allowed: "at most 16 rectangles `{ x, y, width, height }`, [coordinate rules](#shapes-and-coordinates)",
        doc: "touches that begin here reach the application in speech mode too (a signature pad)",
        example: "passthrough = [{ x = 0, y = 800, width = \"100%\", height = 280 }]")

    static let defaultIntroduction =
        "Speech on. Touch the screen and move your finger to hear what is under it. Double tap anywhere to "
        + "activate what you last heard. Swipe right or left for the next or previous item. Two fingers tap to "
        + "pause. Repeat the start gesture to leave."
}

struct ElementKeys: KeyTable {
    let id = Schema.id(example: "fare-list")
    let shape = ShapeKey(
        required: true, allowed: "exactly one of the three, as a control's",
        example: "frame = { x = 100, y = 200, width = 600, height = 90 }")
    let label = Schema.label
    let hint = Schema.hint
    let role = Setting(
        "role", Schema.speechText("role"), default: "button",
        doc: "spoken after the label: what it is (`\"button\"`, `\"link\"`, `\"text field\"`…)",
        example: "role = \"link\"")
    let activationPoint = Key(
        "activation_point", .table(Schema.point.schema, type: "table `{ x, y }`"), absent: "absent: the centre",
        allowed: "a point inside the shape, [coordinate rules](#shapes-and-coordinates)",
        doc: "where a double tap taps the application",
        example: "activation_point = { x = 160, y = 245 }")
    let screen = Key(
        "screen", .string, absent: "absent: every screen", allowed: "the id of a declared `[[screen]]`",
        example: "screen = \"fares\"")
    let isPrivate = Setting(
        "private", .boolean, default: false,
        doc: "`true`: nothing is spoken after it is activated (what the customer typed stays off the loudspeaker)",
        example: "private = true")
}

struct PointKeys: KeyTable {
    let x = Key("x", .value(type: "number or string"), required: true, example: "x = 160")
    let y = Key("y", .value(type: "number or string"), required: true, example: "y = \"50%\"")
}
