// Golden scenario scripts for the TouchModel (keyd-style): one `.scenario` file per behaviour in
// Tests/TouchModelTests/Scenarios/, run by ScenarioTests. Scenarios/README.md has the same grammar
// with examples.
//
// A script declares a scene, then alternates steps with the exact output each step must produce.
// Blank lines are ignored; `#` starts a comment (whole line, or after whitespace at the end of any
// line except a `!` line, whose text is compared verbatim).
//
// Declarations (before the first step or expectation, which builds the scene):
//
//     target NAME ACTION...                  a target responding to these actions (`*`: to all)
//     application NAME                       the application's handler target
//     group ID [SHAPE] [parent=G] [target=T]
//     screen ID GROUP,GROUP...|- [target=T]  (the first screen is shown unless settings says)
//     control ID KIND SHAPE [OPTION=VALUE...]
//         KIND button | toggle | slider | segmented
//         SHAPE rect X Y W H | circle CX CY R | polygon X,Y X,Y X,Y...
//         options: parent= z= outset= repeat_ms= slop= target= enabled= selected= value= to_app=
//         slider: min= max= axis=horizontal|vertical continuous=true|false step=S (values snap to min + k·S)
//         segmented: segments=N (required) axis=
//     action CONTROL EVENTS TARGET|- ACTION  adds an entry (TargetActionTable.add); `-` = nil target
//     gesture ID KIND [SHAPE] [OPTION=VALUE...]   a recognizer, in declaration order
//         KIND tap | long_press | swipe | pan | pinch; no SHAPE: its control's, group's or everywhere
//         options: fingers= parent= control= cancels=true|false delays=true|false delays_began=true|false
//                  simultaneous=G,G... requires=G,G...
//         tap: taps= max_ms= movement= interval_ms= slop=    long_press: min_ms= movement=
//         swipe: directions=left,up... distance= max_ms= edge=left|right|top|bottom margin=
//         pan: distance=    pinch: threshold=
//     gaction GESTURE EVENTS TARGET|- ACTION  a recognizer's entry; EVENTS: began,changed,recognized,...
//     output W H                             the screen whose edges swipes start from (1920 1080)
//     settings [max_contacts=N] [stuck_ms=N] [active_screen=ID] [app=on] [app_max=N] [swallow_ms=N]
//                                            app...: the application beneath the controls (filter mode)
//     expect deadlines                       every step also prints `> deadline MS` (nextDeadline)
//
// EVENTS is a comma-separated list of event or mask names (`touchDown,allEditingEvents`) or
// hexadecimal bits (`0x01000000`). Times are milliseconds (`1.5` = 1500 µs).
//
// Steps, each followed by its expected output:
//
//     TIME SAMPLE [; SAMPLE]...          one input frame (Scene.handle); SAMPLE is
//                                        down C X Y | move C X Y | up C [X Y] | cancel C
//     @TIME advance                      Scene.advance(to:)
//     @TIME enable C | disable C | select C on|off | value C V | remove C | screen S
//     @TIME send C EVENTS                Scene.sendActions(for:control:at:)
//     @ addtarget NAME ACTION...|*       Scene.addTarget (the model takes no time for these four)
//     @ untarget NAME                    Scene.removeTarget(named:): a weak target went away
//     @ addaction C EVENTS TARGET|- ACTION
//     @ removeaction C EVENTS TARGET|-|* ACTION|*    (`*` = nil: every target / every action)
//     ? table C                          prints `> entry TARGET|- ACTION EVENTS` per entry, in order
//     ? control C                        prints `> control C state=S [value=V] [contact=N]` or
//                                        `> control C absent`
//     ? contacts                         prints `> contacts N` (contacts down)
//     ? gesture G                        prints `> recognizer G STATE`
//
// Expected output, listed completely and in this canonical order (a step with no such line
// asserts that it produced nothing):
//
//     > event C EVENT [contact=N] state=STATE [value=V]         each Output entry, in order
//     > gesture G EVENT state=STATE contacts=N,N|- [translation=X,Y] [scale=S] [direction=D]
//     > action C|G EVENT ACTION target=T responder=R | target=-   (`-`: unhandled)
//     > app C down|move|up|cancel [X,Y]                         what the application sees (filter mode)
//     ! DIAGNOSTIC                                              Diagnostic.description, in order
//     > deadline MS                                             only after `expect deadlines`
//
// Expected lines before the first step belong to building the scene: `! build error: PROBLEM`, one
// per Scene.BuildError problem; none means the scene must build. The runner is strict: an unknown
// directive, option or name, a malformed line or a declaration after the scene is built is a
// failure at its file:line, and so is every step whose output differs (with a line diff).

import TouchModel

/// A malformed line, or a step whose output is not the expected one.
struct ScenarioFailure: Error, Hashable, CustomStringConvertible {
    var file: String
    var line: Int
    var message: String

    var description: String { "\(file):\(line): \(message)" }
}

