import Glibc
import TOML
import TouchModel

/// Turns a configuration file into a ``Configuration``, collecting every problem at once.
///
/// The limits below are documented in docs/configuration.md; each protects the daemon from a
/// file that is wrong or hostile (fault-cases.md §2.1). Nothing here traps: numbers are range
/// checked before any conversion.
enum ConfigurationLoader {
    enum Limits {
        static let controls = 10_000
        static let groups = 1_000
        static let screens = 64
        static let targets = 256
        static let gestures = 256
        static let elements = 1_000
        static let devices = 32
        static let actionsPerControl = 64
        static let respondsTo = 1_024
        static let polygonVertices = 1_024
        static let argv = 64
        static let argumentBytes = 4_096
        static let environment = 64
        static let idLength = 64
        static let actionLength = 128
        /// Coordinates may leave the output by at most this many output sizes.
        static let coordinateReach = 4.0
    }

    /// Loads and validates the file at `path`; `examine` sees the status of the file opened
    /// (``ConfigurationSource/read(path:limit:examine:)``).
    static func load(path: String, examine: (stat) -> Void = { _ in }) -> Result<Configuration, ConfigurationError> {
        switch ConfigurationSource.read(path: path, examine: examine) {
        case .failure(let problem): .failure(ConfigurationError(path: path, problems: [problem]))
        case .success(let text): load(text: text, path: path)
        }
    }

    /// Validates configuration text; `path` is only used in messages.
    static func load(text: String, path: String) -> Result<Configuration, ConfigurationError> {
        let root: TOMLTable
        do {
            root = try TOMLParser.parse(text)
        } catch {
            return .failure(
                ConfigurationError(
                    path: path,
                    problems: [
                        ConfigurationProblem(line: error.position.line, column: error.position.column, error.message)
                    ]
                ))
        }
        let log = ProblemLog(root: root)
        var decoder = Decoder(root: TableReader(root, path: "", log: log, schema: Schema.root.schema))
        let configuration = decoder.decode()
        if let configuration, log.problems.isEmpty {
            return .success(configuration)
        }
        return .failure(ConfigurationError(path: path, problems: log.sorted))
    }
}

/// One decoding pass over the root table. Every key is read through ``Schema``, which gives its type, range and
/// default; this decides what the keys mean together (references, cycles, the checks across sections).
private struct Decoder {
    typealias Limits = ConfigurationLoader.Limits

    let root: TableReader
    var log: ProblemLog { root.log }
    /// Warnings, positioned like the problems; the configuration carries them.
    let warnings: WarningLog

    /// Where each id was first declared, across controls, groups, screens and gestures.
    private var declared: [String: (kind: String, path: String)] = [:]
    /// Reads shapes against the output (a 1920×1080 one when `[output]` is missing, so the rest is still checked).
    private var shapes = ShapeReader(bounds: Rect(x: 0, y: 0, width: 1920, height: 1080), rotation: .normal)

    init(root: TableReader) {
        self.root = root
        let log = root.log
        warnings = WarningLog(position: { log.position(of: $0).map { ($0.line, $0.column) } })
    }

