import Glibc

/// `touchd ctl monitor` against real kernel input: a tap on button `a` and a tap on empty space, each seen as a down
/// and an up with the device, the position, and the control it hit (`a`, then none) with the events it caused.
extension Scenario {
    /// Where empty space is: no control (a, b, s) and no corner gesture; the edge swipe fails at its touch-down.
    static let emptySpace = (x: 500, y: 500)

    func monitorTaps() throws(Abort) {
        guard let touchd = options.touchd else { throw Abort("no --touchd given") }
        let logCursor = daemon?.output.count ?? 0
        let monitor = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd,
                arguments: ["ctl", "monitor", "--json", "--socket", TestConfig.controlSocket(besides: target.path)],
                environment: [:], removing: Self.scrubbedEnvironment,
                echoPrefix: options.verbose ? "monitor| " : nil, published: false)
        }
        defer { monitor.killAndReap() }
        // Subscribed once touchd says who watches.
        let watching = poll(until: monotonicNow() + Limits.readiness) {
            daemon?.output.first(from: logCursor) { $0.contains("control client watches live contacts") } != nil
                ? true : nil
        }
        guard watching != nil else {
            report.record(
                .monitorShowsContacts,
                "touchd never logged the monitor's subscription; monitor said: \(monitor.tail(5))\(exitNote)")
            return
        }
        let onControl = try tap(at: (200, 200))
        respectRepeatWindow()
        try write([.down(slot: 0, x: Self.emptySpace.x, y: Self.emptySpace.y)])
        sleep(microseconds: 50_000)
        try write([.up(slot: 0)])
        // Four contact lines: down and up on a, down and up on empty space.
        _ = poll(until: monotonicNow() + Limits.message) { monitor.output.count >= 4 ? true : nil }
        let lines = monitor.output.all.filter { $0.contains(#""kind":"contact""#) }
        let downs = lines.filter { $0.contains(#""touch":"down""#) }
        let ups = lines.filter { $0.contains(#""touch":"up""#) }
        var problems: [String] = []
        if !onControl.missing.isEmpty { problems.append("the tap on a was not delivered: \(onControl.missing)") }
        if downs.count != 2 || ups.count != 2 {
            problems.append("expected 2 downs and 2 ups, got \(downs.count) and \(ups.count): \(lines)")
        } else {
            let expected: [(String, [String])] = [
                (downs[0], [#""control":"a""#, #""events":["touchDown"]"#, #""x":200"#, #""y":200"#]),
                (ups[0], [#""control":"a""#, #""events":["touchUpInside","primaryActionTriggered"]"#]),
                (downs[1], [#""control":null"#, #""events":[]"#, #""x":500"#, #""y":500"#]),
                (ups[1], [#""control":null"#, #""events":[]"#]),
            ]
            for (line, parts) in expected {
                for part in parts where !line.contains(part) { problems.append("no \(part) in \(line)") }
                if !line.contains(#""device":"event"#) { problems.append("no device in \(line)") }
            }
        }
        if problems.isEmpty { report.note("ctl monitor: \(lines.joined(separator: " | "))") }
        report.record(.monitorShowsContacts, problems.isEmpty ? nil : problems.joined(separator: "; "))
        try alive()
    }
}
