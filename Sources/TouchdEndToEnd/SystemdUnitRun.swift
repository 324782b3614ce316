import Foundation
import Glibc

/// `touchd-e2e --systemd-unit`: touchd.service as shipped, under systemd as PID 1 (scripts/vm/run --systemd), with
/// its whole sandbox. Installs the binary, the units and the sysusers file where scripts/install puts them, then
/// checks readiness (a broken file never becomes active; `systemctl start` returns once touchd is ready), the sandbox
/// (dynamic uid, the input group, no capabilities, seccomp), the control socket's node, a touchscreen plugged after
/// the start reaching the socket target, libinput's SYN_DROPPED line in the journal with its MESSAGE_ID, the exec
/// target running under the same sandbox (umask, no NOTIFY_SOCKET), the journal's native fields, `systemctl reload`
/// with a good and a broken file, the watchdog catching a stopped touchd and the restart, a setuid program failing
/// cleanly, a touchscreen touchd may not open picked up after a reload (those three in SystemdUnitFaults.swift), and
/// the start-up sweep (a panel created 0-1200 ms after the service starts; SystemdUnitStartup.swift), and a clean stop.
///
/// Runs on one thread, like Scenario; the target listener's threads fill its inbox.
final class SystemdUnitRun {
    let options: Options
    let touchd: String
    let report = UnitReport()
    var target: TargetListener?
    var device: VirtualTouchscreen?
    /// The dynamic uid touchd ran as, from /proc/MAINPID/status, to compare with the exec target's.
    var serviceUID: String?

    init(options: Options, touchd: String) {
        self.options = options
        self.touchd = touchd
    }

    var verbose: Bool { options.verbose }

    /// Runs every check and returns the exit status: 0 when all passed, 1 otherwise.
    func run() -> Int32 {
        do throws(Abort) {
            try preflight()
            try install()
            try brokenConfigNeverActive()
            try startReturnsWhenReady()
            try checkSandbox()
            checkControlSocket()
            try hotplugAndTap()
            try secondInstance()
            try synDroppedJournal()
            try execTarget()
            try commandCannotCreateInputDevice()
            checkJournal()
            try reloads()
            try watchdog()
            try setuidCommand()
            try unreadableDevice()
            try squattedLockIgnored()
            try clickSoundUnderUnit()
            try startupSweep()
            try stop()
        } catch {
            Console.line("touchd-e2e: the sequence stops here: \(error.reason)")
            report.failUnrecorded(UnitCheck.allCases, because: error.reason)
        }
        if !report.failures.isEmpty { printJournal() }
        device?.destroy()
        device = nil
        _ = Tool.run([Tool.systemctl, "stop", UnitPaths.service, UnitPaths.socketUnit], verbose: verbose)
        target?.stop()
        report.note("socket target: \(target?.inbox.count ?? 0) messages on \(target?.connections ?? 0) connection(s)")
        report.printSummary()
        return report.failures.isEmpty ? 0 : 1
    }

    // MARK: - setup

    /// systemd must be PID 1 and /dev/uinput writable; otherwise nothing here can be checked.
    func preflight() throws(Abort) {
        var status = stat()
        guard stat("/run/systemd/system", &status) == 0 else {
            throw Abort("systemd is not PID 1 here (no /run/systemd/system): run under scripts/vm/run --systemd")
        }
        if let reason = VirtualTouchscreen.unavailableReason() { throw Abort(reason) }
    }

