import CLibinput
import Glibc

/// Filter mode with real kernel input (`touchd-e2e --filter`): touchd grabs a uinput panel and forwards
/// what the application should see to the panel's twin. `libinput debug-events`, reading every device of the seat as
/// a compositor does, stands in for the compositor: its lines say which device each touch came from (the panel, its
/// twin) and whether it went down, up or was cancelled, so every check below is about what the application received
/// and what it never received.
///
/// Geometry (a 1000×1000 output, device units = pixels × 10): button `a` (x 100…299, y 100…299, reaches the app),
/// button `z` (x 600…799, y 100…299, `to_app = false`), the `admin` three-finger long press of 300 ms in the
/// bottom-left corner (x 0…199, y 800…999, cancels touches). Empty space around (500, 500).
final class FilterRun {
    let options: Options
    let touchd: String
    /// Under systemd (`--systemd-unit --filter`): touchd is the installed touchd.service with its full sandbox, the
    /// udev rule and the groups of the package; otherwise a child process of the driver, run as root.
    let underSystemd: Bool
    private let scratch: ScratchDirectory
    private let target: TargetListener
    /// A second socket target that works ``BusyTarget/work`` after each message while its rounds ask it to (the
    /// busy-target check and the latency run's busy rounds); none under systemd, where both are left out.
    private let busy: TargetListener?
    private let notify: NotifyListener
    private let configPath: String
    private var daemon: Daemon?
    private var panel: VirtualTouchscreen?
    private var events: Daemon?
    private var results: [(name: String, failure: String?)] = []
    private var notes: [String] = []

    /// A debug-events line: the device's sysname, the event type, the seat slot for touch events.
    struct Line {
        var sysname: String
        var type: String
        var slot: Int?
        var arrival: Microseconds
    }

    init(options: Options, touchd: String) {
        self.options = options
        self.touchd = touchd
        underSystemd = options.systemdUnit
        do {
            scratch = try ScratchDirectory()
            target = try TargetListener.forScenario(
                underSystemd: underSystemd, scratch: scratch, verbose: options.verbose)
            notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
            busy = underSystemd ? nil : try TargetListener(path: scratch.file("busy.sock"), verbose: options.verbose)
        } catch {
            Console.line("touchd-e2e: cannot set up: \(error)")
            exit(1)
        }
        configPath = underSystemd ? UnitPaths.config : scratch.file("filter.toml")
    }

    static func config(
        socket: String, appMaxContacts: Int = 0, swallowSeconds: Double = 0, cancelWith: String = "lift"
    ) -> String {
        """
        # Written by touchd-e2e --filter.
        [output]
        width = 1000
        height = 1000

        [filter]
        enabled = true
        app_max_contacts = \(appMaxContacts)
        swallow_after_idle_s = \(swallowSeconds)
        cancel_with = "\(cancelWith)"

        [tracking]
        stuck_contact_timeout_ms = 0

        [targets.e2e]
        socket = "\(socket)"
        responds_to = ["a", "z", "admin"]

        [[control]]
        id = "a"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "e2e", action = "a" }]

        [[control]]
        id = "z"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        to_app = false
        actions = [{ events = ["touchUpInside"], target = "e2e", action = "z" }]

        [[gesture]]
        id = "admin"
        kind = "long_press"
        fingers = 3
        minimum_duration_ms = 300
        frame = { x = 0, y = 800, width = 200, height = 200 }
        cancels_touches = true
        actions = [{ events = ["recognized"], target = "e2e", action = "admin" }]
        """
    }

    /// ``config(socket:appMaxContacts:swallowSeconds:cancelWith:)`` with a second target, `busy` at `busySocket`:
    /// `z`'s action goes to it (the busy-target check), and with `measured`, control `m` over the latency run's tap
    /// point (x 400…599, y 400…599, reaching the app) sends its touchDown there, so that touchd both sends and
    /// forwards each measured touch-down (the latency run's busy rounds).
    static func busyConfig(socket: String, busySocket: String, measured: Bool) -> String {
        var text = config(socket: socket).replacingFirst(
            #"target = "e2e", action = "z""#, with: #"target = "busy", action = "z""#)
        text += """


            [targets.busy]
            socket = "\(busySocket)"
            responds_to = ["z", "m"]

            """
        if measured {
            text += """

                [[control]]
                id = "m"
                frame = { x = 400, y = 400, width = 200, height = 200 }
                actions = [{ events = ["touchDown"], target = "busy", action = "m" }]

                """
        }
        return text
    }

    func run() -> Int32 {
        do throws(Abort) {
            try setUp()
            try checkTaps()
            try checkAdminPress(cancelWith: "lift")
            try reload(Self.config(socket: target.path, cancelWith: "palm"))
            try checkAdminPress(cancelWith: "palm")
            try reload(Self.config(socket: target.path, appMaxContacts: 1))
            try checkSecondFinger()
            try reload(Self.config(socket: target.path, swallowSeconds: 1))
            try checkWakeTouch()
            try reload(Self.config(socket: target.path))
            try checkReloadKeepsAppTouch()
            // It stops touchd with SIGSTOP, which needs touchd as a child.
            if !underSystemd { try checkLostEventsKeepAppTouches() }
            try checkBusyPanel()
            try findTwin(from: 0)
            try checkGrabWaitsForLift(after: "start")
            try checkGrabWaitsForLift(after: "reload")
            try checkClonedPanelIgnored()
            try checkKill()
            try checkUnplug()
            // The busy target's check and the latency run reload and restart touchd with a second target; they are
            // made with touchd as a child.
            if !underSystemd {
                try checkNextForwardedTouch()
                try measureLatency()
            }
        } catch {
            record("sequence", "stopped: \(error.reason)")
        }
        events?.killAndReap()
        daemon?.killAndReap()
        if underSystemd { _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: options.verbose) }
        panel?.destroy()
        target.stop()
        busy?.stop()
        notify.stop()
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty {
            daemon?.printTail(80)
            if underSystemd {
                let journal = Tool.run(
                    [Tool.journalctl, "-u", UnitPaths.service, "-o", "cat", "--no-pager", "-n", "80"],
                    verbose: false)
                for line in journal.output { Console.line("journal| \(line)") }
            }
            Console.line("--- libinput debug-events (last 60 lines) ---")
            for line in events?.tail(60) ?? [] { Console.line("events| \(line)") }
        }
        for note in notes { Console.line("note: \(note)") }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        Console.line("filter: \(results.count - failed.count)/\(results.count) checks passed")
        scratch.remove()
        return failed.isEmpty ? 0 : 1
    }

    private func record(_ name: String, _ failure: String?) {
        results.append((name, failure))
    }

    // MARK: - Set-up

    private var panelSysname: String {
        panel?.devnode.map { String($0.split(separator: "/").last ?? "") } ?? "?"
    }

    /// The twin's sysname, from debug-events' DEVICE_ADDED lines: the device with the panel's name that is not it.
    private var twinSysname: String?