    mutating func decode() -> Configuration? {
        let sections = Schema.root
        let output = decodeOutput()
        if let output { shapes = ShapeReader(bounds: output.bounds, rotation: output.rotation) }
        let (seat, ignoreVirtual) = decodeInput()
        let devices = (root.read(sections.device) ?? []).map(decodeDevice)
        let tracking = decodeTracking()
        let control = decodeControlSocket()
        let filter = decodeFilter(maximumContacts: tracking.maximumContacts)
        let declaredTargets = decodeTargets()
        let targets = declaredTargets.compactMap(\.definition)
        // Targets with a broken definition stay known by name, so references to them do not add
        // "unknown target" problems on top of the real one.
        let targetsByName = Dictionary(
            declaredTargets.map {
                (
                    $0.name,
                    $0.definition
                        ?? Configuration.TargetDefinition(
                            name: $0.name, kind: .socket(Configuration.SocketTarget(path: "/", type: .stream)),
                            respondsTo: $0.respondsTo)
                )
            },
            uniquingKeysWith: { first, _ in first })
        let applicationEvents = decodeApplicationEvents()
        let applicationTarget = root.read(sections.application).flatMap { table -> String? in
            defer { table.finish() }
            return declaredTarget(Schema.application.target, of: table, targets: targetsByName)
        }

        let groupTables = root.read(sections.group) ?? []
        let screenTables = root.read(sections.screen) ?? []
        let controlTables = root.read(sections.control) ?? []
        let gestureTables = root.read(sections.gesture) ?? []
        // Ids first, so that references can be checked whatever the declaration order.
        let groupIDs = groupTables.map { declareID($0, Schema.group.id, kind: "group") }
        let screenIDs = screenTables.map { declareID($0, Schema.screen.id, kind: "screen") }
        let controlIDs = controlTables.map { declareID($0, Schema.control.id, kind: "control") }
        let gestureIDs = gestureTables.map { declareID($0, Schema.gesture.id, kind: "gesture") }
        let elementTables = root.read(sections.element) ?? []
        let elementIDs = elementTables.map { declareID($0, Schema.element.id, kind: "element") }
        let knownGroups = Set(groupIDs.compactMap { $0 })

        var groups: [Group] = []
        /// `to_app` as each group says it; a control inherits its innermost group's.
        var groupToApp: [String: (value: Bool, path: String)] = [:]
        for (table, id) in zip(groupTables, groupIDs) {
            let key = Schema.group.toApp
            if let toApp = table.read(key), let id { groupToApp[id] = (toApp, table.keyPath(key.name)) }
            if let group = decodeGroup(table, id: id, groups: knownGroups, targets: targetsByName) {
                groups.append(group)
            }
        }
        reportCycles(
            groups.map { ($0.id, $0.parent.map { [$0] } ?? []) }, key: Schema.group.parent.name, kind: "group",
            tables: tablesByID(groupIDs, groupTables))

        let (screens, screenSpeech) = decodeScreens(
            screenTables, ids: screenIDs, groups: knownGroups, targets: targetsByName)

        var controls: [Control] = []
        var privateControls: Set<String> = []
        var controlSpeech: [String: Configuration.Speech] = [:]
        /// Where each control's `to_app = false` comes from (its own key or a group's), for the filter's checks.
        var deadZoneSource: [String: String] = [:]
        let parentOf = Dictionary(groups.map { ($0.id, $0.parent) }, uniquingKeysWith: { first, _ in first })
        for (table, id) in zip(controlTables, controlIDs) {
            let keys = Schema.control
            let ownToApp = table.read(keys.toApp).map { (value: $0, path: table.keyPath(keys.toApp.name)) }
            let isPrivate = table[keys.isPrivate]
            let speech = Configuration.Speech(label: table.read(keys.label), hint: table.read(keys.hint))
            if var control = decodeControl(
                table, id: id, tracking: tracking, groups: knownGroups, targets: targetsByName,
                applicationEvents: applicationEvents)
            {
                var inherited: (value: Bool, path: String)?
                var next = control.parent
                var steps = 0
                while inherited == nil, let group = next, steps <= groups.count {
                    inherited = groupToApp[group]
                    next = parentOf[group] ?? nil
                    steps += 1
                }
                if let toApp = ownToApp ?? inherited {
                    control.toApp = toApp.value
                    if !toApp.value { deadZoneSource[control.id] = toApp.path }
                }
                if isPrivate { privateControls.insert(control.id) }
                if speech.label != nil || speech.hint != nil { controlSpeech[control.id] = speech }
                controls.append(control)
            }
        }

        let knownControls = Set(controlIDs.compactMap { $0 })
        let knownGestures = Set(gestureIDs.compactMap { $0 })
        let gestureContext = GestureKind.Context(tracking: tracking, bounds: shapes.bounds)
        var gestures: [Configuration.Gesture] = []
        for (table, id) in zip(gestureTables, gestureIDs) {
            if let gesture = decodeGesture(
                table, id: id, context: gestureContext, groups: knownGroups, controls: knownControls,
                gestures: knownGestures, targets: targetsByName)
            {
                gestures.append(gesture)
            }
        }
        // A recognizer that needs more fingers than touchd tracks can never fire: refused, not warned about.
        let gestureTablesByID = tablesByID(gestureIDs, gestureTables)
        for gesture in gestures where gesture.fingers > tracking.maximumContacts {
            gestureTablesByID[gesture.id]?.report(
                Schema.gesture.fingers.name,
                "gesture '\(gesture.id)' needs \(gesture.fingers) fingers, but [tracking] max_contacts is "
                    + "\(tracking.maximumContacts): contacts beyond it are ignored, so it can never fire")
        }
        reportLayoutWarnings(
            groups: groups, screens: screens, controls: controls,
            groupPaths: tablesByID(groupIDs, groupTables).mapValues(\.path),
            controlPaths: tablesByID(controlIDs, controlTables).mapValues(\.path))
        // A recognizer that waits for itself, even through others, would never recognize.
        reportCycles(
            gestures.map { ($0.id, $0.requiresFailureOf) }, key: Schema.gesture.requiresFailureOf.name,
            kind: "gesture", tables: gestureTablesByID)
        checkFilterKeys(filter: filter, deadZones: deadZoneSource, gestures: gestures, gestureTables: gestureTablesByID)
        let idle = decodeIdle(targets: targetsByName, screens: Set(screenIDs.compactMap { $0 }))
        checkWakeTouch(filter: filter, idle: idle)
        let elements = zip(elementTables, elementIDs).compactMap { table, id in
            decodeElement(table, id: id, screens: Set(screenIDs.compactMap { $0 }))
        }
        let accessibility = decodeAccessibility(gestures: Set(gestureIDs.compactMap { $0 }))
        checkAccessibility(
            accessibility, filter: filter, controls: controls, controlSpeech: controlSpeech,
            controlTables: tablesByID(controlIDs, controlTables), elements: elements,
            elementTables: tablesByID(elementIDs, elementTables), groups: groups, screens: screens)
        root.finish()

        guard let output else { return nil }
        return Configuration(
            output: output, seat: seat, ignoreVirtual: ignoreVirtual, devices: devices.compactMap { $0 },
            tracking: tracking, controlSocket: control,
            filter: filter, idle: idle, targets: targets,
            applicationTarget: applicationTarget, applicationEvents: applicationEvents, screens: screens,
            groups: groups, controls: controls, gestures: gestures, privateControls: privateControls,
            accessibility: accessibility, controlSpeech: controlSpeech, elements: elements,
            screenSpeech: screenSpeech, warnings: warnings.warnings)
    }

    // MARK: - Sections