/// Parses and runs one scenario script.
struct ScenarioRunner {
    /// The file name used in failures.
    var file: String

    /// Runs the script and returns every failure (empty when the scenario passes).
    func run(_ text: String) -> [ScenarioFailure] {
        var parser = ScenarioParser(file: file)
        let script = parser.parse(text)
        guard parser.failures.isEmpty else { return parser.failures }
        return execute(script)
    }

    /// Every expected line of the script, for coverage checks; nil when the script is malformed.
    func expectedLines(_ text: String) -> [String]? {
        var parser = ScenarioParser(file: file)
        let script = parser.parse(text)
        guard parser.failures.isEmpty else { return nil }
        return script.steps.flatMap(\.expected)
    }

    private func execute(_ script: ScenarioScript) -> [ScenarioFailure] {
        var failures: [ScenarioFailure] = []
        var scene: Scene?
        for step in script.steps {
            let actual: [String]
            if case .build = step.kind {
                do {
                    scene = try script.declarations.build()
                    actual = []
                } catch {
                    actual = error.problems.map { "! build error: \($0)" }
                }
            } else if var current = scene {
                actual = perform(step.kind, on: &current, deadlines: script.declarations.checksDeadlines)
                scene = current
            } else {
                failures.append(ScenarioFailure(file: file, line: step.line, message: "the scene did not build"))
                break
            }
            if actual != step.expected {
                failures.append(
                    ScenarioFailure(
                        file: file, line: step.line,
                        message: Self.mismatch(step: step, expected: step.expected, actual: actual)))
            }
        }
        return failures
    }

    private func perform(_ kind: ScenarioStepKind, on scene: inout Scene, deadlines: Bool) -> [String] {
        switch kind {
        case .build:
            return []
        case .input(let time, let samples):
            return render(scene.handle(Frame(time: time, samples: samples)), deadlines: deadlines)
        case .timed(let time, let command):
            let output: Output
            switch command {
            case .advance: output = scene.advance(to: time)
            case .enable(let id, let enabled): output = scene.setEnabled(id, enabled, at: time)
            case .select(let id, let selected): output = scene.setSelected(id, selected, at: time)
            case .value(let id, let value): output = scene.setValue(id, value, at: time)
            case .remove(let id): output = scene.removeControl(id, at: time)
            case .screen(let id): output = scene.activateScreen(id, at: time)
            case .send(let id, let events): output = scene.sendActions(for: events, control: id, at: time)
            }
            return render(output, deadlines: deadlines)
        case .untimed(let command):
            switch command {
            case .addTarget(let target):
                scene.addTarget(target)
                return []
            case .removeTarget(let name):
                scene.removeTarget(named: name)
                return []
            case .addAction(let id, let events, let target, let action):
                return scene.addAction(control: id, target: target, action: action, for: events).map { "! \($0)" }
            case .removeAction(let id, let events, let target, let action):
                return scene.removeAction(control: id, target: target, action: action, for: events).map { "! \($0)" }
            }
        case .query(let query):
            switch query {
            case .table(let id):
                guard let table = scene.actions(of: id) else { return ["> table \(id) absent"] }
                return table.entries.map { "> entry \($0.target.name ?? "-") \($0.action) \($0.events)" }
            case .control(let id):
                guard let control = scene.control(id), let state = scene.state(of: id) else {
                    return ["> control \(id) absent"]
                }
                var line = "> control \(id) state=\(state)"
                if control.hasValue { line += " value=\(Self.format(control.value))" }
                if let contact = scene.trackedContact(of: id) { line += " contact=\(contact)" }
                return [line]
            case .contacts:
                return ["> contacts \(scene.contactCount)"]
            case .gesture(let id):
                return ["> recognizer \(id) \(scene.gestureState(of: id).map(\.rawValue) ?? "absent")"]
            }
        }
    }

    private func render(_ output: Output, deadlines: Bool) -> [String] {
        var lines: [String] = []
        for entry in output.entries {
            switch entry {
            case .event(let record):
                var line = "> event \(record.control) \(record.event)"
                if let contact = record.contact { line += " contact=\(contact)" }
                line += " state=\(record.state)"
                if let value = record.value { line += " value=\(Self.format(value))" }
                lines.append(line)
            case .gesture(let record):
                let contacts = record.contacts.isEmpty ? "-" : record.contacts.map(String.init).joined(separator: ",")
                var line =
                    "> gesture \(record.gesture) \(record.event) state=\(record.state.rawValue) contacts=\(contacts)"
                if let translation = record.translation {
                    line += " translation=\(Self.format(translation.x)),\(Self.format(translation.y))"
                }
                if let scale = record.scale { line += " scale=\(Self.format((scale * 1000).rounded() / 1000))" }
                if let direction = record.direction { line += " direction=\(direction.names.joined(separator: ","))" }
                lines.append(line)
            case .action(let action):
                let event = action.gestureEvent.map(\.description) ?? action.event.description
                var line = "> action \(action.control) \(event) \(action.action) target=\(action.target ?? "-")"
                if let responder = action.responder { line += " responder=\(responder.id)" }
                lines.append(line)
            case .app(let record):
                var line = "> app \(record.contact) \(record.phase.rawValue)"
                if let location = record.location { line += " \(Self.format(location.x)),\(Self.format(location.y))" }
                lines.append(line)
            }
        }
        lines += output.diagnostics.map { "! \($0)" }
        if deadlines, let deadline = output.nextDeadline {
            lines.append("> deadline \(Self.format(milliseconds: deadline))")
        }
        return lines
    }

