import Glibc

/// `[filter] twin_space` under a real compositor and client (`touchd-e2e --cage --twin-space`; docs/kiosk.md,
/// "Which twin_space"): cage maps a touchscreen's normalised position straight onto its output and, turned with `-r`,
/// does not turn touch with it. So in output space the client (`wev`) must get each tap at the point touchd's controls
/// saw: a full-screen `to_app` button sends its touch-down with touchd's position to the socket target, and the
/// check compares it with wev's `down` for the same tap. Taps near three corners and the centre of each panel, in four
/// cases:
///
/// - cage turned to portrait (`cage -r`), a landscape 1280×800 panel, `[output]` 800×1280 with `rotation = 90`;
/// - the same with a `calibration` matrix on the panel's `[[device]]` entry;
/// - cage -r with the panel turned by a udev `LIBINPUT_CALIBRATION_MATRIX` (written by name, so the twin has it too)
///   and touchd's `rotation = 0`: touchd undoes libinput's matrix in what it writes, cage's libinput applies it again;
/// - the same output with two landscape panels, each on its own half (`region`);
/// - `twin_space = "device"` under an unrotated cage: the panel's own coordinates, as before `twin_space` existed;
/// - and, to show the check tells the spaces apart, `"device"` under `cage -r`: wev gets the raw landscape point
///   stretched onto the portrait output, as measured before `twin_space` existed, not touchd's; then a reload to
///   `"output"`, after which touchd makes the twin anew and wev gets touchd's points.
///
/// Needs `scripts/vm/run --gpu` (the virtual output is 1280×800).
final class CageTwinSpaceRun {
    /// One configuration under one cage.
    struct Case {
        var name: String
        /// How many `-r` cage gets.
        var cageTurns: Int
        var width: Int
        var height: Int
        var rotation: Int
        var twinSpace: String
        /// The panels' names; `[[device]]` entries refer to them.
        var panels: [String]
        var devices: String = ""
        /// Where wev must get a tap: nil at touchd's point; otherwise computed from the panel point (in pixels of
        /// the 1280×800 panel), for a case that shows what a twin in the wrong space gives the client.
        var clientPoint: (@Sendable (_ x: Double, _ y: Double) -> (x: Double, y: Double))? = nil
        /// After the taps: reload touchd (SIGHUP) with this `twin_space`, and tap again (the twins are made anew).
        var reloadTo: String? = nil
        /// A udev `LIBINPUT_CALIBRATION_MATRIX` for the panels, by name (so their twins get it too).
        var udevMatrix: String? = nil
    }

    /// A tap's position on a panel, in its pixels (1280×800, 10 device units each).
    static let taps: [(x: Int, y: Int)] = [(40, 40), (1240, 40), (40, 760), (640, 400)]
    /// How far wev's point may be from touchd's, in output pixels.
    static let tolerance = 3.0

    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let target: TargetListener
    private var daemon: Daemon?
    private var seatd: Daemon?
    private var cage: Daemon?
    /// How many `-r` the running cage got.
    private var cageTurns = 0
    private var panels: [VirtualTouchscreen] = []
    private var results: [(name: String, failure: String?)] = []

    init(options: Options, touchd: String) {
        self.options = options
        self.touchd = touchd
        do {
            scratch = try ScratchDirectory()
            target = try TargetListener.forScenario(underSystemd: false, scratch: scratch, verbose: options.verbose)
        } catch {
            Console.line("touchd-e2e: cannot set up: \(error)")
            exit(1)
        }
    }

    static var cases: [Case] {
        let portrait = Case(
            name: "cage -r, rotation 90, twin_space output", cageTurns: 1, width: 800, height: 1280, rotation: 90,
            twinSpace: "output", panels: ["touchd-e2e landscape panel"])
        var calibrated = portrait
        calibrated.name = "cage -r, rotation 90 and a calibration matrix, twin_space output"
        calibrated.devices = """

            [[device]]
            match_name = "touchd-e2e landscape panel"
            calibration = [1.03, 0.02, -0.025, -0.015, 0.96, 0.03]
            """
        var udev = portrait
        udev.name = "cage -r, a udev matrix turning the panel, rotation 0, twin_space output"
        udev.rotation = 0
        udev.udevMatrix = "0 -1 1 1 0 0"
        var two = portrait
        two.name = "cage -r, two panels each on half of the output, twin_space output"
        two.panels = ["touchd-e2e upper panel", "touchd-e2e lower panel"]
        two.devices = """

            [[device]]
            match_name = "touchd-e2e upper panel"
            region = { x = 0, y = 0, width = "100%", height = "50%" }
            rotation = 0

            [[device]]
            match_name = "touchd-e2e lower panel"
            region = { x = 0, y = 640, width = "100%", height = "50%" }
            rotation = 0
            """
        let device = Case(
            name: "cage, twin_space device", cageTurns: 0, width: 1280, height: 800, rotation: 0,
            twinSpace: "device", panels: ["touchd-e2e landscape panel"])
        var wrong = portrait
        wrong.name = "cage -r, rotation 90, twin_space device (the raw point, stretched)"
        wrong.twinSpace = "device"
        wrong.clientPoint = { x, y in (x / 1280 * 800, y / 800 * 1280) }
        wrong.reloadTo = "output"
        // The cases under a turned cage first, one after the other, so that they share one cage.
        return [portrait, calibrated, udev, two, wrong, device]
    }