    private func decodeOutput() -> Configuration.Output? {
        guard let table = root.read(Schema.root.output) else {
            root.report(Schema.root.output.name, "missing required table [output] (the screen size in pixels)")
            return nil
        }
        defer { table.finish() }
        let keys = Schema.output
        let width = table.read(keys.width)
        let height = table.read(keys.height)
        let rotation = table[keys.rotation]
        let calibration = table.read(keys.calibration)
        guard let width, let height else { return nil }
        return Configuration.Output(width: width, height: height, rotation: rotation, calibration: calibration)
    }

    /// `[input]`: the seat, and whether virtual input devices are left alone.
    private func decodeInput() -> (seat: String, ignoreVirtual: Bool) {
        let keys = Schema.input
        guard let table = root.read(Schema.root.input) else {
            return (keys.seat.defaultValue, keys.ignoreVirtual.defaultValue)
        }
        defer { table.finish() }
        let ignoreVirtual = table[keys.ignoreVirtual]
        return (table[keys.seat], ignoreVirtual)
    }

    private func decodeControlSocket() -> Configuration.ControlSocket {
        guard let table = root.read(Schema.root.controlSocket) else { return Configuration.ControlSocket() }
        defer { table.finish() }
        let keys = Schema.controlSocket
        let enabled = table[keys.enabled]
        let path = table.read(keys.socket)
        // touchd run refuses such a directory (ControlListener.create) and runs without a control socket.
        if enabled, let path, let shared = ControlListener.directoryProblem(ofSocket: path) {
            warnings.report(
                table.keyPath(keys.socket.name),
                "touchd run will not create its control socket here: \(shared), so another user could put "
                    + "a socket of their own in its place; touchd then runs without one (touchd ctl cannot "
                    + "reach it). Use a directory only root or touchd can write, such as socket = "
                    + "\"/run/touchd/control.sock\"")
        }
        return Configuration.ControlSocket(
            enabled: enabled, path: path ?? keys.socket.defaultValue, group: table[keys.group],
            adminGroup: table[keys.adminGroup], maximumClients: table[keys.maximumClients])
    }

    private func decodeDevice(_ table: TableReader) -> Configuration.DeviceMatch? {
        defer { table.finish() }
        let keys = Schema.device
        let name = table.read(keys.name)
        let vendor = table.read(keys.vendor)
        let product = table.read(keys.product)
        let path = table.read(keys.path)
        var region: Rect?
        if let regionTable = table.read(keys.region) {
            region = shapes.rect(regionTable)
            regionTable.finish()
            let bounds = shapes.bounds
            if let area = region,
                area.minX < bounds.minX || area.minY < bounds.minY || area.maxX > bounds.maxX
                    || area.maxY > bounds.maxY
            {
                table.report(
                    keys.region.name, "the region must lie inside the output (a device covers part of the screen)")
                region = nil
            }
        }
        let rotation = table.read(keys.rotation)
        let calibration = table.read(keys.calibration)
        // Presence, not validity: a matcher with a bad value has its own problem already.
        guard keys.matchers.contains(where: { table.table.contains(key: $0) }) else {
            table.reportTable("a device entry needs at least one of \(keys.matchers.joined(separator: ", "))")
            return nil
        }
        return Configuration.DeviceMatch(
            name: name, vendor: vendor, product: product, path: path, region: region, rotation: rotation,
            calibration: calibration)
    }

    private func decodeFilter(maximumContacts: Int) -> Configuration.Filter {
        guard let table = root.read(Schema.root.filter) else { return Configuration.Filter() }
        defer { table.finish() }
        let keys = Schema.filter
        let enabled = table[keys.enabled]
        let appMaxContacts = table[keys.appMaxContacts]
        if appMaxContacts > maximumContacts {
            warnings.report(
                table.keyPath(keys.appMaxContacts.name),
                "\(appMaxContacts) is more than [tracking] max_contacts (\(maximumContacts)): touchd ignores contacts"
                    + " beyond \(maximumContacts), so the application never has more")
        }
        return Configuration.Filter(
            enabled: enabled, appMaxContacts: appMaxContacts, swallowAfterIdle: table[keys.swallowAfterIdle],
            cancelWith: table[keys.cancelWith], twinSpace: table[keys.twinSpace],
            grabSiblings: table[keys.grabSiblings])
    }

    /// `[filter] swallow_after_idle_s` and `[idle] timeout_s` both count from the last lift (Engine+Idle.swift,
    /// SceneApp.swift): `idle` fires after timeout_s, its `wake` at the next touch-down; the first touch after
    /// swallow_after_idle_s is kept from the application. Set together, they mean "the touch that wakes the idle kiosk
    /// must not click the application"; different values cannot do that, and the warning says which touches go wrong.
    private func checkWakeTouch(filter: Configuration.Filter, idle: Configuration.Idle) {
        let swallow = filter.swallowAfterIdle
        guard filter.enabled, swallow > 0, idle.isEnabled, swallow != idle.timeout else { return }
        let path = "\(Schema.root.filter.name).\(Schema.filter.swallowAfterIdle.name)"
        let swallowText = Self.seconds(swallow)
        let idleText = Self.seconds(idle.timeout)
        if swallow > idle.timeout {
            // Only a visible idle makes the wake touch matter: an idle with no actions and no screen changes nothing.
            guard !idle.actions.isEmpty || idle.screen != nil else { return }
            warnings.report(
                path,
                "\(swallowText) s is longer than [idle] timeout_s (\(idleText) s): a touch that comes between "
                    + "\(idleText) and \(swallowText) s after the last one wakes the idle kiosk (its wake actions run) and still "
                    + "reaches the application, so it can click what is under it; set swallow_after_idle_s = "
                    + "\(idleText) to keep exactly the waking touch from the application")
        } else {
            warnings.report(
                path,
                "\(swallowText) s is shorter than [idle] timeout_s (\(idleText) s): a touch that comes between "
                    + "\(swallowText) and \(idleText) s after the last one is kept from the application although the "
                    + "kiosk is not idle yet (no idle fired, the page is still in use), so that tap is lost; set "
                    + "swallow_after_idle_s = \(idleText) to swallow exactly the touch that wakes it")
        }
    }

