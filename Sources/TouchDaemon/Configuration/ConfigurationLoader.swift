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

    /// Names systemd and the daemon own; a command target may never set them.
    static let reservedEnvironment: Set<String> = [
        "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS",
        "LISTEN_PID", "LISTEN_FDNAMES",
    ]

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
        var decoder = Decoder(root: TableReader(root, path: "", log: log))
        let configuration = decoder.decode()
        if let configuration, log.problems.isEmpty {
            return .success(configuration)
        }
        return .failure(ConfigurationError(path: path, problems: log.sorted))
    }
}

/// One decoding pass over the root table.
private struct Decoder {
    typealias Limits = ConfigurationLoader.Limits

    let root: TableReader
    var log: ProblemLog { root.log }
    /// Warnings, positioned like the problems; the configuration carries them.
    let warnings: WarningLog

    /// Where each id was first declared, across controls, groups, screens and gestures.
    private var declared: [String: (kind: String, path: String)] = [:]
    /// `[output] rotation`, for the hint of a shape outside a rotated output.
    private var rotation: Configuration.Rotation = .normal

    init(root: TableReader) {
        self.root = root
        let log = root.log
        warnings = WarningLog(position: { log.position(of: $0).map { ($0.line, $0.column) } })
    }

    mutating func decode() -> Configuration? {
        let output = decodeOutput()
        rotation = output?.rotation ?? .normal
        let (seat, ignoreVirtual) = decodeInput()
        let bounds = output?.bounds ?? Rect(x: 0, y: 0, width: 1920, height: 1080)
        let devices = root.tables("device", limit: Limits.devices).map { decodeDevice($0, bounds: bounds) }
        let tracking = decodeTracking()
        let control = decodeControlSocket()
        let filter = decodeFilter(maximumContacts: tracking?.maximumContacts)
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
        let applicationTarget = root.table("application").flatMap { table -> String? in
            defer { table.finish() }
            return checkTargetName(table.string("target"), in: table, key: "target", targets: targetsByName)
        }

        let groupTables = root.tables("group", limit: Limits.groups)
        let screenTables = root.tables("screen", limit: Limits.screens)
        let controlTables = root.tables("control", limit: Limits.controls)
        let gestureTables = root.tables("gesture", limit: Limits.gestures)
        // Ids first, so that references can be checked whatever the declaration order.
        let groupIDs = groupTables.map { declareID($0, kind: "group") }
        let screenIDs = screenTables.map { declareID($0, kind: "screen") }
        let controlIDs = controlTables.map { declareID($0, kind: "control") }
        let gestureIDs = gestureTables.map { declareID($0, kind: "gesture") }
        let knownGroups = Set(groupIDs.compactMap { $0 })

        var groups: [Group] = []
        /// `to_app` as each group says it; a control inherits its innermost group's.
        var groupToApp: [String: (value: Bool, path: String)] = [:]
        for (table, id) in zip(groupTables, groupIDs) {
            if let id, let value = table.bool("to_app") { groupToApp[id] = (value, table.keyPath("to_app")) }
            if let group = decodeGroup(table, id: id, bounds: bounds, groups: knownGroups, targets: targetsByName) {
                groups.append(group)
            }
        }
        reportCycles(
            groups.map { ($0.id, $0.parent.map { [$0] } ?? []) }, key: "parent", kind: "group",
            tables: tablesByID(groupIDs, groupTables))

        var screens: [Screen] = []
        var initialScreen: Int?
        /// The first screen that says `initial = true`: its id (or its table's path) and where it says so.
        var firstInitial: (name: String, path: String)?
        for (table, id) in zip(screenTables, screenIDs) {
            let groupsOfScreen = table.strings("groups", limit: Limits.groups, required: true) ?? []
            for (index, group) in groupsOfScreen.enumerated() where !knownGroups.contains(group) {
                log.report("\(table.keyPath("groups"))[\(index)]", unknown("group", group, knownGroups))
            }
            let target = checkTargetName(table.string("target"), in: table, key: "target", targets: targetsByName)
            if table.bool("initial") == true {
                let name = id.map { "'\($0)'" } ?? table.path
                if let first = firstInitial {
                    let place = log.position(of: first.path).map { " (line \($0.line))" } ?? ""
                    table.report(
                        "initial",
                        "only one screen can be initial: \(first.name)\(place) already is, and \(name) says so too")
                } else {
                    firstInitial = (name, table.keyPath("initial"))
                    if id != nil { initialScreen = screens.count }
                }
            }
            table.finish()
            if let id { screens.append(Screen(id: id, groups: groupsOfScreen, target: target)) }
        }
        if let initialScreen, initialScreen > 0 {
            // The scene shows the first screen first.
            screens.insert(screens.remove(at: initialScreen), at: 0)
        }

        var controls: [Control] = []
        var privateControls: Set<String> = []
        /// Where each control's `to_app = false` comes from (its own key or a group's), for the filter's checks.
        var deadZoneSource: [String: String] = [:]
        let parentOf = Dictionary(groups.map { ($0.id, $0.parent) }, uniquingKeysWith: { first, _ in first })
        for (table, id) in zip(controlTables, controlIDs) {
            let ownToApp = table.bool("to_app").map { (value: $0, path: table.keyPath("to_app")) }
            let isPrivate = table.bool("private") ?? false
            if var control = decodeControl(
                table, id: id, bounds: bounds, tracking: tracking, groups: knownGroups, targets: targetsByName,
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
                controls.append(control)
            }
        }

        let knownControls = Set(controlIDs.compactMap { $0 })
        let knownGestures = Set(gestureIDs.compactMap { $0 })
        var gestures: [Configuration.Gesture] = []
        for (table, id) in zip(gestureTables, gestureIDs) {
            if let gesture = decodeGesture(
                table, id: id, bounds: bounds, groups: knownGroups, controls: knownControls, gestures: knownGestures,
                targets: targetsByName)
            {
                gestures.append(gesture)
            }
        }
        if let tracking {
            // A recognizer that needs more fingers than touchd tracks can never fire: refused, not warned about.
            let tables = tablesByID(gestureIDs, gestureTables)
            for gesture in gestures where gesture.fingers > tracking.maximumContacts {
                tables[gesture.id]?.report(
                    "fingers",
                    "gesture '\(gesture.id)' needs \(gesture.fingers) fingers, but [tracking] max_contacts is "
                        + "\(tracking.maximumContacts): contacts beyond it are ignored, so it can never fire")
            }
        }
        reportLayoutWarnings(
            groups: groups, screens: screens, controls: controls,
            groupPaths: tablesByID(groupIDs, groupTables).mapValues(\.path),
            controlPaths: tablesByID(controlIDs, controlTables).mapValues(\.path))
        // A recognizer that waits for itself, even through others, would never recognize.
        reportCycles(
            gestures.map { ($0.id, $0.requiresFailureOf) }, key: "requires_failure_of", kind: "gesture",
            tables: tablesByID(gestureIDs, gestureTables))
        checkFilterKeys(
            filter: filter, deadZones: deadZoneSource, gestures: gestures,
            gestureTables: tablesByID(gestureIDs, gestureTables))
        let idle = decodeIdle(targets: targetsByName, screens: Set(screenIDs.compactMap { $0 }))
        checkWakeTouch(filter: filter, idle: idle)
        root.finish()

        guard let output, let tracking else { return nil }
        return Configuration(
            output: output, seat: seat, ignoreVirtual: ignoreVirtual, devices: devices.compactMap { $0 },
            tracking: tracking, control: control,
            filter: filter, idle: idle, targets: targets,
            applicationTarget: applicationTarget, applicationEvents: applicationEvents, screens: screens,
            groups: groups, controls: controls, gestures: gestures, privateControls: privateControls,
            warnings: warnings.warnings)
    }

