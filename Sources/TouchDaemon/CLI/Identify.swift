import ArgumentParser
import Glibc
import Logging

/// `touchd identify`: the seat's input nodes, which are touchscreens, which `[[device]]` entry each matches, the
/// matrices that apply, the panels' sibling nodes; with `--touch`, which panel a touch came from.
struct Identify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the seat's input nodes, the touchscreens among them and the [[device]] entry each matches.",
        discussion: """
            Lists every event node on the seat with its name, vendor:product, phys and what it reports; for each \
            touchscreen, the [[device]] entry of the configuration that matches it (--config, or \
            /etc/touchd/touchd.toml when it exists), libinput's matrix (udev's LIBINPUT_CALIBRATION_MATRIX), \
            touchd's matrix and region, and its sibling nodes: other nodes of the same USB or HID device, such as \
            a mouse that keeps a cursor on screen or clicks twice per tap ([filter] grab_siblings grabs those in \
            filter mode). With --touch it then waits for touches and prints, per touch-down, the device it came \
            from with its raw position (normalised to 0-1, libinput's matrix applied) and where touchd maps it on \
            the output. Reads only: it grabs nothing and opens nodes read-only, so a running touchd and the \
            compositor are not disturbed (in filter mode a touch on a grabbed panel shows on its twin). Exits 69 \
            when udev or libinput cannot be read, or --touch saw fewer than --count touches within --timeout; 78 \
            when the configuration is invalid.
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The configuration file (default: /etc/touchd/touchd.toml when it exists).", valueName: "path"))
    var config: String?

    @Flag(help: "Print one JSON object per node (and per touch with --touch), one per line.")
    var json = false

    @Flag(help: "After the list, wait for touches and print which device each came from, raw and mapped.")
    var touch = false

    @Option(help: ArgumentHelp("With --touch: stop after this many seconds (above 0, at most 3600).", valueName: "s"))
    var timeout: Double = 30

    @Option(help: ArgumentHelp("With --touch: stop after this many touch-downs (1-1000).", valueName: "n"))
    var count: Int = 1

    static let defaultConfiguration = "/etc/touchd/touchd.toml"

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 3_600 else {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most 3600")
        }
        guard (1...1_000).contains(count) else { throw ValidationError("--count must be from 1 to 1000") }
    }

    func run() throws {
        let configuration = try loadConfiguration()
        let seat = configuration?.seat ?? "seat0"
        guard let nodes = InputNodeSurvey.scan(seat: seat) else {
            printError("touchd identify: error: cannot read udev's input devices (is /sys mounted, is udev there?)")
            throw ExitCode(69)
        }
        // libinput's own complaints (a node it may not open) are said per node below, not as log lines.
        var logger = Logger(label: "touchd") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        let input: LibinputContext
        do {
            input = try LibinputContext(seat: seat, logger: logger)
        } catch {
            printError("touchd identify: error: cannot start the input layer: \(error)")
            throw ExitCode(69)
        }
        var devices: [Int: DeviceInfo] = [:]
        for case .deviceAdded(let info) in input.dispatch() { devices[info.id] = info }
        let opened = Set(devices.values.map(\.sysname))
        var unreadable: [String: String] = [:]
        for node in nodes where !opened.contains(node.sysname) {
            if let devnode = node.devnode, access(devnode, R_OK) != 0 {
                unreadable[node.sysname] = LibinputContext.errnoText()
            }
        }
        let report = IdentifyReport(
            nodes: nodes, devices: devices.values.sorted { $0.id < $1.id }, unreadable: unreadable,
            configuration: configuration)
        if json {
            for line in report.jsonLines { print(line) }
        } else {
            print(report.text, terminator: "")
        }
        fflush(nil)
        guard touch else { return }
        try waitForTouches(input, report: report, devices: &devices)
    }

    /// The configuration, nil when none was named and the default file does not exist; exits 78 on a broken one.
    private func loadConfiguration() throws -> Configuration? {
        let path: String
        if let config {
            path = config
        } else {
            guard access(Self.defaultConfiguration, F_OK) == 0 else { return nil }
            path = Self.defaultConfiguration
        }
        return try ConfigOption.parse(["--config", path]).load()
    }

    private func waitForTouches(_ input: LibinputContext, report: IdentifyReport, devices: inout [Int: DeviceInfo])
        throws
    {
        // validate() bounds the timeout, so the conversion cannot trap.
        let deadline = monotonicMicroseconds().saturatingSum(UInt64((timeout * 1_000_000).rounded()))
        if !json {
            print(
                "waiting for \(count == 1 ? "a touch" : "\(count) touches") (at most \(Configuration.number(timeout)) s)"
            )
            fflush(nil)
        }
        var seen = 0
        while seen < count {
            let now = monotonicMicroseconds()
            guard now < deadline else { break }
            var descriptor = pollfd(fd: input.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let waitMilliseconds = Int32(clamping: (deadline - now + 999) / 1_000)
            let ready = poll(&descriptor, 1, waitMilliseconds)
            if ready < 0 {
                guard errno == EINTR else {
                    printError("touchd identify: error: cannot wait for input: \(LibinputContext.errnoText())")
                    throw ExitCode(69)
                }
                continue
            }
            guard ready > 0 else { continue }
            for event in input.dispatch() {
                switch event {
                case .deviceAdded(let info):
                    devices[info.id] = info
                case .touch(let touch) where touch.kind == .down && seen < count:
                    guard let device = devices[touch.device], let x = touch.x, let y = touch.y else { continue }
                    seen += 1
                    print(report.touchLine(sysname: device.sysname, name: device.name, x: x, y: y, json: json))
                    fflush(nil)
                default:
                    break
                }
            }
        }
        guard seen >= count else {
            printError(
                "touchd identify: \(seen) of \(count) touch\(count == 1 ? "" : "es") within --timeout"
                    + " \(Configuration.number(timeout)) s")
            throw ExitCode(69)
        }
    }
}