    func config(_ run: Case) -> String {
        """
        # Written by touchd-e2e --cage --twin-space.
        [output]
        width = \(run.width)
        height = \(run.height)
        rotation = \(run.rotation)

        [filter]
        enabled = true
        twin_space = "\(run.twinSpace)"

        [tracking]
        stuck_contact_timeout_ms = 0

        [targets.e2e]
        socket = "\(target.path)"
        responds_to = ["seen"]

        [[control]]
        id = "seen"
        frame = { x = 0, y = 0, width = "100%", height = "100%" }
        actions = [{ events = ["touchDown"], target = "e2e", action = "seen" }]
        \(run.devices)
        """
    }

    func run() -> Int32 {
        do throws(Abort) {
            try setUpSeat()
            for run in Self.cases {
                do throws(Abort) {
                    try start(run)
                    try check(run)
                    if let space = run.reloadTo { try reload(run, to: space) }
                    stop()
                } catch {
                    results.append((run.name, "stopped: \(error.reason)"))
                    daemon?.printTail(30)
                    Console.line("--- cage and wev (last 30 lines) ---")
                    for line in cage?.tail(30) ?? [] { Console.line("cage| \(line)") }
                    // The next case starts a cage of its own rather than one that may be wedged.
                    stop()
                    stopCage()
                }
            }
        } catch {
            results.append(("setting up", "stopped: \(error.reason)"))
        }
        stop()
        stopCage()
        seatd?.killAndReap()
        target.stop()
        let failed = results.filter { $0.failure != nil }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        Console.line("cage twin_space: \(results.count - failed.count)/\(results.count) checks passed")
        scratch.remove()
        return failed.isEmpty && !results.isEmpty ? 0 : 1
    }

    private func tool(_ argv: [String]) throws(Abort) {
        let result = Tool.run(argv, limit: 60_000_000, verbose: options.verbose)
        guard result.succeeded else { throw Abort("\(argv.joined(separator: " ")) failed: \(result.summary)") }
    }