    // MARK: - Sections

    private func decodeOutput() -> Configuration.Output? {
        guard let table = root.table("output") else {
            root.report("output", "missing required table [output] (the screen size in pixels)")
            return nil
        }
        defer { table.finish() }
        let width = table.number("width", in: 1...32_768, required: true)
        let height = table.number("height", in: 1...32_768, required: true)
        let rotation = decodeRotation(table)
        let calibration = decodeCalibration(table)
        guard let width, let height else { return nil }
        return Configuration.Output(
            width: width, height: height, rotation: rotation ?? .normal, calibration: calibration)
    }

    /// `rotation` of `[output]` or a `[[device]]` entry: nil when absent or refused (the problem is reported).
    private func decodeRotation(_ table: TableReader) -> Configuration.Rotation? {
        // Any integer, so that -90 and 360 are answered with the allowed values, as 45 is.
        guard let degrees = table.integer("rotation", in: Int.min...Int.max) else { return nil }
        guard let rotation = Configuration.Rotation(rawValue: degrees) else {
            let allowed = Configuration.Rotation.allCases.map { String($0.rawValue) }.joined(separator: ", ")
            table.report("rotation", "\(degrees) is not one of \(allowed)")
            return nil
        }
        return rotation
    }

    /// `calibration` of `[output]` or a `[[device]]` entry: libinput's 2×3 matrix, nil when absent or refused.
    private func decodeCalibration(_ table: TableReader) -> [Double]? {
        guard let value = table.value("calibration") else { return nil }
        guard let array = value.array, array.count == 6 else {
            table.report("calibration", "expected an array of 6 numbers (libinput's 2×3 matrix)")
            return nil
        }
        let numbers = array.enumerated().compactMap { index, element in
            TableReader.number(element, in: -1e4...1e4, at: "\(table.keyPath("calibration"))[\(index)]", log: log)
        }
        guard numbers.count == 6 else { return nil }
        // touchd maps the application's touches back through it in filter mode: a matrix with no inverse would send
        // them nowhere.
        let determinant = numbers[0] * numbers[4] - numbers[1] * numbers[3]
        guard abs(determinant) > 1e-9 else {
            table.report(
                "calibration",
                "the matrix has no inverse (a·e − b·d is 0): it would map the whole panel onto a line or a point")
            return nil
        }
        return numbers
    }

    /// `[input]`: the seat, and whether virtual input devices are left alone.
    private func decodeInput() -> (seat: String, ignoreVirtual: Bool) {
        guard let table = root.table("input") else { return ("seat0", false) }
        defer { table.finish() }
        let ignoreVirtual = table.bool("ignore_virtual") ?? false
        guard let seat = table.string("seat") else { return ("seat0", ignoreVirtual) }
        if seat.isEmpty || seat.count > Limits.idLength
            || !seat.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        {
            table.report("seat", "'\(seat)' is not a seat name (like seat0)")
        }
        return (seat, ignoreVirtual)
    }

    private func decodeControlSocket() -> Configuration.ControlSocket {
        var control = Configuration.ControlSocket()
        guard let table = root.table("control_socket") else { return control }
        defer { table.finish() }
        if let enabled = table.bool("enabled") { control.enabled = enabled }
        if let path = table.string("socket") {
            if let problem = SocketPath.problem(path) {
                table.report("socket", problem)
            } else {
                control.path = path
                // touchd run refuses such a directory (ControlListener.create) and runs without a control socket.
                if table.bool("enabled") != false, let shared = ControlListener.directoryProblem(ofSocket: path) {
                    warnings.report(
                        table.keyPath("socket"),
                        "touchd run will not create its control socket here: \(shared), so another user could put "
                            + "a socket of their own in its place; touchd then runs without one (touchd ctl cannot "
                            + "reach it). Use a directory only root or touchd can write, such as socket = "
                            + "\"/run/touchd/control.sock\"")
                }
            }
        }
        for (key, keyPath) in [("group", \Configuration.ControlSocket.group), ("admin_group", \.adminGroup)] {
            guard let name = table.string(key) else { continue }
            if Self.isGroupName(name) {
                control[keyPath: keyPath] = name
            } else {
                table.report(key, "'\(name)' is not a group name (letters, digits, '-', '_', '.', at most 32 bytes)")
            }
        }
        if let value = table.integer("max_clients", in: 1...1_024) { control.maximumClients = value }
        return control
    }