    /// Installs as scripts/install does: the binary, the units, the sysusers file (and runs systemd-sysusers), the
    /// test configuration; then `systemctl daemon-reload` and `systemd-analyze verify` on the installed unit.
    func install() throws(Abort) {
        let units = options.units
        var steps: [[String]] = []
        if touchd != UnitPaths.binary {
            steps.append(["/usr/bin/install", "-m", "0755", touchd, UnitPaths.binary])
        }
        steps += [
            [
                "/usr/bin/install", "-m", "0644", "\(units)/touchd.service", "\(units)/touchd.socket",
                UnitPaths.unitDirectory + "/",
            ],
            ["/usr/bin/install", "-D", "-m", "0644", "\(units)/touchd.sysusers", UnitPaths.sysusers],
            ["/usr/bin/systemd-sysusers", UnitPaths.sysusers],
            // The rule that gives /dev/uinput to touchd-uinput, as the package installs it: the check that commands
            // cannot create input devices needs a /dev/uinput the service's groups can open.
            ["/usr/bin/install", "-D", "-m", "0644", "\(units)/60-touchd-uinput.rules", FilterRun.udevRule],
            ["/bin/udevadm", "control", "--reload-rules"],
            ["/bin/udevadm", "trigger", "--action=add", "--subsystem-match=misc", "--sysname-match=uinput"],
            ["/bin/udevadm", "settle", "--timeout=20"],
            ["/usr/bin/install", "-d", "-m", "0755", UnitPaths.configDirectory, UnitPaths.scratch],
            [Tool.systemctl, "daemon-reload"],
        ]
        for step in steps {
            let result = Tool.run(step, verbose: verbose)
            guard result.succeeded else {
                report.record(.installed, result.summary)
                throw Abort("installing failed")
            }
        }
        // touchd sends under SCHED_IDLE only when asked (--yield-on-send): this run asks, through a runtime drop-in as
        // docs/operations.md shows, so that send-yield-under-sandbox checks that the unit lets the opt-in work. The
        // filter and cage runs under systemd keep the default.
        let yieldDropIn = (UnitPaths.watchdogDropIn as NSString).deletingLastPathComponent + "/40-e2e-yield.conf"
        do {
            try FileManager.default.createDirectory(
                atPath: (yieldDropIn as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try writeFile(
                yieldDropIn,
                "[Service]\nExecStart=\nExecStart=\(UnitPaths.binary) run --config \(UnitPaths.config) --yield-on-send\n"
            )
        } catch {
            report.record(.installed, "cannot write \(yieldDropIn): \(error)")
            throw Abort("installing failed")
        }
        _ = Tool.run([Tool.systemctl, "daemon-reload"], verbose: verbose)
        // The target touchd's dynamic user connects to: a socket it may write to, as a kiosk application's would be.
        target = try attempt { () throws(DriverError) in try TargetListener(path: UnitPaths.target, verbose: verbose) }
        guard chmod(UnitPaths.target, 0o666) == 0 else {
            throw Abort("chmod \(UnitPaths.target): \(describe(errno: errno))")
        }
        let verify = Tool.run(
            ["/usr/bin/systemd-analyze", "verify", "\(UnitPaths.unitDirectory)/touchd.service"], verbose: verbose)
        let warnings = verify.output.filter { !$0.isEmpty }
        report.record(
            .installed,
            verify.succeeded && warnings.isEmpty
                ? nil : "systemd-analyze verify on the installed unit: \(verify.summary)")
    }

    // MARK: - readiness

    /// A file that fails validation: `systemctl start` fails, the unit never was active, exit status 78, and it is
    /// not restarted (RestartPreventExitStatus=78).
    func brokenConfigNeverActive() throws(Abort) {
        try writeConfig(TestConfig.broken)
        let start = Tool.run([Tool.systemctl, "start", UnitPaths.service], verbose: verbose)
        let properties = try read([
            "ActiveState", "Result", "ExecMainStatus", "NRestarts", "ActiveEnterTimestampMonotonic",
        ])
        var problems: [String] = []
        if start.succeeded { problems.append("systemctl start succeeded with a broken configuration") }
        if properties["ActiveState"] != "failed" { problems.append("ActiveState is not failed") }
        if properties["ExecMainStatus"] != "78" { problems.append("touchd did not exit 78") }
        if properties.number("NRestarts") != 0 { problems.append("it was restarted") }
        if properties.number("ActiveEnterTimestampMonotonic") != 0 { problems.append("it was active at some point") }
        report.record(
            .brokenConfigNeverActive,
            problems.isEmpty ? nil : problems.joined(separator: "; ") + " (\(properties.summary); \(start.summary))")
        _ = Tool.run([Tool.systemctl, "reset-failed", UnitPaths.service], verbose: verbose)
    }

    /// `systemctl start` returns once touchd sent READY=1: right after it, the unit is active and running with the
    /// status touchd sent along with READY=1.
    func startReturnsWhenReady() throws(Abort) {
        try writeConfig(UnitConfig.valid(actionForA: "a"))
        let start = Tool.run([Tool.systemctl, "start", UnitPaths.service], verbose: verbose)
        guard start.succeeded else {
            report.record(.startReturnsWhenReady, start.summary)
            throw Abort("touchd.service did not start")
        }
        let properties = try read(["ActiveState", "SubState", "StatusText", "MainPID"])
        let ready =
            properties["ActiveState"] == "active" && properties["SubState"] == "running"
            && properties["StatusText"] == "waiting for a touchscreen"
        report.record(
            .startReturnsWhenReady,
            ready
                ? nil
                : "right after systemctl start returned: \(properties.summary) (expected active, running, "
                    + "StatusText=waiting for a touchscreen)")
    }

    /// /proc/MAINPID/status: not root, in the input group, no capabilities, no new privileges, a seccomp filter.
    func checkSandbox() throws(Abort) {
        let properties = try read(["MainPID"])
        guard let pid = properties.number("MainPID"), pid > 0 else {
            report.record(.sandboxApplied, "no MainPID: \(properties.summary)")
            return
        }
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let fields = Self.statusFields(status)
        serviceUID = fields["Uid"]?.split(separator: "\t").first.map(String.init)
        var problems: [String] = []
        if serviceUID == nil || serviceUID == "0" { problems.append("runs as uid \(serviceUID ?? "?")") }
        if let input = Self.groupID("input") {
            let groups = fields["Groups"]?.split(separator: " ").map(String.init) ?? []
            if !groups.contains("\(input)") { problems.append("not in the input group (\(input)): Groups \(groups)") }
        } else {
            problems.append("no input group on this system")
        }
        if fields["CapEff"] != "0000000000000000" { problems.append("CapEff \(fields["CapEff"] ?? "?")") }
        if fields["NoNewPrivs"] != "1" { problems.append("NoNewPrivs \(fields["NoNewPrivs"] ?? "?")") }
        if fields["Seccomp"] != "2" { problems.append("Seccomp \(fields["Seccomp"] ?? "?") (2: a filter)") }
        report.record(.sandboxApplied, problems.isEmpty ? nil : problems.joined(separator: "; "))
        if problems.isEmpty {
            report.note("touchd ran as uid \(serviceUID ?? "?") with Groups \(fields["Groups"] ?? "?")")
        }
    }

    /// The node touchd.socket made: a socket, 0660, root:touchd-clients. With --expect-control-socket, touchd
    /// also answers a hello on it.
    func checkControlSocket() {
        var status = stat()
        if stat(UnitPaths.controlSocket, &status) != 0 {
            report.record(.controlSocketNode, "stat \(UnitPaths.controlSocket): \(describe(errno: errno))")
        } else {
            var problems: [String] = []
            if status.st_mode & S_IFMT != S_IFSOCK { problems.append("not a socket") }
            let mode = status.st_mode & 0o7777
            if mode != 0o660 { problems.append("mode \(String(mode, radix: 8)), not 660") }
            if status.st_uid != 0 { problems.append("owner uid \(status.st_uid), not 0") }
            let group = Self.groupID("touchd-clients")
            if group == nil || status.st_gid != group! {
                problems.append("group \(status.st_gid), not touchd-clients (\(group.map(String.init) ?? "missing"))")
            }
            report.record(.controlSocketNode, problems.isEmpty ? nil : problems.joined(separator: "; "))
        }
        guard options.expectControlSocket else {
            report.skip(.controlSocketHello, "touchd has no control socket yet; --expect-control-socket turns it on")
            return
        }
        report.record(.controlSocketHello, Self.hello(at: UnitPaths.controlSocket))
    }

    // MARK: - input and targets

    /// A touchscreen plugged after the start: touchd reports it in its status, and a tap on `a` reaches the socket
    /// target, through the full sandbox (DeviceAllow, the syscall filter, the address families, netlink hot-plug).
    func hotplugAndTap() throws(Abort) {
        let device = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: "touchd-e2e systemd", verbose: verbose)
        }
        self.device = device
        if let failure = waitForTouchscreen() {
            report.record(.hotplugTapUnderSandbox, failure)
            throw Abort("touchd did not pick up the touchscreen")
        }
        report.record(.hotplugTapUnderSandbox, try tap(at: (200, 200), expecting: "a", generation: 1))
    }