    /// Whole numbers without a fraction (`30`, not `30.0`).
    static func format(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Milliseconds, with a fraction only when needed (`30120`, `1.5`).
    static func format(milliseconds instant: Instant) -> String {
        let whole = instant.microseconds / 1000
        let rest = instant.microseconds % 1000
        guard rest != 0 else { return "\(whole)" }
        var fraction = String(rest)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }

    /// The failure message of a step: what ran, and a line diff of expected against actual.
    private static func mismatch(step: ScenarioStep, expected: [String], actual: [String]) -> String {
        var message = "step `\(step.source)` produced a different output (- expected, + actual):"
        for line in diff(expected, actual) { message += "\n    \(line)" }
        if expected.isEmpty { message += "\n    (nothing was expected)" }
        if actual.isEmpty { message += "\n    (nothing was produced)" }
        return message
    }

    /// A longest-common-subsequence line diff: `  ` same, `- ` only expected, `+ ` only actual.
    static func diff(_ expected: [String], _ actual: [String]) -> [String] {
        let rows = expected.count
        let columns = actual.count
        var lengths = [[Int]](repeating: [Int](repeating: 0, count: columns + 1), count: rows + 1)
        for row in stride(from: rows - 1, through: 0, by: -1) {
            for column in stride(from: columns - 1, through: 0, by: -1) {
                lengths[row][column] =
                    expected[row] == actual[column]
                    ? lengths[row + 1][column + 1] + 1 : max(lengths[row + 1][column], lengths[row][column + 1])
            }
        }
        var result: [String] = []
        var row = 0
        var column = 0
        while row < rows || column < columns {
            if row < rows, column < columns, expected[row] == actual[column] {
                result.append("  \(expected[row])")
                row += 1
                column += 1
            } else if column < columns, row == rows || lengths[row][column + 1] >= lengths[row + 1][column] {
                result.append("+ \(actual[column])")
                column += 1
            } else {
                result.append("- \(expected[row])")
                row += 1
            }
        }
        return result
    }
}

// MARK: - The parsed script

private enum ScenarioTimedCommand: Hashable {
    case advance
    case enable(String, Bool)
    case select(String, Bool)
    case value(String, Double)
    case remove(String)
    case screen(String)
    case send(String, Control.Event)
}

private enum ScenarioUntimedCommand: Hashable {
    case addTarget(Target)
    case removeTarget(String)
    case addAction(String, Control.Event, TargetSlot, String)
    case removeAction(String, Control.Event, TargetSlot?, String?)
}

private enum ScenarioQuery: Hashable {
    case table(String)
    case control(String)
    case contacts
    case gesture(String)
}

private enum ScenarioStepKind: Hashable {
    /// Building the scene from the declarations.
    case build
    case input(Instant, [ContactSample])
    case timed(Instant, ScenarioTimedCommand)
    case untimed(ScenarioUntimedCommand)
    case query(ScenarioQuery)
}

private struct ScenarioStep: Hashable {
    var line: Int
    /// The step's line as written, for messages.
    var source: String
    var kind: ScenarioStepKind
    /// The expected output lines, normalised.
    var expected: [String] = []
}

/// What the declarations say, turned into a scene on the first step.
private struct ScenarioDeclarations {
    var targets: [Target] = []
    var applicationTarget: String?
    var groups: [Group] = []
    var screens: [Screen] = []
    var controls: [Control] = []
    var gestures: [GestureRecognizer] = []
    var output = Rect(x: 0, y: 0, width: 1920, height: 1080)
    var activeScreen: String?
    var settings = Scene.Settings()
    var checksDeadlines = false

    func build() throws(Scene.BuildError) -> Scene {
        try Scene(
            controls: controls, gestures: gestures, groups: groups, screens: screens, activeScreen: activeScreen,
            applicationTarget: applicationTarget, targets: targets, settings: settings)
    }
}

private struct ScenarioScript {
    var declarations = ScenarioDeclarations()
    var steps: [ScenarioStep] = []
}

// MARK: - Parsing

/// A line that cannot be understood; becomes a failure at its line.
private struct ScenarioLineError: Error {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}

private struct ScenarioParser {
    var file: String
    private(set) var failures: [ScenarioFailure] = []
    private var script = ScenarioScript()

    init(file: String) {
        self.file = file
    }