    /// A portable POSIX group name, as `groupadd` accepts it.
    static func isGroupName(_ name: String) -> Bool {
        guard let first = name.first, name.utf8.count <= 32, first != "-" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
    }

    private func decodeDevice(_ table: TableReader, bounds: Rect) -> Configuration.DeviceMatch? {
        defer { table.finish() }
        let name = table.string("match_name")
        let vendor = hexOrInteger(table, "match_vendor")
        let product = hexOrInteger(table, "match_product")
        let path = table.string("match_path")
        var region: Rect?
        if let regionTable = table.table("region") {
            region = decodeRect(regionTable, bounds: bounds)
            regionTable.finish()
            if let area = region,
                area.minX < bounds.minX || area.minY < bounds.minY || area.maxX > bounds.maxX
                    || area.maxY > bounds.maxY
            {
                table.report("region", "the region must lie inside the output (a device covers part of the screen)")
                region = nil
            }
        }
        // Presence, not validity: a matcher with a bad value has its own problem already.
        if !["match_name", "match_vendor", "match_product", "match_path"].contains(where: {
            table.table.contains(key: $0)
        }) {
            table.reportTable(
                "a device entry needs at least one of match_name, match_vendor, match_product, match_path")
            return nil
        }
        let rotation = decodeRotation(table)
        let calibration = decodeCalibration(table)
        return Configuration.DeviceMatch(
            name: name, vendor: vendor, product: product, path: path, region: region, rotation: rotation,
            calibration: calibration)
    }

    private func hexOrInteger(_ table: TableReader, _ key: String) -> Int? {
        guard let value = table.value(key) else { return nil }
        if let string = value.string {
            let digits = string.hasPrefix("0x") || string.hasPrefix("0X") ? String(string.dropFirst(2)) : string
            if (1...4).contains(digits.count), digits.allSatisfy(\.isHexDigit), let number = Int(digits, radix: 16) {
                return number
            }
            table.report(key, "'\(string)' is not a 16-bit hexadecimal id (like \"0x222a\")")
            return nil
        }
        return table.integer(key, in: 0...0xFFFF)
    }

    private func decodeFilter(maximumContacts: Int?) -> Configuration.Filter {
        var filter = Configuration.Filter()
        guard let table = root.table("filter") else { return filter }
        defer { table.finish() }
        if let value = table.bool("enabled") { filter.enabled = value }
        if let value = table.integer("app_max_contacts", in: 0...32) {
            filter.appMaxContacts = value
            if let maximumContacts, value > maximumContacts {
                warnings.report(
                    table.keyPath("app_max_contacts"),
                    "\(value) is more than [tracking] max_contacts (\(maximumContacts)): touchd ignores contacts"
                        + " beyond \(maximumContacts), so the application never has more")
            }
        }
        if let value = table.number("swallow_after_idle_s", in: 0...86_400) {
            // In range and finite, so the product is at most 8.64e10 and converts exactly.
            filter.swallowAfterIdle = UInt64((value * 1_000_000).rounded())
        }
        if let value = table.choice("cancel_with", Configuration.Filter.CancelWith.allCases.map(\.rawValue)) {
            filter.cancelWith = Configuration.Filter.CancelWith(rawValue: value) ?? .lift
        }
        return filter
    }