    private func setUp() throws(Abort) {
        if underSystemd { try installUnits() }
        panel = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: Self.panelName, verbose: options.verbose)
        }
        sleep(microseconds: 500_000)  // udev tags it before touchd looks
        try startDaemon()
        try startEvents()
    }

    /// As scripts/install and the .deb do: the units, the groups, the udev rule for /dev/uinput (applied to the node
    /// at once), and touchd at /usr/bin/touchd.
    private func installUnits() throws(Abort) {
        try Self.installUnits(from: options.units, touchd: touchd, verbose: options.verbose)
        var status = stat()
        let group = FilterRun.groupName(of: "/dev/uinput", &status)
        record(
            "the udev rule gives /dev/uinput to touchd-uinput, mode 0660",
            group == "touchd-uinput" && status.st_mode & 0o777 == 0o660
                ? nil : "/dev/uinput is group \(group ?? "?"), mode \(String(status.st_mode & 0o777, radix: 8))")
    }

    static let udevRule = "/usr/lib/udev/rules.d/60-touchd-uinput.rules"

    /// Installs as scripts/install and the .deb do: `touchd` as /usr/bin/touchd, the units, the groups (running
    /// systemd-sysusers) and the udev rule for /dev/uinput, applied to the node at once; then daemon-reload.
    static func installUnits(from units: String, touchd: String, verbose: Bool) throws(Abort) {
        var steps: [[String]] = []
        if touchd != UnitPaths.binary { steps.append(["/usr/bin/install", "-m", "0755", touchd, UnitPaths.binary]) }
        steps += [
            [
                "/usr/bin/install", "-m", "0644", "\(units)/touchd.service", "\(units)/touchd.socket",
                UnitPaths.unitDirectory + "/",
            ],
            ["/usr/bin/install", "-D", "-m", "0644", "\(units)/touchd.sysusers", UnitPaths.sysusers],
            ["/usr/bin/systemd-sysusers", UnitPaths.sysusers],
            ["/usr/bin/install", "-D", "-m", "0644", "\(units)/60-touchd-uinput.rules", udevRule],
            ["/bin/udevadm", "control", "--reload-rules"],
            ["/bin/udevadm", "trigger", "--action=add", "--subsystem-match=misc", "--sysname-match=uinput"],
            ["/bin/udevadm", "settle", "--timeout=20"],
            ["/usr/bin/install", "-d", "-m", "0755", UnitPaths.configDirectory, UnitPaths.scratch],
            [Tool.systemctl, "daemon-reload"],
        ]
        for step in steps {
            let result = Tool.run(step, verbose: verbose)
            guard result.succeeded else { throw Abort("installing failed: \(result.summary)") }
        }
    }

    static func groupName(of path: String, _ status: inout stat) -> String? {
        guard stat(path, &status) == 0, let group = getgrgid(status.st_gid) else { return nil }
        return String(cString: group.pointee.gr_name)
    }

    /// The status touchd last told systemd (under systemd) or the notify socket (as a child).
    private func statusText(since cursor: Int) -> String? {
        if underSystemd {
            let shown = Tool.run(
                [Tool.systemctl, "show", "-p", "StatusText", "--value", UnitPaths.service], verbose: false)
            return shown.output.first
        }
        return notify.inbox.since(cursor).last { $0.value("STATUS") != nil }?.value("STATUS")
    }

    /// Starts touchd (or restarts the unit) with `config` (by default the standard one) and waits until its status
    /// contains `expecting`. `executable`: another touchd than `--touchd`'s, as a child (`--also-touchd`).
    private func startDaemon(
        expecting: String = "filtering 1", config: String? = nil, executable: String? = nil
    ) throws(Abort) {
        let text = config ?? Self.config(socket: target.path)
        try attempt { () throws(DriverError) in try writeFile(configPath, text) }
        if underSystemd {
            let started = Tool.run([Tool.systemctl, "restart", UnitPaths.service], verbose: options.verbose)
            guard started.succeeded else { throw Abort("systemctl restart touchd.service: \(started.summary)") }
            let filtering = poll(until: monotonicNow() + Limits.readiness) {
                statusText(since: 0)?.contains(expecting) == true ? true : nil
            }
            guard filtering != nil else {
                throw Abort("touchd.service did not report '\(expecting)': \(statusText(since: 0) ?? "no status")")
            }
            return
        }
        let cursor = notify.inbox.count
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: executable ?? touchd,
                arguments: ["run", "--config", configPath] + (options.yieldOnSend ? ["--yield-on-send"] : []),
                environment: ["NOTIFY_SOCKET": notify.path], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        let ready = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("STATUS")?.contains(expecting) == true }
        }
        guard ready != nil else {
            throw Abort("touchd did not report '\(expecting)' in its status: \(daemon?.tail(20) ?? [])")
        }
    }

    /// Stops touchd (the unit, or the child).
    private func stopDaemon() {
        if underSystemd {
            _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: options.verbose)
        } else {
            daemon?.send(SIGTERM)
            _ = daemon?.waitForExit(until: monotonicNow() + 5_000_000)
        }
    }

    /// A panel another process has grabbed (fault-cases.md F5): touchd says so in its status and does not count it
    /// as filtered; once the other grab ends, a reload filters it.
    private func checkBusyPanel() throws(Abort) {
        guard let node = panel?.devnode else { throw Abort("no panel") }
        stopDaemon()
        let fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        var evdev: OpaquePointer?
        guard fd >= 0, libevdev_new_from_fd(fd, &evdev) == 0, let evdev, libevdev_grab(evdev, LIBEVDEV_GRAB) == 0 else {
            if fd >= 0 { close(fd) }
            throw Abort("the driver could not grab \(node) itself")
        }
        var failures: [String] = []
        do throws(Abort) {
            try startDaemon(expecting: "not filtered")
            let status = statusText(since: 0) ?? ""
            if !status.contains("EBUSY") { failures.append("the status does not say EBUSY: \(status)") }
            if status.contains("filtering 1") { failures.append("the busy panel counts as filtered: \(status)") }
        } catch {
            failures.append(error.reason)
        }
        libevdev_grab(evdev, LIBEVDEV_UNGRAB)
        libevdev_free(evdev)
        close(fd)
        if failures.isEmpty {
            try reload(Self.config(socket: target.path))
            let filtering = poll(until: monotonicNow() + 5_000_000) {
                statusText(since: 0)?.contains("filtering 1") == true ? true : nil
            }
            if filtering == nil {
                failures.append("a reload after the grab ended did not filter it: \(statusText(since: 0) ?? "")")
                for line in daemon?.tail(30) ?? [] { Console.line("busy| \(line)") }
            }
        }
        record(
            "a panel another process grabbed is reported, not filtered; a reload filters it once free",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// Starts `libinput debug-events` on the whole seat and finds the twin among its devices.
    private func startEvents() throws(Abort) {
        events?.killAndReap()
        events = try attempt { () throws(DriverError) in
            try Daemon(
                executable: "/usr/bin/stdbuf", arguments: ["-oL", "/usr/bin/libinput", "debug-events"],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "events| " : nil, published: false)
        }
        try findTwin(from: 0)
        notes.append("panel \(panelSysname), its twin \(twinSysname ?? "?")")
        sleep(microseconds: 300_000)
    }

    /// The newest twin debug-events announced after `cursor`: a device with the panel's name that is not the panel.
    private func findTwin(from cursor: Int) throws(Abort) {
        let twin = poll(until: monotonicNow() + 10_000_000) { () -> String? in
            guard let events else { return nil }
            return events.output.since(cursor).last {
                $0.contains("DEVICE_ADDED") && $0.contains(Self.panelName + " ") && !$0.contains(panelSysname + " ")
            }.flatMap { raw in raw.split(separator: " ").first.map { String($0.drop { $0 == "-" }) } }
        }
        guard let twin else {
            throw Abort("libinput debug-events shows no twin of the panel: \(events?.tail(10) ?? [])")
        }
        twinSysname = twin
    }

    static let panelName = "touchd-e2e filter panel"

    /// debug-events lines since `cursor`, decoded.
    private func lines(from cursor: Int) -> [Line] {
        guard let events else { return [] }
        let text = events.output.since(cursor)
        let arrivals = events.arrivals.since(cursor)
        return zip(text, arrivals).compactMap { raw, arrival in
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2 else { return nil }
            let sysname = fields[0].hasPrefix("-") ? String(fields[0].dropFirst()) : String(fields[0])
            guard sysname.hasPrefix("event") else { return nil }
            var slot: Int?
            if fields[1].hasPrefix("TOUCH_"), fields.count >= 4 { slot = Int(fields[3]) }
            return Line(sysname: sysname, type: String(fields[1]), slot: slot, arrival: arrival)
        }
    }

    private var eventCursor: Int { events?.output.count ?? 0 }

    private func touches(from cursor: Int, _ sysname: String?, _ type: String) -> [Line] {
        lines(from: cursor).filter { ($0.sysname == sysname || sysname == nil) && $0.type == type }
    }

    private func waitTouches(
        from cursor: Int, _ sysname: String?, _ type: String, count: Int, within: Microseconds = 3_000_000
    ) -> [Line]? {
        poll(until: monotonicNow() + within) { () -> [Line]? in
            let found = touches(from: cursor, sysname, type)
            return found.count >= count ? found : nil
        }
    }

    private func write(_ frame: [TouchChange]) throws(Abort) {
        guard let panel else { throw Abort("no panel") }
        _ = try attempt { () throws(DriverError) in try panel.write(frame) }
    }

    private func tap(_ x: Int, _ y: Int) throws(Abort) {
        try write([.down(slot: 0, x: x, y: y)])
        sleep(microseconds: 60_000)
        try write([.up(slot: 0)])
        sleep(microseconds: 400_000)  // outside the repeat window, and quiet for the checks
    }

    private func reload(_ text: String) throws(Abort) {
        try attempt { () throws(DriverError) in try writeFile(configPath, text) }
        if underSystemd {
            let before = reloadsLogged()
            let reloaded = Tool.run([Tool.systemctl, "reload", UnitPaths.service], verbose: options.verbose)
            guard reloaded.succeeded else { throw Abort("systemctl reload touchd.service: \(reloaded.summary)") }
            guard poll(until: monotonicNow() + Limits.readiness, { reloadsLogged() > before ? true : nil }) != nil
            else { throw Abort("touchd.service logged no 'configuration reloaded' after systemctl reload") }
            sleep(microseconds: 200_000)
            return
        }
        let cursor = notify.inbox.count
        daemon?.send(SIGHUP)
        let done = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("READY") == "1" }
        }
        guard done != nil else { throw Abort("no READY=1 after a reload") }
        sleep(microseconds: 200_000)
    }

    /// How many reloads touchd.service has logged.
    private func reloadsLogged() -> Int {
        let journal = Tool.run(
            [Tool.journalctl, "-u", UnitPaths.service, "-o", "cat", "--no-pager", "--grep", "configuration reloaded"],
            verbose: false)
        return journal.output.filter { $0.contains("configuration reloaded") }.count
    }

    // MARK: - Checks

    /// A tap on a `to_app = true` control and on empty space reach the app through the twin (down, up) and the
    /// control's action fires; a tap on a `to_app = false` control reaches the app not at all, and its action fires;
    /// the panel itself sends the compositor nothing (it is grabbed).
    private func checkTaps() throws(Abort) {
        for (name, x, y, action) in [("control a", 200, 200, "a"), ("empty space", 500, 500, nil)] {
            let cursor = eventCursor
            let messages = target.inbox.count
            try tap(x, y)
            let downs = waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 1)
            let ups = waitTouches(from: cursor, twinSysname, "TOUCH_UP", count: 1)
            var failures: [String] = []
            if downs == nil || ups == nil { failures.append("the app did not get down and up from the twin") }
            if !touches(from: cursor, panelSysname, "TOUCH_DOWN").isEmpty {
                failures.append("the grabbed panel's own touch reached the compositor")
            }
            if let action {
                let got = poll(until: monotonicNow() + 2_000_000) {
                    target.inbox.first(from: messages) { $0.action == action }
                }
                if got == nil { failures.append("no action '\(action)' from the control") }
            }
            record("tap on \(name) reaches the app", failures.isEmpty ? nil : failures.joined(separator: "; "))
        }
        let cursor = eventCursor
        let messages = target.inbox.count
        try tap(700, 200)
        let got = poll(until: monotonicNow() + 2_000_000) { target.inbox.first(from: messages) { $0.action == "z" } }
        sleep(microseconds: 300_000)
        var failures: [String] = []
        if got == nil { failures.append("no action 'z' from the to_app = false control") }
        let seen = lines(from: cursor).filter { $0.type.hasPrefix("TOUCH_") }
        if !seen.isEmpty { failures.append("the app got \(seen.map { "\($0.sysname) \($0.type)" })") }
        record(
            "tap on a to_app = false control never reaches the app",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// Three fingers in the admin corner reach the app as three downs; when the press is recognized (300 ms) their
    /// copies end (lift: TOUCH_UP; palm: TOUCH_CANCEL) while the fingers are still down, never at the physical lift;
    /// the next tap in the same slot reaches the app (fault-cases.md F7).
    private func checkAdminPress(cancelWith: String) throws(Abort) {
        let cursor = eventCursor
        let messages = target.inbox.count
        try write([.down(slot: 0, x: 50, y: 850), .down(slot: 1, x: 100, y: 900), .down(slot: 2, x: 150, y: 950)])
        var failures: [String] = []
        if waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 3) == nil {
            failures.append("the app did not get three downs: \(touches(from: cursor, nil, "TOUCH_DOWN").count)")
        }
        let ending = cancelWith == "palm" ? "TOUCH_CANCEL" : "TOUCH_UP"
        let ended = waitTouches(from: cursor, twinSysname, ending, count: 3, within: 2_000_000)
        // The twin's frame and the socket message leave touchd in the same loop turn; either may be read first.
        let recognized = poll(until: monotonicNow() + 2_000_000) {
            target.inbox.first(from: messages) { $0.action == "admin" }
        }
        if recognized == nil { failures.append("the admin press was not recognized within 2 s") }
        if ended == nil {
            failures.append(
                "the app's three touches did not end with \(ending) while the fingers were down (saw "
                    + "\(lines(from: cursor).filter { $0.type.hasPrefix("TOUCH_") }.map(\.type)))")
        }
        let liftCursor = eventCursor
        try write([.up(slot: 0), .up(slot: 1), .up(slot: 2)])
        sleep(microseconds: 400_000)
        let late = lines(from: liftCursor).filter { $0.type.hasPrefix("TOUCH_") && $0.type != "TOUCH_FRAME" }
        if !late.isEmpty { failures.append("the physical lift still reached the app: \(late.map(\.type))") }
        record(
            "admin press ends for the app when recognized (\(cancelWith))",
            failures.isEmpty ? nil : failures.joined(separator: "; "))

        let next = eventCursor
        try tap(500, 500)
        let down = waitTouches(from: next, twinSysname, "TOUCH_DOWN", count: 1)
        let up = waitTouches(from: next, twinSysname, "TOUCH_UP", count: 1)
        record(
            "the next touch after a \(cancelWith) cancel reaches the app",
            down != nil && up != nil ? nil : "saw \(lines(from: next).map { "\($0.sysname) \($0.type)" })")
    }

    /// With `app_max_contacts = 1`, a second finger never reaches the app.
    private func checkSecondFinger() throws(Abort) {
        let cursor = eventCursor
        try write([.down(slot: 0, x: 450, y: 500)])
        sleep(microseconds: 50_000)
        try write([.down(slot: 1, x: 650, y: 500)])
        sleep(microseconds: 50_000)
        try write([.move(slot: 0, x: 400, y: 500), .move(slot: 1, x: 700, y: 500)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 1)])
        try write([.up(slot: 0)])
        sleep(microseconds: 500_000)
        let downs = touches(from: cursor, nil, "TOUCH_DOWN")
        record(
            "with app_max_contacts = 1 a second finger never reaches the app",
            downs.count == 1 && downs[0].sysname == twinSysname
                ? nil : "downs: \(downs.map { "\($0.sysname) \($0.slot ?? -1)" })")
    }

    /// With `swallow_after_idle_s = 1`, the first touch after a second without touches never reaches the app; the
    /// next one does.
    private func checkWakeTouch() throws(Abort) {
        sleep(microseconds: 1_300_000)
        let cursor = eventCursor
        try tap(500, 500)
        let swallowed = touches(from: cursor, nil, "TOUCH_DOWN")
        let next = eventCursor
        try tap(500, 500)
        let after = waitTouches(from: next, twinSysname, "TOUCH_DOWN", count: 1)
        var failures: [String] = []
        if !swallowed.isEmpty { failures.append("the wake touch reached the app") }
        if after == nil { failures.append("the touch after the wake touch did not reach the app") }
        record("the wake touch never reaches the app", failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// A finger resting on the page while touchd reloads (cancel_with = "lift"): the reload ends touchd's own contact,
    /// but the app's copy must go on to the real lift. Ended by touchd with a lift before the finger lifted, it was a
    /// complete tap for the app.
    private func checkReloadKeepsAppTouch() throws(Abort) {
        var failures: [String] = []
        let cursor = eventCursor
        try write([.down(slot: 0, x: 500, y: 500)])
        if waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 1) == nil {
            failures.append("the resting finger did not reach the app")
        }
        try reload(Self.config(socket: target.path))
        sleep(microseconds: 400_000)
        let early =
            touches(from: cursor, twinSysname, "TOUCH_UP").count
            + touches(from: cursor, twinSysname, "TOUCH_CANCEL").count
        if early > 0 { failures.append("the app's touch ended at the reload, before the finger lifted") }
        try write([.move(slot: 0, x: 540, y: 500)])
        sleep(microseconds: 60_000)
        try write([.up(slot: 0)])
        if waitTouches(from: cursor, twinSysname, "TOUCH_UP", count: 1) == nil {
            failures.append("the app never got the finger's real lift")
        }
        sleep(microseconds: 300_000)
        let ups = touches(from: cursor, twinSysname, "TOUCH_UP").count
        if ups != 1 { failures.append("the app got \(ups) lifts, not 1") }
        if touches(from: cursor, twinSysname, "TOUCH_MOTION").isEmpty {
            failures.append("the app did not get the finger's move after the reload")
        }
        sleep(microseconds: 200_000)
        // The next tap is a fresh touch, as the only finger.
        if let failure = try nextTapFailure() { failures.append(failure) }
        record(
            "a reload with a finger down leaves the app's touch to its real lift (no early lift, no tap)",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// A tap at (500, 500) after a check with fingers down: it must reach the app from the twin as the only finger
    /// (seat slot 0), or the compositor still holds a touch of the check's. The failure; nil when it does.
    private func nextTapFailure() throws(Abort) -> String? {
        let next = eventCursor
        try tap(500, 500)
        if waitTouches(from: next, twinSysname, "TOUCH_DOWN", count: 1) == nil {
            return "the next tap did not reach the app"
        }
        let slots = seatSlots(from: next, twinSysname, "TOUCH_DOWN")
        return slots == [0] ? nil : "the next tap came as seat slot(s) \(slots)"
    }

    /// Motion frames written while touchd is stopped, after the second finger's touch-down: far more events than the
    /// kernel's buffer for touchd's reader holds, so that the kernel drops the touch-down among others and queues
    /// SYN_DROPPED.
    static let droppedFrames = 3000

    /// Lost events with the panel read at the edge (fault-cases.md D5): a finger resting on the page, touchd stopped
    /// (SIGSTOP), then in one burst a second finger going down and `droppedFrames` moves of the first, then SIGCONT.
    /// touchd ends its own contacts, and takes the kernel's slots after the loss as libevdev did for libinput: the
    /// application's copy of the resting finger goes on to its real lift, and the second finger, whose touch-down was
    /// lost, reaches the application. Checked on the twin: the second finger's touch-down after the burst, a lift for
    /// each finger when they lift (none left down: the compositor would take every later touch for a second finger),
    /// touchd's log line about the loss, and the next tap as the only finger.
    private func checkLostEventsKeepAppTouches() throws(Abort) {
        guard let daemon, let panel else { throw Abort("no touchd or no panel") }
        var failures: [String] = []
        let cursor = eventCursor
        let outputCursor = daemon.output.count
        try write([.down(slot: 0, x: 500, y: 500)])
        if waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 1) == nil {
            failures.append("the resting finger did not reach the app")
        }
        daemon.send(SIGSTOP)
        let stopped = poll(until: monotonicNow() + 5_000_000) {
            ProcessStat(pid: daemon.pid)?.state == "T" ? true : nil
        }
        var frames: [[TouchChange]] = [[.down(slot: 1, x: 700, y: 500)]]
        frames += (0..<Self.droppedFrames).map { [TouchChange.move(slot: 0, x: 500 + $0 % 100, y: 500)] }
        // Whatever happens, touchd runs again before anything can end the sequence.
        let flood = Result { () throws(DriverError) in try panel.writeFrames(frames) }
        daemon.send(SIGCONT)
        guard stopped != nil else { throw Abort("touchd did not stop within 5 s of SIGSTOP") }
        _ = try attempt { () throws(DriverError) in try flood.get() }
        if waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 2) == nil {
            failures.append("the finger that went down among the lost events did not reach the app")
        }
        sleep(microseconds: 200_000)
        try write([.up(slot: 0), .up(slot: 1)])
        if waitTouches(from: cursor, twinSysname, "TOUCH_UP", count: 2) == nil {
            failures.append(
                "the app did not get both lifts (\(touches(from: cursor, twinSysname, "TOUCH_UP").count) of 2): a "
                    + "touch is left down")
        }
        sleep(microseconds: 300_000)
        let downs = touches(from: cursor, twinSysname, "TOUCH_DOWN").count
        let ends =
            touches(from: cursor, twinSysname, "TOUCH_UP").count
            + touches(from: cursor, twinSysname, "TOUCH_CANCEL").count
        if downs != ends { failures.append("the app got \(downs) touch-downs and \(ends) ends") }
        let logged = poll(until: monotonicNow() + 2_000_000) {
            daemon.output.first(from: outputCursor) { $0.contains("SYN_DROPPED") }?.element
        }
        if logged == nil { failures.append("touchd logged no line with SYN_DROPPED") }
        sleep(microseconds: 200_000)
        if let failure = try nextTapFailure() { failures.append(failure) }
        record(
            "lost events (SYN_DROPPED) leave the app's touches to their real lifts and bring it the finger that went "
                + "down among them", failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// A finger on the panel that the compositor saw go down, when touchd starts (or a reload turns filter mode on):
    /// touchd must not grab the panel until it lifts, or the compositor never sees the lift and every later touch is
    /// a second finger for it (`app_max_contacts` then protects nothing). The status says the grab waits; the
    /// compositor gets the finger's lift from the panel; then touchd grabs, and the next tap reaches the app from the
    /// twin as the only finger (seat slot 0).
    private func checkGrabWaitsForLift(after trigger: String) throws(Abort) {
        var failures: [String] = []
        let filterOff = Self.config(socket: target.path).replacingFirst("enabled = true", with: "enabled = false")
        if trigger == "reload" {
            try reload(filterOff)
            let released = poll(until: monotonicNow() + 5_000_000) {
                statusText(since: 0)?.contains("filtering") == false ? true : nil
            }
            if released == nil { failures.append("filter mode off still filters: \(statusText(since: 0) ?? "")") }
        } else {
            stopDaemon()
        }
        sleep(microseconds: 300_000)
        let cursor = eventCursor
        try write([.down(slot: 0, x: 500, y: 500)])
        if waitTouches(from: cursor, panelSysname, "TOUCH_DOWN", count: 1) == nil {
            failures.append("the compositor did not see the finger go down on the panel")
        }
        do throws(Abort) {
            if trigger == "reload" {
                try reload(Self.config(socket: target.path))
                let waiting = poll(until: monotonicNow() + 5_000_000) {
                    statusText(since: 0)?.contains("waiting for contacts to lift") == true ? true : nil
                }
                if waiting == nil { throw Abort("no waiting status: \(statusText(since: 0) ?? "")") }
            } else {
                try startDaemon(expecting: "waiting for contacts to lift")
            }
        } catch {
            failures.append("touchd did not say its grab waits for the finger to lift: \(error.reason)")
        }
        sleep(microseconds: 300_000)
        let beforeLift = eventCursor
        try write([.up(slot: 0)])
        if waitTouches(from: beforeLift, panelSysname, "TOUCH_UP", count: 1) == nil {
            failures.append("the compositor never got the finger's lift from the panel")
        }
        let filtering = poll(until: monotonicNow() + 5_000_000) {
            statusText(since: 0)?.contains("filtering 1") == true ? true : nil
        }
        if filtering == nil {
            failures.append("touchd did not grab the panel once the finger lifted: \(statusText(since: 0) ?? "")")
        } else {
            try findTwin(from: beforeLift)
            sleep(microseconds: 300_000)
            let tapCursor = eventCursor
            try tap(500, 500)
            let downs = waitTouches(from: tapCursor, twinSysname, "TOUCH_DOWN", count: 1)
            let seatSlots = seatSlots(from: tapCursor, twinSysname, "TOUCH_DOWN")
            if downs == nil {
                failures.append("the next tap did not reach the app from the twin")
            } else if seatSlots != [0] {
                failures.append("the next tap reached the app as seat slot(s) \(seatSlots), not as the only finger (0)")
            }
            if !touches(from: tapCursor, panelSysname, "TOUCH_DOWN").isEmpty {
                failures.append("the panel's own touch reached the compositor after the grab")
            }
        }
        record(
            "after \(trigger) with a finger down, the grab waits for its lift; the next tap is the app's only finger",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// The seat slots of debug-events' touch lines of `type` from `sysname` since `cursor`: the field in brackets.
    private func seatSlots(from cursor: Int, _ sysname: String?, _ type: String) -> [Int] {
        guard let events else { return [] }
        return events.output.since(cursor).compactMap { raw -> Int? in
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 5, fields[1] == type else { return nil }
            let device = fields[0].hasPrefix("-") ? String(fields[0].dropFirst()) : String(fields[0])
            guard sysname == nil || device == sysname, fields[4].hasPrefix("("), fields[4].hasSuffix(")") else {
                return nil
            }
            return Int(fields[4].dropFirst().dropLast())
        }
    }

    /// A clone of the panel (a uinput device with its name and ids, as a USB attacker or a local root could make) with
    /// the panel matched by path, as docs/security.md recommends: touchd neither uses nor grabs the clone, its touches
    /// fire no control, and the real panel stays filtered. (uinput devices have no `ID_PATH`, so the test matches the
    /// panel's node; on a kiosk it is the by-path link or `ID_PATH`.)
    private func checkClonedPanelIgnored() throws(Abort) {
        guard let node = panel?.devnode else { throw Abort("no panel") }
        var failures: [String] = []
        try reload(Self.config(socket: target.path) + "\n[[device]]\nmatch_path = \"\(node)\"\n")
        let clone = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: Self.panelName, verbose: options.verbose)
        }
        defer { clone.destroy() }
        sleep(microseconds: 1_000_000)
        let status = statusText(since: 0) ?? ""
        if !status.contains("filtering 1") || status.contains("filtering 2") || !status.hasPrefix("1 touchscreen") {
            failures.append("with the clone plugged in the status is '\(status)'")
        }
        let cursor = eventCursor
        let messages = target.inbox.count
        _ = try attempt { () throws(DriverError) in try clone.write([.down(slot: 0, x: 200, y: 200)]) }
        sleep(microseconds: 60_000)
        _ = try attempt { () throws(DriverError) in try clone.write([.up(slot: 0)]) }
        sleep(microseconds: 800_000)
        if let fired = target.inbox.since(messages).first(where: { $0.action == "a" }) {
            failures.append("a tap on the clone fired a control: \(fired.details)")
        }
        let cloneNode = clone.devnode.map { String($0.split(separator: "/").last ?? "") }
        if touches(from: cursor, twinSysname, "TOUCH_DOWN").count > 0 {
            failures.append("the clone's touch was forwarded to the panel's twin")
        }
        if let cloneNode, touches(from: cursor, cloneNode, "TOUCH_DOWN").isEmpty {
            failures.append("the compositor did not see the clone's own touch (touchd grabbed it?)")
        }
        // The real panel still works through its twin.
        let panelCursor = eventCursor
        try tap(200, 200)
        if waitTouches(from: panelCursor, twinSysname, "TOUCH_DOWN", count: 1) == nil {
            failures.append("the real panel's tap no longer reaches the app through its twin")
        }
        record(
            "a clone of the panel is neither used nor grabbed when the panel is matched by path",
            failures.isEmpty ? nil : failures.joined(separator: "; "))
        clone.destroy()
        try reload(Self.config(socket: target.path))
    }

    /// `kill -9` of touchd with a finger down: the kernel drops the grab, the twin goes away, and the next tap
    /// reaches the compositor from the panel directly (fault-cases.md F1).
    private func checkKill() throws(Abort) {
        let cursor = eventCursor
        try write([.down(slot: 0, x: 500, y: 500)])
        _ = waitTouches(from: cursor, twinSysname, "TOUCH_DOWN", count: 1)
        if underSystemd {
            // systemd restarts it after RestartSec=2s: the tap below comes before that.
            _ = Tool.run([Tool.systemctl, "kill", "-s", "KILL", UnitPaths.service], verbose: options.verbose)
        } else {
            daemon?.send(SIGKILL)
            _ = daemon?.waitForExit(until: monotonicNow() + 5_000_000)
        }
        let removed = poll(until: monotonicNow() + 5_000_000) {
            lines(from: cursor).first { $0.sysname == twinSysname && $0.type == "DEVICE_REMOVED" }
        }
        try write([.up(slot: 0)])
        sleep(microseconds: 400_000)
        let next = eventCursor
        try tap(500, 500)
        let direct = waitTouches(from: next, panelSysname, "TOUCH_DOWN", count: 1)
        var failures: [String] = []
        if removed == nil { failures.append("the twin was not removed") }
        if direct == nil { failures.append("the next tap did not reach the compositor from the panel") }
        record(
            "kill -9 leaves the compositor reading the panel", failures.isEmpty ? nil : failures.joined(separator: "; ")
        )
    }

    /// Unplugging the panel removes its twin (fault-cases.md F2).
    private func checkUnplug() throws(Abort) {
        let cursor = eventCursor
        try startDaemon()
        try findTwin(from: cursor)
        guard let twin = twinSysname else { return }
        // Latency is measured with this touchd; a second panel is made for the unplug.
        let other = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: "touchd-e2e unplug panel", verbose: options.verbose)
        }
        let second = poll(until: monotonicNow() + 10_000_000) { () -> String? in
            lines(from: cursor).first {
                $0.type == "DEVICE_ADDED" && $0.sysname != panelSysname && $0.sysname != twin
                    && $0.sysname != other.devnode.map { String($0.split(separator: "/").last ?? "") }
            }?.sysname
        }
        let removeCursor = eventCursor
        other.destroy()
        let removed = poll(until: monotonicNow() + 5_000_000) {
            lines(from: removeCursor).first { $0.sysname == second && $0.type == "DEVICE_REMOVED" }
        }
        record(
            "unplugging the panel removes its twin",
            second == nil ? "the second panel got no twin" : removed == nil ? "its twin \(second!) stayed" : nil)
    }

    /// Filter mode with a busy socket target: `z`'s action goes to `busy`, which works 20 ms after each message it
    /// reads; 5 ms after it read that action, a tap on empty space must reach the app through the twin no later than
    /// with `busy` idle, within ``BusyTarget/Comparison/bound`` (one CPU kept busy during each pair; BusyTarget.swift).
    /// The forwarded touch must not wait for a target.
    private func checkNextForwardedTouch() throws(Abort) {
        guard let busy else { return }
        try reload(Self.busyConfig(socket: target.path, busySocket: busy.path, measured: false))
        guard let panel else { throw Abort("no panel") }
        let comparison = try BusyTarget.compare(
            BusyTarget.Pairs(
                target: busy, panel: panel, button: (700, 200), action: "z", nextTouch: (500, 500),
                watch: { [self] in
                    let cursor = eventCursor
                    let twin = twinSysname
                    return { [self] in waitTouches(from: cursor, twin, "TOUCH_DOWN", count: 1)?.first?.arrival }
                }))
        Console.line(comparison.line(check: "next-forwarded-touch"))
        record(
            "busy-target-next-forwarded-touch: the next touch reaches the app no later with a busy target than an idle one",
            comparison.failure("the next forwarded touch"))
        try reload(Self.config(socket: target.path))
    }

    /// App-visible latency: from the uinput write to debug-events' TOUCH_DOWN, in one boot, read three ways: from the
    /// panel directly (touchd stopped), through the twin of the bare forwarder `--floor-filter` names (grab and copy,
    /// nothing decided; touchd stopped), and through touchd's twin. A fresh reader for each round of ``latencyTaps``
    /// taps on the same point, the readers in turn (in the reverse order every other pass), ``latencyPasses`` times
    /// (`--latency-passes`, default 10): 10 touch-downs per reader counted a pass, 100 by default. Each round's first
    /// tap is not counted, for every reader alike: it is the first touch of a process just started (touchd's, the
    /// forwarder's) and of a twin just made, which the compositor's libinput meets for the first time, so in the
    /// samples it would stand for one touch in eleven where a kiosk has one per start of the service. It is reported on
    /// its own (`filter-latency-first-touch:`). Many short rounds rather than a few long ones: the guest's speed drifts
    /// within a boot, and finer turns share the drift among the readers. Then the same with the busy target (`busy`,
    /// working 20 ms after each message) receiving an action for each touch-down: in touchd's rounds the tap lands on
    /// control `m`, whose touchDown touchd sends to `busy` after it forwarded the touch and the engine handled it; in
    /// the forwarder's rounds the forwarder sends `busy` a touchDown line itself, right after its write of each frame
    /// that begins a contact (floor-filter.c's second argument; floor-filter-libinput.c's too). So the target starts
    /// its work after each filter's own write, never before, and what touchd does between its write and its send is
    /// touchd's own cost. Until 2026-12-05 the driver sent the forwarder's line, right after the panel's write, before
    /// the forwarder had read: the forwarder's busy rounds then came out faster than its idle ones, and a touchd with
    /// nothing before its write 1.10–1.15 busy against 0.99–1.06 idle (docs/performance.md, "The busy comparison, like
    /// for like"). `--floor-driver-line` measures that design too, as one more reader (`floor-driver-line`) in the same
    /// boot. In the direct rounds, where no process of the project's runs, the driver sends the line right after the
    /// panel's write. A `filter-latency-busy-line:` line gives each reader's median time from the panel's write to the
    /// target's reading of its line. The idle and busy rounds alternate within each pass.
    ///
    /// Prints a `filter-latency:` line per condition with each reader's median and p99 (nearest rank: of 100 samples
    /// the second largest, of 200 the third) and touchd's ratios to the bare forwarder, beside the bounds the project
    /// set for them (median ≤ 1.15×, p99 ≤ 1.3×). Figures of an emulated guest, reported and not judged: the check only
    /// asks for the samples. With `--also-touchd`, one more reader is that touchd, run and counted exactly as touchd
    /// is, and a `filter-latency-other-touchd:` line per condition compares the two builds in the same boot; with
    /// `--floor-driver-line`, a `filter-latency-floor-driver-line:` line per condition compares touchd with the
    /// forwarder measured the earlier way (with the target idle the two forwarders' rounds are the same: their ratio is
    /// the comparison's own noise in that boot).
    private func measureLatency() throws(Abort) {
        typealias Reader = LatencyReader
        struct Round: Hashable {
            var reader: Reader
            var busy: Bool
        }
        var samples: [Round: [Int64]] = [:]
        var firstTouches: [Round: [Int64]] = [:]
        var busyActions = 0
        // Per reader, when the busy target's line arrived after each touch-down's panel write (busy rounds).
        var lineDelays: [Reader: [Int64]] = [:]
        var readers: [Reader] = options.floorFilter == nil ? [.touchd, .direct] : [.touchd, .direct, .floor]
        if options.floorFilterLibinput != nil { readers.append(.libinputFloor) }
        if options.floorDriverLine { readers.append(.floorDriverLine) }
        if options.otherTouchd != nil { readers.append(.otherTouchd) }
        let conditions = busy == nil ? [false] : [false, true]
        // The driver's own connection to the busy target, for the lines of the rounds whose reader sends none.
        var standIn: Int32 = -1
        defer {
            if standIn >= 0 { close(standIn) }
            busy?.work = 0
        }
        if let busy {
            _ = CPUWork.turnsPerStep  // measured now rather than in the first busy round
            standIn = try attempt { () throws(DriverError) in
                try UnixSocket.connected(path: busy.path, type: SOCK_STREAM)
            }
        }
        for pass in 0..<latencyPasses {
            for isBusy in conditions {
                busy?.work = isBusy ? BusyTarget.work : 0
                // Every other pass in the reverse order: a drift within the pass then favours no reader.
                for reader in pass.isMultiple(of: 2) ? readers : readers.reversed() {
                    let round = Round(reader: reader, busy: isBusy)
                    let measured = try measureRound(reader, busy: isBusy, standIn: standIn)
                    let taken = measured.latencies
                    busyActions += measured.busyActions
                    lineDelays[reader, default: []] += measured.lineDelays
                    // The round's first touch on its own (see above); the rest are the samples.
                    let rest = Array(taken.dropFirst())
                    if let first = taken.first { firstTouches[round, default: []].append(first) }
                    samples[round, default: []] += rest
                    Console.line(
                        "filter-latency-round: reader=\(reader.rawValue) busy=\(isBusy ? 1 : 0) "
                            + "first_us=\(taken.first.map(String.init) ?? "n/a") "
                            + "slowest_of_rest_us=\(rest.max().map(String.init) ?? "n/a") "
                            + "median_us=\(Percentiles(rest)?.p50 ?? 0)")
                }
            }
        }
        var enough = true
        for isBusy in conditions {
            func figures(_ reader: Reader) -> Percentiles? {
                Percentiles(samples[Round(reader: reader, busy: isBusy)] ?? [])
            }
            let direct = figures(.direct)
            let floor = figures(.floor)
            let touchd = figures(.touchd)
            func ratio(_ numerator: Int64?, _ denominator: Int64?) -> Double {
                guard let numerator, let denominator, denominator > 0 else { return .nan }
                return Double(numerator) / Double(denominator)
            }
            func figure(_ value: Int64?) -> String { value.map(String.init) ?? "n/a" }
            let overFloor50 = ratio(touchd?.p50, floor?.p50)
            let overFloor99 = ratio(touchd?.p99, floor?.p99)
            let counts = readers.map { samples[Round(reader: $0, busy: isBusy)]?.count ?? 0 }
            let bounds =
                floor == nil || touchd == nil
                ? "n/a" : overFloor50 <= Self.medianBound && overFloor99 <= Self.p99Bound ? "met" : "not-met"
            Console.line(
                "filter-latency: busy=\(isBusy ? 1 : 0) samples=\(counts.min() ?? 0) "
                    + "direct_p50_us=\(figure(direct?.p50)) direct_p99_us=\(figure(direct?.p99)) "
                    + "floor_p50_us=\(figure(floor?.p50)) floor_p99_us=\(figure(floor?.p99)) "
                    + "touchd_p50_us=\(figure(touchd?.p50)) touchd_p99_us=\(figure(touchd?.p99)) "
                    + "touchd_over_floor_p50=\(format(overFloor50)) touchd_over_floor_p99=\(format(overFloor99)) "
                    + "floor_over_direct_p50=\(format(ratio(floor?.p50, direct?.p50))) "
                    + "touchd_over_direct_p50=\(format(ratio(touchd?.p50, direct?.p50))) "
                    + "bounds=\(bounds) (touchd/floor p50 <= \(Self.medianBound), p99 <= \(Self.p99Bound); reported)")
            Console.line(
                "filter-latency-first-touch: busy=\(isBusy ? 1 : 0) "
                    + readers.map { reader in
                        let firsts = firstTouches[Round(reader: reader, busy: isBusy)] ?? []
                        let key = reader.rawValue.replacingOccurrences(of: "-", with: "_")
                        return "\(key)_max_us=\(firsts.max().map(String.init) ?? "n/a") "
                            + "\(key)_p50_us=\(Percentiles(firsts)?.p50 ?? 0)"
                    }.joined(separator: " ") + " (each round's first touch, not among the samples)")
            if let other = figures(.otherTouchd) {
                // Two builds of touchd in the same boot, their rounds side by side (`--also-touchd`).
                Console.line(
                    "filter-latency-other-touchd: busy=\(isBusy ? 1 : 0) "
                        + "other_p50_us=\(other.p50) other_p99_us=\(other.p99) "
                        + "other_over_floor_p50=\(format(ratio(other.p50, floor?.p50))) "
                        + "other_over_floor_p99=\(format(ratio(other.p99, floor?.p99))) "
                        + "touchd_over_other_p50=\(format(ratio(touchd?.p50, other.p50))) "
                        + "touchd_over_other_p99=\(format(ratio(touchd?.p99, other.p99)))")
            }
            if let libinputFloor = figures(.libinputFloor) {
                // What reading through libinput costs a forwarder, and touchd above a forwarder that does.
                Console.line(
                    "filter-latency-libinput-floor: busy=\(isBusy ? 1 : 0) "
                        + "libinput_floor_p50_us=\(libinputFloor.p50) libinput_floor_p99_us=\(libinputFloor.p99) "
                        + "libinput_floor_over_floor_p50=\(format(ratio(libinputFloor.p50, floor?.p50))) "
                        + "libinput_floor_over_floor_p99=\(format(ratio(libinputFloor.p99, floor?.p99))) "
                        + "touchd_over_libinput_floor_p50=\(format(ratio(touchd?.p50, libinputFloor.p50))) "
                        + "touchd_over_libinput_floor_p99=\(format(ratio(touchd?.p99, libinputFloor.p99)))")
            }
            notes.append(
                "app-visible latency\(isBusy ? " with the busy target" : ""), uinput write → debug-events TOUCH_DOWN: "
                    + readers.map { reader in
                        "\(reader.rawValue) \(figures(reader).map { "p50 \($0.p50) µs p99 \($0.p99) µs" } ?? "n/a") "
                            + "(\(samples[Round(reader: reader, busy: isBusy)]?.count ?? 0))"
                    }.joined(separator: ", ") + " (p99 nearest rank)")
            if let driverLine = figures(.floorDriverLine) {
                // The forwarder as the busy rounds had it before (the driver's line at the panel's write).
                Console.line(
                    "filter-latency-floor-driver-line: busy=\(isBusy ? 1 : 0) "
                        + "floor_driver_line_p50_us=\(driverLine.p50) floor_driver_line_p99_us=\(driverLine.p99) "
                        + "floor_over_floor_driver_line_p50=\(format(ratio(floor?.p50, driverLine.p50))) "
                        + "floor_over_floor_driver_line_p99=\(format(ratio(floor?.p99, driverLine.p99))) "
                        + "touchd_over_floor_driver_line_p50=\(format(ratio(touchd?.p50, driverLine.p50))) "
                        + "touchd_over_floor_driver_line_p99=\(format(ratio(touchd?.p99, driverLine.p99)))")
            }
            if counts.contains(where: { $0 < latencySamples }) { enough = false }
        }
        if busy != nil {
            // When each reader's busy line reached the target: the comparison's design made visible in every boot.
            Console.line(
                "filter-latency-busy-line: "
                    + readers.map { reader in
                        let key = reader.rawValue.replacingOccurrences(of: "-", with: "_")
                        return "\(key)_p50_us=\(Percentiles(lineDelays[reader] ?? []).map { String($0.p50) } ?? "n/a")"
                    }.joined(separator: " ")
                    + " (from the panel's write to the busy target's reading of the line: touchd's action, the "
                    + "forwarders' own lines, the driver's for the other readers)")
        }
        // Each reader that sends its own line (touchd's action, `--touchd`'s and `--also-touchd`'s; the forwarders'
        // lines) sends one per tap of its busy rounds.
        let sendingReaders = readers.count { $0.sendsItself }
        let expectedActions = busy == nil ? 0 : latencyPasses * Self.latencyTaps * sendingReaders
        record(
            "latency measured (\(latencySamples) touch-downs per reader"
                + "\(busy == nil ? "" : ", idle and busy target"))",
            !enough
                ? "too few samples: \(samples.map { "\($0.key.reader.rawValue) busy=\($0.key.busy): \($0.value.count)" })"
                : busyActions < expectedActions
                    ? "the busy target got \(busyActions) of the \(expectedActions) touchDown lines touchd and the "
                        + "forwarder send" : nil)
    }

    /// What reads the panel in a round of the latency run: `libinput debug-events` alone, through the bare forwarder's
    /// twin, or through touchd's (`--touchd`'s, or `--also-touchd`'s).
    private enum LatencyReader: String {
        case direct, floor, touchd
        case libinputFloor = "floor-libinput"
        case otherTouchd = "other-touchd"
        /// The bare forwarder with the driver sending its busy line at the panel's write (`--floor-driver-line`).
        case floorDriverLine = "floor-driver-line"

        /// A touchd, started and counted as touchd is.
        var isTouchd: Bool { self == .touchd || self == .otherTouchd }
        /// Whether the reader's own process sends the busy target its line in the busy rounds (after its write).
        var sendsItself: Bool { isTouchd || self == .floor || self == .libinputFloor }
    }

    /// Rounds per reader and condition (`--latency-passes`; the default 10 gives 100 samples per reader and
    /// condition, so that the p99, nearest rank, is the second slowest rather than the slowest, one touch the guest
    /// happened to stall), and taps per round.
    private var latencyPasses: Int { options.latencyPasses }
    private static let latencyTaps = 11
    /// The samples each reader and condition must give: every tap of every round but the round's first.
    private var latencySamples: Int { latencyPasses * (Self.latencyTaps - 1) }
    /// The bounds set for touchd's forwarding against the bare forwarder's (its ratio of medians and of p99s).
    private static let medianBound = 1.15
    private static let p99Bound = 1.3

    /// What one round of the latency run measured.
    private struct MeasuredRound {
        /// Each tap's latency in µs, from the panel's write to the reader's TOUCH_DOWN line.
        var latencies: [Int64] = []
        /// How many touchDown lines the reader's own process (touchd, the forwarder) sent the busy target.
        var busyActions = 0
        /// When each tap's line (whoever sent it) reached the busy target after the panel's write, in µs.
        var lineDelays: [Int64] = []
    }

    /// One round of the latency run: `reader` fresh (touchd started with the configuration `busy` asks for, or the
    /// floor filter started, or both stopped), ``latencyTaps`` taps at (500, 500).
    private func measureRound(
        _ reader: LatencyReader, busy isBusy: Bool, standIn: Int32
    ) throws(Abort) -> MeasuredRound {
        var floorFilter: Daemon?
        defer { floorFilter?.killAndReap() }
        if daemon?.exitStatus == nil {
            daemon?.send(SIGTERM)
            _ = daemon?.waitForExit(until: monotonicNow() + 5_000_000)
            sleep(microseconds: 300_000)
        }
        switch reader {
        case .touchd, .otherTouchd:
            // A fresh touchd has a new twin.
            let cursor = eventCursor
            let config =
                isBusy
                ? Self.busyConfig(socket: target.path, busySocket: busy?.path ?? "", measured: true)
                : Self.config(socket: target.path)
            try startDaemon(config: config, executable: reader == .otherTouchd ? options.otherTouchd : nil)
            try findTwin(from: cursor)
        case .floor, .libinputFloor, .floorDriverLine:
            guard let path = reader == .libinputFloor ? options.floorFilterLibinput : options.floorFilter else {
                return MeasuredRound()
            }
            // In their busy rounds the forwarders send the busy target its line themselves, after their write.
            let arguments = [Self.panelName] + (isBusy && reader.sendsItself ? [busy?.path].compactMap { $0 } : [])
            let cursor = eventCursor
            floorFilter = try attempt { () throws(DriverError) in
                try Daemon(
                    executable: path, arguments: arguments, environment: [:],
                    removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "floor| " : nil,
                    published: false)
            }
            try findTwin(from: cursor)
        case .direct:
            break
        }
        let source = reader == .direct ? panelSysname : twinSysname
        let sendsItself = reader.sendsItself
        let actionsBefore = busy?.inbox.count ?? 0
        sleep(microseconds: 300_000)
        var round = MeasuredRound()
        var writes: [Int64] = []
        for _ in 0..<Self.latencyTaps {
            let cursor = eventCursor
            guard let panel else { throw Abort("no panel") }
            let timing = try attempt { () throws(DriverError) in try panel.write([.down(slot: 0, x: 500, y: 500)]) }
            writes.append(Int64(timing.beforeReport))
            if isBusy, !sendsItself, standIn >= 0 {
                try attempt { () throws(DriverError) in
                    try UnixSocket.send(standIn, #"{"action":"m","event":"touchDown","target":"busy"}"# + "\n")
                }
            }
            if let down = waitTouches(from: cursor, source, "TOUCH_DOWN", count: 1)?.first {
                round.latencies.append(Int64(down.arrival) - Int64(timing.beforeReport))
            }
            sleep(microseconds: 30_000)
            try write([.up(slot: 0)])
            sleep(microseconds: 120_000)
        }
        if isBusy, let busy {
            let lines = busy.inbox.since(actionsBefore).filter { $0.action == "m" && $0.event == "touchDown" }
            if sendsItself { round.busyActions = lines.count }
            // Each tap's line: the first to arrive after its write and before the next tap's.
            for (index, written) in writes.enumerated() {
                let next = index + 1 < writes.count ? writes[index + 1] : Int64.max
                if let line = lines.first(where: { Int64($0.arrival) >= written && Int64($0.arrival) < next }) {
                    round.lineDelays.append(Int64(line.arrival) - written)
                }
            }
        }
        return round
    }

    private func format(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        let hundredths = (value * 100).rounded()
        return "\(hundredths / 100)"
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