    /// A tap on `c`: the `record` command runs as touchd's user, with the unit's umask (its file is 0600), without
    /// NOTIFY_SOCKET, under NoNewPrivileges, and may write to the state directory.
    func execTarget() throws(Abort) {
        let path = UnitPaths.execRecord("c")
        unlink(path)
        try write([.down(slot: 0, x: 700, y: 200)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        let found = poll(until: monotonicNow() + Limits.message * 2) { access(path, F_OK) == 0 ? true : nil }
        guard found != nil, let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            let failure = "no \(path) within \(seconds(Limits.message * 2)) of a tap on c"
            report.record(.execTargetRuns, failure)
            report.failUnrecorded([.umaskApplies, .notifySocketNotLeaked], because: failure)
            return
        }
        let parts = text.components(separatedBy: UnitConfig.recordMarker + "\n")
        let environment = Set(
            parts[0].split(separator: "\n").compactMap { $0.split(separator: "=").first }.map(String.init))
        let status = Self.statusFields(parts.count > 1 ? parts[1] : "")
        let uid = status["Uid"]?.split(separator: "\t").first.map(String.init)
        var problems: [String] = []
        if !text.contains("TOUCHD_ACTION=c") { problems.append("no TOUCHD_ACTION=c in its environment") }
        if uid == nil || uid != serviceUID {
            problems.append("ran as uid \(uid ?? "?"), touchd as \(serviceUID ?? "?")")
        }
        if status["NoNewPrivs"] != "1" { problems.append("NoNewPrivs \(status["NoNewPrivs"] ?? "?")") }
        report.record(.execTargetRuns, problems.isEmpty ? nil : problems.joined(separator: "; "))

        var file = stat()
        if stat(path, &file) != 0 {
            report.record(.umaskApplies, "stat \(path): \(describe(errno: errno))")
        } else {
            let mode = file.st_mode & 0o777
            report.record(
                .umaskApplies, mode == 0o600 ? nil : "the command's file has mode \(String(mode, radix: 8)), not 600")
        }
        let leaked = environment.intersection(["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS"])
        report.record(
            .notifySocketNotLeaked,
            leaked.isEmpty ? nil : "the command inherited \(leaked.sorted().joined(separator: ", "))")
    }

    /// `journalctl -u touchd -o json`: native entries (`_TRANSPORT=journal`) with SYSLOG_IDENTIFIER, PRIORITY and
    /// TOUCHD_* fields for the start, and the MESSAGE_ID of a failed action for the `fail` command's exit 3.
    func checkJournal() {
        var started: JournalEntry?
        var failed: JournalEntry?
        var yielding: JournalEntry?
        var notYielding: JournalEntry?
        // journald files entries asynchronously: look again until both are there.
        _ = poll(until: monotonicNow() + Limits.message * 2) { () -> Bool? in
            guard case .success(let entries) = JournalEntry.read(unit: UnitPaths.service, verbose: verbose) else {
                return nil
            }
            started = entries.last { $0.message.hasPrefix("touchd started") }
            failed = entries.last { $0.message.hasPrefix("command failed") && $0["TOUCHD_TARGET"] == "fail" }
            yielding = entries.last {
                $0.message.hasPrefix("the input thread yields its CPU")
                    || $0.message.hasPrefix("the input thread could yield its CPU")
            }
            notYielding = entries.last { $0.message.hasPrefix("the input thread cannot yield its CPU") }
            if started == nil || failed == nil { sleep(microseconds: 250_000) }
            return started != nil && failed != nil ? true : nil
        }
        var problems: [String] = []
        if let started {
            let expected = [
                "_TRANSPORT": "journal", "SYSLOG_IDENTIFIER": "touchd", "PRIORITY": "6",
                "TOUCHD_CONFIG": UnitPaths.config, "_SYSTEMD_UNIT": UnitPaths.service,
            ]
            for (name, value) in expected.sorted(by: { $0.key < $1.key }) where started[name] != value {
                problems.append("the start entry has \(name)=\(started[name] ?? "nothing"), not \(value)")
            }
            if started["TOUCHD_VERSION"] == nil { problems.append("the start entry has no TOUCHD_VERSION") }
            if started["MESSAGE_ID"] != UnitConfig.startedID {
                problems.append(
                    "the start entry's MESSAGE_ID is \(started["MESSAGE_ID"] ?? "missing"), not \(UnitConfig.startedID)"
                )
            }
            if problems.isEmpty { report.note("journal start entry: \(started.summary)") }
        } else {
            problems.append("no 'touchd started' entry in journalctl -u touchd -o json")
        }
        if let failed {
            let expected = [
                "MESSAGE_ID": UnitConfig.actionFailedID, "PRIORITY": "4", "TOUCHD_STATUS": "3", "TOUCHD_ACTION": "f",
            ]
            for (name, value) in expected.sorted(by: { $0.key < $1.key }) where failed[name] != value {
                problems.append("the failed-command entry has \(name)=\(failed[name] ?? "nothing"), not \(value)")
            }
            if problems.isEmpty { report.note("journal failed-command entry: \(failed.summary)") }
        } else {
            problems.append("no 'command failed' entry for the fail target in journalctl -u touchd -o json")
        }
        report.record(.journalFields, problems.isEmpty ? nil : problems.joined(separator: "; "))
        // With --yield-on-send (the drop-in above), the unit lets the input thread send under SCHED_IDLE and come
        // back (LimitNICE=+0, sched_setscheduler let through its filter), under DynamicUser= with no capability.
        if let notYielding {
            report.record(.sendYieldUnderSandbox, "touchd said: \(notYielding.message)")
        } else if yielding == nil {
            report.record(.sendYieldUnderSandbox, "no entry says the input thread yields (or could) in the journal")
        } else {
            if let yielding { report.note("journal yield entry: \(yielding.message)") }
            report.record(.sendYieldUnderSandbox, nil)
        }
    }

    // MARK: - reload, watchdog, stop

    /// `systemctl reload` with a new file applies it; with a broken one it fails, and the running configuration
    /// (generation 2) keeps working.
    func reloads() throws(Abort) {
        try writeConfig(UnitConfig.valid(actionForA: "a2"))
        let reload = Tool.run([Tool.systemctl, "reload", UnitPaths.service], verbose: verbose)
        if reload.succeeded {
            report.record(.reloadApplies, try tap(at: (200, 200), expecting: "a2", generation: 2))
        } else {
            report.record(.reloadApplies, reload.summary)
        }
        let before = try read(["MainPID"])
        try writeConfig(TestConfig.broken)
        let broken = Tool.run([Tool.systemctl, "reload", UnitPaths.service], verbose: verbose)
        let after = try read(["MainPID", "ActiveState", "SubState"])
        var problems: [String] = []
        if broken.succeeded { problems.append("systemctl reload succeeded with a broken file") }
        if after["ActiveState"] != "active" || after["SubState"] != "running" {
            problems.append("the service is no longer active and running: \(after.summary)")
        }
        if after["MainPID"] != before["MainPID"] { problems.append("touchd was restarted: \(after.summary)") }
        report.record(.reloadBrokenFails, problems.isEmpty ? nil : problems.joined(separator: "; "))
        report.record(.oldConfigKept, try tap(at: (200, 200), expecting: "a2", generation: 2))
        // Restarts below must find a valid file.
        try writeConfig(UnitConfig.valid(actionForA: "a2"))
    }

    /// With a 3 s watchdog, a touchd stopped with SIGSTOP no longer pings: systemd logs the watchdog timeout, kills
    /// it and starts it again (NRestarts grows), and the new touchd picks up the touchscreen and works.
    func watchdog() throws(Abort) {
        let dropInDirectory = (UnitPaths.watchdogDropIn as NSString).deletingLastPathComponent
        guard
            (try? FileManager.default.createDirectory(atPath: dropInDirectory, withIntermediateDirectories: true))
                != nil
        else { throw Abort("cannot create \(dropInDirectory)") }
        try attempt { () throws(DriverError) in
            try writeFile(UnitPaths.watchdogDropIn, "[Service]\nWatchdogSec=\(UnitPaths.watchdogSeconds)s\n")
        }
        defer {
            unlink(UnitPaths.watchdogDropIn)
            _ = Tool.run([Tool.systemctl, "daemon-reload"], verbose: verbose)
        }
        for step in [[Tool.systemctl, "daemon-reload"], [Tool.systemctl, "restart", UnitPaths.service]] {
            let result = Tool.run(step, verbose: verbose)
            guard result.succeeded else {
                report.record(.watchdogRestarts, result.summary)
                throw Abort("could not restart touchd with a short watchdog")
            }
        }
        let before = try read(["MainPID", "NRestarts", "WatchdogUSec"])
        guard let pid = before.number("MainPID"), pid > 0, let restarts = before.number("NRestarts"),
            let stopped = Int32(exactly: pid)
        else {
            report.record(.watchdogRestarts, "no MainPID or NRestarts: \(before.summary)")
            throw Abort("touchd is not running")
        }
        let stalled = monotonicNow()
        kill(stopped, SIGSTOP)
        let back = poll(until: stalled + Limits.unitState) { () -> UnitProperties? in
            sleep(microseconds: 250_000)
            guard
                case .success(let now) = UnitProperties.read(
                    UnitPaths.service, ["MainPID", "NRestarts", "ActiveState", "SubState"], verbose: false)
            else { return nil }
            let restarted = (now.number("NRestarts") ?? 0) > restarts && now.number("MainPID") != pid
            return restarted && now["ActiveState"] == "active" && now["SubState"] == "running" ? now : nil
        }
        guard let back else {
            kill(stopped, SIGCONT)
            let now = (try? read(["MainPID", "NRestarts", "ActiveState", "SubState", "Result"]))?.summary ?? "?"
            report.record(.watchdogRestarts, "not restarted within \(seconds(Limits.unitState)) of SIGSTOP: \(now)")
            throw Abort("the watchdog did not restart touchd")
        }
        let logged =
            (try? JournalEntry.read(unit: UnitPaths.service, verbose: verbose).get())?.contains {
                $0.message.contains("Watchdog timeout")
            } ?? false
        report.record(
            .watchdogRestarts,
            logged ? nil : "restarted (\(back.summary)), but the journal has no 'Watchdog timeout' line for touchd")
        report.note(
            "watchdog: \(before["WatchdogUSec"] ?? "?") set, touchd stopped, back as pid \(back["MainPID"] ?? "?") "
                + "after \(seconds((monotonicNow() - stalled) / 100_000 * 100_000)), NRestarts \(restarts) → "
                + "\(back["NRestarts"] ?? "?")")
        if let failure = waitForTouchscreen() {
            report.record(.worksAfterRestart, failure)
        } else {
            report.record(.worksAfterRestart, try tap(at: (200, 200), expecting: "a2", generation: 1))
        }
    }

    /// `systemctl stop`: touchd exits 0 on SIGTERM, and nothing is left in its control group.
    func stop() throws(Abort) {
        let stop = Tool.run([Tool.systemctl, "stop", UnitPaths.service], verbose: verbose)
        let properties = try read(["ActiveState", "Result", "ExecMainCode", "ExecMainStatus", "ControlGroup"])
        var problems: [String] = []
        if !stop.succeeded { problems.append(stop.summary) }
        if properties["ActiveState"] != "inactive" || properties["Result"] != "success" {
            problems.append("not inactive with Result=success")
        }
        // ExecMainCode 1 is CLD_EXITED: touchd exited by itself rather than being killed.
        if properties["ExecMainCode"] != "1" || properties["ExecMainStatus"] != "0" {
            problems.append("touchd did not exit 0")
        }
        if access("/sys/fs/cgroup/system.slice/\(UnitPaths.service)/cgroup.procs", F_OK) == 0 {
            let procs =
                (try? String(contentsOfFile: "/sys/fs/cgroup/system.slice/touchd.service/cgroup.procs", encoding: .utf8))
                ?? ""
            if !procs.isEmpty { problems.append("processes left in the control group: \(procs)") }
        }
        report.record(
            .cleanStop, problems.isEmpty ? nil : problems.joined(separator: "; ") + " (\(properties.summary))")
    }

    // MARK: - support

    /// Taps at `point` and waits for the socket target's message with `expecting` as its action on touchUpInside;
    /// the failure text, or nil.
    func tap(at point: (x: Int, y: Int), expecting action: String, generation: Int) throws(Abort) -> String? {
        guard let target else { throw Abort("no socket target") }
        let cursor = target.inbox.count
        // Away from the previous lift's touchDownRepeat window, so every tap is a plain one.
        sleep(microseconds: Limits.repeatGuard)
        try write([.down(slot: 0, x: point.x, y: point.y)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        let deadline = monotonicNow() + Limits.message
        let arrived = poll(until: deadline) {
            target.inbox.first(from: cursor) { $0.event == "touchUpInside" }?.element
        }
        guard let arrived else {
            return "no touchUpInside on the socket target within \(seconds(Limits.message)) of a tap at \(point)"
        }
        if arrived.action != action || arrived.generation != generation {
            return "expected action \(action) of generation \(generation), got \(arrived.details)"
        }
        return nil
    }

    func write(_ frame: [TouchChange]) throws(Abort) {
        guard let device else { throw Abort("no touchscreen to write to") }
        _ = try attempt { () throws(DriverError) in try device.write(frame) }
    }

    /// Waits until touchd's status names one touchscreen; the failure text, or nil.
    func waitForTouchscreen() -> String? {
        var last = ""
        let found = poll(until: monotonicNow() + Limits.unitState) { () -> Bool? in
            guard
                case .success(let properties) = UnitProperties.read(
                    UnitPaths.service, ["StatusText", "ActiveState"], verbose: false)
            else { return nil }
            last = properties.summary
            if properties["StatusText"]?.hasPrefix("1 touchscreen") == true { return true }
            sleep(microseconds: 200_000)
            return nil
        }
        return found == nil
            ? "touchd's status did not name the touchscreen within \(seconds(Limits.unitState)): \(last)" : nil
    }

    func writeConfig(_ text: String) throws(Abort) {
        try attempt { () throws(DriverError) in try writeFile(UnitPaths.config, text) }
        chmod(UnitPaths.config, 0o644)
    }

    func read(_ names: [String]) throws(Abort) -> UnitProperties {
        switch UnitProperties.read(UnitPaths.service, names, verbose: verbose) {
        case .success(let properties): return properties
        case .failure(let failure): throw Abort(failure.description)
        }
    }

    func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }

    /// touchd's journal, for a failure report.
    func printJournal() {
        let result = Tool.run(
            [
                Tool.journalctl, "--boot", "--unit", UnitPaths.service, "--no-pager", "--lines", "80", "--output",
                "short-monotonic",
            ],
            verbose: false)
        Console.line("--- journalctl -u touchd.service (last 80 lines) ---")
        for line in result.output { Console.line("journal| \(line)") }
        Console.line("--- end of the journal ---")
    }

    /// `Name:\tvalue` lines of /proc/PID/status.
    static func statusFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[String(line[..<colon])] = value
        }
        return fields
    }