    /// Microseconds as seconds for a message: `60`, `0.5`.
    private static func seconds(_ microseconds: UInt64) -> String {
        microseconds % 1_000_000 == 0 ? "\(microseconds / 1_000_000)" : "\(Double(microseconds) / 1_000_000)"
    }

    /// `to_app` and `delays_touches_began` only mean something in filter mode; a setting that can make no
    /// difference is a mistake worth naming (docs/kiosk.md).
    private func checkFilterKeys(
        filter: Configuration.Filter, deadZones: [String: String], gestures: [Configuration.Gesture],
        gestureTables: [String: TableReader]
    ) {
        let key = Schema.gesture.delaysTouchesBegan.name
        let delaying = gestures.filter(\.delaysTouchesBegan)
        guard filter.enabled else {
            // Once per key: a group's to_app that its controls inherit is one mistake, not one per control.
            for path in Set(deadZones.values).sorted() {
                warnings.report(path, "to_app = false has no effect: [filter] enabled is not true")
            }
            for gesture in delaying {
                if let table = gestureTables[gesture.id] {
                    warnings.report(table.keyPath(key), "\(key) has no effect: [filter] enabled is not true")
                }
            }
            return
        }
        for gesture in delaying {
            guard let control = gesture.control, deadZones[control] != nil, gesture.shape == nil,
                let table = gestureTables[gesture.id]
            else { continue }
            table.report(
                key,
                "makes no difference: control \(control) has to_app = false, so its touches never reach the"
                    + " application; remove \(key) or set to_app = true on \(control)")
        }
    }

    private func decodeTracking() -> Configuration.Tracking {
        guard let table = root.read(Schema.root.tracking) else { return Configuration.Tracking() }
        defer { table.finish() }
        let keys = Schema.tracking
        return Configuration.Tracking(
            dragOutset: table[keys.dragOutset], repeatInterval: table[keys.repeatInterval],
            repeatSlop: table[keys.repeatSlop], maximumContacts: table[keys.maximumContacts],
            stuckContactTimeout: table[keys.stuckContactTimeout])
    }

    private typealias DeclaredTarget = (
        name: String, respondsTo: [String], definition: Configuration.TargetDefinition?
    )

    private func decodeTargets() -> [DeclaredTarget] {
        guard let table = root.read(Schema.root.targets) else { return [] }
        defer { table.finish() }
        let names = table.table.keys.sorted()
        guard names.count <= Limits.targets else {
            table.reportTable("\(names.count) targets; at most \(Limits.targets) are allowed")
            // One problem for the whole table, not one "unknown key" per target on top of it.
            for name in names { _ = table.value(name) }
            return []
        }
        var result: [DeclaredTarget] = []
        for name in names {
            guard let target = table.table(name, schema: Schema.target.schema) else { continue }
            defer { target.finish() }
            if !isValidID(name) {
                table.report(name, "'\(name)' is not a valid target name: \(idRule)")
            }
            let respondsTo = target.read(Schema.target.respondsTo) ?? []
            // The kind is the one kind key the target gives.
            let kinds = Schema.targetKinds
            let given = kinds.filter { target.contains($0.name) }
            var kind: Configuration.TargetDefinition.Kind?
            if given.count == 1, let only = given.first {
                target.kind = only.name
                kind = only.decode(target, warnings)
            } else if given.isEmpty {
                target.reportTable(
                    "a target needs " + kinds.map { "'\($0.name)' (\($0.what))" }.joined(separator: " or "))
            } else {
                target.reportTable("a target is either \(given.map(\.article).joined(separator: " or ")), not both")
            }
            result.append(
                (
                    name, respondsTo,
                    kind.map { Configuration.TargetDefinition(name: name, kind: $0, respondsTo: respondsTo) }
                ))
        }
        return result
    }

    private func decodeApplicationEvents() -> [String: Control.Event] {
        guard let table = root.read(Schema.root.applicationEvents) else { return [:] }
        defer { table.finish() }
        var result: [String: Control.Event] = [:]
        var used: [Int: String] = [:]
        for name in table.table.keys.sorted() {
            guard let index = table.integer(name, in: 0...3) else { continue }
            if Control.Event(name: name) != nil || GestureEvents.all.contains(name) {
                table.report(name, "'\(name)' is already the name of a built-in event")
            } else if !isValidID(name) {
                table.report(name, "'\(name)' is not a valid event name: \(idRule)")
            } else if let other = used[index] {
                table.report(name, "bit \(index) of applicationReserved is already named '\(other)'")
            } else {
                used[index] = name
                result[name] = Control.Event(rawValue: 1 << UInt32(24 + index))
            }
        }
        return result
    }

    // MARK: - Ids and references

