import Foundation
import Glibc

/// `touchd calibrate` end to end (`touchd-e2e --calibrate`): a landscape 1280×800 panel whose response the driver skews
/// (the point the finger is on goes through ``skew``: an offset, a scale and a 2° rotation, as a badly fitted glass
/// does), mounted upside down (`rotation = 180` on its `[[device]]` entry, so the fit must go through the rotation).
///
/// 1. `touchd run` uses the panel with the file's placeholder calibration (the identity): taps at the check points land
///    far from where the finger was.
/// 2. `touchd calibrate --json` runs beside it; for each `target` line the driver touches that output point through
///    the skew. touchd run must get none of those touches (calibrate grabs the panel).
/// 3. The file keeps every line but the calibration's (comments included), and the new line is what calibrate said.
/// 4. After SIGHUP, taps at check points (none of them a target) land within 2 output pixels of the finger.
/// 5. With the display held by another DRM master (the driver), calibrate says it cannot draw, calibrates from the
///    positions it prints, and `--print` prints the line and the udev rule with the file untouched.
/// 6. SIGTERM while a target is shown cancels: exit 1, the file untouched.
final class CalibrateRun {
    /// How the panel reports a normalised point (row-major 2×3): scale 1.05 × 0.95, turned 2°, offset (−0.02, 0.03).
    static let skew: [Double] = {
        let angle = 2.0 * Double.pi / 180
        let (sx, sy, ox, oy) = (1.05, 0.95, -0.02, 0.03)
        return [sx * cos(angle), -sy * sin(angle), ox, sx * sin(angle), sy * cos(angle), oy]
    }()
    static let width = 1280.0
    static let height = 800.0
    /// Output points the finger taps after the reload, away from the five targets.
    static let checkPoints: [(x: Double, y: Double)] = [
        (200, 150), (1080, 130), (610, 430), (150, 700), (1100, 650), (900, 300), (400, 560),
    ]
    static let tolerance = 2.0

    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let notify: NotifyListener
    private let target: TargetListener
    private var daemon: Daemon?
    private var calibrate: Daemon?
    private var panel: VirtualTouchscreen?
    private var results: [(name: String, failure: String?)] = []
    private var notes: [String] = []

    init(options: Options, touchd: String) throws(DriverError) {
        self.options = options
        self.touchd = touchd
        scratch = try ScratchDirectory()
        notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
        target = try TargetListener(path: scratch.file("target.sock"), verbose: options.verbose)
    }

    func config() -> String {
        """
        # Written by touchd-e2e --calibrate. Every comment here must survive touchd calibrate.
        [output]
        width = 1280   # the panel's pixels
        height = 800

        [tracking]
        stuck_contact_timeout_ms = 0

        # Where the driver reads touchd's positions.
        [targets.e2e]
        socket = "\(target.path)"
        responds_to = ["seen"]

        [[control]]
        id = "seen"
        frame = { x = 0, y = 0, width = "100%", height = "100%" }
        actions = [{ events = ["touchDown"], target = "e2e", action = "seen" }]

        # The panel, mounted upside down.
        [[device]]
        match_name = "touchd-e2e skewed panel"
        rotation = 180
        calibration = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]   # placeholder: touchd calibrate replaces it
        # after the entry

        """
    }

    func run() throws(DriverError) -> Int32 {
        let started = monotonicNow()
        do throws(Abort) {
            try setUp()
            try checkBefore()
            try runCalibrate()
            try checkFile()
            try reloadAndCheck()
            try checkHeldDisplay()
            try checkCancel()
        } catch {
            record("sequence", "stopped: \(error.reason)")
        }
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty {
            daemon?.printTail(40)
            if let calibrate {
                Console.line("--- touchd calibrate output ---")
                for line in calibrate.output.all { Console.line("calibrate| \(line)") }
            }
        }
        calibrate?.killAndReap()
        daemon?.killAndReap()
        panel?.destroy()
        target.stop()
        notify.stop()
        for note in notes { Console.line("note: \(note)") }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        Console.line(
            "calibrate: \(results.count - failed.count)/\(results.count) checks passed in "
                + "\(seconds(monotonicNow() - started))")
        scratch.remove()
        return failed.isEmpty && !results.isEmpty ? 0 : 1
    }

