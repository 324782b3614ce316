import Glibc

/// Stops the sequence when going on cannot tell anything more: touchd died, or a device could not be made or was
/// never reported (every later touch would fail for the same reason).
struct Abort: Error {
    let reason: String
}

/// The end-to-end sequence against a running touchd: hot-plug, gestures, unplug and replug, reloads, latency, stop.
///
/// Runs on one thread. Listener threads fill the inboxes; every step takes a cursor into them before it acts and
/// judges only what arrived after it. Steps 1–10 are here, the hostile-input steps in ScenarioFaults.swift, the
/// latency run and the stop in ScenarioEnd.swift, and the acting and waiting they share in ScenarioSupport.swift.
final class Scenario {
    let options: Options
    let report = Report()
    let scratch: ScratchDirectory
    let notify: NotifyListener
    let target: TargetListener
    let configPath: String
    var daemon: Daemon?
    var device: VirtualTouchscreen?
    var devicesMade = 0
    /// When the last lift was written; see `Limits.repeatGuard`.
    var lastLift: Microseconds = 0

    /// The actions of the first configuration (generation 1) and of the reloaded one (generation 2).
    static let firstFields = Expectation.Fields(actions: ["a": "a", "b": "b"], generation: 1)
    static let secondFields = Expectation.Fields(actions: ["a": "a2", "b": "b"], generation: 2)
    /// What ends a contact's tracking: waiting for any of them (not only the expected one) keeps a wrong ending
    /// from costing a full message timeout.
    static let endings: Set<String> = ["touchUpInside", "touchUpOutside", "touchCancel"]
    /// Variables touchd must not inherit from whatever started the driver: they would change how it logs or talks
    /// to a service manager.
    static let scrubbedEnvironment: Set<String> = [
        "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
        "JOURNAL_STREAM",
    ]

    init(options: Options) throws(DriverError) {
        self.options = options
        scratch = try ScratchDirectory()
        notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
        target = try TargetListener(path: scratch.file("target.sock"), verbose: options.verbose)
        configPath = scratch.file("touchd.toml")
    }

    /// Runs every check and returns the exit status: 0 when all passed, 1 otherwise.
    func run() -> Int32 {
        do throws(Abort) {
            try startDaemon()
            try plugIn(check: .hotplugAfterStart)
            try tapOnce()
            try monitorTaps()
            try dragOutAndBack()
            try liftOutside()
            try twoFingers()
            try longPressInCorner()
            try edgeSwipe()
            try unplugMidTouch()
            try replug()
            try recordAndReplay()
            try singleTouchScreen()
            try protocolAScreen()
            try unusableTouchscreen()
            try otherSeat()
            try synDropped()
            try eventFlood()
            try longCommand()
            try reloadBroken()
            try reloadValid()
            try measureLatency()
            try idleAndWake()
        } catch {
            Console.line("touchd-e2e: the sequence stops here: \(error.reason)")
            report.failUnrecorded(Check.allCases.prefix { $0 != .cleanStop }, because: error.reason)
        }
        device?.destroy()
        device = nil
        stopDaemon()
        checkWellFormed()
        report.failUnrecorded(Check.allCases, because: "the sequence ended early")
        finish()
        return report.failures.isEmpty ? 0 : 1
    }

    /// The checks that need no touchscreen (`--without-touchscreen`, which runs on a build machine without
    /// /dev/uinput): start, the waiting status, both reloads (their notifications only) and the stop.
    func runWithoutTouchscreen() -> Int32 {
        do throws(Abort) {
            try startDaemon()
            try reloadBroken(thenTap: false)
            try reloadValid(thenTap: false)
        } catch {
            Console.line("touchd-e2e: the sequence stops here: \(error.reason)")
        }
        stopDaemon(requireSamples: false)
        finish()
        return report.failures.isEmpty ? 0 : 1
    }

    /// Kills what is left, prints touchd's output when something failed, removes the scratch files, summarises.
    private func finish() {
        device?.destroy()
        daemon?.killAndReap()
        notify.stop()
        target.stop()
        if !report.failures.isEmpty { daemon?.printTail(100) }
        report.note("socket target: \(target.inbox.count) messages on \(target.connections) connection(s)")
        report.printSummary()
        scratch.remove()
    }

    // MARK: - 1, 2: start and hot-plug

