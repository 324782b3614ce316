import ArgumentParser
import TouchModel

/// `touchd check`: validate a configuration and summarise it.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate a configuration file and summarise it.",
        discussion: """
            Exits 0 and prints a summary when the file is valid. Otherwise exits 78 (EX_CONFIG) and prints the \
            problems on standard error, one per line, as PATH:LINE:COLUMN: error: KEY.PATH: MESSAGE, or as \
            PATH: error: KEY.PATH: MESSAGE when the position is not known (the first 100, then how many more). \
            Warnings, which leave the exit status alone, have the same form with warning: instead of error:. They \
            are about a file others can change, itself or through a directory on its path (refused with \
            --strict-permissions), command programs that are missing, not executable or under a directory anyone \
            can write to, socket targets in a directory every local user can write to (/tmp), and layouts that \
            cannot work as written: a group no screen lists, a control hidden entirely under an enabled one above \
            it.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var permissions: PermissionsOption

    func run() throws {
        let configuration = try options.loadChecked(permissions)
        do {
            _ = try configuration.makeScene()
        } catch {
            // The loader checks everything the scene does; reaching this is a bug worth a clear report.
            for problem in error.problems { printError("\(options.config): error: \(problem)") }
            throw ExitCode(ExitStatus.configuration)
        }
        print("\(options.config): ok")
        for line in configuration.summary { print("  \(line)") }
    }
}

extension Configuration {
    /// The matrices in effect, when the file turns or calibrates anything: touchd's for the output and for each
    /// `[[device]]` entry with its own, each applied after libinput's own (docs/configuration.md, "Rotation and
    /// calibration"). None when nothing is set, where positions pass through as libinput reports them.
    var mappingSummary: [String] {
        func settings(_ rotation: Rotation, _ calibration: [Double]?) -> String {
            "rotation \(rotation.rawValue)°, calibration "
                + (calibration.map { CoordinateMapper.describe($0) } ?? "none")
        }
        let overriding = devices.enumerated().filter { $0.element.rotation != nil || $0.element.calibration != nil }
        guard output.rotation != .normal || output.calibration != nil || !overriding.isEmpty else { return [] }
        let base = CoordinateMapper(output: output, device: nil)
        var lines = [
            "touchd's matrix \(CoordinateMapper.describe(base.matrix)) (\(settings(output.rotation, output.calibration)))"
                + (!devices.isEmpty && devices.allSatisfy { $0.rotation != nil && $0.calibration != nil }
                    ? ", used by no device (every [[device]] entry has its own)" : "")
                + ", applied after libinput's own (udev LIBINPUT_CALIBRATION_MATRIX; touchd run logs it per device)"
        ]
        for (index, device) in overriding {
            let mapper = CoordinateMapper(output: output, device: device)
            lines.append(
                "device[\(index)]: touchd's matrix \(CoordinateMapper.describe(mapper.matrix)) "
                    + "(\(settings(mapper.rotation, device.calibration ?? output.calibration)))")
        }
        return lines
    }

    /// A few lines that say what the configuration holds.
    var summary: [String] {
        func count(_ number: Int, _ singular: String, _ plural: String? = nil) -> String {
            "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
        }
        var kinds: [String: Int] = [:]
        for control in controls { kinds[control.kind.name, default: 0] += 1 }
        let kindList = Control.Kind.Name.allCases.compactMap { kind in
            kinds[kind.rawValue].map { count($0, kind.rawValue) }
        }
        let actions =
            controls.reduce(0) { $0 + $1.actions.entries.count } + gestures.reduce(0) { $0 + $1.actions.count }
        // `1 socket, 2 exec`: every kind of target, in the schema's order.
        let targetsByKind = Schema.targetKinds.map { kind in
            "\(targets.filter { $0.kind.name == kind.name }.count) \(kind.name)"
        }
        var lines = [
            "output \(Self.number(output.width))×\(Self.number(output.height)), rotation \(output.rotation.rawValue)°, seat \(seat)"
                + (ignoreVirtual ? ", virtual input devices ignored" : ""),
            [
                count(screens.count, "screen"), count(groups.count, "group"),
                count(controls.count, "control") + (kindList.isEmpty ? "" : " (\(kindList.joined(separator: ", ")))"),
                count(gestures.count, "gesture"),
            ].joined(separator: ", "),
            "\(count(targets.count, "target")) (\(targetsByKind.joined(separator: ", "))), \(count(actions, "action"))",
        ]
        if !devices.isEmpty { lines.append(count(devices.count, "device matcher")) }
        lines += mappingSummary
        if idle.isEnabled {
            lines.append(
                "idle after \(count(Int(idle.timeout / 1_000_000), "second")) without a touch"
                    + (idle.screen.map { ": screen \($0)" } ?? "") + ", \(count(idle.actions.count, "idle action")), "
                    + "the wake touch reaches \(idle.wakeTouchReachesControls ? "the controls" : "nobody")")
        }
        if filter.enabled {
            // What the application beneath touchd will and will not see (docs/kiosk.md).
            var parts = ["filter mode: the application reads the touchscreens' twins"]
            let alone = controls.filter { !$0.toApp }.count
            if alone > 0 { parts.append("\(count(alone, "control")) touchd's alone (to_app = false)") }
            let delaying = gestures.filter(\.delaysTouchesBegan).count
            if delaying > 0 { parts.append("\(count(delaying, "gesture")) delaying touches") }
            if filter.appMaxContacts > 0 {
                parts.append("at most \(count(filter.appMaxContacts, "touch", "touches")) at once")
            }
            if filter.swallowAfterIdle > 0 {
                parts.append(
                    "the wake touch swallowed after \(Self.number(Double(filter.swallowAfterIdle) / 1_000_000)) s")
            }
            parts.append("claimed touches end as a \(filter.cancelWith == .lift ? "lift" : "palm cancel")")
            parts.append(
                filter.grabSiblings
                    ? "each panel's sibling pointer nodes grabbed too (grab_siblings; touchd identify lists them)"
                    : "sibling pointer nodes left to the compositor (grab_siblings = false)")
            lines.append(parts.joined(separator: ", "))
            lines.append(twinSpaceSummary)
        }
        if accessibility.enabled {
            let start =
                accessibility.startGesture.map { "started by gesture \($0)" } ?? "started over the control socket"
            var parts = ["speech mode: " + start]
            parts.append("\(count(elements.count, "element"))")
            if !accessibility.passthrough.isEmpty {
                parts.append("\(count(accessibility.passthrough.count, "passthrough region"))")
            }
            parts.append(
                accessibility.exitAfterIdle > 0
                    ? "ends after \(count(Int(accessibility.exitAfterIdle / 1_000_000), "second")) without a touch"
                    : "never ends by itself")
            lines.append(parts.joined(separator: ", "))
            lines += readingOrderSummary
        }
        if !applicationEvents.isEmpty {
            lines.append("application events: \(applicationEvents.keys.sorted().joined(separator: ", "))")
        }
        return lines
    }

    /// What `[filter] twin_space` means for the compositor (docs/kiosk.md, "Which twin_space").
    var twinSpaceSummary: String {
        let turned = output.rotation != .normal || devices.contains { ($0.rotation ?? .normal) != .normal }
        let regions = devices.contains { $0.region != nil }
        switch filter.twinSpace {
        case .device:
            return "twin_space = \"device\": the twins report each panel's own device coordinates (touchd's rotation,"
                + " calibration and region undone), for a compositor that maps and turns touch itself (GNOME, KDE)"
                + (turned || regions
                    ? "; a compositor that does not turn touch (cage; sway and labwc with the touchscreen mapped to no"
                        + " output) gives the application other points than touchd's controls: twin_space = \"output\""
                        + " makes them agree"
                    : "")
        case .output:
            return "twin_space = \"output\": the twins report the point touchd's controls see, in coordinates of the"
                + " \(Self.number(output.width))×\(Self.number(output.height)) output, for a compositor that maps touch"
                + " onto the output without turning it (cage; sway and labwc with the touchscreen mapped to no output);"
                + " not for GNOME, KDE or a touchscreen mapped to a turned output, which would turn it again"
        }
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }
}
