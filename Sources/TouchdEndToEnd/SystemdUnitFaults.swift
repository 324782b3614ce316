import Foundation
import Glibc

/// Hostile conditions that only the real unit shows, since they depend on its sandbox (the dynamic user with only
/// the input group, NoNewPrivileges) or its journal: lost input tagged for monitoring, a command that needs root,
/// and a touchscreen touchd may not open.
extension SystemdUnitRun {
    // MARK: - D5: SYN_DROPPED in the journal

    /// touchd stopped (SIGSTOP, well within the 10 s watchdog) while a finger goes down away from every control,
    /// moves for `Scenario.droppedFrames` frames and lifts, all in one burst that overruns the evdev buffer; then
    /// SIGCONT (fault-cases.md D5; the scenario checks what becomes of the contacts). Here: touchd's journal entry
    /// for libinput's SYN_DROPPED line carries the MESSAGE_ID monitoring counts lost input by, and touchd keeps
    /// running.
    func synDroppedJournal() throws(Abort) {
        guard let device else { throw Abort("no touchscreen to write to") }
        let before = try read(["MainPID"])
        guard let mainPID = before.number("MainPID"), let pid = pid_t(exactly: mainPID), pid > 0 else {
            report.record(.synDroppedMessageID, "no MainPID: \(before.summary)")
            return
        }
        let seen = (try? JournalEntry.read(unit: UnitPaths.service, verbose: verbose).get())?.count ?? 0
        kill(pid, SIGSTOP)
        let stopped = poll(until: monotonicNow() + 5_000_000) { ProcessStat(pid: pid)?.state == "T" ? true : nil }
        var frames: [[TouchChange]] = [[.down(slot: 0, x: 450, y: 500)]]
        frames += (0..<Scenario.droppedFrames).map { [TouchChange.move(slot: 0, x: 400 + $0 % 100, y: 500)] }
        frames.append([.up(slot: 0)])
        // Whatever happens, touchd runs again before anything can end the sequence.
        let flood = Result { () throws(DriverError) in try device.writeFrames(frames) }
        kill(pid, SIGCONT)
        guard stopped != nil else { throw Abort("touchd did not stop within 5 s of SIGSTOP") }
        _ = try attempt { () throws(DriverError) in try flood.get() }
        var entry: JournalEntry?
        _ = poll(until: monotonicNow() + Limits.message * 2) { () -> Bool? in
            if case .success(let entries) = JournalEntry.read(unit: UnitPaths.service, verbose: false) {
                entry = entries.dropFirst(seen).first { $0.message.contains("SYN_DROPPED") }
            }
            if entry == nil { sleep(microseconds: 250_000) }
            return entry != nil ? true : nil
        }
        var problems: [String] = []
        if let entry {
            if entry["MESSAGE_ID"] != UnitConfig.synDroppedID {
                problems.append(
                    "the SYN_DROPPED entry's MESSAGE_ID is \(entry["MESSAGE_ID"] ?? "missing"), not "
                        + "\(UnitConfig.synDroppedID): \(entry.summary)")
            } else {
                report.note("journal SYN_DROPPED entry: \(entry.summary)")
            }
        } else {
            problems.append("no journal entry of touchd with SYN_DROPPED within \(seconds(Limits.message * 2))")
        }
        let after = try read(["MainPID", "ActiveState"])
        if after["MainPID"] != before["MainPID"] || after["ActiveState"] != "active" {
            problems.append("touchd did not keep running: before \(before.summary), after \(after.summary)")
        }
        report.record(.synDroppedMessageID, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    // MARK: - A13: a setuid program

    /// A tap on `p` runs `passwd --status root`, a setuid-root program (fault-cases.md A13). NoNewPrivileges=yes
    /// keeps it from gaining root, so it runs as touchd's dynamic user and is refused: touchd logs `command failed`
    /// with the exit status and the MESSAGE_ID of a failed action, keeps running (same MainPID, active), and the
    /// next action works. What the program printed (the unit's stdout stream in the journal) is noted; on Debian 12
    /// it is `passwd: You may not view or modify password information for root.` and the status is 1.
    func setuidCommand() throws(Abort) {
        var problems: [String] = []
        var program = stat()
        if stat(UnitConfig.setuidProgram, &program) != 0 {
            problems.append("stat \(UnitConfig.setuidProgram): \(describe(errno: errno))")
        } else if program.st_uid != 0 || program.st_mode & S_ISUID == 0 {
            problems.append(
                "\(UnitConfig.setuidProgram) is not setuid root (mode \(String(program.st_mode & 0o7777, radix: 8)), "
                    + "uid \(program.st_uid)): the check proves nothing")
        }
        let before = try read(["MainPID"])
        let seen = (try? JournalEntry.read(unit: UnitPaths.service, verbose: verbose).get())?.count ?? 0
        try write([.down(slot: 0, x: 200, y: 700)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        var failed: JournalEntry?
        var printed: [JournalEntry] = []
        // journald files the entry and the program's output asynchronously: look again until the entry is there.
        _ = poll(until: monotonicNow() + Limits.message * 2) { () -> Bool? in
            guard case .success(let entries) = JournalEntry.read(unit: UnitPaths.service, verbose: false) else {
                return nil
            }
            let new = entries.dropFirst(seen)
            failed = new.last { $0["TOUCHD_TARGET"] == "setuid" && $0.message.hasPrefix("command ") }
            printed = new.filter { $0["_TRANSPORT"] == "stdout" && $0.message.contains("passwd") }
            if failed == nil { sleep(microseconds: 250_000) }
            return failed != nil ? true : nil
        }
        if let failed {
            let status = failed["TOUCHD_STATUS"].flatMap { Int($0) }
            if !failed.message.hasPrefix("command failed") {
                problems.append("expected 'command failed', touchd logged: \(failed.message)")
            }
            if failed["MESSAGE_ID"] != UnitConfig.actionFailedID {
                problems.append(
                    "the entry's MESSAGE_ID is \(failed["MESSAGE_ID"] ?? "missing"), not \(UnitConfig.actionFailedID)")
            }
            if status == nil || status == 0 {
                problems.append("expected a non-zero TOUCHD_STATUS, the entry has: \(failed.summary)")
            }
            report.note("setuid command: touchd logged: \(failed.message)")
        } else {
            problems.append(
                "no 'command failed' entry for the setuid target within \(seconds(Limits.message * 2)) of a tap on p")
        }
        report.note(
            "setuid command printed: "
                + (printed.isEmpty ? "nothing with 'passwd'" : printed.map(\.message).joined(separator: " | ")))
        let after = try read(["MainPID", "ActiveState", "SubState"])
        if after["MainPID"] != before["MainPID"] || after["ActiveState"] != "active" {
            problems.append("touchd did not keep running: before \(before.summary), after \(after.summary)")
        }
        if let failure = try tap(at: (200, 200), expecting: "a2", generation: 1) {
            problems.append("the next action: \(failure)")
        }
        report.record(.setuidCommandFails, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    // MARK: - D2: a touchscreen touchd may not open, then SIGHUP

    /// A touchscreen whose node a udev rule leaves root:root 0600 (fault-cases.md D2: the group's permissions not
    /// applied yet). touchd's user cannot open it: libinput's open failure is in the journal and touchd keeps
    /// waiting for a touchscreen. Then the node gets the input group and mode 0660, as udev would have set them, and
    /// `systemctl reload` (SIGHUP, which with no touchscreen in use also rescans the seat) makes touchd pick it up:
    /// its status names the screen and a tap works.
    func unreadableDevice() throws(Abort) {
        // The rescan on SIGHUP is for a touchd with no touchscreen in use: unplug the one there is.
        device?.destroy()
        device = nil
        if let failure = waitForStatus(where: { $0 == "waiting for a touchscreen" }) {
            report.record(.unreadableDeviceWaits, "after unplugging the touchscreen: \(failure)")
            throw Abort("touchd did not go back to waiting for a touchscreen")
        }
        let rule =
            #"SUBSYSTEM=="input", KERNEL=="event*", ATTRS{name}=="\#(UnitPaths.lockedName)", "#
            + #"GROUP="root", MODE="0600""#
        do {
            try FileManager.default.createDirectory(
                atPath: (UnitPaths.lockedRule as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true)
        } catch {
            report.record(.unreadableDeviceWaits, "cannot create the rule's directory: \(error)")
            throw Abort("cannot write a udev rule")
        }
        try attempt { () throws(DriverError) in try writeFile(UnitPaths.lockedRule, rule + "\n") }
        defer {
            unlink(UnitPaths.lockedRule)
            _ = Tool.run([Tool.udevadm, "control", "--reload"], limit: 10_000_000, verbose: verbose)
        }
        let reloadRules = Tool.run([Tool.udevadm, "control", "--reload"], limit: 10_000_000, verbose: verbose)
        guard reloadRules.succeeded else {
            report.record(.unreadableDeviceWaits, "udev did not reload its rules: \(reloadRules.summary)")
            throw Abort("cannot load a udev rule")
        }
        let seen = (try? JournalEntry.read(unit: UnitPaths.service, verbose: verbose).get())?.count ?? 0
        let locked = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: UnitPaths.lockedName, verbose: verbose)
        }
        device = locked
        _ = Tool.run([Tool.udevadm, "settle", "--timeout=10"], limit: 15_000_000, verbose: verbose)
        let node = locked.devnode ?? "?"
        var problems: [String] = []
        var status = stat()
        if stat(node, &status) != 0 {
            problems.append("stat \(node): \(describe(errno: errno))")
        } else if status.st_mode & 0o777 != 0o600 || status.st_gid != 0 {
            problems.append(
                "the udev rule did not lock \(node) (mode \(String(status.st_mode & 0o777, radix: 8)), gid "
                    + "\(status.st_gid)): the check proves nothing")
        }
        // libinput logs the failed open (with errno's text) when udev announces the device.
        var refusal: JournalEntry?
        _ = poll(until: monotonicNow() + Limits.message * 2) { () -> Bool? in
            if case .success(let entries) = JournalEntry.read(unit: UnitPaths.service, verbose: false) {
                refusal = entries.dropFirst(seen).first {
                    $0.message.hasPrefix("libinput:") && $0.message.contains(node) && $0.message.contains("failed")
                }
            }
            if refusal == nil { sleep(microseconds: 250_000) }
            return refusal != nil ? true : nil
        }
        if let refusal {
            report.note("unreadable touchscreen: touchd logged: \(refusal.message)")
        } else {
            problems.append("no libinput line about failing to open \(node) in touchd's journal")
        }
        // The status may name the screen as not usable; it must not say touchd uses it.
        let waiting = try read(["StatusText"])
        if waiting["StatusText"]?.hasPrefix("waiting for a touchscreen") != true {
            problems.append("expected StatusText to start with 'waiting for a touchscreen': \(waiting.summary)")
        }
        report.record(.unreadableDeviceWaits, problems.isEmpty ? nil : problems.joined(separator: "; "))

        problems = []
        guard let input = Self.groupID("input") else { throw Abort("no input group on this system") }
        if chown(node, uid_t.max, input) != 0 || chmod(node, 0o660) != 0 {
            report.record(.reloadRescansDevice, "cannot give \(node) to the input group: \(describe(errno: errno))")
            return
        }
        let reload = Tool.run([Tool.systemctl, "reload", UnitPaths.service], verbose: verbose)
        if !reload.succeeded { problems.append(reload.summary) }
        if let failure = waitForStatus(where: { $0 == "1 touchscreen: \(UnitPaths.lockedName)" }) {
            problems.append("after chmod and systemctl reload: \(failure)")
        } else if let failure = try tap(at: (200, 200), expecting: "a2", generation: 2) {
            problems.append("tap on the screen picked up: \(failure)")
        }
        report.record(.reloadRescansDevice, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// Waits (at most 15 s) until touchd's StatusText satisfies `condition`; the failure text, or nil.
    func waitForStatus(where condition: (String) -> Bool) -> String? {
        var last = ""
        let found = poll(until: monotonicNow() + 15_000_000) { () -> Bool? in
            guard
                case .success(let properties) = UnitProperties.read(
                    UnitPaths.service, ["StatusText", "ActiveState"], verbose: false)
            else { return nil }
            last = properties.summary
            if let text = properties["StatusText"], condition(text) { return true }
            sleep(microseconds: 200_000)
            return nil
        }
        return found == nil ? "the status did not change as expected within 15 s: \(last)" : nil
    }
}