    static func groupID(_ name: String) -> gid_t? {
        guard let entry = getgrnam(name) else { return nil }
        return entry.pointee.gr_gid
    }

    /// Sends the control socket's hello and waits up to 5 s for a line with `"type":"hello"`; the failure text, or
    /// nil.
    static func hello(at path: String) -> String? {
        let fd: Int32
        do {
            fd = try UnixSocket.connected(path: path, type: SOCK_STREAM)
            try UnixSocket.send(fd, #"{"type":"hello","v":1,"id":1}"# + "\n")
        } catch {
            return error.description
        }
        defer { close(fd) }
        var lines = LineBuffer()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = monotonicNow() + 5_000_000
        while monotonicNow() < deadline {
            guard UnixSocket.readable(fd, milliseconds: 100) else { continue }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return "the control socket closed without answering the hello" }
            if let line = lines.append(buffer[..<count]).first {
                return line.contains(#""type":"hello""#) ? nil : "the answer to hello was: \(line)"
            }
        }
        return "no answer to hello within 5 s"
    }
}

/// Records each systemd check's verdict as it is made (`PASS`, `FAIL`, `SKIP`), and the summary.
final class UnitReport {
    private(set) var verdicts: [(check: UnitCheck, failure: String?)] = []
    private var skipped: Set<UnitCheck> = []
    private(set) var notes: [String] = []