    /// Reads and registers the `id` of a control, group, screen or gesture; nil when missing,
    /// malformed or already used (the message names both places).
    private mutating func declareID(_ table: TableReader, _ key: Key<String>, kind: String) -> String? {
        guard let id = table.read(key) else { return nil }
        if let first = declared[id] {
            // Where the first `id` is written (its table's header when the position is unknown).
            let location = log.position(of: "\(first.path).\(key.name)").map { "line \($0.line)" } ?? first.path
            table.report(
                key.name, "duplicate id '\(id)': already used by the \(first.kind) at \(location) (\(first.path))")
            return nil
        }
        declared[id] = (kind, table.path)
        return id
    }

    /// The target `key` of `table` names, when it is a declared one; nil when it is absent, or not declared (a
    /// problem).
    private func declaredTarget(
        _ key: Key<String>, of table: TableReader, targets: [String: Configuration.TargetDefinition]
    ) -> String? {
        guard let name = table.read(key) else { return nil }
        guard targets[name] != nil else {
            table.report(key.name, unknown("target", name, targets.keys, listing: "declared targets"))
            return nil
        }
        return name
    }

    /// `unknown target 'kiosq' (did you mean 'kiosk'?)`; with `listing`, the known names follow (`; declared
    /// targets: click, kiosk`, the first 16), or that there is none.
    private func unknown(
        _ kind: String, _ name: String, _ known: some Collection<String>, listing: String? = nil
    ) -> String {
        var message = "unknown \(kind) '\(name)'\(didYouMean(name, in: known))"
        if let listing {
            let names = known.sorted()
            if names.isEmpty {
                message += "; there are no \(listing)"
            } else {
                message += "; \(listing): \(names.prefix(16).joined(separator: ", "))"
                if names.count > 16 { message += ", … (\(names.count) in all)" }
            }
        }
        return message
    }

    /// A `parent` that names a declared group.
    private func checkParent(_ table: TableReader, _ key: Key<String>, groups: Set<String>) -> String? {
        guard let parent = table.read(key) else { return nil }
        guard groups.contains(parent) else {
            table.report(key.name, unknown("group", parent, groups))
            return nil
        }
        return parent
    }

    /// Reports every cycle in a "depends on" relation (a group's parent, a gesture's requires_failure_of) once, at
    /// `key` of its first declared member: `KEY cycle: a → b → a`, shortened for a long cycle (see ``DependencyCycles``)
    /// so that a thousand groups in a ring make one short line, not a thousand lines of a thousand names.
    private func reportCycles(
        _ edges: [(id: String, next: [String])], key: String, kind: String, tables: [String: TableReader]
    ) {
        for cycle in DependencyCycles.find(edges) {
            tables[cycle.members[0]]?.report(key, cycle.describe(key: key, kind: kind))
        }
    }

    /// `check`'s warnings about a layout that cannot work as written (``LayoutChecks``).
    private func reportLayoutWarnings(
        groups: [Group], screens: [Screen], controls: [Control], groupPaths: [String: String],
        controlPaths: [String: String]
    ) {
        let log = log
        var findings = LayoutChecks.unlistedGroups(groups, screens: screens, paths: groupPaths)
        findings += LayoutChecks.hiddenControls(
            controls, groups: groups, screens: screens, paths: controlPaths, line: { log.position(of: $0)?.line })
        findings += LayoutChecks.overlappingControls(
            controls, groups: groups, screens: screens, paths: controlPaths, line: { log.position(of: $0)?.line })
        // In file order, as check prints problems.
        let positioned = findings.map { finding in
            (finding, log.position(of: finding.keyPath).map { [$0.line, $0.column] } ?? [Int.max, 0])
        }
        for (finding, _) in positioned.sorted(by: { $0.1.lexicographicallyPrecedes($1.1) }) {
            warnings.report(finding.keyPath, finding.message)
        }
    }

    /// The tables of the entries whose id was declared, by id.
    private func tablesByID(_ ids: [String?], _ tables: [TableReader]) -> [String: TableReader] {
        Dictionary(
            zip(ids, tables).compactMap { id, table in id.map { ($0, table) } }, uniquingKeysWith: { first, _ in first }
        )
    }

    // MARK: - Screens, groups, controls, gestures

    /// The screens, the initial one first.
    private func decodeScreens(
        _ tables: [TableReader], ids: [String?], groups: Set<String>, targets: [String: Configuration.TargetDefinition]
    ) -> ([Screen], [String: Configuration.ScreenSpeech]) {
        let keys = Schema.screen
        var screens: [Screen] = []
        var speech: [String: Configuration.ScreenSpeech] = [:]
        var initialScreen: Int?
        /// The first screen that says `initial = true`: its id (or its table's path) and where it says so.
        var firstInitial: (name: String, path: String)?
        for (table, id) in zip(tables, ids) {
            let groupsOfScreen = table.read(keys.groups) ?? []
            for (index, group) in groupsOfScreen.enumerated() where !groups.contains(group) {
                log.report("\(table.keyPath(keys.groups.name))[\(index)]", unknown("group", group, groups))
            }
            let target = declaredTarget(keys.target, of: table, targets: targets)
            if table[keys.initial] {
                let name = id.map { "'\($0)'" } ?? table.path
                if let first = firstInitial {
                    let place = log.position(of: first.path).map { " (line \($0.line))" } ?? ""
                    table.report(
                        keys.initial.name,
                        "only one screen can be initial: \(first.name)\(place) already is, and \(name) says so too")
                } else {
                    firstInitial = (name, table.keyPath(keys.initial.name))
                    if id != nil { initialScreen = screens.count }
                }
            }
            let spoken = Configuration.ScreenSpeech(title: table.read(keys.title), language: table.read(keys.lang))
            table.finish()
            if let id {
                screens.append(Screen(id: id, groups: groupsOfScreen, target: target))
                if spoken.title != nil || spoken.language != nil { speech[id] = spoken }
            }
        }
        if let initialScreen, initialScreen > 0 {
            // The scene shows the first screen first.
            screens.insert(screens.remove(at: initialScreen), at: 0)
        }
        return (screens, speech)
    }

