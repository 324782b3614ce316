/// The checks of one run, in the order they are made.
enum Check: String, CaseIterable {
    case readyWithoutTouchscreen = "ready-without-touchscreen"
    case waitingStatus = "waiting-status"
    case hotplugAfterStart = "hotplug-after-start"
    case tapOnceInOrder = "tap-once-in-order"
    case monitorShowsContacts = "monitor-tap-control-and-empty"
    case dragExitEnter = "drag-exit-enter"
    case liftOutside = "lift-outside"
    case twoFingers = "two-fingers"
    case longPressCorner = "long-press-corner"
    case edgeSwipe = "edge-swipe"
    case unplugCancels = "unplug-cancels"
    case unplugStatus = "unplug-status"
    case replugWorks = "replug-works"
    case singleTouchDevice = "single-touch-device"
    case protocolADevice = "protocol-a-device"
    case replayMatchesRun = "replay-matches-run"
    case unusableTouchscreen = "unusable-touchscreen-status"
    case otherSeatIgnored = "other-seat-ignored"
    case synDroppedEndsOnce = "syn-dropped-ends-once"
    case synDroppedLogged = "syn-dropped-logged"
    case floodEndsOnce = "flood-ends-once"
    case floodCPUBounded = "flood-cpu-bounded"
    case longCommandNoLag = "long-command-no-lag"
    case reloadBrokenKept = "reload-broken-kept"
    case oldConfigStillWorks = "old-config-still-works"
    case reloadOK = "reload-ok"
    case newConfigApplies = "new-config-applies"
    case latencyMeasured = "latency-measured"
    case latencyTapsExact = "latency-taps-exact"
    case eventTimeFromKernel = "event-time-from-kernel"
    case idleWake = "idle-wake"
    case cleanStop = "clean-stop"
    case lostEventsCounted = "lost-events-counted"
    case processingLatencyReported = "processing-latency-reported"
    case messagesWellFormed = "messages-well-formed"
}

/// Records and prints each check's verdict as it is made (`PASS name` / `FAIL name: why`), and the summary.
final class Report {
    private(set) var verdicts: [(check: Check, failure: String?)] = []
    /// Measurements for the summary.
    private(set) var notes: [String] = []

    /// Records `check`: passed when `failure` is nil.
    func record(_ check: Check, _ failure: String?) {
        precondition(!verdicts.contains { $0.check == check }, "\(check.rawValue) recorded twice")
        verdicts.append((check, failure))
        if let failure {
            Console.line("FAIL \(check.rawValue): \(failure)")
        } else {
            Console.line("PASS \(check.rawValue)")
        }
    }

    func note(_ text: String) {
        notes.append(text)
        Console.line(text)
    }

    func isRecorded(_ check: Check) -> Bool { verdicts.contains { $0.check == check } }

    /// Fails each of `checks` not recorded yet: none may pass by default.
    func failUnrecorded(_ checks: some Sequence<Check>, because reason: String) {
        for check in checks where !isRecorded(check) {
            record(check, "not run: \(reason)")
        }
    }

    var failures: [Check] { verdicts.filter { $0.failure != nil }.map(\.check) }

    func printSummary() {
        Console.line("")
        Console.line("summary:")
        for note in notes { Console.line("  \(note)") }
        let failed = failures
        let passed = verdicts.count - failed.count
        if failed.isEmpty {
            Console.line("touchd-e2e: all \(verdicts.count) checks passed")
        } else {
            Console.line(
                "touchd-e2e: \(failed.count) of \(verdicts.count) checks failed "
                    + "(\(passed) passed): \(failed.map(\.rawValue).joined(separator: ", "))")
        }
    }
}