    /// `[filter] swallow_after_idle_s` and `[idle] timeout_s` both count from the last lift (Engine+Idle.swift,
    /// SceneApp.swift): `idle` fires after timeout_s, its `wake` at the next touch-down; the first touch after
    /// swallow_after_idle_s is kept from the application. Set together, they mean "the touch that wakes the idle kiosk
    /// must not click the application"; different values cannot do that, and the warning says which touches go wrong.
    private func checkWakeTouch(filter: Configuration.Filter, idle: Configuration.Idle) {
        let swallow = filter.swallowAfterIdle
        guard filter.enabled, swallow > 0, idle.isEnabled, swallow != idle.timeout else { return }
        let swallowText = Self.seconds(swallow)
        let idleText = Self.seconds(idle.timeout)
        if swallow > idle.timeout {
            // Only a visible idle makes the wake touch matter: an idle with no actions and no screen changes nothing.
            guard !idle.actions.isEmpty || idle.screen != nil else { return }
            warnings.report(
                "filter.swallow_after_idle_s",
                "\(swallowText) s is longer than [idle] timeout_s (\(idleText) s): a touch that comes between "
                    + "\(idleText) and \(swallowText) s after the last one wakes the idle kiosk (its wake actions run) and still "
                    + "reaches the application, so it can click what is under it; set swallow_after_idle_s = "
                    + "\(idleText) to keep exactly the waking touch from the application")
        } else {
            warnings.report(
                "filter.swallow_after_idle_s",
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
        let delaying = gestures.filter(\.delaysTouchesBegan)
        guard filter.enabled else {
            // Once per key: a group's to_app that its controls inherit is one mistake, not one per control.
            for path in Set(deadZones.values).sorted() {
                warnings.report(path, "to_app = false has no effect: [filter] enabled is not true")
            }
            for gesture in delaying {
                if let table = gestureTables[gesture.id] {
                    warnings.report(
                        table.keyPath("delays_touches_began"),
                        "delays_touches_began has no effect: [filter] enabled is not true")
                }
            }
            return
        }
        for gesture in delaying {
            guard let control = gesture.control, deadZones[control] != nil, gesture.shape == nil,
                let table = gestureTables[gesture.id]
            else { continue }
            table.report(
                "delays_touches_began",
                "makes no difference: control \(control) has to_app = false, so its touches never reach the"
                    + " application; remove delays_touches_began or set to_app = true on \(control)")
        }
    }

    private func decodeTracking() -> Configuration.Tracking? {
        var tracking = Configuration.Tracking()
        guard let table = root.table("tracking") else { return tracking }
        defer { table.finish() }
        if let value = table.number("drag_outset", in: 0...1_000) { tracking.dragOutset = value }
        if let value = table.milliseconds("repeat_interval_ms", in: 1...5_000) { tracking.repeatInterval = value }
        if let value = table.number("repeat_slop", in: 0...1_000) { tracking.repeatSlop = value }
        if let value = table.integer("max_contacts", in: 1...32) { tracking.maximumContacts = value }
        if table.contains("stuck_contact_timeout_ms") {
            if let value = table.integer("stuck_contact_timeout_ms", in: 0...3_600_000) {
                if value != 0 && value < 1_000 {
                    table.report("stuck_contact_timeout_ms", "\(value) is out of range: 0 (never) or 1000…3600000")
                } else {
                    tracking.stuckContactTimeout = UInt64(value) * 1000
                }
            }
        }
        return tracking
    }

    private func decodeTargets() -> [(name: String, respondsTo: [String], definition: Configuration.TargetDefinition?)]
    {
        guard let table = root.table("targets") else { return [] }
        defer { table.finish() }
        let names = table.table.keys.sorted()
        guard names.count <= Limits.targets else {
            table.reportTable("\(names.count) targets; at most \(Limits.targets) are allowed")
            // One problem for the whole table, not one "unknown key" per target on top of it.
            for name in names { _ = table.value(name) }
            return []
        }
        var result: [(name: String, respondsTo: [String], definition: Configuration.TargetDefinition?)] = []
        for name in names {
            guard let target = table.table(name) else { continue }
            defer { target.finish() }
            if !isValidID(name) {
                table.report(name, "'\(name)' is not a valid target name: \(idRule)")
            }
            let respondsTo = target.strings("responds_to", limit: Limits.respondsTo, required: true) ?? []
            for (index, action) in respondsTo.enumerated() where !isValidAction(action) {
                log.report(
                    "\(target.keyPath("responds_to"))[\(index)]",
                    "'\(action)' is not a valid action name: \(actionRule)")
            }
            let hasSocket = target.contains("socket")
            let hasExec = target.contains("exec")
            var kind: Configuration.TargetDefinition.Kind?
            switch (hasSocket, hasExec) {
            case (true, true):
                target.reportTable("a target is either a socket or an exec, not both")
            case (false, false):
                target.reportTable("a target needs 'socket' (a Unix socket path) or 'exec' (a command's argv)")
            case (true, false):
                kind = decodeSocket(target).map { .socket($0) }
            case (false, true):
                kind = decodeExec(target).map { .exec($0) }
            }
            result.append(
                (
                    name, respondsTo,
                    kind.map { Configuration.TargetDefinition(name: name, kind: $0, respondsTo: respondsTo) }
                ))
        }
        return result
    }

    private func decodeSocket(_ target: TableReader) -> Configuration.SocketTarget? {
        let type = target.choice("socket_type", ["stream", "datagram"]).flatMap(
            Configuration.SocketTarget.SocketType.init)
        _ = target.choice("format", ["json"])
        guard let path = target.string("socket") else { return nil }
        if let problem = SocketPath.problem(path) {
            target.report("socket", problem)
            return nil
        }
        // A warning only: the directory may be fixed (or made) after the file is written, as for exec programs.
        if let warning = SocketPath.sharedDirectoryWarning(path) {
            warnings.report(target.keyPath("socket"), warning)
        }
        return Configuration.SocketTarget(path: path, type: type ?? .stream)
    }

    private func decodeExec(_ target: TableReader) -> Configuration.ExecTarget? {
        let shell = target.bool("shell") ?? false
        let timeout = target.milliseconds("timeout_ms", in: 1...600_000) ?? 10_000_000
        let ifRunning = target.choice("if_running", ["ignore", "queue", "restart"]).flatMap(
            Configuration.ExecTarget.IfRunning.init)
        var environment: [String: String] = [:]
        if let table = target.table("environment") {
            let keys = table.table.keys.sorted()
            if keys.count > Limits.environment {
                table.reportTable("\(keys.count) variables; at most \(Limits.environment) are allowed")
            }
            for key in keys.prefix(Limits.environment) {
                guard let value = table.string(key) else { continue }
                if !isValidEnvironmentName(key) {
                    table.report(key, "'\(key)' is not a valid environment variable name")
                } else if ConfigurationLoader.reservedEnvironment.contains(key) || key.hasPrefix("TOUCHD_") {
                    table.report(key, "\(key) is set by touchd or systemd and cannot be configured")
                } else if value.utf8.count > Limits.argumentBytes || value.utf8.contains(0) {
                    table.report(key, "the value must be at most \(Limits.argumentBytes) bytes, without NUL")
                } else {
                    environment[key] = value
                }
            }
        }
        var workingDirectory: String?
        if let directory = target.string("working_directory") {
            if directory.hasPrefix("/") {
                workingDirectory = directory
            } else {
                target.report("working_directory", "'\(directory)' is not an absolute path")
            }
        }
        guard let argv = target.strings("exec", limit: Limits.argv) else { return nil }
        guard let program = argv.first else {
            target.report("exec", "the argv is empty; give the absolute path of the program first")
            return nil
        }
        guard !program.isEmpty else {
            log.report("\(target.keyPath("exec"))[0]", "the program is an empty string; give its absolute path")
            return nil
        }
        for (index, argument) in argv.enumerated() where argument.utf8.count > Limits.argumentBytes {
            log.report("\(target.keyPath("exec"))[\(index)]", "argument longer than \(Limits.argumentBytes) bytes")
        }
        if shell {
            if argv.count != 1 {
                target.report(
                    "exec", "with shell = true, exec holds exactly one string: the command line for /bin/sh -c")
            }
        } else if program.hasPrefix("/"), program.contains(" "), !ExecutableProgram.exists(program) {
            // exec runs no shell: the first element is one file name, spaces and all.
            let words = program.split(separator: " ").map(String.init) + argv.dropFirst()
            var split = ""
            for (index, word) in words.enumerated() {
                if index > 0 { split += ", " }
                JSONLine.appendString(word, to: &split)
            }
            warnings.report(
                "\(target.keyPath("exec"))[0]",
                "'\(program)' holds a space, but exec runs no shell: this names one program whose file name has a "
                    + "space in it, which does not exist; split the command into separate elements: exec = [\(split)]")
        } else if !program.hasPrefix("/") {
            // Only a program that exists is suggested, never the name glued onto a directory (/usr/bin/bin/true).
            let hint = ExecutableProgram.suggestion(for: program).map { "did you mean '\($0)'?" }
            log.report(
                "\(target.keyPath("exec"))[0]",
                "'\(program)' is not an absolute path; touchd does not search PATH ("
                    + (hint ?? "give the program's absolute path") + ")")
        } else {
            // Warnings only: the program may be installed, or its directory fixed, after the file is written (C13).
            for message in ExecutableProgram.warnings(for: program) {
                warnings.report("\(target.keyPath("exec"))[0]", message)
            }
        }
        return Configuration.ExecTarget(
            argv: argv, shell: shell, environment: environment, workingDirectory: workingDirectory, timeout: timeout,
            ifRunning: ifRunning ?? .ignore)
    }

    private func decodeApplicationEvents() -> [String: Control.Event] {
        guard let table = root.table("application_events") else { return [:] }
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
    private mutating func declareID(_ table: TableReader, kind: String) -> String? {
        guard let id = table.string("id", required: true) else { return nil }
        guard isValidID(id) else {
            table.report("id", "'\(id)' is not a valid id: \(idRule)")
            return nil
        }
        if let first = declared[id] {
            // Where the first `id` is written (its table's header when the position is unknown).
            let location = log.position(of: "\(first.path).id").map { "line \($0.line)" } ?? first.path
            table.report("id", "duplicate id '\(id)': already used by the \(first.kind) at \(location) (\(first.path))")
            return nil
        }
        declared[id] = (kind, table.path)
        return id
    }

    private func checkTargetName(
        _ name: String?, in table: TableReader, key: String, targets: [String: Configuration.TargetDefinition]
    ) -> String? {
        guard let name else { return nil }
        guard targets[name] != nil else {
            table.report(key, unknown("target", name, targets.keys, listing: "declared targets"))
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

    private func checkParent(_ table: TableReader, groups: Set<String>) -> String? {
        guard let parent = table.string("parent") else { return nil }
        guard groups.contains(parent) else {
            table.report("parent", unknown("group", parent, groups))
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

    // MARK: - Groups, controls, gestures

    private func decodeGroup(
        _ table: TableReader, id: String?, bounds: Rect, groups: Set<String>,
        targets: [String: Configuration.TargetDefinition]
    ) -> Group? {
        defer { table.finish() }
        let parent = checkParent(table, groups: groups)
        let target = checkTargetName(table.string("target"), in: table, key: "target", targets: targets)
        let shape = decodeShape(table, bounds: bounds, required: false)
        guard let id else { return nil }
        return Group(id: id, parent: parent, shape: shape ?? nil, target: target)
    }

    private func decodeControl(
        _ table: TableReader, id: String?, bounds: Rect, tracking: Configuration.Tracking?, groups: Set<String>,
        targets: [String: Configuration.TargetDefinition], applicationEvents: [String: Control.Event]
    ) -> Control? {
        defer { table.finish() }
        let kindNames = Control.Kind.Name.allCases.map(\.rawValue)
        let kindIsValid = !table.table.contains(key: "kind") || table.string("kind").map(kindNames.contains) == true
        let kindName = table.choice("kind", kindNames).flatMap(Control.Kind.Name.init) ?? .button
        let parent = checkParent(table, groups: groups)
        let target = checkTargetName(table.string("target"), in: table, key: "target", targets: targets)
        let shape = decodeShape(table, bounds: bounds, required: true)
        let z = table.integer("z", in: -1_000...1_000) ?? 0
        let enabled = table.bool("enabled") ?? true
        let selected = table.bool("selected") ?? false
        let dragOutset = table.number("drag_outset", in: 0...1_000) ?? tracking?.dragOutset ?? Control.defaultDragOutset
        let repeatInterval =
            table.milliseconds("repeat_interval_ms", in: 1...5_000) ?? tracking?.repeatInterval
            ?? Control.defaultRepeatInterval
        let repeatSlop = table.number("repeat_slop", in: 0...1_000) ?? tracking?.repeatSlop ?? Control.defaultRepeatSlop

        let sliderKeys = ["min", "max", "continuous", "step"]
        let axisKeys = ["axis"]
        let segmentedKeys = ["segments"]
        let valueKeys = ["value"]
        var allowed: [String] = []
        var kind: Control.Kind?
        var value: Double?
        switch kindName {
        case .slider:
            allowed = sliderKeys + axisKeys + valueKeys
            let minimum = table.number("min", in: -1e9...1e9) ?? 0
            let maximum = table.number("max", in: -1e9...1e9) ?? 1
            if minimum >= maximum {
                table.report(
                    "max",
                    "max (\(TableReader.format(maximum))) must be greater than min (\(TableReader.format(minimum)))")
            }
            let axis = table.choice("axis", ["horizontal", "vertical"]).flatMap(Control.Axis.init) ?? .horizontal
            let continuous = table.bool("continuous") ?? true
            let step = decodeStep(table, minimum: minimum, maximum: maximum)
            value = table.number("value", in: -1e9...1e9)
            if let initial = value, minimum < maximum, !(minimum...maximum).contains(initial) {
                table.report(
                    "value",
                    "\(TableReader.format(initial)) is outside the slider's range min…max "
                        + "(\(TableReader.format(minimum))…\(TableReader.format(maximum)))")
            }
            if minimum < maximum {
                kind = .slider(
                    Control.Slider(
                        minimum: minimum, maximum: maximum, axis: axis, isContinuous: continuous, step: step ?? nil))
            }
        case .segmented:
            allowed = segmentedKeys + axisKeys + valueKeys
            let count = table.integer("segments", in: 1...64, required: true)
            let axis = table.choice("axis", ["horizontal", "vertical"]).flatMap(Control.Axis.init) ?? .horizontal
            if let count {
                value = table.integer("value", in: 0...(count - 1)).map(Double.init)
                kind = .segmented(Control.Segmented(count: count, axis: axis))
            } else {
                _ = table.value("value")  // not checkable without a valid count; the count's problem is reported
            }
        case .toggle:
            kind = .toggle
        case .button:
            kind = .button
        }
        for key in sliderKeys + axisKeys + segmentedKeys + valueKeys
        where !allowed.contains(key) && table.table.contains(key: key) {
            _ = table.value(key)
            // With an invalid kind, only the kind's own problem is reported.
            if kindIsValid { table.report(key, "'\(key)' does not apply to a \(kindName.rawValue)") }
        }

        var actions = TargetActionTable()
        for action in table.tables("actions", limit: Limits.actionsPerControl) {
            defer { action.finish() }
            let events = decodeEvents(action, applicationEvents: applicationEvents)
            guard let (actionTarget, name) = decodeActionTarget(action, targets: targets) else { continue }
            if let events {
                actions.add(target: TargetSlot(actionTarget), action: name, for: events)
            }
        }

        guard let id, let kind, let shape = shape ?? nil else { return nil }
        return Control(
            id: id, kind: kind, shape: shape, parent: parent, z: z, isEnabled: enabled, isSelected: selected,
            value: value, dragOutset: dragOutset, repeatInterval: repeatInterval, repeatSlop: repeatSlop,
            target: target, actions: actions)
    }

    /// A slider's `step`: absent (nil), or a number above 0 and at most `max − min` (`.some(nil)` after reporting one
    /// that is not), so that the value grid `min + k·step` holds at least `min` and one step more.
    private func decodeStep(_ table: TableReader, minimum: Double, maximum: Double) -> Double?? {
        guard table.contains("step") else { return nil }
        guard let step = table.number("step", in: -.greatestFiniteMagnitude ... .greatestFiniteMagnitude) else {
            return .some(nil)
        }
        guard step > 0 else {
            table.report("step", "must be greater than 0 (the value snaps to min + k·step)")
            return .some(nil)
        }
        guard minimum < maximum else { return .some(nil) }  // max's own problem is reported
        guard step <= maximum - minimum else {
            table.report(
                "step",
                "\(TableReader.format(step)) is larger than the slider's range (max − min = "
                    + "\(TableReader.format(maximum - minimum))): the value could never leave min")
            return .some(nil)
        }
        return step
    }

    /// An action entry's `target` (nil: the responder chain) and `action`, shared by control and
    /// gesture actions; nil after reporting when either is wrong, including an explicit target that
    /// does not respond to the action (UIKit would crash at run time; touchd refuses at load time).
    private func decodeActionTarget(
        _ action: TableReader, targets: [String: Configuration.TargetDefinition]
    ) -> (target: String?, action: String)? {
        let targetName = action.string("target")
        let target = checkTargetName(targetName, in: action, key: "target", targets: targets)
        guard let name = action.string("action", required: true) else { return nil }
        guard isValidAction(name) else {
            action.report("action", "'\(name)' is not a valid action name: \(actionRule)")
            return nil
        }
        if let target, let definition = targets[target], !definition.respondsTo.contains(name) {
            let respondsTo = definition.respondsTo.joined(separator: ", ")
            action.report("action", "target '\(target)' does not respond to '\(name)' (its responds_to: \(respondsTo))")
            return nil
        }
        guard targetName == nil || target != nil else { return nil }
        return (target, name)
    }

    /// An action's `events`: UIKit event or mask names and the configuration's application events.
    private func decodeEvents(_ action: TableReader, applicationEvents: [String: Control.Event]) -> Control.Event? {
        guard let names = action.strings("events", limit: 64, required: true) else { return nil }
        guard !names.isEmpty else {
            action.report("events", "no events: name at least one (touchUpInside, valueChanged, allTouchEvents…)")
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
                log.report("\(action.keyPath("events"))[\(index)]", unknown("event", name, known))
                valid = false
            }
        }
        return valid ? events : nil
    }

    private func decodeGesture(
        _ table: TableReader, id: String?, bounds: Rect, groups: Set<String>, controls: Set<String>,
        gestures: Set<String>, targets: [String: Configuration.TargetDefinition]
    ) -> Configuration.Gesture? {
        defer { table.finish() }
        let kind = table.choice("kind", Configuration.Gesture.Kind.allCases.map(\.rawValue)).flatMap(
            Configuration.Gesture.Kind.init)
        if kind == nil && !table.table.contains(key: "kind") { table.reportTable("missing required key 'kind'") }
        let fingers = table.integer("fingers", in: 1...10) ?? (kind == .pinch ? 2 : 1)
        if kind == .pinch, fingers < 2 { table.report("fingers", "a pinch needs at least 2 fingers") }
        let shape = decodeShape(table, bounds: bounds, required: false)
        let parent = checkParent(table, groups: groups)
        var control: String?
        if let name = table.string("control") {
            if controls.contains(name) {
                control = name
            } else {
                table.report("control", unknown("control", name, controls))
            }
        }
        if parent != nil && control != nil {
            table.reportTable("a gesture is attached to a group (parent) or to a control, not both")
        }
        let relations = ["simultaneous_with", "requires_failure_of"].map { key -> [String] in
            let names = table.strings(key, limit: Limits.gestures) ?? []
            for (index, name) in names.enumerated() where !gestures.contains(name) || name == id {
                log.report(
                    "\(table.keyPath(key))[\(index)]",
                    name == id ? "a gesture cannot refer to itself" : unknown("gesture", name, gestures))
            }
            return names
        }
        // Keys that belong to particular kinds.
        let kindKeys: [String: [Configuration.Gesture.Kind]] = [
            "taps": [.tap], "minimum_duration_ms": [.longPress], "allowable_movement": [.tap, .longPress],
            "directions": [.swipe], "minimum_distance": [.swipe, .pan], "maximum_duration_ms": [.swipe, .tap],
            "edge": [.swipe], "edge_margin": [.swipe],
        ]
        if let kind {
            for (key, kinds) in kindKeys.sorted(by: { $0.key < $1.key })
            where table.table.contains(key: key) && !kinds.contains(kind) {
                _ = table.value(key)
                table.report(key, "'\(key)' does not apply to a \(kind.rawValue) gesture")
            }
        }
        let taps = table.integer("taps", in: 1...10) ?? 1
        let minimumDuration = table.milliseconds("minimum_duration_ms", in: 1...60_000) ?? 500_000
        let maximumDuration = table.milliseconds("maximum_duration_ms", in: 1...60_000)
        let allowableMovement = table.number("allowable_movement", in: 0...1_000) ?? 10
        let minimumDistance = table.number("minimum_distance", in: 1...10_000) ?? 100
        let directions = table.strings("directions", limit: 4) ?? ["left", "right", "up", "down"]
        for (index, direction) in directions.enumerated() where !["left", "right", "up", "down"].contains(direction) {
            log.report("\(table.keyPath("directions"))[\(index)]", "'\(direction)' is not one of left, right, up, down")
        }
        let edge = table.choice("edge", ["left", "right", "top", "bottom"])
        let edgeMargin = table.number("edge_margin", in: 1...1_000) ?? 30
        let cancelsTouches = table.bool("cancels_touches") ?? true
        let delaysTouchesEnded = table.bool("delays_touches_ended") ?? true
        let delaysTouchesBegan = table.bool("delays_touches_began") ?? false

        var actions: [Configuration.GestureAction] = []
        for action in table.tables("actions", limit: Limits.actionsPerControl) {
            defer { action.finish() }
            let events = action.strings("events", limit: 8, required: true) ?? []
            if action.table.contains(key: "events"), events.isEmpty {
                action.report("events", "no events: name at least one of \(GestureEvents.all.joined(separator: ", "))")
            }
            for (index, event) in events.enumerated() where !GestureEvents.all.contains(event) {
                let message =
                    Control.Event(name: event) != nil
                    ? "'\(event)' is a control event; a gesture's events are "
                        + GestureEvents.all.joined(separator: ", ")
                    : unknown("gesture event", event, GestureEvents.all, listing: "gesture events")
                log.report("\(action.keyPath("events"))[\(index)]", message)
            }
            guard let (actionTarget, name) = decodeActionTarget(action, targets: targets) else { continue }
            actions.append(Configuration.GestureAction(events: events, target: actionTarget, action: name))
        }
        guard let id, let kind else { return nil }
        return Configuration.Gesture(
            id: id, kind: kind, fingers: fingers, taps: taps, minimumDuration: minimumDuration,
            maximumDuration: maximumDuration, allowableMovement: allowableMovement, minimumDistance: minimumDistance,
            directions: directions, edge: edge, edgeMargin: edgeMargin, shape: shape ?? nil, parent: parent,
            control: control, cancelsTouches: cancelsTouches, delaysTouchesEnded: delaysTouchesEnded,
            delaysTouchesBegan: delaysTouchesBegan, simultaneousWith: relations[0], requiresFailureOf: relations[1],
            actions: actions)
    }

    // MARK: - Idle

    /// `[idle]`: the timeout, the screen shown at idle and the actions of `idle` and `wake`.
    private func decodeIdle(
        targets: [String: Configuration.TargetDefinition], screens: Set<String>
    ) -> Configuration.Idle {
        var idle = Configuration.Idle()
        guard let table = root.table("idle") else { return idle }
        defer { table.finish() }
        if let seconds = table.integer("timeout_s", in: 0...Configuration.Idle.maximumTimeoutSeconds) {
            // In range, so the product stays far below UInt64.max.
            idle.timeout = UInt64(seconds) * 1_000_000
        }
        if let reaches = table.bool("wake_touch_reaches_controls") { idle.wakeTouchReachesControls = reaches }
        if let screen = table.string("screen") {
            if screens.contains(screen) {
                idle.screen = screen
            } else {
                table.report("screen", unknown("screen", screen, screens))
            }
        }
        let names = Configuration.Idle.Event.allCases.map(\.rawValue)
        for action in table.tables("actions", limit: Limits.actionsPerControl) {
            defer { action.finish() }
            let events = action.strings("events", limit: 8, required: true) ?? []
            if action.table.contains(key: "events"), events.isEmpty {
                action.report("events", "no events: name at least one of \(names.joined(separator: ", "))")
            }
            var valid = Set<Configuration.Idle.Event>()
            for (index, name) in events.enumerated() {
                if let event = Configuration.Idle.Event(rawValue: name) {
                    valid.insert(event)
                } else {
                    log.report(
                        "\(action.keyPath("events"))[\(index)]",
                        unknown("idle event", name, names, listing: "idle events"))
                }
            }
            guard let (target, name) = decodeActionTarget(action, targets: targets), !valid.isEmpty else { continue }
            idle.actions.append(Configuration.Idle.Action(events: valid, target: target, action: name))
        }
        return idle
    }

    // MARK: - Shapes

    /// The shape given by exactly one of `frame`, `circle`, `polygon`. Returns nil on a problem,
    /// `.some(nil)` when absent and not required.
    private func decodeShape(_ table: TableReader, bounds: Rect, required: Bool) -> Shape?? {
        let present = ["frame", "circle", "polygon"].filter { table.contains($0) }
        guard present.count <= 1 else {
            table.reportTable("give one shape, not \(present.joined(separator: " and "))")
            return nil
        }
        guard let key = present.first else {
            if required { table.reportTable("missing shape: give frame = { x, y, width, height }, circle or polygon") }
            return required ? nil : .some(nil)
        }
        let shape: Shape?
        switch key {
        case "frame":
            shape = table.table("frame").flatMap { frame in
                defer { frame.finish() }
                return decodeRect(frame, bounds: bounds).map(Shape.rect)
            }
        case "circle":
            shape = table.table("circle").flatMap { circle in
                defer { circle.finish() }
                let cx = coordinate(circle, "cx", length: bounds.width)
                let cy = coordinate(circle, "cy", length: bounds.height)
                let r = coordinate(circle, "r", length: Swift.min(bounds.width, bounds.height), positive: true)
                guard let cx, let cy, let r else { return nil }
                return .circle(Circle(center: Point(x: cx, y: cy), radius: r))
            }
        default:
            shape = decodePolygon(table, bounds: bounds).map(Shape.polygon)
        }
        guard let shape else { return nil }
        let box = shape.boundingBox
        if box.maxX <= bounds.minX || box.minX >= bounds.maxX || box.maxY <= bounds.minY || box.minY >= bounds.maxY {
            let (width, height) = (TableReader.format(bounds.width), TableReader.format(bounds.height))
            var message = "the shape lies entirely outside the output (\(width)×\(height))"
            // A rotated panel's size written as the panel's, not as the UI is drawn: the shape fits the other way.
            let swapped = Rect(x: bounds.minX, y: bounds.minY, width: bounds.height, height: bounds.width)
            if rotation == .right || rotation == .left, box.minX >= swapped.minX, box.maxX <= swapped.maxX,
                box.minY >= swapped.minY, box.maxY <= swapped.maxY
            {
                message +=
                    "; with rotation = \(rotation.rawValue), [output] width and height are the screen as the UI is "
                    + "drawn, after rotation: did you mean width = \(height), height = \(width)?"
            }
            table.report(key, message)
            return nil
        }
        return .some(shape)
    }

    private func decodeRect(_ table: TableReader, bounds: Rect) -> Rect? {
        let x = coordinate(table, "x", length: bounds.width)
        let y = coordinate(table, "y", length: bounds.height)
        let width = coordinate(table, "width", length: bounds.width, positive: true)
        let height = coordinate(table, "height", length: bounds.height, positive: true)
        guard let x, let y, let width, let height else { return nil }
        return Rect(x: x, y: y, width: width, height: height)
    }

    private func decodePolygon(_ table: TableReader, bounds: Rect) -> Polygon? {
        guard let value = table.value("polygon") else { return nil }
        guard let array = value.array, (3...Limits.polygonVertices).contains(array.count) else {
            table.report("polygon", "expected 3 to \(Limits.polygonVertices) points, each [x, y]")
            return nil
        }
        var vertices: [Point] = []
        for (index, element) in array.enumerated() {
            let path = "\(table.keyPath("polygon"))[\(index)]"
            guard let pair = element.array, pair.count == 2 else {
                log.report(path, "expected a point [x, y]")
                return nil
            }
            let x = coordinateValue(pair[0], at: "\(path)[0]", length: bounds.width, positive: false)
            let y = coordinateValue(pair[1], at: "\(path)[1]", length: bounds.height, positive: false)
            guard let x, let y else { return nil }
            vertices.append(Point(x: x, y: y))
        }
        let polygon = Polygon(vertices: vertices)
        // Twice the signed area (shoelace): zero for points on one line, whatever their bounding box.
        var doubleArea = 0.0
        for (index, vertex) in vertices.enumerated() {
            let next = vertices[(index + 1) % vertices.count]
            doubleArea += vertex.x * next.y - next.x * vertex.y
        }
        guard doubleArea.isFinite, abs(doubleArea) > 0 else {
            table.report("polygon", "the polygon has no area")
            return nil
        }
        return polygon
    }

    /// A coordinate in pixels, or a percentage of `length` written as a string ("25%").
    private func coordinate(_ table: TableReader, _ key: String, length: Double, positive: Bool = false) -> Double? {
        guard let value = table.value(key) else {
            table.reportTable("missing required key '\(key)'")
            return nil
        }
        return coordinateValue(value, at: table.keyPath(key), length: length, positive: positive)
    }

    private func coordinateValue(_ value: TOMLValue, at path: String, length: Double, positive: Bool)
        -> Double?
    {
        let reach = ConfigurationLoader.Limits.coordinateReach * length
        var number: Double?
        if let string = value.string {
            guard string.hasSuffix("%"), let percent = Double(string.dropLast()), percent.isFinite else {
                log.report(path, "'\(string)' is not a percentage like \"25%\" (or give pixels as a number)")
                return nil
            }
            // The same reach as pixels: at most `coordinateReach` output sizes.
            let limit = ConfigurationLoader.Limits.coordinateReach * 100
            guard (-limit...limit).contains(percent) else {
                log.report(
                    path, "\(string) is out of range -\(TableReader.format(limit))%…\(TableReader.format(limit))%")
                return nil
            }
            number = percent / 100 * length
        } else {
            number = TableReader.number(value, in: -reach...reach, at: path, log: log)
        }
        guard let number else { return nil }
        if positive && number <= 0 {
            log.report(path, "must be greater than 0")
            return nil
        }
        return number
    }
}

/// The events of a gesture recognizer that actions can name.
enum GestureEvents {
    static let all = ["began", "changed", "recognized", "ended", "cancelled", "failed"]
}

let idRule = "letters, digits, '_' and '-', starting with a letter, at most 64 characters"
let actionRule = "letters, digits, '_', '-' and '.', starting with a letter, at most 128 characters"

func isValidID(_ id: String) -> Bool {
    guard let first = id.first, first.isASCII, first.isLetter, id.count <= ConfigurationLoader.Limits.idLength else {
        return false
    }
    return id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
}

func isValidAction(_ action: String) -> Bool {
    guard let first = action.first, first.isASCII, first.isLetter,
        action.count <= ConfigurationLoader.Limits.actionLength
    else { return false }
    return action.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
}

func isValidEnvironmentName(_ name: String) -> Bool {
    guard let first = name.first, first.isASCII, first.isLetter || first == "_" else { return false }
    return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
}
