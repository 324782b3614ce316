import Glibc

/// Filter mode under a real compositor and client (`touchd-e2e --cage`; the recipe of filter-mode.md):
/// Debian's cage reads the panel's twin through seatd and shows `wev`, which prints every `wl_touch` event it gets.
/// cage ignores libinput's touch cancel, so with the default `cancel_with = "lift"` a recognized admin press must end
/// for the client as lifts when it is recognized, and the client must still get the next tap in the same slot (a
/// cancel that cage dropped would leave its touch point down and swallow that tap). Needs `scripts/vm/run --gpu`.
final class CageRun {
    let options: Options
    let touchd: String
    /// `--cage --systemd-unit`: touchd is the installed touchd.service under its full sandbox (scripts/vm/run --gpu
    /// --systemd); otherwise a child process of the driver.
    let underSystemd: Bool
    private let scratch: ScratchDirectory
    private let target: TargetListener
    private var daemon: Daemon?
    private var seatd: Daemon?
    private var cage: Daemon?
    private var panel: VirtualTouchscreen?
    private var results: [(name: String, failure: String?)] = []

    init(options: Options, touchd: String) {
        self.options = options
        self.touchd = touchd
        underSystemd = options.systemdUnit
        do {
            scratch = try ScratchDirectory()
            target = try TargetListener.forScenario(
                underSystemd: underSystemd, scratch: scratch, verbose: options.verbose)
        } catch {
            Console.line("touchd-e2e: cannot set up: \(error)")
            exit(1)
        }
    }

