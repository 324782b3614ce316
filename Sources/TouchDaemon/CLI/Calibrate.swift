import ArgumentParser
import Foundation
import Glibc
import TOML
import TouchModel

/// `touchd calibrate`: the installer touches targets shown on the screen; touchd fits the `[[device]]` entry's
/// `calibration` and writes it into the file (or prints it). The fit, the picture and the edit are pure
/// (``CalibrationFit``, ``CalibrationCanvas``, ``CalibrationEdit``); this command is their edge: libinput, the grab,
/// the display, the terminal, signals and the file.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Calibrate a touchscreen: touch the targets shown, and the fitted matrix is written to the file.",
        discussion: """
            Shows five targets, one after the other, on the display (drawn on the DRM device, with no compositor \
            running) and in the terminal: four near the corners of the panel's region, fitted, and the centre, which \
            checks the fit. Touch each with one finger and lift. The panel is grabbed while calibrating, so the \
            touches reach neither the application nor a running touchd. The matrix that makes touchd's own mapping \
            (libinput's matrix, then calibration, then the entry's rotation and region) put each touch on its target \
            is fitted by least squares; the error of every point, in output pixels, is printed, and a fit with an \
            error above --max-error-px is refused (a touch slipped: run it again). Otherwise the matching [[device]] \
            entry's calibration is replaced, or inserted after its header, or a new [[device]] entry is added at the \
            end; every other line of the file, comments included, stays as it was. Reload a running touchd to apply \
            it (touchd ctl reload, systemctl reload touchd). With --print nothing is written: the TOML lines and the \
            equivalent udev rule are printed instead. When the display cannot be opened (a compositor holds it), the \
            targets are only printed, in output pixels. Esc on the terminal, SIGINT, SIGTERM or --timeout cancel \
            without touching the file (exit 1). A fit that is refused exits 65, no usable touchscreen 69, a file \
            that cannot be written 73, an invalid configuration 78.
            """
    )

    @OptionGroup var options: ConfigOption

    @Option(
        help: ArgumentHelp(
            "The touchscreen to calibrate: a shell glob matched against its name, event node, sysname or udev links "
                + "(needed when several are in use).", valueName: "pattern"))
    var device: String?

    @Flag(help: "Print the TOML lines and the equivalent udev rule instead of writing the file.")
    var print = false

    @Flag(help: "Progress as JSON Lines on standard output: the display, each target shown, each touch, the result.")
    var json = false

    @Option(
        name: .customLong("max-error-px"),
        help: ArgumentHelp("Refuse a fit whose error at any point is above this, in output pixels.", valueName: "px"))
    var maxErrorPx: Double = 3

    @Option(help: ArgumentHelp("Cancel after this many seconds (0: never).", valueName: "seconds"))
    var timeout: Int = 120

    @Option(help: ArgumentHelp("The DRM device to draw the targets on.", valueName: "path"))
    var drm: String = "/dev/dri/card0"

    @Option(
        help: ArgumentHelp(
            "How the kiosk's picture is turned on the display, in degrees, as [output] rotation turns a panel that "
                + "lies square on it (90 for cage -r); the targets are drawn where the picture's points are.",
            valueName: "degrees"))
    var displayRotation: Int = 0

    @Flag(help: "Draw nothing: print the targets' positions only (for a printed overlay or a test harness).")
    var noDisplay = false

    @Option(
        help: ArgumentHelp(
            "Write the screen as shown for each target to this file, as a binary PPM (the last one stays).",
            valueName: "path"))
    var screenshot: String?

    func validate() throws {
        guard maxErrorPx.isFinite, maxErrorPx > 0, maxErrorPx <= 1000 else {
            throw ValidationError("--max-error-px takes a number of pixels above 0 and up to 1000")
        }
        guard Configuration.Rotation(rawValue: displayRotation) != nil else {
            throw ValidationError("--display-rotation takes 0, 90, 180 or 270")
        }
        guard (0...86_400).contains(timeout) else {
            throw ValidationError("--timeout takes whole seconds from 0 (never) to 86400")
        }
    }

    func run() throws {
        let configuration = try options.load()
        guard let signals = SignalChannel() else {
            printError("touchd: error: cannot set up signal handling: \(String(cString: strerror(errno)))")
            throw ExitCode(71)
        }
        var session = CalibrationSession(command: self, configuration: configuration, signals: signals)
        let status = session.run()
        if status != 0 { throw ExitCode(status) }
    }
}

/// One calibration, from finding the panel to writing the file.
struct CalibrationSession {
    let command: Calibrate
    let configuration: Configuration
    let signals: SignalChannel
    private var deadline: UInt64?
    private var terminal: RawTerminal?