    /// Writes the first configuration, starts touchd without any touchscreen and waits for READY=1 and the waiting
    /// status.
    func startDaemon() throws(Abort) {
        try attempt { () throws(DriverError) in
            try writeFile(configPath, TestConfig.valid(socket: target.path, actionForA: "a"))
        }
        guard let touchd = options.touchd else { throw Abort("no --touchd given") }
        let started = monotonicNow()
        let daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: ["run", "--config", configPath, "--log-level", options.logLevel],
                environment: ["NOTIFY_SOCKET": notify.path], removing: Self.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        self.daemon = daemon
        currentDaemon.withLock { $0 = daemon }

        let ready = waitNotify(from: 0, until: started + Limits.readiness) { $0.value("READY") == "1" }
        report.record(
            .readyWithoutTouchscreen,
            ready == nil ? missing("READY=1", after: "starting touchd", within: Limits.readiness) : nil)
        let waiting = waitNotify(from: 0, until: started + Limits.readiness) { $0.value("STATUS") == Self.waiting }
        report.record(
            .waitingStatus,
            waiting == nil
                ? "expected STATUS=\(Self.waiting) within \(seconds(Limits.readiness)) of starting touchd, "
                    + "STATUS values: \(statuses(from: 0))\(exitNote)" : nil)
        try alive()
        if ready == nil { throw Abort("touchd never said READY=1") }
    }

    static let waiting = "waiting for a touchscreen"

    /// Creates a new touchscreen and waits until touchd reports it with `STATUS=1 touchscreen: NAME`.
    /// Records `check` (hot-plug, or replug which also taps).
    @discardableResult
    func plugIn(check: Check) throws(Abort) -> String? {
        let cursor = notify.inbox.count
        devicesMade += 1
        let name = "touchd-e2e touchscreen \(devicesMade)"
        device = try attempt { () throws(DriverError) in try VirtualTouchscreen(name: name, verbose: options.verbose) }
        let expected = "1 touchscreen: \(name)"
        let reported = waitNotify(from: cursor, until: monotonicNow() + Limits.readiness) {
            $0.value("STATUS")?.hasPrefix("1 touchscreen") == true
        }
        var failure: String?
        if let status = reported?.value("STATUS"), status != expected {
            failure = "expected STATUS=\(expected), got STATUS=\(status)"
        } else if reported == nil {
            failure =
                "expected STATUS=\(expected) within \(seconds(Limits.readiness)) of creating the device, "
                + "STATUS values since: \(statuses(from: cursor))\(exitNote)"
        }
        if check == .hotplugAfterStart || reported == nil { report.record(check, failure) }
        try alive()
        if reported == nil { throw Abort("touchd did not report the touchscreen '\(name)'") }
        return failure
    }

    // MARK: - 3-6: gestures

