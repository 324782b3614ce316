import Glibc

/// How the steps act and wait: gestures, quiet periods, waits that notice a dead touchd, failure texts.
extension Scenario {
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
