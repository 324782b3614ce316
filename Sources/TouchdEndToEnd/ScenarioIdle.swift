/// `[idle]` with real kernel input: after a reload to a file with `timeout_s = 1`, `idle` reaches the socket target
/// about a second later (the reload counts as a lift), a tap on control a fires `wake` and nothing else (the wake
/// touch reaches no control: `[idle] wake_touch_reaches_controls` is false by default), and `idle` comes once more a
/// second after that tap's lift. Runs last, after the latency run, so that no other step sees idle messages.
extension Scenario {
    func idleAndWake() throws(Abort) {
        try attempt { () throws(DriverError) in
            try writeFile(configPath, TestConfig.valid(socket: target.path, actionForA: "a2") + TestConfig.idle)
        }
        let cursor = target.inbox.count
        let reload = reload()
        var problems: [String] = reload.problem.map { ["the reload to the [idle] file: \($0)"] } ?? []
        let isIdle: (TargetMessage) -> Bool = { $0.control == "idle" && $0.event == "idle" && $0.action == "attract" }
        if waitTarget(from: cursor, until: monotonicNow() + Limits.message, where: isIdle) == nil {
            problems.append("no idle message within \(seconds(Limits.message)) of the reload\(exitNote)")
        }
        let tapCursor = target.inbox.count
        // No control ends this tap: nothing to await but the quiet after the wake.
        let outcome = try gesture([[.down(slot: 0, x: 200, y: 200)], [.up(slot: 0)]], gap: 50_000, awaiting: [])
        let sent = outcome.messages.filter { !isIdle($0) }.map {
            "\($0.control ?? "?"):\($0.event ?? "?"):\($0.action ?? "?")"
        }
        if sent != ["idle:wake:welcome"] {
            problems.append("expected the wake alone (the wake touch reaches no control), got \(sent)")
        }
        if waitTarget(from: tapCursor, until: monotonicNow() + Limits.message, where: isIdle) == nil {
            problems.append("no idle message after the tap's lift\(exitNote)")
        }
        report.record(.idleWake, problems.isEmpty ? nil : problems.joined(separator: "; "))
        try alive()
    }
}