    func tapOnce() throws(Abort) {
        let outcome = try tap(at: (200, 200))
        report.record(
            .tapOnceInOrder,
            outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: Self.firstFields)))
    }

    func dragOutAndBack() throws(Abort) {
        // From inside a (y 100…299) to y = 500, 200 px below its bottom edge (the outset is 70 px), and back.
        let out = stride(from: 175, through: 500, by: 25).map { [TouchChange.move(slot: 0, x: 150, y: $0)] }
        let back = stride(from: 475, through: 150, by: -25).map { [TouchChange.move(slot: 0, x: 150, y: $0)] }
        let outcome = try gesture(
            [[.down(slot: 0, x: 150, y: 150)]] + out + back + [[.up(slot: 0)]], awaiting: ["a"])
        report.record(
            .dragExitEnter,
            outcome.verdict(
                Expectation.sequence(
                    outcome.messages, control: "a", pattern: Expectation.dragOutAndBack, fields: Self.firstFields)))
    }

    func liftOutside() throws(Abort) {
        let out = stride(from: 175, through: 600, by: 25).map { [TouchChange.move(slot: 0, x: 150, y: $0)] }
        let outcome = try gesture([[.down(slot: 0, x: 150, y: 150)]] + out + [[.up(slot: 0)]], awaiting: ["a"])
        report.record(
            .liftOutside,
            outcome.verdict(
                Expectation.sequence(
                    outcome.messages, control: "a", pattern: Expectation.dragOutAndLift, fields: Self.firstFields)))
    }

    func twoFingers() throws(Abort) {
        let frames: [[TouchChange]] = [
            [.down(slot: 0, x: 200, y: 200)],
            [.down(slot: 1, x: 700, y: 200)],
            [.move(slot: 0, x: 210, y: 210), .move(slot: 1, x: 710, y: 210)],
            [.move(slot: 0, x: 220, y: 220), .move(slot: 1, x: 720, y: 220)],
            [.up(slot: 0)],
            [.up(slot: 1)],
        ]
        let outcome = try gesture(frames, awaiting: ["a", "b"])
        report.record(
            .twoFingers,
            outcome.verdict(
                Expectation.twoFingers(
                    outcome.messages, controls: ("a", "b"), pattern: Expectation.moveInsideAndLift,
                    fields: Self.firstFields)))
    }

    // MARK: - gesture recognizers

    /// Three fingers held in the bottom-left corner: the admin long press sends one `recognized` message while they
    /// are still down, and not before the minimum duration (touchd wakes for the recognizer's deadline by itself).
    func longPressInCorner() throws(Abort) {
        respectRepeatWindow()
        let cursor = target.inbox.count
        let down = try write([
            .down(slot: 0, x: 40, y: 900), .down(slot: 1, x: 100, y: 950), .down(slot: 2, x: 160, y: 900),
        ])
        let message = waitTarget(from: cursor, until: monotonicNow() + Limits.message) { $0.control == "admin" }
        try write([.up(slot: 0), .up(slot: 1), .up(slot: 2)])
        quiet(from: cursor)
        var failure = Expectation.recognized(
            target.inbox.since(cursor), gesture: "admin", action: "admin", generation: Self.firstFields.generation)
        let minimum = Microseconds(TestConfig.longPressMilliseconds) * 1000
        if failure == nil, let message, message.arrival < down.beforeReport + minimum {
            failure =
                "the admin message arrived \((message.arrival - down.beforeReport) / 1000) ms after the fingers "
                + "went down, before the \(TestConfig.longPressMilliseconds) ms minimum duration"
        }
        report.record(.longPressCorner, failure.map { $0 + exitNote })
        try alive()
    }

    /// A swipe to the right from the left edge sends one `recognized` message; the same swipe starting 100 px from
    /// the edge sends nothing.
    func edgeSwipe() throws(Abort) {
        func swipe(from x: Int) -> [[TouchChange]] {
            [[.down(slot: 0, x: x, y: 600)]]
                + stride(from: x + 30, through: x + 240, by: 30).map {
                    [TouchChange.move(slot: 0, x: $0, y: 600)]
                } + [[.up(slot: 0)]]
        }
        respectRepeatWindow()
        let cursor = target.inbox.count
        for (index, frame) in swipe(from: 10).enumerated() {
            if index > 0 { sleep(microseconds: 20_000) }
            try write(frame)
        }
        _ = waitTarget(from: cursor, until: monotonicNow() + Limits.message) { $0.control == "back" }
        quiet(from: cursor)
        var failures = [
            Expectation.recognized(
                target.inbox.since(cursor), gesture: "back", action: "back", generation: Self.firstFields.generation)
        ].compactMap { $0 }
        respectRepeatWindow()
        let away = target.inbox.count
        for (index, frame) in swipe(from: 100).enumerated() {
            if index > 0 { sleep(microseconds: 20_000) }
            try write(frame)
        }
        quiet(from: away)
        let extra = target.inbox.since(away)
        if !extra.isEmpty {
            failures.append(
                "a swipe starting 100 px from the left edge sent "
                    + extra.map { "\($0.control ?? "?") \($0.event ?? "?")" }.joined(separator: ", "))
        }
        report.record(.edgeSwipe, failures.isEmpty ? nil : failures.joined(separator: "; ") + exitNote)
        try alive()
    }

    // MARK: - 7, 8: unplug and replug

    func unplugMidTouch() throws(Abort) {
        respectRepeatWindow()
        let cursor = target.inbox.count
        try write([.down(slot: 0, x: 200, y: 200)])
        let down = waitTarget(from: cursor, until: monotonicNow() + Limits.message) {
            $0.control == "a" && $0.event == "touchDown"
        }
        let notifyCursor = notify.inbox.count
        device?.destroy()
        device = nil
        var outcome = collect(from: cursor, awaiting: ["a"])
        if down == nil { outcome.missing.insert("a touchDown before the unplug", at: 0) }
        report.record(
            .unplugCancels,
            outcome.verdict(
                Expectation.sequence(
                    outcome.messages, control: "a", pattern: Expectation.cancelled, fields: Self.firstFields)))
        let waiting = waitNotify(from: notifyCursor, until: monotonicNow() + Limits.readiness) {
            $0.value("STATUS") == Self.waiting
        }
        report.record(
            .unplugStatus,
            waiting == nil
                ? "expected STATUS=\(Self.waiting) within \(seconds(Limits.readiness)) of the unplug, "
                    + "STATUS values since: \(statuses(from: notifyCursor))\(exitNote)" : nil)
        try alive()
    }

    func replug() throws(Abort) {
        let statusFailure = try plugIn(check: .replugWorks)
        let outcome = try tap(at: (200, 200))
        let tapFailure = outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: Self.firstFields))
        let failures = [statusFailure, tapFailure.map { "tap after the replug: \($0)" }].compactMap { $0 }
        report.record(.replugWorks, failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    /// A second, single-touch screen (no ABS_MT axes: libinput's slot is −1) plugged in next to the multitouch one:
    /// touchd reports two touchscreens, a tap on the single-touch one works like any other, and unplugging it leaves
    /// one.
    func singleTouchScreen() throws(Abort) {
        try secondScreen(.singleTouch, name: "touchd-e2e single-touch screen", check: .singleTouchDevice)
    }

    /// The same with a protocol-A screen (fault-cases.md D9): ABS_MT positions without slots, which libinput reads
    /// through mtdev.
    func protocolAScreen() throws(Abort) {
        try secondScreen(.protocolA, name: "touchd-e2e protocol-A screen", check: .protocolADevice)
    }

    private func secondScreen(_ kind: VirtualTouchscreen.Kind, name: String, check: Check) throws(Abort) {
        var failures: [String] = []
        let plugged = notify.inbox.count
        let single = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: name, verbose: options.verbose, kind: kind)
        }
        let seen = waitNotify(from: plugged, until: monotonicNow() + Limits.readiness) {
            $0.value("STATUS")?.hasPrefix("2 touchscreens") == true
        }
        if let status = seen?.value("STATUS") {
            if !status.hasSuffix(name) { failures.append("expected the second touchscreen to be '\(name)': \(status)") }
            let multitouch = device
            device = single
            let outcome: Outcome
            do throws(Abort) {
                outcome = try tap(at: (200, 200))
            } catch {
                device = multitouch
                throw error
            }
            device = multitouch
            if let failure = outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: Self.firstFields))
            {
                failures.append("tap on '\(name)': \(failure)")
            }
        } else {
            failures.append(
                "expected STATUS=2 touchscreens: … within \(seconds(Limits.readiness)) of creating '\(name)', "
                    + "STATUS values since: \(statuses(from: plugged))\(exitNote)")
        }
        let unplugged = notify.inbox.count
        single.destroy()
        let left = waitNotify(from: unplugged, until: monotonicNow() + Limits.readiness) {
            $0.value("STATUS")?.hasPrefix("1 touchscreen") == true
        }
        if left == nil {
            failures.append("after unplugging '\(name)', STATUS values: \(statuses(from: unplugged))")
        }
        report.record(check, failures.isEmpty ? nil : failures.joined(separator: "; "))
        try alive()
    }

    /// A screen that udev tags as a touchscreen but libinput refuses (its X axes have minimum == maximum;
    /// fault-cases.md D12): the status names it as not usable while it is plugged in, and drops it once unplugged;
    /// the touchscreen in use is unaffected.
    func unusableTouchscreen() throws(Abort) {
        var failures: [String] = []
        let plugged = notify.inbox.count
        let name = "touchd-e2e broken axes"
        let broken = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: name, verbose: options.verbose, kind: .brokenAxes)
        }
        let seen = waitNotify(from: plugged, until: monotonicNow() + Limits.readiness) {
            $0.value("STATUS")?.contains("not usable: \(name) (event") == true
        }
        if let status = seen?.value("STATUS") {
            if !status.hasPrefix("1 touchscreen: ") { failures.append("the touchscreen in use should stay: \(status)") }
        } else {
            failures.append(
                "expected a STATUS with 'not usable: \(name)' within \(seconds(Limits.readiness)) of creating it, "
                    + "STATUS values since: \(statuses(from: plugged))\(exitNote)")
        }
        let unplugged = notify.inbox.count
        broken.destroy()
        let left = waitNotify(from: unplugged, until: monotonicNow() + Limits.readiness) {
            guard let status = $0.value("STATUS") else { return false }
            return status.hasPrefix("1 touchscreen") && !status.contains("not usable")
        }
        if left == nil {
            failures.append("after unplugging '\(name)', STATUS values: \(statuses(from: unplugged))")
        }
        report.record(.unusableTouchscreen, failures.isEmpty ? nil : failures.joined(separator: "; "))
        try alive()
    }

    // MARK: - 9, 10: reloads

    /// Refuses a broken file and keeps the old configuration; `thenTap` proves it with a tap.
    func reloadBroken(thenTap: Bool = true) throws(Abort) {
        try attempt { () throws(DriverError) in try writeFile(configPath, TestConfig.broken) }
        let reload = reload()
        var failure = reload.problem
        if failure == nil, let reloading = reload.reloadingIndex {
            let failed = waitNotify(from: reloading, until: monotonicNow() + Limits.message) {
                $0.value("STATUS")?.hasPrefix("reload failed") == true
            }
            if let status = failed?.value("STATUS") {
                if !status.hasPrefix("reload failed: ") || status.count <= "reload failed: ".count {
                    failure = "expected STATUS=reload failed: <reason>, got STATUS=\(status) (no reason)"
                }
            } else {
                failure =
                    "expected STATUS=reload failed: <reason> after RELOADING=1, "
                    + "STATUS values since SIGHUP: \(statuses(from: reload.cursor))\(exitNote)"
            }
        }
        report.record(.reloadBrokenKept, failure)
        try alive()
        guard thenTap else { return }
        let outcome = try tap(at: (200, 200))
        var strict = Self.firstFields
        strict.generationRequired = true
        report.record(
            .oldConfigStillWorks, outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: strict)))
    }

    /// Loads a valid new file as generation 2; `thenTap` proves it with a tap.
    func reloadValid(thenTap: Bool = true) throws(Abort) {
        try attempt { () throws(DriverError) in
            try writeFile(configPath, TestConfig.valid(socket: target.path, actionForA: "a2"))
        }
        let reload = reload()
        var failure = reload.problem
        if failure == nil {
            // A failure status could trail READY=1; give it the quiet period to show up.
            sleep(microseconds: Limits.quiet)
            let failed = notify.inbox.since(reload.cursor).compactMap { $0.value("STATUS") }.filter {
                $0.hasPrefix("reload failed")
            }
            if let status = failed.first { failure = "the valid file was refused: STATUS=\(status)" }
        }
        report.record(.reloadOK, failure)
        try alive()
        guard thenTap else { return }
        let outcome = try tap(at: (200, 200))
        var strict = Self.secondFields
        strict.generationRequired = true
        report.record(
            .newConfigApplies, outcome.verdict(Expectation.tap(outcome.messages, control: "a", fields: strict)))
    }

    struct Reload {
        /// The notify cursor taken before SIGHUP.
        let cursor: Int
        /// Where RELOADING=1 arrived, if it did.
        let reloadingIndex: Int?
        /// What is wrong with RELOADING=1 … READY=1, nil when nothing.
        let problem: String?
    }

    /// Sends SIGHUP and waits for RELOADING=1 with a plausible MONOTONIC_USEC, then for READY=1 after it.
    func reload() -> Reload {
        let cursor = notify.inbox.count
        let sent = monotonicNow()
        daemon?.send(SIGHUP)
        let deadline = sent + Limits.readiness
        guard let reloading = waitNotifyIndexed(from: cursor, until: deadline, where: { $0.value("RELOADING") == "1" })
        else {
            return Reload(
                cursor: cursor, reloadingIndex: nil,
                problem: missing("RELOADING=1", after: "SIGHUP", within: Limits.readiness)
                    + "; datagrams since SIGHUP: \(datagrams(from: cursor))")
        }
        let message = reloading.element
        var problem: String?
        if let text = message.value("MONOTONIC_USEC") {
            if let stamp = Microseconds(text) {
                if stamp < sent || stamp > message.arrival {
                    problem =
                        "MONOTONIC_USEC=\(stamp) is not between SIGHUP (\(sent)) and the datagram's arrival "
                        + "(\(message.arrival)): not CLOCK_MONOTONIC microseconds of the reload's start?"
                }
            } else {
                problem = "MONOTONIC_USEC=\(text) is not an unsigned integer"
            }
        } else {
            problem = "RELOADING=1 came without MONOTONIC_USEC in the same datagram: \(message.summary)"
        }
        let ready = waitNotify(from: reloading.index + 1, until: deadline) { $0.value("READY") == "1" }
        if ready == nil, problem == nil {
            problem =
                "RELOADING=1 arrived but no READY=1 after it within \(seconds(Limits.readiness)) of SIGHUP; "
                + "datagrams since SIGHUP: \(datagrams(from: cursor))\(exitNote)"
        }
        return Reload(cursor: cursor, reloadingIndex: reloading.index, problem: problem)
    }
}

extension Abort {
    init(_ reason: String) { self.reason = reason }
}

/// `15 s`, `0.5 s`.
func seconds(_ microseconds: Microseconds) -> String {
    microseconds % 1_000_000 == 0 ? "\(microseconds / 1_000_000) s" : "\(Double(microseconds) / 1_000_000) s"
}
