import Glibc

/// Stops the sequence when going on cannot tell anything more: touchd died, or a device could not be made or was
/// never reported (every later touch would fail for the same reason).
struct Abort: Error {
    let reason: String
}

/// The end-to-end sequence against a running touchd: hot-plug, gestures, unplug and replug, reloads, latency, stop.
///
/// Runs on one thread. Listener threads fill the inboxes; every step takes a cursor into them before it acts and
/// judges only what arrived after it.
final class Scenario {
    let options: Options
    let report = Report()
    private let scratch: ScratchDirectory
    private let notify: NotifyListener
    private let target: TargetListener
    private let configPath: String
    private var daemon: Daemon?
    private var device: VirtualTouchscreen?
    private var devicesMade = 0
    /// When the last lift was written; see `Limits.repeatGuard`.
    private var lastLift: Microseconds = 0

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
            try dragOutAndBack()
            try liftOutside()
            try twoFingers()
            try unplugMidTouch()
            try replug()
            try reloadBroken()
            try reloadValid()
            try measureLatency()
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
                executable: touchd, arguments: ["run", "--config", configPath, "--log-level", "debug"],
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

    // MARK: - 11: latency

    /// N taps alternating between a and b, 50 ms apart. Each control alternates between two points 141 px apart,
    /// more than the 45 px repeat slop, so no tap is a repeat of the previous tap on the same control (that one
    /// lifted only 100 ms before, within the 350 ms window).
    func measureLatency() throws(Abort) {
        let points: [(control: String, x: Int, y: Int)] = [
            ("a", 150, 150), ("b", 650, 150), ("a", 250, 250), ("b", 750, 250),
        ]
        let fields = Self.secondFields
        respectRepeatWindow()
        let cursor = target.inbox.count
        var writes: [LatencyWrite] = []
        let start = monotonicNow() + 10_000
        for index in 0..<options.taps {
            let point = points[index % points.count]
            let action = fields.actions[point.control]!
            let due = start + Microseconds(index) * 50_000
            sleep(until: due)
            let down = try write([.down(slot: 0, x: point.x, y: point.y)])
            writes.append(
                LatencyWrite(
                    control: point.control, action: action, event: "touchDown", x: point.x, y: point.y, timing: down))
            sleep(until: due + 20_000)
            let up = try write([.up(slot: 0)])
            writes.append(
                LatencyWrite(
                    control: point.control, action: action, event: "touchUpInside", x: point.x, y: point.y, timing: up))
        }
        // Wait until every message is in, or nothing new came for a message timeout (at most 30 s in all).
        let ceiling = monotonicNow() + 30_000_000
        var lastProgress = monotonicNow()
        var seen = 0
        while true {
            let count = target.inbox.since(cursor).count { $0.event == "touchDown" || $0.event == "touchUpInside" }
            let now = monotonicNow()
            if count >= writes.count || now >= ceiling || now >= lastProgress + Limits.message { break }
            if count > seen {
                seen = count
                lastProgress = now
            }
            if daemon?.exitStatus != nil { break }
            sleep(microseconds: 1000)
        }
        quiet(from: cursor)
        let match = LatencyMatch(writes: writes, messages: target.inbox.since(cursor), generation: fields.generation)

        let expected = "\(writes.count) messages (\(options.taps) touchDown + \(options.taps) touchUpInside)"
        report.record(
            .latencyMeasured,
            match.missing.isEmpty
                ? nil
                : "expected \(expected), matched \(match.pairs.count); first missing: "
                    + match.missing.prefix(5).map { "\($0.control) \($0.event) at (\($0.x),\($0.y))" }
                    .joined(separator: ", ") + exitNote)
        let incomplete = match.missing.isEmpty ? "" : " (incomplete: \(match.pairs.count) of \(writes.count))"
        if let figures = Percentiles(match.pairs.map(\.endToEnd)) {
            report.note("end-to-end latency (uinput write → socket): \(figures)\(incomplete)")
        }
        if let figures = Percentiles(match.pairs.compactMap(\.kernelToSocket)) {
            report.note("kernel event → socket (arrival − time_us): \(figures)\(incomplete)")
        }
        var extra: [String] = []
        if !match.unexpected.isEmpty {
            extra.append(
                "\(match.unexpected.count) unexpected message(s): \(Expectation.describe(Array(match.unexpected.prefix(5))))"
            )
        }
        if !match.mismatches.isEmpty {
            extra.append(
                "\(match.mismatches.count) mismatch(es): \(match.mismatches.prefix(5).joined(separator: "; "))")
        }
        // With nothing matched there is nothing to call exact: no unexpected message is no evidence.
        if match.pairs.isEmpty { extra.insert("no latency message arrived to judge", at: 0) }
        report.record(.latencyTapsExact, extra.isEmpty ? nil : extra.joined(separator: "; "))
        let timeProblems = match.timeProblems
        report.record(
            .eventTimeFromKernel,
            match.pairs.isEmpty
                ? "no matched message to compare time_us with"
                : timeProblems.isEmpty
                    ? nil
                    : "\(timeProblems.count) of \(match.pairs.count) messages: "
                        + timeProblems.prefix(3).joined(separator: "; "))
        try alive()
    }