    private func decodeGroup(
        _ table: TableReader, id: String?, groups: Set<String>, targets: [String: Configuration.TargetDefinition]
    ) -> Group? {
        defer { table.finish() }
        let keys = Schema.group
        let parent = checkParent(table, keys.parent, groups: groups)
        let target = declaredTarget(keys.target, of: table, targets: targets)
        let shape = shapes.shape(table, keys.shape)
        guard let id else { return nil }
        return Group(id: id, parent: parent, shape: shape ?? nil, target: target)
    }

    private func decodeControl(
        _ table: TableReader, id: String?, tracking: Configuration.Tracking, groups: Set<String>,
        targets: [String: Configuration.TargetDefinition], applicationEvents: [String: Control.Event]
    ) -> Control? {
        defer { table.finish() }
        let keys = Schema.control
        let name = table.read(keys.kind)
        // An invalid kind is its own problem: the control is read as a button, and the keys of other kinds pass.
        let kind = Schema.controlKinds.first { $0.name.rawValue == name ?? keys.kind.defaultValue }
        if name != nil || !table.table.contains(key: keys.kind.name) { table.kind = kind?.name.rawValue }
        let parent = checkParent(table, keys.parent, groups: groups)
        let target = declaredTarget(keys.target, of: table, targets: targets)
        let shape = shapes.shape(table, keys.shape)
        let z = table[keys.z]
        let enabled = table[keys.enabled]
        let selected = table[keys.selected]
        let dragOutset = table.read(keys.dragOutset) ?? tracking.dragOutset
        let repeatInterval = table.read(keys.repeatInterval) ?? tracking.repeatInterval
        let repeatSlop = table.read(keys.repeatSlop) ?? tracking.repeatSlop
        let (model, value) = kind?.decode(table) ?? (nil, nil)

        var actions = TargetActionTable()
        for action in table.read(keys.actions) ?? [] {
            defer { action.finish() }
            let events = decodeEvents(action, applicationEvents: applicationEvents)
            guard let (actionTarget, name) = decodeActionTarget(action, Schema.controlAction, targets: targets)
            else { continue }
            if let events {
                actions.add(target: TargetSlot(actionTarget), action: name, for: events)
            }
        }

        guard let id, let model, let shape = shape ?? nil else { return nil }
        return Control(
            id: id, kind: model, shape: shape, parent: parent, z: z, isEnabled: enabled, isSelected: selected,
            value: value, dragOutset: dragOutset, repeatInterval: repeatInterval, repeatSlop: repeatSlop,
            target: target, actions: actions)
    }

    /// An action entry's `target` (nil: the responder chain) and `action`, shared by control, gesture and idle
    /// actions; nil after reporting when either is wrong, including an explicit target that does not respond to the
    /// action (UIKit would crash at run time; touchd refuses at load time).
    private func decodeActionTarget(
        _ action: TableReader, _ keys: Section<ActionKeys>, targets: [String: Configuration.TargetDefinition]
    ) -> (target: String?, action: String)? {
        let target = declaredTarget(keys.target, of: action, targets: targets)
        guard let name = action.read(keys.action) else { return nil }
        guard isValidAction(name) else {
            action.report(keys.action.name, "'\(name)' is not a valid action name: \(actionRule)")
            return nil
        }
        if let target, let definition = targets[target], !definition.respondsTo.contains(name) {
            let respondsTo = definition.respondsTo.joined(separator: ", ")
            action.report(
                keys.action.name, "target '\(target)' does not respond to '\(name)' (its responds_to: \(respondsTo))")
            return nil
        }
        // A target that is not declared has its problem already.
        guard target != nil || !action.table.contains(key: keys.target.name) else { return nil }
        return (target, name)
    }

    /// A control action's `events`: UIKit event or mask names and the configuration's application events.
    private func decodeEvents(_ action: TableReader, applicationEvents: [String: Control.Event]) -> Control.Event? {
        let key = Schema.controlAction.events
        guard let names = action.read(key) else { return nil }
        guard !names.isEmpty else {
            action.report(key.name, "no events: name at least one (touchUpInside, valueChanged, allTouchEvents…)")
            return nil
        }
        var events: Control.Event = []
        var valid = true
        for (index, name) in names.enumerated() {
            if let event = Control.Event(name: name) ?? applicationEvents[name] {
                events.formUnion(event)
            } else {
                let known =
                    Control.Event.namedEvents.map(\.name) + Control.Event.namedMasks.map(\.name)
                    + Array(applicationEvents.keys)
                log.report("\(action.keyPath(key.name))[\(index)]", unknown("event", name, known))
                valid = false
            }
        }
        return valid ? events : nil
    }