    init(command: Calibrate, configuration: Configuration, signals: SignalChannel) {
        self.command = command
        self.configuration = configuration
        self.signals = signals
        if command.timeout > 0 {
            deadline = monotonicMicroseconds() + UInt64(command.timeout) * 1_000_000
        }
    }

    /// Why the session stopped before the fit.
    enum Stop: Error {
        case cancelled(String)
        case failed(Int32, String)
    }

    /// Human progress: standard output, or standard error when standard output carries JSON.
    func say(_ line: String) {
        if command.json { printError(line) } else { Swift.print(TerminalText.escaped(line)) }
    }

    func emit(_ build: (inout JSONLine) -> Void) {
        guard command.json else { return }
        var line = JSONLine()
        build(&line)
        // Unbuffered: a harness reads each line as it comes, to touch the target it names.
        try? writeAll(line.lineBytes(terminator: UInt8(ascii: "\n")), to: STDOUT_FILENO)
    }

    mutating func run() -> Int32 {
        terminal = RawTerminal()
        defer { terminal = nil }
        let logger = Run.makeLogger(level: .warning)
        let context: LibinputContext
        do {
            context = try LibinputContext(seat: configuration.seat, logger: logger)
        } catch {
            printError("touchd: error: \(error.description)")
            return 69
        }
        defer { context.releaseGrabs() }
        do throws(Stop) {
            let panel = try findPanel(context)
            let entry = configuration.devices.firstIndex { $0.matches(panel) }
            if let problem = context.grabAlone(panel) {
                throw Stop.failed(69, "\(panel.summary): \(problem)")
            }
            let fit = CalibrationFit(output: configuration.output, device: entry.map { configuration.devices[$0] })
            let mapper = fit.mapper(calibration: CoordinateMapper.identity)
            say(
                "calibrating \(panel.summary), "
                    + (entry.map { "device[\($0)] of \(command.options.config)" }
                        ?? "no [[device]] entry matches it" + (command.print ? "" : " (one will be added)"))
                    + ", rotation \(mapper.rotation.rawValue)°, region \(Self.describe(fit.region)) of the "
                    + "\(Configuration.number(configuration.output.width))×"
                    + "\(Configuration.number(configuration.output.height)) output")
            emit {
                $0.add("type", "device")
                $0.add("name", panel.name)
                $0.add("sysname", panel.sysname)
                if let entry { $0.add("entry", entry) } else { $0.add("entry", nil as String?) }
            }
            let display = openDisplay()
            let targets = fit.targets
            var touches: [Point] = []
            for index in targets.indices {
                show(target: index, of: targets, on: display)
                touches.append(try collect(index: index, context: context, device: panel.id))
            }
            display.screen = nil
            return finish(fit: fit, targets: targets, touches: touches, panel: panel, entry: entry)
        } catch {
            switch error {
            case .cancelled(let reason):
                say("cancelled (\(reason)): nothing written")
                emit {
                    $0.add("type", "cancelled")
                    $0.add("reason", reason)
                }
                return 1
            case .failed(let status, let message):
                printError("touchd: error: \(message)")
                return status
            }
        }
    }

    static func describe(_ rect: Rect) -> String {
        "\(Configuration.number(rect.width))×\(Configuration.number(rect.height)) at "
            + "(\(Configuration.number(rect.minX)), \(Configuration.number(rect.minY)))"
    }

    // MARK: - The panel

    /// The touchscreen to calibrate: `--device`'s, else the only one the file uses (else the only one there is).
    private mutating func findPanel(_ context: LibinputContext) throws(Stop) -> DeviceInfo {
        var said = false
        while true {
            // libinput adds the seat's devices on its first dispatch, and later ones as they come.
            _ = context.dispatch()
            let touchscreens = context.devices.values.filter(\.isTouchscreen).sorted { $0.id < $1.id }
                .filter { !(configuration.ignoreVirtual && $0.isVirtual) }
            let chosen: [DeviceInfo]
            if let pattern = command.device {
                chosen = touchscreens.filter { panel in
                    ([panel.name, panel.sysname] + (panel.devnode.map { [$0] } ?? []) + panel.links).contains {
                        Configuration.DeviceMatch.glob(pattern, matches: $0)
                    }
                }
            } else {
                let used = touchscreens.filter { panel in configuration.devices.contains { $0.matches(panel) } }
                chosen = configuration.devices.isEmpty || used.isEmpty ? touchscreens : used
            }
            if chosen.count == 1 { return chosen[0] }
            if chosen.count > 1 {
                throw .failed(
                    64,
                    "several touchscreens: choose one with --device: "
                        + chosen.map { "\($0.summary) \($0.devnode ?? "")" }.joined(separator: "; "))
            }
            if !said {
                say("waiting for a touchscreen" + (command.device.map { " matching '\($0)'" } ?? ""))
                said = true
            }
            _ = try wait(for: context)
        }
    }

