import CLibinput
import Foundation
import Glibc

/// Hostile input that touchd handles but that only real kernel input can show (fault-cases.md, part 7 of the
/// hostile-input issue). Each step runs against the multitouch screen in use and ends with it still working.
extension Scenario {
    // MARK: - P3: another seat

    /// The name of the screen udev puts on seat1.
    static let otherSeatName = "touchd-e2e seat1 screen"
    /// The udev rule that puts it there: in the guest's own /run, removed again after the step.
    static let otherSeatRule = "/run/udev/rules.d/99-touchd-e2e-seat1.rules"

    /// A touchscreen that udev assigns to seat1 (`ENV{ID_SEAT}="seat1"`, fault-cases.md P3): touchd reads seat0
    /// only, so it does not use the screen, does not list it as unusable, logs nothing about it, and a tap on it
    /// sends nothing, while the seat0 screen keeps working. The rule is checked to have applied (the event node's
    /// ID_SEAT is seat1), so the check cannot pass because nothing happened.
    func otherSeat() throws(Abort) {
        guard let daemon, let current = device else { throw Abort("no touchscreen in use") }
        let rule =
            #"SUBSYSTEM=="input", KERNEL=="event*", ATTRS{name}=="\#(Self.otherSeatName)", ENV{ID_SEAT}="seat1""#
        let directory = (Self.otherSeatRule as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            report.record(.otherSeatIgnored, "cannot create \(directory): \(error)")
            return
        }
        try attempt { () throws(DriverError) in try writeFile(Self.otherSeatRule, rule + "\n") }
        defer {
            unlink(Self.otherSeatRule)
            _ = Tool.run([Tool.udevadm, "control", "--reload"], limit: 10_000_000, verbose: options.verbose)
        }
        let reload = Tool.run([Tool.udevadm, "control", "--reload"], limit: 10_000_000, verbose: options.verbose)
        guard reload.succeeded else {
            report.record(.otherSeatIgnored, "udev did not reload its rules: \(reload.summary)")
            return
        }
        let notifyCursor = notify.inbox.count
        let outputCursor = daemon.output.count
        respectRepeatWindow()
        let targetCursor = target.inbox.count
        let other = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: Self.otherSeatName, verbose: options.verbose)
        }
        defer { other.destroy() }
        var failures: [String] = []
        // udev handles the new node (and runs the rule) before libinput and touchd hear of it.
        _ = Tool.run([Tool.udevadm, "settle", "--timeout=10"], limit: 15_000_000, verbose: options.verbose)
        let node = other.devnode ?? "?"
        let sysname = (node as NSString).lastPathComponent
        let properties = Tool.run(
            [Tool.udevadm, "info", "--query=property", "--name=\(node)"], limit: 10_000_000, verbose: options.verbose)
        if !properties.output.contains("ID_SEAT=seat1") || !properties.output.contains("ID_INPUT_TOUCHSCREEN=1") {
            failures.append(
                "the udev rule did not make \(node) a seat1 touchscreen: \(properties.summary); nothing to check")
        }
        // A tap on it: nothing may arrive, since touchd does not read it.
        _ = try attempt { () throws(DriverError) in try other.write([.down(slot: 0, x: 200, y: 200)]) }
        sleep(microseconds: 50_000)
        lastLift = try attempt { () throws(DriverError) in try other.write([.up(slot: 0)]) }.afterReport
        // Long enough for touchd to have reacted to the device and the tap, had it seen them.
        sleep(microseconds: 1_000_000)
        quiet(from: targetCursor)
        let sent = target.inbox.since(targetCursor)
        if !sent.isEmpty {
            failures.append("a tap on the seat1 screen sent \(Expectation.describe(sent))")
        }
        let expected = "1 touchscreen: \(current.name)"
        let changed = notify.inbox.since(notifyCursor).compactMap { $0.value("STATUS") }.filter { $0 != expected }
        if !changed.isEmpty {
            failures.append("the status changed for the seat1 screen: [\(changed.joined(separator: " | "))]")
        }
        let mentions = daemon.output.since(outputCursor).filter {
            $0.contains(Self.otherSeatName) || $0.contains(node) || $0.contains("\(sysname) ")
                || $0.contains("=\(sysname)")
        }
        if !mentions.isEmpty {
            failures.append("touchd's log mentions the seat1 screen: \(mentions.prefix(3).joined(separator: " | "))")
        }
        try alive()
        let outcome = try tap(at: (200, 200))
        if let failure = outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: Self.firstFields)) {
            failures.append("tap on the seat0 screen next to it: \(failure)")
        }
        report.record(.otherSeatIgnored, failures.isEmpty ? nil : failures.joined(separator: "; "))
        try alive()
    }

    // MARK: - D5: SYN_DROPPED

    /// Motion frames written while touchd is stopped: far more events than the evdev client buffer holds (a few
    /// hundred events for this device), so the kernel drops events and queues SYN_DROPPED.
    static let droppedFrames = 3000

    /// A finger down on `a`, touchd stopped (SIGSTOP), then in one burst: a whole contact on `b` (down and up),
    /// `droppedFrames` motion frames that drag the finger far below `a` (beyond its drag outset), and its lift there;
    /// then SIGCONT (fault-cases.md D5). The kernel overwrites most of the burst and queues SYN_DROPPED; libevdev
    /// throws away what is left of it and libinput resyncs from the device's current state, in which the finger is
    /// up, so the lift touchd gets is made by the resync, at the last position it knew: inside `a`. Checked: the
    /// contact on `a` ends exactly once, with touchCancel (before the fix it ended with touchUpInside: a tap made up
    /// from a drag that ended outside); nothing at all arrives for the contact on `b`, whose events were all lost;
    /// touchd logs libinput's SYN_DROPPED line; and a normal tap afterwards works.
    func synDropped() throws(Abort) {
        guard let daemon, let device else { throw Abort("no touchscreen in use") }
        respectRepeatWindow()
        let cursor = target.inbox.count
        let outputCursor = daemon.output.count
        try write([.down(slot: 0, x: 200, y: 200)])
        var failures: [String] = []
        let down = waitTarget(from: cursor, until: monotonicNow() + Limits.message) {
            $0.control == "a" && $0.event == "touchDown"
        }
        if down == nil { failures.append("no touchDown from a before touchd was stopped") }
        try alive()
        daemon.send(SIGSTOP)
        let stopped = poll(until: monotonicNow() + 5_000_000) {
            ProcessStat(pid: daemon.pid)?.state == "T" ? true : nil
        }
        var frames: [[TouchChange]] = [[.down(slot: 1, x: 700, y: 200)], [.up(slot: 1)]]
        frames += (0..<Self.droppedFrames).map { [TouchChange.move(slot: 0, x: 200, y: 400 + $0 % 200)] }
        frames.append([.up(slot: 0)])
        // Whatever happens, touchd runs again before anything can end the sequence.
        let flood = Result { () throws(DriverError) in try device.writeFrames(frames) }
        daemon.send(SIGCONT)
        guard stopped != nil else { throw Abort("touchd did not stop within 5 s of SIGSTOP") }
        let timing = try attempt { () throws(DriverError) in try flood.get() }
        lastLift = timing.afterReport
        let outcome = collect(from: cursor, awaiting: ["a"])
        let endings = outcome.messages.filter { $0.control == "a" && Expectation.endings.contains($0.event ?? "") }
        if let failure = outcome.verdict(
            Expectation.endsOnce(
                outcome.messages, control: "a", allowedEndings: Self.synDroppedEndings, fields: Self.firstFields))
        {
            failures.append(failure)
        }
        let others = outcome.messages.filter { $0.control != "a" }
        if !others.isEmpty {
            failures.append(
                "messages for contacts whose events were lost (a phantom from the resync): "
                    + Expectation.describe(others))
        }
        try alive()
        let after = try tap(at: (200, 200))
        if let failure = after.verdict(Expectation.tap(after.messages, control: "a", fields: Self.firstFields)) {
            failures.append("tap after the resync: \(failure)")
        }
        report.record(.synDroppedEndsOnce, failures.isEmpty ? nil : failures.joined(separator: "; "))
        report.note(
            "SYN_DROPPED: \(frames.count) frames written in one burst while touchd was stopped; the contact on a "
                + "ended with \(endings.map { $0.event ?? "?" }.joined(separator: ", ")) "
                + "(\(Expectation.describe(outcome.messages)))")
        // The log line comes through the output reader thread: give it a moment.
        let logged = poll(until: monotonicNow() + 2_000_000) {
            daemon.output.first(from: outputCursor) { $0.contains("SYN_DROPPED") }?.element
        }
        report.record(
            .synDroppedLogged,
            logged == nil
                ? "touchd logged no line with SYN_DROPPED after the burst (\(daemon.output.count - outputCursor) "
                    + "lines since)" : nil)
        if let logged { report.note("touchd logged: \(logged)") }
        try alive()
    }

    /// How touchd must end a contact that was down across SYN_DROPPED: its path was lost, so it is cancelled
    /// (fault-cases.md D5), once.
    static let synDroppedEndings: Set<String> = ["touchCancel"]

    // MARK: - D17: event flood

    /// Motion frames of the flood, and how many go into one write: 20 frames every 2 ms is 10 kHz.
    static let floodFrames = 20_000
    static let floodFramesPerWrite = 20
    static let floodWriteInterval: Microseconds = 2000
    /// touchd's CPU time for the whole flood may not exceed this (generous: TCG is slow, and the point is a bound).
    static let floodCPULimit: Microseconds = 10_000_000

    /// A finger on `b` at rest and one moving back and forth inside `a` at 10 kHz for `floodFrames` frames, then
    /// both lift (fault-cases.md D17): each contact ends exactly once, a tap right after is handled, and touchd's
    /// CPU time for the flood (utime + stime from /proc/PID/stat) stays under `floodCPULimit`. Whether the kernel
    /// dropped events on the way (touchd reading slower than 10 kHz) is noted, not judged: either way the contacts
    /// must end once.
    func eventFlood() throws(Abort) {
        guard let daemon, let device else { throw Abort("no touchscreen in use") }
        respectRepeatWindow()
        let cursor = target.inbox.count
        let outputCursor = daemon.output.count
        try write([.down(slot: 0, x: 110, y: 200), .down(slot: 1, x: 700, y: 200)])
        // A triangle wave across a: x 110 … 290 … 110, one pixel per frame; encoded ahead, so that the driver's
        // own work does not set the pace.
        var chunks: [[input_event]] = []
        var index = 0
        while index < Self.floodFrames {
            let frames = (index..<min(index + Self.floodFramesPerWrite, Self.floodFrames)).map { frame in
                let phase = frame % 360
                return [TouchChange.move(slot: 0, x: 110 + (phase < 180 ? phase : 360 - phase), y: 200)]
            }
            chunks.append(try attempt { () throws(DriverError) in try device.encode(frames) })
            index += Self.floodFramesPerWrite
        }
        let before = ProcessStat(pid: daemon.pid)
        let started = monotonicNow()
        for (number, chunk) in chunks.enumerated() {
            sleep(until: started + Microseconds(number) * Self.floodWriteInterval)
            _ = try attempt { () throws(DriverError) in try device.write(events: chunk) }
        }
        let written = monotonicNow()
        try write([.up(slot: 0), .up(slot: 1)])
        let outcome = collect(from: cursor, awaiting: ["a", "b"])
        let after = ProcessStat(pid: daemon.pid)
        var failures: [String] = []
        for control in ["a", "b"] {
            if let failure = outcome.verdict(
                Expectation.endsOnce(outcome.messages, control: control, fields: Self.firstFields))
            {
                failures.append(failure)
            }
        }
        let others = outcome.messages.filter { $0.control != "a" && $0.control != "b" }
        if !others.isEmpty { failures.append("messages from other controls: \(Expectation.describe(others))") }
        try alive()
        // Right after: a plain tap, with its latency.
        respectRepeatWindow()
        let tapCursor = target.inbox.count
        try write([.down(slot: 0, x: 200, y: 200)])
        sleep(microseconds: 50_000)
        let lift = try write([.up(slot: 0)])
        let tap = collect(from: tapCursor, awaiting: ["a"])
        if let failure = tap.verdict(Expectation.tap(tap.messages, control: "a", fields: Self.firstFields)) {
            failures.append("tap after the flood: \(failure)")
        }
        report.record(.floodEndsOnce, failures.isEmpty ? nil : failures.joined(separator: "; "))

        let duration = written - started
        let drags = outcome.messages.count { $0.event?.hasPrefix("touchDrag") == true }
        let dropped = daemon.output.since(outputCursor).count { $0.contains("SYN_DROPPED") }
        let tapLatency = tap.messages.last { $0.event == "touchUpInside" }.map {
            "\((Int64($0.arrival) - Int64(lift.beforeReport)) / 1000) ms"
        }
        if let before, let after {
            let cpu = after.cpuTime - before.cpuTime
            report.record(
                .floodCPUBounded,
                cpu < Self.floodCPULimit
                    ? nil
                    : "touchd used \(seconds(cpu / 1000 * 1000)) of CPU for the flood, over \(seconds(Self.floodCPULimit))"
            )
            report.note(
                "flood: \(Self.floodFrames) motion frames in \(duration / 1000) ms "
                    + "(\(UInt64(Self.floodFrames) * 1_000_000 / max(duration, 1)) frames/s); touchd CPU "
                    + "\(cpu / 1000) ms (user \((after.userTime - before.userTime) / 1000) ms, system "
                    + "\((after.systemTime - before.systemTime) / 1000) ms); \(drags) drag messages reached the target; "
                    + "SYN_DROPPED lines: \(dropped); tap after: touchUpInside \(tapLatency ?? "missing") after the lift"
            )
        } else {
            report.record(.floodCPUBounded, "cannot read /proc/\(daemon.pid)/stat\(exitNote)")
        }
        try alive()
    }

    // MARK: - D6: a long command

    /// Taps on `a` while the `sleeper` command runs.
    static let tapsDuringCommand = 4
    /// The generous bound for each of those taps, from the lift's SYN_REPORT to the touchUpInside's arrival.
    static let commandLagLimit: Microseconds = 1_000_000

    /// A tap on `s` starts the `sleeper` command (it sleeps `TestConfig.sleeperSeconds`); then `tapsDuringCommand`
    /// taps on `a` (fault-cases.md D6): each is exact and its touchUpInside arrives within `commandLagLimit` of the
    /// lift, and the command is still running after the last one, so the taps were handled while it ran (the loop
    /// never waits for a child).
    func longCommand() throws(Abort) {
        let pidFile = TestConfig.sleeperPIDFile(besides: target.path)
        unlink(pidFile)
        respectRepeatWindow()
        try write([.down(slot: 0, x: 500, y: 800)])
        sleep(microseconds: 50_000)
        let lift = try write([.up(slot: 0)])
        let sleeper = poll(until: monotonicNow() + Limits.message) { () -> pid_t? in
            guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8) else { return nil }
            return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard let sleeper else {
            report.record(
                .longCommandNoLag,
                "the sleeper command wrote no \(pidFile) within \(seconds(Limits.message))\(exitNote)")
            try alive()
            return
        }
        let spawned = monotonicNow() - lift.beforeReport
        var failures: [String] = []
        var latencies: [Int64] = []
        let cursor = target.inbox.count
        for _ in 0..<Self.tapsDuringCommand {
            respectRepeatWindow()
            let tapCursor = target.inbox.count
            try write([.down(slot: 0, x: 200, y: 200)])
            sleep(microseconds: 50_000)
            let up = try write([.up(slot: 0)])
            let ended = waitTarget(from: tapCursor, until: monotonicNow() + Limits.message) {
                $0.control == "a" && $0.event == "touchUpInside"
            }
            guard let ended else {
                failures.append("no touchUpInside within \(seconds(Limits.message)) of a tap's lift")
                break
            }
            latencies.append(Int64(ended.arrival) - Int64(up.beforeReport))
        }
        let state = ProcessStat(pid: sleeper)?.state
        let running = state != nil && state != "Z" && state != "X"
        quiet(from: cursor)
        let expected = (0..<Self.tapsDuringCommand).flatMap { _ in [("a", "touchDown"), ("a", "touchUpInside")] }
        if let failure = Expectation.exactly(target.inbox.since(cursor), expected, fields: Self.firstFields) {
            failures.append(failure)
        }
        if let slowest = latencies.max(), slowest > Int64(Self.commandLagLimit) {
            failures.append(
                "a tap's touchUpInside arrived \(slowest / 1000) ms after its lift while the command ran "
                    + "(limit \(seconds(Self.commandLagLimit)))")
        }
        if !running {
            failures.append(
                "the sleeper (pid \(sleeper)) had already ended after the taps (state \(state.map(String.init) ?? "gone")): "
                    + "they do not show that the loop runs while a command does")
        }
        report.record(.longCommandNoLag, failures.isEmpty ? nil : failures.joined(separator: "; ") + exitNote)
        if let figures = Percentiles(latencies) {
            report.note(
                "long command: sleeper started \(spawned / 1000) ms after its tap; taps while it ran, lift → "
                    + "touchUpInside: \(figures)")
        }
        try alive()
    }
}