    func run() -> Int32 {
        do throws(Abort) {
            try setUp()
            try warmUp()
            try adminPress()
        } catch {
            results.append(("sequence", "stopped: \(error.reason)"))
        }
        let mode = underSystemd ? " (touchd.service)" : ""
        cage?.killAndReap()
        seatd?.killAndReap()
        daemon?.killAndReap()
        if underSystemd { _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: options.verbose) }
        panel?.destroy()
        target.stop()
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty {
            daemon?.printTail(40)
            Console.line("--- cage and wev (last 60 lines) ---")
            for line in cage?.tail(60) ?? [] { Console.line("cage| \(line)") }
        }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name)\(mode): \($0)" } ?? "PASS \(name)\(mode)")
        }
        Console.line("cage: \(results.count - failed.count)/\(results.count) checks passed")
        scratch.remove()
        return failed.isEmpty ? 0 : 1
    }

    private func run(_ argv: [String]) throws(Abort) {
        let result = Tool.run(argv, limit: 60_000_000, verbose: options.verbose)
        guard result.succeeded else { throw Abort("\(argv.joined(separator: " ")) failed: \(result.summary)") }
    }

    private func setUp() throws(Abort) {
        // The guest's GPU (scripts/vm/run --gpu) and its render node: cage's DRM backend needs both.
        try run(["/sbin/modprobe", "-a", "drm", "virtio_dma_buf", "drm_shmem_helper", "drm_kms_helper", "virtio-gpu"])
        guard poll(until: monotonicNow() + 20_000_000, { access("/dev/dri/card0", F_OK) == 0 ? true : nil }) != nil
        else { throw Abort("no /dev/dri/card0 after loading virtio-gpu (was the VM started with --gpu?)") }
        try run(["/bin/udevadm", "settle", "--timeout=20"])

        panel = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: FilterRun.panelName, verbose: options.verbose)
        }
        sleep(microseconds: 500_000)
        // The defaults of [filter]: cancel_with = "lift".
        let text = FilterRun.config(socket: target.path).replacingOccurrences(of: "cancel_with = \"lift\"\n", with: "")
        if underSystemd {
            try FilterRun.installUnits(from: options.units, touchd: touchd, verbose: options.verbose)
            try attempt { () throws(DriverError) in try writeFile(UnitPaths.config, text) }
            let started = Tool.run([Tool.systemctl, "restart", UnitPaths.service], verbose: options.verbose)
            guard started.succeeded else { throw Abort("systemctl restart touchd.service: \(started.summary)") }
            let filtering = poll(until: monotonicNow() + Limits.readiness) { () -> Bool? in
                let shown = Tool.run(
                    [Tool.systemctl, "show", "-p", "StatusText", "--value", UnitPaths.service], verbose: false)
                return shown.output.first?.contains("filtering 1") == true ? true : nil
            }
            guard filtering != nil else { throw Abort("touchd.service did not filter the panel") }
        } else {
            let config = scratch.file("filter.toml")
            try attempt { () throws(DriverError) in try writeFile(config, text) }
            daemon = try attempt { () throws(DriverError) in
                try Daemon(
                    executable: touchd, arguments: ["run", "--config", config], environment: [:],
                    removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "touchd| " : nil)
            }
            let filtering = poll(until: monotonicNow() + Limits.readiness) {
                daemon?.output.first(from: 0) { $0.contains("touchscreen filtered") }
            }
            guard filtering != nil else { throw Abort("touchd did not filter the panel: \(daemon?.tail(20) ?? [])") }
        }

        seatd = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/sbin/seatd", arguments: ["-u", "nobody", "-g", "nogroup"], environment: [:],
                removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "seatd| " : nil,
                published: false)
        }
        guard poll(until: monotonicNow() + 10_000_000, { access("/run/seatd.sock", F_OK) == 0 ? true : nil }) != nil
        else { throw Abort("seatd did not create /run/seatd.sock: \(seatd?.tail(10) ?? [])") }
        let runtime = "/tmp/touchd-e2e-xdg"
        try run(["/bin/mkdir", "-p", "-m", "0700", runtime])
        try run(["/bin/chown", "65534:65534", runtime])
        cage = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "XDG_RUNTIME_DIR=\(runtime)",
                    "WLR_BACKENDS=drm,libinput", "WLR_RENDERER=pixman", "LIBSEAT_BACKEND=seatd", "/usr/bin/cage",
                    "-d", "--", "/usr/bin/stdbuf", "-oL", "/usr/bin/wev",
                ],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "cage| " : nil, published: false)
        }
        // wev prints its first events once its window is up.
        guard poll(until: monotonicNow() + 30_000_000, { cage?.output.first(from: 0) { $0.contains("wl_") } }) != nil
        else { throw Abort("wev printed nothing under cage within 30 s: \(cage?.tail(20) ?? [])") }
    }

    private func write(_ frame: [TouchChange]) throws(Abort) {
        guard let panel else { throw Abort("no panel") }
        _ = try attempt { () throws(DriverError) in try panel.write(frame) }
    }

    private func touchLines(from cursor: Int, _ kind: String) -> [String] {
        (cage?.output.since(cursor) ?? []).filter { $0.contains("wl_touch] \(kind)") }
    }

    private var cursor: Int { cage?.output.count ?? 0 }

    /// cage adds a touchscreen on its first event and wev binds wl_touch after the capability: taps until wev gets
    /// one.
    private func warmUp() throws(Abort) {
        for _ in 0..<10 {
            let start = cursor
            try write([.down(slot: 0, x: 500, y: 500)])
            sleep(microseconds: 60_000)
            try write([.up(slot: 0)])
            // Done as soon as wev has the whole tap (its lift too, so that it cannot land in a check's lines).
            let whole = poll(until: monotonicNow() + 700_000) {
                !touchLines(from: start, "down").isEmpty && !touchLines(from: start, "up").isEmpty ? true : nil
            }
            if whole != nil { return }
        }
        throw Abort("wev never got a touch through cage: \(cage?.tail(20) ?? [])")
    }

    private func adminPress() throws(Abort) {
        let start = cursor
        let messages = target.inbox.count
        try write([.down(slot: 0, x: 50, y: 850), .down(slot: 1, x: 100, y: 900), .down(slot: 2, x: 150, y: 950)])
        let downs = poll(until: monotonicNow() + 3_000_000) { touchLines(from: start, "down").count >= 3 ? true : nil }
        // Recognized at 300 ms; the fingers stay down for 1.5 s.
        let ups = poll(until: monotonicNow() + 1_500_000) { touchLines(from: start, "up").count >= 3 ? true : nil }
        let recognized = poll(until: monotonicNow() + 2_000_000) {
            target.inbox.first(from: messages) { $0.action == "admin" }
        }
        let liftCursor = cursor
        try write([.up(slot: 0), .up(slot: 1), .up(slot: 2)])
        sleep(microseconds: 500_000)
        var failures: [String] = []
        if downs == nil { failures.append("wev did not get three downs: \(touchLines(from: start, "down").count)") }
        if recognized == nil { failures.append("the admin press was not recognized") }
        if ups == nil {
            failures.append(
                "wev's touches did not end while the fingers were down: \(touchLines(from: start, "up").count) up, "
                    + "\(touchLines(from: start, "cancel").count) cancel")
        }
        let late = touchLines(from: liftCursor, "up") + touchLines(from: liftCursor, "down")
        if !late.isEmpty { failures.append("the physical lift reached wev: \(late)") }
        results.append(
            (
                "under cage, a recognized admin press ends for the client when recognized",
                failures.isEmpty ? nil : failures.joined(separator: "; ")
            ))

        let next = cursor
        try write([.down(slot: 0, x: 500, y: 500)])
        sleep(microseconds: 60_000)
        try write([.up(slot: 0)])
        let tapped = poll(until: monotonicNow() + 3_000_000) {
            !touchLines(from: next, "down").isEmpty && !touchLines(from: next, "up").isEmpty ? true : nil
        }
        results.append(
            (
                "under cage, the client receives the next tap in the same slot",
                tapped != nil ? nil : "wev got: \((cage?.output.since(next) ?? []).filter { $0.contains("wl_touch") })"
            ))
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