    /// The `events` of a gesture's or `[idle]`'s action entry, each one of `names`; `message` says what is wrong
    /// with one that is not.
    private func decodeEventNames(
        _ action: TableReader, _ key: Key<[String]>, names: [String], message: (String) -> String
    ) -> [String] {
        let events = action.read(key) ?? []
        if action.table.contains(key: key.name), events.isEmpty {
            action.report(key.name, "no events: name at least one of \(names.joined(separator: ", "))")
        }
        for (index, event) in events.enumerated() where !names.contains(event) {
            log.report("\(action.keyPath(key.name))[\(index)]", message(event))
        }
        return events
    }

    private func decodeGesture(
        _ table: TableReader, id: String?, context: GestureKind.Context, groups: Set<String>, controls: Set<String>,
        gestures: Set<String>, targets: [String: Configuration.TargetDefinition]
    ) -> Configuration.Gesture? {
        defer { table.finish() }
        let keys = Schema.gesture
        let kind = table.read(keys.kind).flatMap { name in Schema.gestureKinds.first { $0.name == name } }
        table.kind = kind?.name
        let fingers = table.read(keys.fingers) ?? kind?.minimumFingers ?? 1
        if let kind, fingers < kind.minimumFingers {
            table.report(keys.fingers.name, "a \(kind.name) needs at least \(kind.minimumFingers) fingers")
        }
        let shape = shapes.shape(table, keys.shape)
        let parent = checkParent(table, keys.parent, groups: groups)
        var control: String?
        if let name = table.read(keys.control) {
            if controls.contains(name) {
                control = name
            } else {
                table.report(keys.control.name, unknown("control", name, controls))
            }
        }
        if parent != nil && control != nil {
            table.reportTable("a gesture is attached to a group (parent) or to a control, not both")
        }
        let relations = [keys.simultaneousWith, keys.requiresFailureOf].map { key -> [String] in
            let names = table[key]
            for (index, name) in names.enumerated() where !gestures.contains(name) || name == id {
                log.report(
                    "\(table.keyPath(key.name))[\(index)]",
                    name == id ? "a gesture cannot refer to itself" : unknown("gesture", name, gestures))
            }
            return names
        }
        let model = kind?.decode(table, context)
        let cancelsTouches = table[keys.cancelsTouches]
        let delaysTouchesEnded = table[keys.delaysTouchesEnded]
        let delaysTouchesBegan = table[keys.delaysTouchesBegan]

        var actions: [Configuration.GestureAction] = []
        for action in table.read(keys.actions) ?? [] {
            defer { action.finish() }
            let events = decodeEventNames(action, Schema.gestureAction.events, names: GestureEvents.all) { event in
                Control.Event(name: event) != nil
                    ? "'\(event)' is a control event; a gesture's events are "
                        + GestureEvents.all.joined(separator: ", ")
                    : unknown("gesture event", event, GestureEvents.all, listing: "gesture events")
            }
            guard let (actionTarget, name) = decodeActionTarget(action, Schema.gestureAction, targets: targets)
            else { continue }
            actions.append(Configuration.GestureAction(events: events, target: actionTarget, action: name))
        }
        guard let id, let model else { return nil }
        return Configuration.Gesture(
            id: id, kind: model, fingers: fingers, shape: shape ?? nil, parent: parent, control: control,
            cancelsTouches: cancelsTouches, delaysTouchesEnded: delaysTouchesEnded,
            delaysTouchesBegan: delaysTouchesBegan, simultaneousWith: relations[0], requiresFailureOf: relations[1],
            actions: actions)
    }

    // MARK: - Idle

    /// `[idle]`: the timeout, the screen shown at idle and the actions of `idle` and `wake`.
    private func decodeIdle(
        targets: [String: Configuration.TargetDefinition], screens: Set<String>
    ) -> Configuration.Idle {
        var idle = Configuration.Idle()
        guard let table = root.read(Schema.root.idle) else { return idle }
        defer { table.finish() }
        let keys = Schema.idle
        idle.timeout = table[keys.timeout]
        idle.wakeTouchReachesControls = table[keys.wakeTouchReachesControls]
        if let screen = table.read(keys.screen) {
            if screens.contains(screen) {
                idle.screen = screen
            } else {
                table.report(keys.screen.name, unknown("screen", screen, screens))
            }
        }
        let names = Configuration.Idle.Event.allCases.map(\.rawValue)
        for action in table.read(keys.actions) ?? [] {
            defer { action.finish() }
            let events = decodeEventNames(action, Schema.idleAction.events, names: names) { event in
                unknown("idle event", event, names, listing: "idle events")
            }
            let valid = Set(events.compactMap(Configuration.Idle.Event.init(rawValue:)))
            guard let (target, name) = decodeActionTarget(action, Schema.idleAction, targets: targets), !valid.isEmpty
            else { continue }
            idle.actions.append(Configuration.Idle.Action(events: valid, target: target, action: name))
        }
        return idle
    }
}

// MARK: - Accessibility