    mutating func parse(_ text: String) -> ScenarioScript {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (offset, raw) in lines.enumerated() {
            let number = offset + 1
            var line = String(raw)
            if line.hasSuffix("\r") { line.removeLast() }
            line = Self.trimmed(line)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if !line.hasPrefix("!") { line = Self.trimmed(Self.withoutComment(line)) }
            do {
                try parseLine(line, number: number)
            } catch {
                failures.append(ScenarioFailure(file: file, line: number, message: error.message))
            }
        }
        if script.steps.isEmpty && failures.isEmpty {
            failures.append(
                ScenarioFailure(file: file, line: max(1, lines.count), message: "the scenario has no step"))
        }
        return script
    }

    private mutating func parseLine(_ line: String, number: Int) throws(ScenarioLineError) {
        let first = line.first ?? " "
        if first == ">" || first == "!" {
            if script.steps.isEmpty {
                script.steps.append(ScenarioStep(line: number, source: "(building the scene)", kind: .build))
            }
            script.steps[script.steps.count - 1].expected.append(try Self.expectation(line))
            return
        }
        let tokens = Self.tokens(line)
        let kind: ScenarioStepKind
        if first == "@" {
            kind = try Self.command(tokens)
        } else if first == "?" {
            kind = .query(try Self.query(tokens))
        } else if first.isNumber {
            kind = try Self.input(line)
        } else {
            guard script.steps.isEmpty else {
                throw ScenarioLineError(
                    "declaration `\(tokens[0])` after the scene was built (first step or expectation)")
            }
            try declare(tokens)
            return
        }
        if script.steps.isEmpty {
            script.steps.append(ScenarioStep(line: number, source: "(building the scene)", kind: .build))
        }
        script.steps.append(ScenarioStep(line: number, source: line, kind: kind))
    }

    // MARK: Expectations

    private static func expectation(_ line: String) throws(ScenarioLineError) -> String {
        if line.hasPrefix("!") {
            let text = trimmed(String(line.dropFirst()))
            guard !text.isEmpty else { throw ScenarioLineError("empty diagnostic line") }
            return "! \(text)"
        }
        let words = tokens(String(line.dropFirst()))
        guard let head = words.first else { throw ScenarioLineError("empty `>` line") }
        guard
            ["event", "action", "deadline", "entry", "control", "contacts", "table", "gesture", "recognizer", "app"]
                .contains(head)
        else {
            throw ScenarioLineError(
                "unknown output line `> \(head)` (event, gesture, action, app, deadline, entry, control, contacts, recognizer)"
            )
        }
        return "> " + words.joined(separator: " ")
    }

    // MARK: Declarations

    private mutating func declare(_ tokens: [String]) throws(ScenarioLineError) {
        var declarations = script.declarations
        let arguments = Array(tokens.dropFirst())
        switch tokens[0] {
        case "target":
            guard arguments.count >= 2 else { throw ScenarioLineError("usage: target NAME ACTION... | target NAME *") }
            declarations.targets.append(try Self.target(arguments))
        case "application":
            guard arguments.count == 1 else { throw ScenarioLineError("usage: application TARGET") }
            guard declarations.applicationTarget == nil else { throw ScenarioLineError("application declared twice") }
            declarations.applicationTarget = arguments[0]
        case "group":
            guard let id = arguments.first else {
                throw ScenarioLineError("usage: group ID [SHAPE] [parent=G] [target=T]")
            }
            var rest = Array(arguments.dropFirst())
            var shape: Shape?
            if let word = rest.first, !word.contains("=") { shape = try Self.shape(&rest) }
            var options = try Options(rest)
            let group = Group(
                id: id, parent: try options.string("parent"), shape: shape, target: try options.string("target"))
            try options.finish()
            declarations.groups.append(group)
        case "screen":
            guard arguments.count >= 2 else { throw ScenarioLineError("usage: screen ID GROUP,GROUP...|- [target=T]") }
            let groups = arguments[1] == "-" ? [] : arguments[1].split(separator: ",").map(String.init)
            var options = try Options(Array(arguments.dropFirst(2)))
            declarations.screens.append(Screen(id: arguments[0], groups: groups, target: try options.string("target")))
            try options.finish()
        case "control":
            declarations.controls.append(try Self.control(arguments))
        case "action":
            guard arguments.count == 4 else { throw ScenarioLineError("usage: action CONTROL EVENTS TARGET|- ACTION") }
            guard let index = declarations.controls.firstIndex(where: { $0.id == arguments[0] }) else {
                throw ScenarioLineError("action for undeclared control \(arguments[0])")
            }
            declarations.controls[index].actions.add(
                target: Self.targetSlot(arguments[2]), action: arguments[3], for: try Self.events(arguments[1]))
        case "gesture":
            declarations.gestures.append(try Self.gesture(arguments, output: declarations.output))
        case "gaction":
            guard arguments.count == 4 else {
                throw ScenarioLineError("usage: gaction GESTURE EVENTS TARGET|- ACTION")
            }
            guard let index = declarations.gestures.firstIndex(where: { $0.id == arguments[0] }) else {
                throw ScenarioLineError("gaction for undeclared gesture \(arguments[0])")
            }
            declarations.gestures[index].add(
                target: Self.targetSlot(arguments[2]), action: arguments[3], for: try Self.gestureEvents(arguments[1]))
        case "output":
            guard arguments.count == 2, let width = Double(arguments[0]), let height = Double(arguments[1]) else {
                throw ScenarioLineError("usage: output W H")
            }
            declarations.output = Rect(x: 0, y: 0, width: width, height: height)
        case "settings":
            var options = try Options(arguments)
            if let limit = try options.integer("max_contacts") { declarations.settings.maximumContacts = limit }
            if let stuck = try options.integer("stuck_ms") {
                guard stuck >= 0 else { throw ScenarioLineError("stuck_ms must not be negative") }
                declarations.settings.stuckContactTimeout = UInt64(stuck) * 1000
            }
            if let screen = try options.string("active_screen") { declarations.activeScreen = screen }
            // The application beneath the controls (filter mode): on with `app=on`, or any of its settings.
            let app = try options.string("app")
            let appMaximum = try options.integer("app_max")
            let swallow = try options.integer("swallow_ms")
            if app == "on" || appMaximum != nil || swallow != nil {
                guard (swallow ?? 0) >= 0 else { throw ScenarioLineError("swallow_ms must not be negative") }
                declarations.settings.app = AppSettings(
                    maximumContacts: appMaximum ?? 0, swallowAfterIdle: UInt64(swallow ?? 0) * 1000)
            }
            try options.finish()
        case "expect":
            guard arguments == ["deadlines"] else { throw ScenarioLineError("usage: expect deadlines") }
            declarations.checksDeadlines = true
        default:
            throw ScenarioLineError(
                "unknown directive `\(tokens[0])` (target, application, group, screen, control, action, gesture, "
                    + "gaction, output, settings, expect, a time, @, ?, >, !)")
        }
        script.declarations = declarations
    }