    func record(_ check: UnitCheck, _ failure: String?) {
        precondition(!isRecorded(check), "\(check.rawValue) recorded twice")
        verdicts.append((check, failure))
        Console.line(failure.map { "FAIL \(check.rawValue): \($0)" } ?? "PASS \(check.rawValue)")
    }

    /// A check that does not apply to this run; neither passed nor failed.
    func skip(_ check: UnitCheck, _ reason: String) {
        skipped.insert(check)
        Console.line("SKIP \(check.rawValue): \(reason)")
    }

    func note(_ text: String) {
        notes.append(text)
        Console.line(text)
    }

    func isRecorded(_ check: UnitCheck) -> Bool {
        skipped.contains(check) || verdicts.contains { $0.check == check }
    }

    func failUnrecorded(_ checks: some Sequence<UnitCheck>, because reason: String) {
        for check in checks where !isRecorded(check) { record(check, "not run: \(reason)") }
    }

    var failures: [UnitCheck] { verdicts.filter { $0.failure != nil }.map(\.check) }

    func printSummary() {
        Console.line("")
        Console.line("summary:")
        for note in notes { Console.line("  \(note)") }
        let failed = failures
        if failed.isEmpty {
            Console.line("touchd-e2e --systemd-unit: all \(verdicts.count) checks passed (\(skipped.count) skipped)")
        } else {
            Console.line(
                "touchd-e2e --systemd-unit: \(failed.count) of \(verdicts.count) checks failed: "
                    + failed.map(\.rawValue).joined(separator: ", "))
        }
    }
}