    private func setUpSeat() throws(Abort) {
        try tool(["/sbin/modprobe", "-a", "drm", "virtio_dma_buf", "drm_shmem_helper", "drm_kms_helper", "virtio-gpu"])
        guard poll(until: monotonicNow() + 20_000_000, { access("/dev/dri/card0", F_OK) == 0 ? true : nil }) != nil
        else { throw Abort("no /dev/dri/card0 after loading virtio-gpu (was the VM started with --gpu?)") }
        try tool(["/bin/udevadm", "settle", "--timeout=20"])
        seatd = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/sbin/seatd", arguments: ["-u", "nobody", "-g", "nogroup"], environment: [:],
                removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "seatd| " : nil,
                published: false)
        }
        guard poll(until: monotonicNow() + 10_000_000, { access("/run/seatd.sock", F_OK) == 0 ? true : nil }) != nil
        else { throw Abort("seatd did not create /run/seatd.sock: \(seatd?.tail(10) ?? [])") }
        try tool(["/bin/mkdir", "-p", "-m", "0700", Self.runtime])
        try tool(["/bin/chown", "65534:65534", Self.runtime])
    }

    static let runtime = "/tmp/touchd-e2e-xdg"

    static let udevRule = "/run/udev/rules.d/99-touchd-e2e-twin-space.rules"

    /// Writes (or, with nil, removes) the udev rule that gives the panels `matrix`, and has udev read its rules again.
    private func udevMatrix(_ matrix: String?, for names: [String]) throws(Abort) {
        if let matrix {
            try tool(["/bin/mkdir", "-p", "/run/udev/rules.d"])
            let rules = names.map {
                #"SUBSYSTEM=="input", KERNEL=="event*", ATTRS{name}=="\#($0)", ENV{LIBINPUT_CALIBRATION_MATRIX}="\#(matrix)""#
            }
            try attempt { () throws(DriverError) in try writeFile(Self.udevRule, rules.joined(separator: "\n") + "\n") }
        } else {
            unlink(Self.udevRule)
        }
        try tool(["/bin/udevadm", "control", "--reload"])
    }

    /// The panels, then touchd (which grabs them and makes their twins), then cage with wev unless one with the case's
    /// turns runs already (cage adds the new twins as they come, as it would a replugged panel): cage reads the twins.
    private func start(_ run: Case) throws(Abort) {
        if let matrix = run.udevMatrix { try udevMatrix(matrix, for: run.panels) }
        for name in run.panels {
            panels.append(
                try attempt { () throws(DriverError) in
                    try VirtualTouchscreen(name: name, verbose: options.verbose, maximumX: 12_799, maximumY: 7_999)
                })
        }
        // udev must have tagged the panels (a touchscreen, its matrix) before touchd's libinput looks at them.
        try tool(["/bin/udevadm", "settle", "--timeout=20"])
        sleep(microseconds: 500_000)
        let config = scratch.file("twin-space.toml")
        try attempt { () throws(DriverError) in try writeFile(config, self.config(run)) }
        let checked = Tool.run([touchd, "check", "--config", config], verbose: options.verbose)
        guard checked.succeeded else { throw Abort("touchd check: \(checked.summary)") }
        if options.verbose { for line in checked.output { Console.line("check| \(line)") } }
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: ["run", "--config", config], environment: [:],
                removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "touchd| " : nil)
        }
        // Three times the readiness bound: the emulated guest shares a loaded host, and at a case's start touchd, udev
        // and the previous case's teardown all compete for it (touchd had filtered, idle in epoll_wait, when a 15 s
        // wait gave up).
        let filtering = poll(until: monotonicNow() + 3 * Limits.readiness) { () -> Bool? in
            let lines = daemon?.output.since(0).filter { $0.contains("touchscreen filtered") } ?? []
            return lines.count >= run.panels.count ? true : nil
        }
        guard filtering != nil else {
            throw Abort(
                "touchd did not filter the panels: \(daemon?.tail(20) ?? []); its threads: \(threadStates(daemon?.pid))"
            )
        }
        if cage != nil, cageTurns != run.cageTurns { stopCage() }
        if cage == nil { try startCage(turns: run.cageTurns) }
        // cage adds a touchscreen on its first event and wev binds wl_touch after the capability: tap each panel
        // until wev gets a touch from it.
        for panel in panels { try warmUp(panel) }
    }

    /// cage, turned `turns` times (`-r`), with wev as its client.
    private func startCage(turns: Int) throws(Abort) {
        cageTurns = turns
        cage = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env",
                    "XDG_RUNTIME_DIR=\(Self.runtime)", "WLR_BACKENDS=drm,libinput", "WLR_RENDERER=pixman",
                    "LIBSEAT_BACKEND=seatd", "/usr/bin/cage", "-d",
                ] + Array(repeating: "-r", count: turns) + ["--", "/usr/bin/stdbuf", "-oL", "/usr/bin/wev"],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "cage| " : nil, published: false)
        }
        guard poll(until: monotonicNow() + 30_000_000, { cage?.output.first(from: 0) { $0.contains("wl_") } }) != nil
        else { throw Abort("wev printed nothing under cage within 30 s: \(cage?.tail(20) ?? [])") }
    }

    private func stopCage() {
        cage?.killAndReap()
        cage = nil
    }

    /// Rewrites the configuration with `twin_space = space`, reloads touchd with SIGHUP and checks the taps again
    /// once it has made the twins anew (cage adds each new twin at its first event: the warm-up taps).
    private func reload(_ run: Case, to space: String) throws(Abort) {
        guard let daemon else { throw Abort("no touchd to reload") }
        var next = run
        next.name = "after a reload to twin_space \(space)"
        next.twinSpace = space
        next.clientPoint = nil
        next.reloadTo = nil
        let filtered = { daemon.output.since(0).filter { $0.contains("touchscreen filtered") }.count }
        let before = filtered()
        try attempt { () throws(DriverError) in try writeFile(scratch.file("twin-space.toml"), self.config(next)) }
        guard kill(daemon.pid, SIGHUP) == 0 else { throw Abort("kill -HUP touchd: \(describe(errno: errno))") }
        let remade = poll(until: monotonicNow() + 3 * Limits.readiness) {
            filtered() >= before + run.panels.count ? true : nil
        }
        guard remade != nil else { throw Abort("touchd did not make the twins anew: \(daemon.tail(20))") }
        for panel in panels { try warmUp(panel) }
        try check(next)
    }

    /// Where each thread of `pid` waits (`/proc/PID/task/*/comm`, `stat`'s state and `wchan`), for a failure report.
    private func threadStates(_ pid: pid_t?) -> String {
        guard let pid else { return "no process" }
        let listed = Tool.run(
            [
                "/bin/sh", "-c",
                "cd /proc/\(pid)/task && for t in *; do "
                    + "echo \"$t $(cat $t/comm) $(cut -d' ' -f3 $t/stat) $(cat $t/wchan)\"; done",
            ], verbose: false)
        return listed.output.joined(separator: "; ")
    }

    /// Ends a case: touchd and the panels go (their twins with them); cage stays for the next case.
    private func stop() {
        if access(Self.udevRule, F_OK) == 0 { try? udevMatrix(nil, for: []) }
        daemon?.killAndReap()
        daemon = nil
        for panel in panels { panel.destroy() }
        panels = []
        sleep(microseconds: 300_000)
    }

    private func touchDowns(from cursor: Int) -> [String] {
        (cage?.output.since(cursor) ?? []).filter { $0.contains("wl_touch] down") }
    }

    private func warmUp(_ panel: VirtualTouchscreen) throws(Abort) {
        for _ in 0..<10 {
            let start = cage?.output.count ?? 0
            try tap(panel, x: 640, y: 400)
            // Done as soon as wev has the whole tap (its lift too, so that it cannot land in a check's lines).
            let whole = poll(until: monotonicNow() + 700_000) { () -> Bool? in
                let lines = cage?.output.since(start) ?? []
                let down = lines.contains { $0.contains("wl_touch] down") }
                return down && lines.contains { $0.contains("wl_touch] up") } ? true : nil
            }
            if whole != nil { return }
        }
        throw Abort("wev never got a touch from \(panel.name) through cage: \(cage?.tail(20) ?? [])")
    }

    private func tap(_ panel: VirtualTouchscreen, x: Int, y: Int) throws(Abort) {
        _ = try attempt { () throws(DriverError) in try panel.write([.down(slot: 0, x: x, y: y)]) }
        sleep(microseconds: 60_000)
        _ = try attempt { () throws(DriverError) in try panel.write([.up(slot: 0)]) }
    }

    /// `… x, y: 652.000000, 200.000000` from wev's `down` line.
    static func wevPoint(_ line: String) -> (x: Double, y: Double)? {
        guard let marker = line.range(of: "x, y: ", options: .backwards) else { return nil }
        let numbers = line[marker.upperBound...].split(separator: ",").map {
            Double($0.trimmingCharacters(in: .whitespaces))
        }
        guard numbers.count == 2, let x = numbers[0], let y = numbers[1] else { return nil }
        return (x, y)
    }

    private func check(_ run: Case) throws(Abort) {
        for panel in panels {
            for point in Self.taps {
                let messages = target.inbox.count
                let start = cage?.output.count ?? 0
                try tap(panel, x: point.x, y: point.y)
                let seen = poll(until: monotonicNow() + 3_000_000) {
                    target.inbox.first(from: messages) { $0.action == "seen" }?.element
                }
                let down = poll(until: monotonicNow() + 3_000_000) { touchDowns(from: start).first }
                sleep(microseconds: 150_000)
                let name = "\(run.name): \(panel.name) at (\(point.x), \(point.y))"
                guard let seen, let touchdX = seen.x, let touchdY = seen.y else {
                    results.append((name, "the to_app button's action did not fire (or had no position)"))
                    continue
                }
                guard let down, let wev = Self.wevPoint(down) else {
                    results.append((name, "wev got no down (touchd saw (\(touchdX), \(touchdY)))"))
                    continue
                }
                var detail = "touchd (\(format(touchdX)), \(format(touchdY))), wev (\(format(wev.x)), \(format(wev.y)))"
                let expected: (x: Double, y: Double) =
                    run.clientPoint?(Double(point.x), Double(point.y)) ?? (x: touchdX, y: touchdY)
                if run.clientPoint != nil {
                    detail += ", expected at wev (\(format(expected.x)), \(format(expected.y)))"
                }
                Console.line("twin-space| \(name): \(detail)")
                let close = abs(wev.x - expected.x) <= Self.tolerance && abs(wev.y - expected.y) <= Self.tolerance
                results.append((name, close ? nil : "more than \(format(Self.tolerance)) px apart: \(detail)"))
            }
        }
    }

    private func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded.isFinite ? "\(rounded)" : "?"
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