    private static func target(_ arguments: [String]) throws(ScenarioLineError) -> Target {
        let actions = Array(arguments.dropFirst())
        if actions == ["*"] { return Target(name: arguments[0], actions: .all) }
        guard !actions.contains("*") else { throw ScenarioLineError("`*` must be a target's only action") }
        return Target(name: arguments[0], respondsTo: actions)
    }

    private static func control(_ arguments: [String]) throws(ScenarioLineError) -> Control {
        guard arguments.count >= 3 else { throw ScenarioLineError("usage: control ID KIND SHAPE [OPTION=VALUE...]") }
        let id = arguments[0]
        var rest = Array(arguments.dropFirst(2))
        let shape = try shape(&rest)
        var options = try Options(rest)
        let kind: Control.Kind
        switch arguments[1] {
        case "button":
            kind = .button
        case "toggle":
            kind = .toggle
        case "slider":
            var slider = Control.Slider()
            slider.minimum = try options.number("min") ?? slider.minimum
            slider.maximum = try options.number("max") ?? slider.maximum
            slider.axis = try options.axis() ?? slider.axis
            slider.isContinuous = try options.boolean("continuous") ?? slider.isContinuous
            slider.step = try options.number("step")
            kind = .slider(slider)
        case "segmented":
            guard let count = try options.integer("segments") else {
                throw ScenarioLineError("segmented needs segments=N")
            }
            kind = .segmented(Control.Segmented(count: count, axis: try options.axis() ?? .horizontal))
        default:
            throw ScenarioLineError("unknown control kind `\(arguments[1])` (button, toggle, slider, segmented)")
        }
        var repeatInterval = Control.defaultRepeatInterval
        if let milliseconds = try options.integer("repeat_ms") {
            guard milliseconds >= 0 else { throw ScenarioLineError("repeat_ms must not be negative") }
            repeatInterval = UInt64(milliseconds) * 1000
        }
        let control = Control(
            id: id, kind: kind, shape: shape, parent: try options.string("parent"), z: try options.integer("z") ?? 0,
            isEnabled: try options.boolean("enabled") ?? true, isSelected: try options.boolean("selected") ?? false,
            value: try options.number("value"), dragOutset: try options.number("outset") ?? Control.defaultDragOutset,
            repeatInterval: repeatInterval, repeatSlop: try options.number("slop") ?? Control.defaultRepeatSlop,
            target: try options.string("target"), toApp: try options.boolean("to_app") ?? true)
        try options.finish()
        return control
    }