extension Decoder {
    /// `[[element]]`: an application's item for explore by touch.
    fileprivate func decodeElement(_ table: TableReader, id: String?, screens: Set<String>) -> Configuration.Element? {
        defer { table.finish() }
        let keys = Schema.element
        let shape = shapes.shape(table, keys.shape)
        let label = table.read(keys.label)
        let hint = table.read(keys.hint)
        let role = table[keys.role]
        let isPrivate = table[keys.isPrivate]
        var screen: String?
        if let name = table.read(keys.screen) {
            if screens.contains(name) {
                screen = name
            } else {
                table.report(keys.screen.name, unknown("screen", name, screens, listing: "declared screens"))
            }
        }
        var point: Point?
        var pointValid = true
        if let pointTable = table.read(keys.activationPoint) {
            point = shapes.point(pointTable)
            pointTable.finish()
            pointValid = point != nil
        }
        guard let id, let shape = shape ?? nil, pointValid else { return nil }
        let activation = point ?? shape.boundingBox.center
        if !shape.contains(activation) {
            let shapeKey = ShapeKey.names.first { table.contains($0) } ?? keys.activationPoint.name
            table.report(
                point == nil ? shapeKey : keys.activationPoint.name,
                point == nil
                    ? "the shape's centre (\(TableReader.format(activation.x)), \(TableReader.format(activation.y))) "
                        + "is outside it, so a double tap would miss it: give activation_point = { x, y } inside"
                    : "the activation point (\(TableReader.format(activation.x)), "
                        + "\(TableReader.format(activation.y))) is outside the element's shape: a double tap would "
                        + "tap something else")
            return nil
        }
        return Configuration.Element(
            id: id, shape: shape, speech: Configuration.Speech(label: label, hint: hint), role: role,
            activationPoint: activation, screen: screen, isPrivate: isPrivate)
    }

    /// `[accessibility]`.
    fileprivate func decodeAccessibility(gestures: Set<String>) -> Configuration.Accessibility {
        var result = Configuration.Accessibility()
        guard let table = root.read(Schema.root.accessibility) else { return result }
        defer { table.finish() }
        let keys = Schema.accessibility
        result.enabled = table[keys.enabled]
        if let name = table.read(keys.startGesture) {
            if gestures.contains(name) {
                result.startGesture = name
            } else {
                table.report(keys.startGesture.name, unknown("gesture", name, gestures, listing: "declared gestures"))
            }
        }
        result.exitAfterIdle = table[keys.exitAfterIdle]
        result.startOnHeadphones = table[keys.startOnHeadphones]
        result.speechSocket = table.read(keys.speechSocket)
        result.introduction = table[keys.introduction]
        result.farewell = table[keys.farewell]
        result.doubleTapTimeout = table[keys.doubleTapTimeout]
        result.doubleTapSlopMillimetres = table[keys.doubleTapSlop]
        result.hintDelay = table[keys.hintDelay]
        result.swipeDistanceMillimetres = table[keys.swipeDistance]
        result.swipeTime = table[keys.swipeTime]
        result.hysteresis = table[keys.hysteresis]
        result.pixelsPerMillimetre = table[keys.pixelsPerMillimetre]
        result.language = table[keys.language]
        for region in table.read(keys.passthrough) ?? [] {
            defer { region.finish() }
            if let rect = shapes.rect(region) { result.passthrough.append(rect) }
        }
        return result
    }

    /// What explore by touch needs of the rest of the file: a label on everything it reads out, elements that a
    /// double tap can reach, and the filter that keeps exploring touches from the application.
    fileprivate func checkAccessibility(
        _ accessibility: Configuration.Accessibility, filter: Configuration.Filter, controls: [Control],
        controlSpeech: [String: Configuration.Speech], controlTables: [String: TableReader],
        elements: [Configuration.Element], elementTables: [String: TableReader], groups: [Group], screens: [Screen]
    ) {
        if accessibility.enabled && !filter.enabled {
            warnings.report(
                "\(Schema.root.accessibility.name).\(Schema.accessibility.enabled.name)",
                "[accessibility] is enabled without [filter]: the application reads the touchscreen itself and "
                    + "still receives every touch in speech mode (exploring presses what is under the finger), and "
                    + "a double tap cannot reach an element; set [filter] enabled = true")
        }
        let contexts = LayoutChecks.contexts(of: controls, groups: groups, screens: screens)
        let allScreens = Set(screens.map(\.id))
        for element in elements {
            guard let table = elementTables[element.id] else { continue }
            let elementScreens = element.screen.map { [$0] as Set } ?? allScreens
            for (control, context) in zip(controls, contexts)
            where screens.isEmpty || !context.screens.isDisjoint(with: elementScreens) {
                if control.shape.contains(element.activationPoint) {
                    let key = Schema.element.activationPoint.name
                    let given = table.contains(key)
                    table.report(
                        key,
                        "the \(given ? "activation point" : "centre (no activation_point given)") of element "
                            + "'\(element.id)' is on control '\(control.id)': a double tap would press the control, "
                            + "not the application's element; \(given ? "move the point" : "give activation_point = { x, y }") "
                            + "or move the control")
                    break
                } else if LayoutChecks.overlaps(element.shape, control.shape) {
                    warnings.report(
                        table.path,
                        "element '\(element.id)' overlaps control '\(control.id)': exploring where they overlap "
                            + "finds the control (touchd's controls lie above the application)")
                }
            }
        }
        guard accessibility.enabled else { return }
        let label = Schema.label.name
        // A label that is written but wrong has its own problem already.
        for control in controls where controlTables[control.id]?.contains(label) == false {
            controlTables[control.id]?.reportTable(
                "control '\(control.id)' has no \(label), and [accessibility] is enabled: speech mode would say only "
                    + "'\(Configuration.role(of: control))'; add label = \"…\"")
        }
        for element in elements where elementTables[element.id]?.contains(label) == false {
            elementTables[element.id]?.reportTable(
                "element '\(element.id)' has no \(label), and [accessibility] is enabled: speech mode would say "
                    + "only '\(element.role)'; add label = \"…\"")
        }
    }
}