    // MARK: - 12: stop

    /// Sends SIGTERM and expects STOPPING=1 and exit status 0, then looks for touchd's processing-latency line.
    /// Without touches (`requireSamples` false) the line only has to be there.
    func stopDaemon(requireSamples: Bool = true) {
        guard let daemon else {
            report.record(.cleanStop, "touchd was never started")
            report.record(.processingLatencyReported, "touchd was never started")
            return
        }
        if let status = daemon.exitStatus {
            report.record(.cleanStop, "touchd had already exited before SIGTERM (\(status))")
        } else {
            let cursor = notify.inbox.count
            let sent = monotonicNow()
            daemon.send(SIGTERM)
            let stopping = waitNotify(from: cursor, until: sent + Limits.stop) { $0.value("STOPPING") == "1" }
            let status = daemon.waitForExit(until: sent + Limits.stop)
            var failures: [String] = []
            if stopping == nil {
                failures.append(
                    "no STOPPING=1 within \(seconds(Limits.stop)) of SIGTERM; datagrams since: \(datagrams(from: cursor))"
                )
            }
            if let status {
                if status != .exited(0) { failures.append("expected exit status 0 after SIGTERM, got \(status)") }
            } else {
                failures.append("touchd still ran \(seconds(Limits.stop)) after SIGTERM (killed it)")
                daemon.killAndReap()
            }
            report.record(.cleanStop, failures.isEmpty ? nil : failures.joined(separator: "; "))
        }
        daemon.waitForOutputEnd(until: monotonicNow() + 2_000_000)
        let lines = daemon.output.all
        guard let line = lines.reversed().lazy.compactMap(ProcessingLatencyLine.init).first else {
            report.record(
                .processingLatencyReported,
                "no line containing '\(ProcessingLatencyLine.marker)' in touchd's output (\(lines.count) lines)")
            return
        }
        report.record(.processingLatencyReported, requireSamples ? line.problem : nil)
        if line.problem == nil {
            report.note(
                "touchd processing latency (its own figures): samples=\(line.samples!) p50=\(line.p50!)µs "
                    + "p99=\(line.p99!)µs max=\(line.maximum!)µs")
        }
        report.note("touchd said: \(line.line)")
    }

    // MARK: - everything received

    func checkWellFormed() {
        let messages = target.inbox.all
        let malformed = messages.filter { $0.problem != nil }
        let badNotify = notify.inbox.all.flatMap(\.malformedLines)
        var failures: [String] = []
        if messages.isEmpty { failures.append("no message arrived on the socket target at all") }
        if !malformed.isEmpty {
            failures.append(
                "\(malformed.count) of \(messages.count) target lines malformed, first: "
                    + malformed.prefix(3).map(\.summary).joined(separator: "; "))
        }
        if !badNotify.isEmpty {
            failures.append("notify lines without '=': \(badNotify.prefix(3).joined(separator: "; "))")
        }
        report.record(.messagesWellFormed, failures.isEmpty ? nil : failures.joined(separator: "; "))
    }

    // MARK: - gestures, waiting

    /// What one gesture produced: every message after its first frame, and the endings that never came.
    struct Outcome {
        var messages: [TargetMessage]
        var missing: [String]
        var exitNote: String

        /// The expectation's failure, with what was waited for in vain.
        func verdict(_ failure: String?) -> String? {
            let waited =
                missing.isEmpty ? "" : " (waited \(seconds(Limits.message)) for \(missing.joined(separator: ", ")))"
            if let failure { return failure + waited + exitNote }
            return missing.isEmpty ? nil : "incomplete" + waited + exitNote
        }
    }

    /// A one-finger tap: down, 50 ms, up.
    func tap(at point: (x: Int, y: Int)) throws(Abort) -> Outcome {
        try gesture([[.down(slot: 0, x: point.x, y: point.y)], [.up(slot: 0)]], gap: 50_000, awaiting: ["a"])
    }

    /// Writes `frames` `gap` apart, waits for an ending (up or cancel) from each of `awaiting`, then for quiet.
    func gesture(_ frames: [[TouchChange]], gap: Microseconds = 20_000, awaiting: [String]) throws(Abort) -> Outcome {
        respectRepeatWindow()
        let cursor = target.inbox.count
        for (index, frame) in frames.enumerated() {
            if index > 0 { sleep(microseconds: gap) }
            try write(frame)
        }
        return collect(from: cursor, awaiting: awaiting)
    }