    private static func gesture(_ arguments: [String], output: Rect) throws(ScenarioLineError) -> GestureRecognizer {
        guard arguments.count >= 2 else { throw ScenarioLineError("usage: gesture ID KIND [SHAPE] [OPTION=VALUE...]") }
        var rest = Array(arguments.dropFirst(2))
        var shape: Shape?
        if let word = rest.first, !word.contains("=") { shape = try Self.shape(&rest) }
        var options = try Options(rest)
        func milliseconds(_ key: String) throws(ScenarioLineError) -> UInt64? {
            guard let value = try options.integer(key) else { return nil }
            guard value >= 0 else { throw ScenarioLineError("\(key) must not be negative") }
            return UInt64(value) * 1000
        }
        let kind: GestureRecognizer.Kind
        switch arguments[1] {
        case "tap":
            var tap = GestureRecognizer.Tap()
            tap.taps = try options.integer("taps") ?? tap.taps
            tap.maximumDuration = try milliseconds("max_ms")
            tap.allowableMovement = try options.number("movement") ?? tap.allowableMovement
            tap.interval = try milliseconds("interval_ms") ?? tap.interval
            tap.slop = try options.number("slop") ?? tap.slop
            kind = .tap(tap)
        case "long_press":
            var press = GestureRecognizer.LongPress()
            press.minimumDuration = try milliseconds("min_ms") ?? press.minimumDuration
            press.allowableMovement = try options.number("movement") ?? press.allowableMovement
            kind = .longPress(press)
        case "swipe":
            var swipe = GestureRecognizer.Swipe()
            if let names = try options.string("directions") {
                swipe.directions = []
                for name in names.split(separator: ",") {
                    guard let direction = GestureRecognizer.Directions(name: String(name)) else {
                        throw ScenarioLineError("unknown direction `\(name)` (left, right, up, down)")
                    }
                    swipe.directions.insert(direction)
                }
            }
            swipe.minimumDistance = try options.number("distance") ?? swipe.minimumDistance
            swipe.maximumDuration = try milliseconds("max_ms")
            let margin = try options.number("margin") ?? 30
            if let side = try options.string("edge") {
                guard let side = GestureRecognizer.Edge.Side(rawValue: side) else {
                    throw ScenarioLineError("edge=\(side): left, right, top or bottom")
                }
                swipe.edge = GestureRecognizer.Edge(side: side, margin: margin, bounds: output)
            }
            kind = .swipe(swipe)
        case "pan":
            kind = .pan(GestureRecognizer.Pan(minimumDistance: try options.number("distance") ?? 100))
        case "pinch":
            kind = .pinch(GestureRecognizer.Pinch(threshold: try options.number("threshold") ?? 10))
        default:
            throw ScenarioLineError("unknown gesture kind `\(arguments[1])` (tap, long_press, swipe, pan, pinch)")
        }
        func list(_ key: String) throws(ScenarioLineError) -> [String] {
            try options.string(key).map { $0.split(separator: ",").map(String.init) } ?? []
        }
        let gesture = GestureRecognizer(
            id: arguments[0], kind: kind, fingers: try options.integer("fingers") ?? 1, shape: shape,
            parent: try options.string("parent"), control: try options.string("control"),
            cancelsTouches: try options.boolean("cancels") ?? true,
            delaysTouchesEnded: try options.boolean("delays") ?? true,
            simultaneousWith: try list("simultaneous"), requiresFailureOf: try list("requires"),
            delaysTouchesBegan: try options.boolean("delays_began") ?? false)
        try options.finish()
        return gesture
    }

    static func gestureEvents(_ word: String) throws(ScenarioLineError) -> GestureRecognizer.Event {
        var events: GestureRecognizer.Event = []
        for name in word.split(separator: ",", omittingEmptySubsequences: false) {
            guard let event = GestureRecognizer.Event(name: String(name)) else {
                throw ScenarioLineError("unknown gesture event `\(name)`")
            }
            events.formUnion(event)
        }
        return events
    }

    /// Consumes a shape from the front of `words`.
    private static func shape(_ words: inout [String]) throws(ScenarioLineError) -> Shape {
        guard let kind = words.first else { throw ScenarioLineError("missing shape (rect, circle, polygon)") }
        words.removeFirst()
        switch kind {
        case "rect":
            let numbers = try numbers(&words, count: 4, usage: "rect X Y W H")
            return .rect(Rect(x: numbers[0], y: numbers[1], width: numbers[2], height: numbers[3]))
        case "circle":
            let numbers = try numbers(&words, count: 3, usage: "circle CX CY R")
            return .circle(Circle(center: Point(x: numbers[0], y: numbers[1]), radius: numbers[2]))
        case "polygon":
            var vertices: [Point] = []
            while let word = words.first, !word.contains("=") {
                let parts = word.split(separator: ",", omittingEmptySubsequences: false)
                guard parts.count == 2, let x = Double(parts[0]), let y = Double(parts[1]) else {
                    throw ScenarioLineError("polygon vertex `\(word)` is not X,Y")
                }
                vertices.append(Point(x: x, y: y))
                words.removeFirst()
            }
            return .polygon(Polygon(vertices: vertices))
        default:
            throw ScenarioLineError("unknown shape `\(kind)` (rect, circle, polygon)")
        }
    }