    // MARK: - Waiting

    /// Waits until libinput has events (true), or throws when cancelled.
    private func wait(for context: LibinputContext) throws(Stop) -> Bool {
        var descriptors = [
            pollfd(fd: context.fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: signals.fileDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        if let terminal { descriptors.append(pollfd(fd: terminal.fd, events: Int16(POLLIN), revents: 0)) }
        let timeout = pollTimeout(until: deadline, now: monotonicMicroseconds())
        let ready = poll(&descriptors, nfds_t(descriptors.count), min(timeout < 0 ? 1000 : timeout, 1000))
        if ready < 0, errno != EINTR {
            throw .failed(71, "poll failed: \(String(cString: strerror(errno)))")
        }
        if let signal = signals.drain().first(where: { $0 == SIGINT || $0 == SIGTERM }) {
            throw .cancelled(signal == SIGINT ? "SIGINT" : "SIGTERM")
        }
        if let terminal, descriptors.count > 2, descriptors[2].revents != 0, terminal.readEscape() {
            throw .cancelled("Esc")
        }
        if let deadline, monotonicMicroseconds() >= deadline {
            throw .cancelled("--timeout \(command.timeout) s")
        }
        return descriptors[0].revents != 0
    }

    /// The next usable touch on the panel, libinput's normalised position.
    private func collect(index: Int, context: LibinputContext, device: Int) throws(Stop) -> Point {
        var collector = TouchCollector(device: device)
        while true {
            for event in context.dispatch() {
                switch event {
                case .touch(let touch):
                    switch collector.handle(touch) {
                    case .none, .began: break
                    case .discarded(let why):
                        say("  \(why); touch target \(index + 1) again")
                        emit {
                            $0.add("type", "discarded")
                            $0.add("index", index)
                            $0.add("reason", why)
                        }
                    case .touched(let point):
                        say("  touched at (\(Self.fraction(point.x)), \(Self.fraction(point.y))) of the panel")
                        emit {
                            $0.add("type", "touch")
                            $0.add("index", index)
                            $0.add("raw_x", point.x)
                            $0.add("raw_y", point.y)
                        }
                        return point
                    }
                case .deviceRemoved(let id) where id == device:
                    throw .failed(69, "the touchscreen was unplugged")
                default: break
                }
            }
            _ = try wait(for: context)
        }
    }

    static func fraction(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e9 else { return "\(value)" }
        let scaled = Int64((value * 10_000).rounded())
        let magnitude = scaled < 0 ? -scaled : scaled
        let digits = String(magnitude % 10_000)
        return (scaled < 0 ? "-" : "") + "\(magnitude / 10_000)."
            + String(repeating: "0", count: 4 - digits.count) + digits
    }

    // MARK: - The display

    /// What shows the targets: the DRM screen when it could be opened, and always the terminal.
    final class Display {
        var screen: DRMScreen?
        var canvas: CalibrationCanvas?
        init(screen: DRMScreen?, canvas: CalibrationCanvas?) {
            self.screen = screen
            self.canvas = canvas
        }
    }

    private func openDisplay() -> Display {
        let output = configuration.output
        guard !command.noDisplay else {
            say("drawing nothing (--no-display): touch the printed positions")
            emit {
                $0.add("type", "display")
                $0.add("drm", nil as String?)
                $0.add("reason", "--no-display")
            }
            // Still drawn in memory at the output's size, for --screenshot.
            let canvas = CalibrationCanvas(
                width: Int(exactly: output.width.rounded()) ?? 0, height: Int(exactly: output.height.rounded()) ?? 0)
            return Display(screen: nil, canvas: canvas)
        }
        do throws(DRMFailure) {
            let screen = try DRMScreen(path: command.drm)
            say("showing the targets on \(command.drm) (\(screen.width)×\(screen.height))")
            emit {
                $0.add("type", "display")
                $0.add("drm", command.drm)
                $0.add("width", screen.width)
                $0.add("height", screen.height)
            }
            return Display(screen: screen, canvas: CalibrationCanvas(width: screen.width, height: screen.height))
        } catch {
            say(
                "cannot draw on the display: \(error.description); touch the positions printed below "
                    + "(output pixels from the top-left corner), on a printed overlay or with a test harness")
            emit {
                $0.add("type", "display")
                $0.add("drm", nil as String?)
                $0.add("reason", error.description)
            }
            let canvas = CalibrationCanvas(
                width: Int(exactly: output.width.rounded()) ?? 0, height: Int(exactly: output.height.rounded()) ?? 0)
            return Display(screen: nil, canvas: canvas)
        }
    }

    private func show(target index: Int, of targets: [CalibrationFit.Target], on display: Display) {
        let target = targets[index]
        say(
            "target \(index + 1) of \(targets.count)\(target.role == .check ? " (checks the fit)" : "") at "
                + "(\(Configuration.number(target.point.x)), \(Configuration.number(target.point.y))): touch its "
                + "centre with one finger and lift (Esc cancels)")
        emit {
            $0.add("type", "target")
            $0.add("index", index)
            $0.add("count", targets.count)
            $0.add("role", target.role.rawValue)
            $0.add("x", target.point.x)
            $0.add("y", target.point.y)
        }
        guard var canvas = display.canvas else { return }
        // Output pixels onto the screen's, through the picture's turn; the canvas of --no-display is the output.
        let turn =
            display.screen == nil ? .normal : Configuration.Rotation(rawValue: command.displayRotation) ?? .normal
        let points = targets.map {
            CalibrationFit.onScreen(
                $0.point, output: configuration.output, displayRotation: turn, width: canvas.width,
                height: canvas.height) ?? Point(x: .nan, y: .nan)
        }
        canvas.draw(
            targets: points, current: index,
            lines: [
                "touchd calibrate: target \(index + 1) of \(targets.count)"
                    + (target.role == .check ? " (checks the fit)" : ""),
                "touch the centre of the cross with one finger and lift",
                "Esc on the terminal cancels",
            ])
        display.canvas = canvas
        display.screen?.present(canvas)
        if let path = command.screenshot {
            let shot = display.screen?.snapshot() ?? canvas
            if case .failure(let failure) = OutputFile.write(shot.ppm, to: path) {
                printError("touchd: warning: \(path): \(failure.description)")
            }
        }
    }

    // MARK: - The result

    private func finish(
        fit: CalibrationFit, targets: [CalibrationFit.Target], touches: [Point], panel: DeviceInfo, entry: Int?
    ) -> Int32 {
        let solution: CalibrationFit.Solution
        let result = fit.solve(targets: targets, touches: touches, maximumError: command.maxErrorPx)
        switch result {
        case .success(let value): solution = value
        case .failure(.tooLarge(let value, _)): solution = value
        case .failure(let failure):
            emitResult(nil, accepted: false, reason: failure.description)
            printError("touchd: error: \(failure.description)")
            return 65
        }
        for (index, error) in solution.errors.enumerated() {
            let target = targets[index]
            say(
                "\(target.role == .check ? "check point" : "point") \(index + 1) "
                    + "(\(Configuration.number(target.point.x)), \(Configuration.number(target.point.y))): "
                    + "\(CalibrationFit.pixels(error)) px")
        }
        guard case .success = result, let line = CalibrationFit.tomlLine(solution.matrix) else {
            let reason =
                if case .failure(let failure) = result { failure.description } else { "the matrix cannot be written" }
            emitResult(solution, accepted: false, reason: reason)
            printError("touchd: error: \(reason)")
            return 65
        }
        say(
            "\(line)  (largest error \(CalibrationFit.pixels(solution.maximumError)) px, at most "
                + "\(CalibrationFit.pixels(command.maxErrorPx)) px allowed)")
        emitResult(solution, accepted: true, reason: nil)
        if command.print {
            printLines(line: line, solution: solution, panel: panel, entry: entry)
            return 0
        }
        return write(line: line, solution: solution, panel: panel)
    }

    private func emitResult(_ solution: CalibrationFit.Solution?, accepted: Bool, reason: String?) {
        emit {
            $0.add("type", "result")
            $0.add("accepted", accepted)
            if let solution {
                $0.add("calibration", json: JSONLine.array(solution.matrix.map(JSONLine.number)))
                $0.add("errors_px", json: JSONLine.array(solution.errors.map(JSONLine.number)))
                $0.add("max_error_px", solution.maximumError)
            }
            $0.add("bound_px", command.maxErrorPx)
            if let reason { $0.add("reason", reason) }
        }
    }

    /// `key = "value"` lines that match the panel in a new entry: its port (ID_PATH) when it has one, else its name
    /// and ids.
    static func matchers(for panel: DeviceInfo) -> [String] {
        if let path = panel.links.first(where: { !$0.hasPrefix("/") }) {
            return ["match_path = \(tomlString(path))"]
        }
        // The name as a glob that matches only itself.
        var name = ""
        for character in panel.name {
            if "*?[]\\".contains(character) { name.append("\\") }
            name.append(character)
        }
        return [
            "match_name = \(tomlString(name))", "match_vendor = \"0x\(DeviceInfo.hex(panel.vendor))\"",
            "match_product = \"0x\(DeviceInfo.hex(panel.product))\"",
        ]
    }

    static func tomlString(_ value: String) -> String {
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\t": text += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let digits = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }

    private func printLines(line: String, solution: CalibrationFit.Solution, panel: DeviceInfo, entry: Int?) {
        var lines = ["# in the [[device]] entry of \(panel.summary):"]
        lines += entry == nil ? ["[[device]]"] + Self.matchers(for: panel) + [line] : [line]
        let udev = CalibrationFit.udevMatrix(solution.matrix, after: panel.libinputCalibration)
        let match =
            panel.links.first(where: { !$0.hasPrefix("/") }).map { "ENV{ID_PATH}==\"\($0)\"" }
            ?? "ATTRS{name}==\"\(panel.name.replacingOccurrences(of: "\"", with: "?"))\""
        lines += [
            "# or instead, for libinput itself (the compositor too), in /etc/udev/rules.d/99-touchd-calibration.rules,",
            "# with no calibration in touchd's file for this panel (or [1.0, 0.0, 0.0, 0.0, 1.0, 0.0] when [output] has",
            "# one); touchd's rotation and region still apply after it:",
            "ACTION==\"add|change\", KERNEL==\"event*\", \(match), ENV{LIBINPUT_CALIBRATION_MATRIX}=\"\(udev)\"",
        ]
        if command.json {
            emit {
                $0.add("type", "print")
                $0.add("lines", strings: lines)
            }
        } else {
            for text in lines { Swift.print(TerminalText.escaped(text)) }
        }
    }

    private func write(line: String, solution: CalibrationFit.Solution, panel: DeviceInfo) -> Int32 {
        let path = command.options.config
        // Read again: the entry is found in the file as it is now.
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            printError("touchd: error: \(path): cannot read the file again: nothing written")
            return 73
        }
        let current: Configuration
        switch ConfigurationLoader.load(text: text, path: path) {
        case .success(let loaded): current = loaded
        case .failure:
            printError(
                "touchd: error: \(path): the file changed while calibrating and is no longer valid: nothing written")
            return 78
        }
        let entry = current.devices.firstIndex { $0.matches(panel) }
        let edit: CalibrationEdit.Outcome
        switch CalibrationEdit.apply(to: text, device: entry, matchers: Self.matchers(for: panel), line: line) {
        case .success(let outcome): edit = outcome
        case .failure(let failure):
            printError("touchd: error: \(path): \(failure.description): nothing written")
            return 78
        }
        // The edited file must load, and give the panel this very matrix.
        guard case .success(let edited) = ConfigurationLoader.load(text: edit.text, path: path),
            let index = edited.devices.firstIndex(where: { $0.matches(panel) }),
            edited.devices[index].calibration == solution.matrix
        else {
            printError(
                "touchd: error: \(path): the edited file would not give the panel this calibration: nothing written")
            return 78
        }
        if entry == nil, current.devices.isEmpty {
            say(
                "note: the file had no [[device]] entry, so every touchscreen was used; now only those its entries "
                    + "match are")
        }
        switch OutputFile.write(Array(edit.text.utf8), to: path) {
        case .success:
            say("\(path): \(edit.summary)")
            say("reload a running touchd to apply it: touchd ctl reload, or systemctl reload touchd")
            emit {
                $0.add("type", "written")
                $0.add("path", path)
                $0.add("line", edit.line)
                $0.add("entry", index)
            }
            return 0
        case .failure(let failure):
            printError("touchd: error: \(path): \(failure.description): nothing written")
            return 73
        }
    }
}

/// The terminal in non-canonical mode without echo while calibrating, so that Esc arrives at once; restored when
/// released. Nil when standard input is not a terminal.
final class RawTerminal {
    let fd: Int32 = STDIN_FILENO
    private var saved = termios()

    init?() {
        guard isatty(fd) == 1, tcgetattr(fd, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(fd, TCSANOW, &raw) == 0 else { return nil }
    }

    deinit { tcsetattr(fd, TCSANOW, &saved) }

    /// Reads what was typed; true when it held Esc.
    func readEscape() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        return count > 0 && buffer[..<count].contains(0x1B)
    }
}