    /// Waits for an ending from each control in `awaiting`, then for the quiet period, and returns everything that
    /// arrived after `cursor`.
    func collect(from cursor: Int, awaiting: [String]) -> Outcome {
        let deadline = monotonicNow() + Limits.message
        var missing: [String] = []
        for control in awaiting {
            let ended = waitTarget(from: cursor, until: deadline) {
                $0.control == control && Self.endings.contains($0.event ?? "")
            }
            if ended == nil { missing.append("an ending (touchUpInside/touchUpOutside/touchCancel) from \(control)") }
        }
        quiet(from: cursor)
        return Outcome(messages: target.inbox.since(cursor), missing: missing, exitNote: exitNote)
    }

    /// Waits until nothing has arrived for `Limits.quiet`, so "nothing else arrived" is a fact, not a guess.
    func quiet(from cursor: Int) {
        let start = monotonicNow()
        while true {
            let last = max(target.inbox.since(cursor).last?.arrival ?? 0, start)
            let end = min(last + Limits.quiet, start + Limits.quietCeiling)
            if monotonicNow() >= end { return }
            sleep(until: end)
        }
    }

    /// Writes a frame, remembering lifts for the repeat guard. A failed write ends the sequence.
    @discardableResult
    func write(_ frame: [TouchChange]) throws(Abort) -> FrameTiming {
        guard let device else { throw Abort("no touchscreen to write to") }
        let timing = try attempt { () throws(DriverError) in try device.write(frame) }
        if frame.contains(where: { if case .up = $0 { true } else { false } }) { lastLift = timing.afterReport }
        return timing
    }

    /// Keeps touch-downs outside the touchDownRepeat window of the previous lift.
    func respectRepeatWindow() {
        sleep(until: lastLift + Limits.repeatGuard)
    }

    func waitNotify(
        from cursor: Int, until deadline: Microseconds, where condition: (NotifyMessage) -> Bool
    ) -> NotifyMessage? {
        waitNotifyIndexed(from: cursor, until: deadline, where: condition)?.element
    }

    func waitNotifyIndexed(
        from cursor: Int, until deadline: Microseconds, where condition: (NotifyMessage) -> Bool
    ) -> (index: Int, element: NotifyMessage)? {
        wait(notify.inbox, from: cursor, until: deadline, where: condition)
    }

    func waitTarget(
        from cursor: Int, until deadline: Microseconds, where condition: (TargetMessage) -> Bool
    ) -> TargetMessage? {
        wait(target.inbox, from: cursor, until: deadline, where: condition)?.element
    }

    /// Waits for a matching element until `deadline`, or until shortly after touchd exited (what it sent before
    /// exiting may still be on its way through the reader threads).
    private func wait<Element>(
        _ inbox: Inbox<Element>, from cursor: Int, until deadline: Microseconds, where condition: (Element) -> Bool
    ) -> (index: Int, element: Element)? {
        var cutoff = deadline
        while true {
            if let found = inbox.first(from: cursor, where: condition) { return found }
            let now = monotonicNow()
            if now >= cutoff { return nil }
            if cutoff == deadline, daemon?.exitStatus != nil { cutoff = min(deadline, now + 300_000) }
            sleep(microseconds: 1000)
        }
    }

    /// Ends the sequence when touchd is gone.
    func alive() throws(Abort) {
        if let status = daemon?.exitStatus { throw Abort("touchd exited unexpectedly (\(status))") }
    }

    /// Turns a driver failure (a file, a device) into the end of the sequence.
    func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }

    // MARK: - failure texts

    /// `; touchd exited (…)` when it has, so a timeout is not mistaken for slowness.
    var exitNote: String {
        daemon?.exitStatus.map { "; touchd exited (\($0))" } ?? ""
    }

    func missing(_ what: String, after event: String, within limit: Microseconds) -> String {
        if let status = daemon?.exitStatus { return "no \(what) after \(event): touchd exited (\(status))" }
        return "no \(what) within \(seconds(limit)) of \(event)"
    }

    func statuses(from cursor: Int) -> String {
        let values = notify.inbox.since(cursor).compactMap { $0.value("STATUS") }
        return values.isEmpty ? "none" : "[" + values.joined(separator: " | ") + "]"
    }

    func datagrams(from cursor: Int) -> String {
        let all = notify.inbox.since(cursor).map { "{\($0.summary)}" }
        return all.isEmpty ? "none" : all.joined(separator: " ")
    }
}

extension Abort {
    init(_ reason: String) { self.reason = reason }
}

/// `15 s`, `0.5 s`.
func seconds(_ microseconds: Microseconds) -> String {
    microseconds % 1_000_000 == 0 ? "\(microseconds / 1_000_000) s" : "\(Double(microseconds) / 1_000_000) s"
}