    private static func numbers(_ words: inout [String], count: Int, usage: String) throws(ScenarioLineError)
        -> [Double]
    {
        guard words.count >= count else { throw ScenarioLineError("usage: \(usage)") }
        var result: [Double] = []
        for word in words.prefix(count) {
            guard let number = Double(word) else { throw ScenarioLineError("`\(word)` is not a number (\(usage))") }
            result.append(number)
        }
        words.removeFirst(count)
        return result
    }

    // MARK: Steps

    private static func input(_ line: String) throws(ScenarioLineError) -> ScenarioStepKind {
        let parts = line.split(separator: ";", omittingEmptySubsequences: false).map { tokens(String($0)) }
        guard var first = parts.first, !first.isEmpty else {
            throw ScenarioLineError("usage: TIME SAMPLE [; SAMPLE]...")
        }
        let time = try instant(first.removeFirst())
        var samples: [ContactSample] = []
        for words in [first] + parts.dropFirst() {
            samples.append(try sample(words))
        }
        return .input(time, samples)
    }

    private static func sample(_ words: [String]) throws(ScenarioLineError) -> ContactSample {
        let usage = "down C X Y | move C X Y | up C [X Y] | cancel C"
        guard words.count >= 2, let contact = Int(words[1]) else { throw ScenarioLineError("sample usage: \(usage)") }
        var location: Point?
        if words.count == 4 {
            guard let x = Double(words[2]), let y = Double(words[3]) else {
                throw ScenarioLineError("`\(words[2]) \(words[3])` is not a location")
            }
            location = Point(x: x, y: y)
        } else if words.count != 2 {
            throw ScenarioLineError("sample usage: \(usage)")
        }
        switch (words[0], location) {
        case ("down", let location?): return .began(contact, at: location)
        case ("move", let location?): return .moved(contact, to: location)
        case ("up", _): return .ended(contact, at: location)
        case ("cancel", nil): return .cancelled(contact)
        default: throw ScenarioLineError("sample usage: \(usage)")
        }
    }

    private static func command(_ tokens: [String]) throws(ScenarioLineError) -> ScenarioStepKind {
        let head = tokens[0].dropFirst()
        guard tokens.count >= 2 else { throw ScenarioLineError("usage: @TIME COMMAND... or @ COMMAND...") }
        let name = tokens[1]
        let arguments = Array(tokens.dropFirst(2))
        let untimed = ["addtarget", "untarget", "addaction", "removeaction"]
        if untimed.contains(name) {
            guard head.isEmpty else {
                throw ScenarioLineError("`\(name)` takes no time (the model has none): write `@ \(name)`")
            }
            return .untimed(try untimedCommand(name, arguments))
        }
        guard !head.isEmpty else { throw ScenarioLineError("`\(name)` needs a time: `@TIME \(name)`") }
        return .timed(try instant(String(head)), try timedCommand(name, arguments))
    }

    private static func timedCommand(_ name: String, _ arguments: [String]) throws(ScenarioLineError)
        -> ScenarioTimedCommand
    {
        func expect(_ count: Int, _ usage: String) throws(ScenarioLineError) {
            guard arguments.count == count else { throw ScenarioLineError("usage: @TIME \(name) \(usage)") }
        }
        switch name {
        case "advance":
            try expect(0, "")
            return .advance
        case "enable", "disable":
            try expect(1, "CONTROL")
            return .enable(arguments[0], name == "enable")
        case "select":
            try expect(2, "CONTROL on|off")
            guard arguments[1] == "on" || arguments[1] == "off" else {
                throw ScenarioLineError("select takes on or off")
            }
            return .select(arguments[0], arguments[1] == "on")
        case "value":
            try expect(2, "CONTROL VALUE")
            guard let value = Double(arguments[1]) else { throw ScenarioLineError("`\(arguments[1])` is not a number") }
            return .value(arguments[0], value)
        case "remove":
            try expect(1, "CONTROL")
            return .remove(arguments[0])
        case "screen":
            try expect(1, "SCREEN")
            return .screen(arguments[0])
        case "send":
            try expect(2, "CONTROL EVENTS")
            return .send(arguments[0], try events(arguments[1]))
        default:
            throw ScenarioLineError(
                "unknown command `\(name)` (advance, enable, disable, select, value, remove, screen, send, "
                    + "addtarget, untarget, addaction, removeaction)")
        }
    }

    private static func untimedCommand(_ name: String, _ arguments: [String]) throws(ScenarioLineError)
        -> ScenarioUntimedCommand
    {
        switch name {
        case "addtarget":
            guard arguments.count >= 2 else { throw ScenarioLineError("usage: @ addtarget NAME ACTION...|*") }
            return .addTarget(try target(arguments))
        case "untarget":
            guard arguments.count == 1 else { throw ScenarioLineError("usage: @ untarget NAME") }
            return .removeTarget(arguments[0])
        case "addaction":
            guard arguments.count == 4 else {
                throw ScenarioLineError("usage: @ addaction CONTROL EVENTS TARGET|- ACTION")
            }
            return .addAction(arguments[0], try events(arguments[1]), targetSlot(arguments[2]), arguments[3])
        default:
            guard arguments.count == 4 else {
                throw ScenarioLineError("usage: @ removeaction CONTROL EVENTS TARGET|-|* ACTION|*")
            }
            let target: TargetSlot? = arguments[2] == "*" ? nil : targetSlot(arguments[2])
            let action: String? = arguments[3] == "*" ? nil : arguments[3]
            return .removeAction(arguments[0], try events(arguments[1]), target, action)
        }
    }