    private func record(_ name: String, _ failure: String?) {
        results.append((name, failure))
    }

    private var configPath: String { scratch.file("calibrate.toml") }

    private func setUp() throws(Abort) {
        // The display, when the VM has one (scripts/vm/run --gpu: a virtio GPU, PCI 1af4:1050); without it calibrate
        // prints the targets only, and no time goes on waiting for a card that cannot come.
        if Self.hasVirtioGPU() {
            let loaded = Tool.run(
                ["/sbin/modprobe", "-a", "drm", "virtio_dma_buf", "drm_shmem_helper", "drm_kms_helper", "virtio-gpu"],
                verbose: options.verbose)
            if loaded.succeeded {
                _ = poll(until: monotonicNow() + 20_000_000) { access("/dev/dri/card0", F_OK) == 0 ? true : nil }
            }
        }
        if access("/dev/dri/card0", F_OK) != 0 { notes.append("no /dev/dri/card0: calibrate draws nothing") }
        try attempt { () throws(DriverError) in try writeFile(configPath, config()) }
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: ["run", "--config", configPath, "--log-level", options.logLevel],
                environment: ["NOTIFY_SOCKET": notify.path], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        currentDaemon.withLock { $0 = daemon }
        let cursor = notify.inbox.count
        panel = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(
                name: "touchd-e2e skewed panel", verbose: options.verbose, maximumX: 12799, maximumY: 7999)
        }
        let reported = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("STATUS")?.hasPrefix("1 touchscreen") == true }
        }
        guard reported != nil else { throw Abort("touchd did not report the panel: \(daemon?.tail(20) ?? [])") }
        sleep(microseconds: 300_000)
    }

    /// The finger on output point (`x`, `y`): the panel's own point (the 180° mount undone), through the skew, in
    /// device units (12800 × 8000 on 0…1).
    private func touch(x: Double, y: Double) throws(Abort) {
        guard let panel else { throw Abort("no panel") }
        let (px, py) = (1 - x / Self.width, 1 - y / Self.height)
        let s = Self.skew
        let (rx, ry) = (s[0] * px + s[1] * py + s[2], s[3] * px + s[4] * py + s[5])
        let deviceX = (rx * 12800).rounded()
        let deviceY = (ry * 8000).rounded()
        guard (0...12799).contains(deviceX), (0...7999).contains(deviceY) else {
            throw Abort("(\(x), \(y)) is off the skewed panel")
        }
        // Checked to lie on the axes just above.
        try attempt { () throws(DriverError) in
            try panel.touch(deviceX: Int32(deviceX), deviceY: Int32(deviceY), hold: 60_000)
        }
    }

    /// Taps each check point and returns how far touchd's touchDown position was from it.
    private func tapCheckPoints() throws(Abort) -> [(point: (x: Double, y: Double), error: Double)] {
        var errors: [(point: (x: Double, y: Double), error: Double)] = []
        for point in Self.checkPoints {
            let cursor = target.inbox.count
            try touch(x: point.x, y: point.y)
            guard
                let message = poll(
                    until: monotonicNow() + Limits.message,
                    { target.inbox.first(from: cursor) { $0.event == "touchDown" }?.element }),
                let x = message.x, let y = message.y
            else { throw Abort("no touchDown for the tap at \(point) within \(seconds(Limits.message))") }
            errors.append((point, ((x - point.x) * (x - point.x) + (y - point.y) * (y - point.y)).squareRoot()))
            sleep(microseconds: 450_000)
        }
        return errors
    }

    private func describe(_ errors: [(point: (x: Double, y: Double), error: Double)]) -> String {
        errors.map { "(\(Int($0.point.x)), \(Int($0.point.y))) \(String(format: "%.2f", $0.error)) px" }
            .joined(separator: ", ")
    }

    private func checkBefore() throws(Abort) {
        let errors = try tapCheckPoints()
        let largest = errors.map(\.error).max() ?? 0
        Console.line("calibrate-before: \(describe(errors))")
        record(
            "before calibrating, the skew moves taps by more than 10 px (largest \(String(format: "%.1f", largest)) px)",
            largest > 10 ? nil : "the skew moved no check point by more than 10 px: \(describe(errors))")
    }

    private var written: (calibration: [Double], line: Int)?
    private var originalText = ""

    private func runCalibrate() throws(Abort) {
        originalText = config()
        let shot = scratch.file("calibrate.ppm")
        let cursor = target.inbox.count
        let started = monotonicNow()
        let process = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd,
                arguments: ["calibrate", "--config", configPath, "--json", "--timeout", "120", "--screenshot", shot],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "calibrate| " : nil, published: false)
        }
        calibrate = process
        var seen = 0
        var touched = 0
        var display = "none"
        var result: [String: Any]?
        var touches: [String] = []
        let deadline = monotonicNow() + 100_000_000
        while monotonicNow() < deadline {
            let lines = process.output.since(seen)
            seen += lines.count
            for line in lines where line.hasPrefix("{") {
                guard let object = Self.object(line), let type = object["type"] as? String else { continue }
                switch type {
                case "display":
                    display =
                        (object["drm"] as? String).map { "drawn on \($0)" } ?? "not drawn: \(object["reason"] ?? "")"
                case "target":
                    guard let x = (object["x"] as? NSNumber)?.doubleValue,
                        let y = (object["y"] as? NSNumber)?.doubleValue
                    else { throw Abort("a target line without x and y: \(line)") }
                    // Give calibrate time to draw it, as an installer would need to see it.
                    sleep(microseconds: 200_000)
                    try touch(x: x, y: y)
                    touched += 1
                case "touch":
                    touches.append(line)
                case "result":
                    result = object
                    Console.line("calibrate-result: \(line)")
                case "written":
                    if let matrix = result?["calibration"] as? [NSNumber], let at = object["line"] as? NSNumber {
                        written = (matrix.map(\.doubleValue), at.intValue)
                    }
                default: break
                }
            }
            if let status = process.exitStatus {
                process.waitForOutputEnd(until: monotonicNow() + 2_000_000)
                let rest = process.output.since(seen)
                for line in rest where line.hasPrefix("{") {
                    if let object = Self.object(line), object["type"] as? String == "written",
                        let matrix = result?["calibration"] as? [NSNumber], let at = object["line"] as? NSNumber
                    {
                        written = (matrix.map(\.doubleValue), at.intValue)
                    }
                }
                let elapsed = monotonicNow() - started
                Console.line("calibrate-display: \(display)")
                Console.line("calibrate-run: \(touched) targets touched, \(status), \(seconds(elapsed))")
                record(
                    "touchd calibrate --json names 5 targets, takes a touch at each and exits 0",
                    status == .exited(0) && touched == 5 && touches.count == 5
                        ? nil : "exit \(status), \(touched) targets touched, \(touches.count) touches taken")
                if let errors = result?["errors_px"] as? [NSNumber] {
                    let values = errors.map(\.doubleValue)
                    Console.line(
                        "calibrate-residuals: " + values.map { String(format: "%.3f", $0) }.joined(separator: " ")
                            + " px")
                    record(
                        "calibrate's own residuals are within \(Self.tolerance) px at every target",
                        values.count == 5 && values.allSatisfy { $0 <= Self.tolerance } ? nil : "\(values)")
                }
                record(
                    "touchd run got none of calibrate's touches (the panel was grabbed)",
                    target.inbox.since(cursor).isEmpty
                        ? nil : "\(target.inbox.since(cursor).count) messages: \(target.inbox.since(cursor).map(\.raw))"
                )
                if options.printScreenshot { printScreenshot(shot) }
                return
            }
            sleep(microseconds: 20_000)
        }
        throw Abort("touchd calibrate did not finish within 100 s")
    }

    /// Whether the machine has a virtio GPU (vendor 0x1af4, device 0x1050) on its PCI bus.
    private static func hasVirtioGPU() -> Bool {
        let root = "/sys/bus/pci/devices"
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return devices.contains { device in
            let vendor = try? String(contentsOfFile: "\(root)/\(device)/vendor", encoding: .utf8)
            let model = try? String(contentsOfFile: "\(root)/\(device)/device", encoding: .utf8)
            return vendor?.hasPrefix("0x1af4") == true && model?.hasPrefix("0x1050") == true
        }
    }

    private static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    private func printScreenshot(_ path: String) {
        let result = Tool.run(
            ["/bin/sh", "-c", "gzip -9 -c '\(path)' | base64 -w 120"], verbose: false)
        guard result.succeeded else {
            notes.append("no screenshot: \(result.summary)")
            return
        }
        Console.line("screenshot-begin")
        for line in result.output { Console.line(line) }
        Console.line("screenshot-end")
    }

    private func checkFile() throws(Abort) {
        guard let text = try? String(contentsOfFile: configPath, encoding: .utf8) else {
            throw Abort("cannot read \(configPath) after calibrating")
        }
        let before = originalText.split(separator: "\n", omittingEmptySubsequences: false)
        let after = text.split(separator: "\n", omittingEmptySubsequences: false)
        let changed = zip(before, after).enumerated().filter { $0.element.0 != $0.element.1 }
        let calibrationLine = after.first { $0.hasPrefix("calibration = ") }.map(String.init) ?? ""
        Console.line("calibrate-file: \(calibrationLine)")
        let kept =
            before.count == after.count && changed.count == 1
            && before[changed[0].offset].hasPrefix("calibration = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]")
            && after[changed[0].offset].hasSuffix("   # placeholder: touchd calibrate replaces it")
        let comments = before.filter { $0.contains("#") }.count
        Console.line(
            "calibrate-comments: \(comments) commented lines before, "
                + "\(after.filter { $0.contains("#") }.count) after; lines changed: \(changed.count)")
        record(
            "the file keeps every other line and its comments; only the calibration's value changed",
            kept ? nil : "changed lines: \(changed.map { "\($0.offset + 1): \($0.element.1)" })")
        if let written {
            record(
                "calibrate's written line is the line it reported",
                written.line == (changed.first?.offset ?? -1) + 1
                    ? nil : "reported line \(written.line), changed \((changed.first?.offset ?? -1) + 1)")
        } else {
            record("calibrate reported what it wrote", "no written line")
        }
        let checked = Tool.run([touchd, "check", "--config", configPath], verbose: false)
        record(
            "touchd check accepts the calibrated file", checked.succeeded ? nil : checked.output.joined(separator: "; ")
        )
    }

    private func reloadAndCheck() throws(Abort) {
        guard let daemon else { throw Abort("no touchd") }
        let cursor = notify.inbox.count
        daemon.send(SIGHUP)
        let reloaded = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("RELOADING") == "1" }
        }
        guard let reloaded,
            poll(
                until: monotonicNow() + Limits.readiness,
                { notify.inbox.first(from: reloaded.index + 1) { $0.value("READY") == "1" } }) != nil
        else { throw Abort("touchd did not reload: \(daemon.tail(20))") }
        let failedReload = daemon.output.all.contains { $0.contains("reload failed") || $0.contains("refused") }
        record("touchd reloads the calibrated file", failedReload ? "\(daemon.tail(10))" : nil)
        sleep(microseconds: 300_000)
        let errors = try tapCheckPoints()
        let largest = errors.map(\.error).max() ?? .infinity
        Console.line("calibrate-after-reload: \(describe(errors))")
        record(
            "after the reload every check point lands within \(Self.tolerance) px (largest "
                + "\(String(format: "%.2f", largest)) px)",
            largest <= Self.tolerance ? nil : describe(errors))
    }

    /// Runs `touchd calibrate --json` with `extra`, touching each target it names (or, with `cancel`, sending SIGTERM
    /// at the first); returns its exit status and its JSON lines.
    private func calibrateOnce(_ extra: [String], cancel: Bool) throws(Abort) -> (
        status: ExitStatus, objects: [[String: Any]]
    ) {
        let process = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd,
                arguments: ["calibrate", "--config", configPath, "--json", "--timeout", "60"] + extra, environment: [:],
                removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "calibrate| " : nil, published: false)
        }
        defer { process.killAndReap() }
        var seen = 0
        var objects: [[String: Any]] = []
        let deadline = monotonicNow() + 60_000_000
        while monotonicNow() < deadline {
            let finished = process.exitStatus
            if finished != nil { process.waitForOutputEnd(until: monotonicNow() + 2_000_000) }
            let lines = process.output.since(seen)
            seen += lines.count
            for line in lines where line.hasPrefix("{") {
                guard let object = Self.object(line) else { continue }
                objects.append(object)
                guard object["type"] as? String == "target" else { continue }
                if cancel {
                    process.send(SIGTERM)
                    continue
                }
                guard let x = (object["x"] as? NSNumber)?.doubleValue,
                    let y = (object["y"] as? NSNumber)?.doubleValue
                else { throw Abort("a target line without x and y: \(line)") }
                sleep(microseconds: 200_000)
                try touch(x: x, y: y)
            }
            if let finished { return (finished, objects) }
            sleep(microseconds: 20_000)
        }
        throw Abort("touchd calibrate \(extra.joined(separator: " ")) did not finish within 60 s: \(process.tail(10))")
    }

    /// With another program DRM master (the driver opens the card first, as a compositor would), calibrate says it
    /// cannot draw and still calibrates from the positions it prints; `--print` leaves the file alone and prints the
    /// TOML line and the udev rule.
    private func checkHeldDisplay() throws(Abort) {
        let holder = open("/dev/dri/card0", O_RDWR | O_CLOEXEC)
        guard holder >= 0 else {
            notes.append("no /dev/dri/card0 to hold: the terminal-only run is the one above")
            return
        }
        defer { close(holder) }
        let before = (try? String(contentsOfFile: configPath, encoding: .utf8)) ?? ""
        let (status, objects) = try calibrateOnce(["--print"], cancel: false)
        let display = objects.first { $0["type"] as? String == "display" }
        let reason = display?["reason"] as? String ?? ""
        Console.line("calibrate-held-display: \(reason)")
        let printed = objects.first { $0["type"] as? String == "print" }?["lines"] as? [String] ?? []
        for line in printed { Console.line("calibrate-print| \(line)") }
        let after = (try? String(contentsOfFile: configPath, encoding: .utf8)) ?? ""
        record(
            "with the display held by another program, calibrate says so, goes on from the printed positions, and "
                + "--print prints the line and the udev rule without touching the file",
            status == .exited(0) && display?["drm"] is NSNull && reason.contains("holds the display")
                && printed.contains { $0.hasPrefix("calibration = [") }
                && printed.contains { $0.contains("ENV{LIBINPUT_CALIBRATION_MATRIX}=") } && before == after
                ? nil : "\(status), display \(display ?? [:]), printed \(printed), file changed: \(before != after)")
    }

    /// SIGTERM while a target is shown cancels: exit 1, a `cancelled` line, the file as it was.
    private func checkCancel() throws(Abort) {
        let before = (try? String(contentsOfFile: configPath, encoding: .utf8)) ?? ""
        let (status, objects) = try calibrateOnce([], cancel: true)
        let cancelled = objects.first { $0["type"] as? String == "cancelled" }
        let after = (try? String(contentsOfFile: configPath, encoding: .utf8)) ?? ""
        record(
            "SIGTERM cancels calibrate: exit 1 and the file untouched",
            status == .exited(1) && cancelled?["reason"] as? String == "SIGTERM" && before == after
                ? nil : "\(status), \(cancelled ?? [:]), file changed: \(before != after)")
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
