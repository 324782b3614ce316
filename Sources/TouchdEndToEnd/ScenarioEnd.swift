import Glibc

/// The latency run, the stop and the look at everything received: the end of the sequence.
extension Scenario {
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

    /// Sends SIGTERM and expects STOPPING=1 and exit status 0, then looks for touchd's processing-latency line, and
    /// in the stop line for the count of libinput's lost-event warnings, which the SYN_DROPPED step must have raised.
    /// Without touches (`requireSamples` false) the latency line only has to be there and the count is not looked at.
    func stopDaemon(requireSamples: Bool = true) {
        guard let daemon else {
            report.record(.cleanStop, "touchd was never started")
            report.record(.processingLatencyReported, "touchd was never started")
            if requireSamples { report.record(.lostEventsCounted, "touchd was never started") }
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
        if requireSamples { checkLostEvents(lines) }
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
            if let p50 = line.figure("handling_p50_us"), let p99 = line.figure("handling_p99_us"),
                let maximum = line.figure("handling_max_us")
            {
                report.note(
                    "  of which inside touchd (poll returned → executor): p50=\(p50)µs p99=\(p99)µs max=\(maximum)µs")
            }
        }
        report.note("touchd said: \(line.line)")
    }

    /// touchd's stop line (`touchd stopped … libinput_lost_event_warnings=N`) counts libinput's SYN_DROPPED and
    /// lag warnings: after the SYN_DROPPED step it must be at least 1 (fault-cases.md D5).
    private func checkLostEvents(_ lines: [String]) {
        guard let line = lines.last(where: { $0.contains("touchd stopped") }) else {
            report.record(.lostEventsCounted, "no 'touchd stopped' line in touchd's output (\(lines.count) lines)")
            return
        }
        let key = "libinput_lost_event_warnings"
        let count = ProcessingLatencyLine.pairs(in: line[...])[key].flatMap { Int($0) }
        if let count, count > 0 {
            report.record(.lostEventsCounted, nil)
            report.note("touchd's stop line: \(key)=\(count)")
        } else {
            report.record(
                .lostEventsCounted,
                "expected \(key) > 0 after the SYN_DROPPED step, touchd's stop line says: \(line)")
        }
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
}