    private static func query(_ tokens: [String]) throws(ScenarioLineError) -> ScenarioQuery {
        guard tokens[0] == "?" else { throw ScenarioLineError("write `? QUERY` with a space") }
        switch Array(tokens.dropFirst()) {
        case let words where words.count == 2 && words[0] == "table": return .table(words[1])
        case let words where words.count == 2 && words[0] == "control": return .control(words[1])
        case ["contacts"]: return .contacts
        case let words where words.count == 2 && words[0] == "gesture": return .gesture(words[1])
        default: throw ScenarioLineError("unknown query (? table C, ? control C, ? contacts, ? gesture G)")
        }
    }

    // MARK: Words

    private static func instant(_ word: String) throws(ScenarioLineError) -> Instant {
        let parts = word.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = UInt64(parts[0]) else {
            throw ScenarioLineError("`\(word)` is not a time in ms")
        }
        var microseconds = whole * 1000
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...3).contains(fraction.count), let digits = UInt64(fraction) else {
                throw ScenarioLineError("`\(word)` is not a time in ms (at most 3 decimals)")
            }
            var scale: UInt64 = 1
            for _ in 0..<(3 - fraction.count) { scale *= 10 }
            microseconds += digits * scale
        }
        return Instant(microseconds: microseconds)
    }

    static func events(_ word: String) throws(ScenarioLineError) -> Control.Event {
        var events: Control.Event = []
        for name in word.split(separator: ",", omittingEmptySubsequences: false) {
            if let named = Control.Event(name: String(name)) {
                events.formUnion(named)
            } else if name.hasPrefix("0x"), let bits = UInt32(name.dropFirst(2), radix: 16) {
                events.formUnion(Control.Event(rawValue: bits))
            } else {
                throw ScenarioLineError("unknown event `\(name)`")
            }
        }
        return events
    }

    private static func targetSlot(_ word: String) -> TargetSlot {
        word == "-" ? .responderChain : .target(word)
    }

    static func tokens(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    }

    static func trimmed(_ text: String) -> String {
        var text = Substring(text)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }

    /// The line before a `#` that follows whitespace.
    static func withoutComment(_ line: String) -> String {
        var previous: Character = " "
        var result = ""
        for character in line {
            if character == "#" && (previous == " " || previous == "\t") { break }
            result.append(character)
            previous = character
        }
        return result
    }
}

/// `key=value` options of a declaration: each read at most once, every one must be known.
private struct Options {
    private var values: [String: String] = [:]
    private var order: [String] = []

    init(_ words: [String]) throws(ScenarioLineError) {
        for word in words {
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ScenarioLineError("`\(word)` is not KEY=VALUE")
            }
            let key = String(parts[0])
            guard values.updateValue(String(parts[1]), forKey: key) == nil else {
                throw ScenarioLineError("option \(key) given twice")
            }
            order.append(key)
        }
    }

    mutating func string(_ key: String) throws(ScenarioLineError) -> String? {
        values.removeValue(forKey: key)
    }

    mutating func number(_ key: String) throws(ScenarioLineError) -> Double? {
        guard let text = values.removeValue(forKey: key) else { return nil }
        guard let number = Double(text) else { throw ScenarioLineError("\(key)=\(text) is not a number") }
        return number
    }

    mutating func integer(_ key: String) throws(ScenarioLineError) -> Int? {
        guard let text = values.removeValue(forKey: key) else { return nil }
        guard let number = Int(text) else { throw ScenarioLineError("\(key)=\(text) is not an integer") }
        return number
    }

    mutating func boolean(_ key: String) throws(ScenarioLineError) -> Bool? {
        guard let text = values.removeValue(forKey: key) else { return nil }
        guard text == "true" || text == "false" else { throw ScenarioLineError("\(key)=\(text) is not true or false") }
        return text == "true"
    }

    mutating func axis() throws(ScenarioLineError) -> Control.Axis? {
        guard let text = values.removeValue(forKey: "axis") else { return nil }
        guard let axis = Control.Axis(rawValue: text) else {
            throw ScenarioLineError("axis=\(text): horizontal or vertical")
        }
        return axis
    }

    /// Fails on any option that was not read: unknown, or not valid for this declaration.
    func finish() throws(ScenarioLineError) {
        if let unknown = order.first(where: { values[$0] != nil }) {
            throw ScenarioLineError("unknown or misplaced option \(unknown)=\(values[unknown] ?? "")")
        }
    }
}
