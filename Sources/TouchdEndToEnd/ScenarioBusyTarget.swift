import Glibc

/// The next tap's action must not wait behind a busy target (`touchd-e2e --busy-target`): touchd runs as a child with
/// two socket targets, `busy` and `idle`. Button `a` (x 100…299, y 100…299) sends its touchUpInside to `busy`; button
/// `b` (x 600…799, y 100…299) sends its touchDown to `idle`. Each pair taps `a`, then puts a finger on `b` 5 ms after
/// `busy` read `a`'s action, and measures from that touch-down's write to `b`'s message on `idle`; in pairs with
/// `busy` working 20 ms after each message and pairs with it idle, one CPU kept busy (BusyTarget.swift).
final class BusyTargetRun {
    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let notify: NotifyListener
    private let busy: TargetListener
    private let idle: TargetListener
    private var daemon: Daemon?
    private var panel: VirtualTouchscreen?
    private var results: [(name: String, failure: String?)] = []
    private var notes: [String] = []

    init(options: Options, touchd: String) throws(DriverError) {
        self.options = options
        self.touchd = touchd
        scratch = try ScratchDirectory()
        notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
        busy = try TargetListener(path: scratch.file("busy.sock"), verbose: options.verbose)
        idle = try TargetListener(path: scratch.file("idle.sock"), verbose: options.verbose)
    }

    static func config(busy: String, idle: String) -> String {
        """
        # Written by touchd-e2e --busy-target.
        [output]
        width = 1000
        height = 1000

        [targets.busy]
        socket = "\(busy)"
        socket_type = "stream"
        responds_to = ["a"]

        [targets.idle]
        socket = "\(idle)"
        socket_type = "stream"
        responds_to = ["b"]

        [[control]]
        id = "a"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "busy", action = "a" }]

        [[control]]
        id = "b"
        kind = "button"
        frame = { x = 600, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchDown"], target = "idle", action = "b" }]

        """
    }

    func run() -> Int32 {
        do throws(Abort) {
            try setUp()
            try checkNextAction()
        } catch {
            record("sequence", "stopped: \(error.reason)")
        }
        let failed = results.filter { $0.failure != nil }
        if !failed.isEmpty { daemon?.printTail(60) }
        daemon?.killAndReap()
        panel?.destroy()
        busy.stop()
        idle.stop()
        notify.stop()
        for note in notes { Console.line("note: \(note)") }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        Console.line("busy-target: \(results.count - failed.count)/\(results.count) checks passed")
        scratch.remove()
        return failed.isEmpty ? 0 : 1
    }

    private func record(_ name: String, _ failure: String?) {
        results.append((name, failure))
    }

    /// Starts touchd with both targets and a panel, and waits until it reports the panel.
    private func setUp() throws(Abort) {
        let configPath = scratch.file("busy.toml")
        try attempt { () throws(DriverError) in
            try writeFile(configPath, Self.config(busy: busy.path, idle: idle.path))
        }
        let arguments =
            ["run", "--config", configPath, "--log-level", options.logLevel]
            + (options.yieldOnSend ? ["--yield-on-send"] : [])
        daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: touchd, arguments: arguments, environment: ["NOTIFY_SOCKET": notify.path],
                removing: Scenario.scrubbedEnvironment, echoPrefix: options.verbose ? "touchd| " : nil)
        }
        currentDaemon.withLock { $0 = daemon }
        if options.yieldOnSend { notes.append("touchd runs with --yield-on-send") }
        let cursor = notify.inbox.count
        panel = try attempt { () throws(DriverError) in
            try VirtualTouchscreen(name: "touchd-e2e busy-target panel", verbose: options.verbose)
        }
        let reported = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("STATUS")?.hasPrefix("1 touchscreen") == true }
        }
        guard reported != nil else {
            throw Abort("touchd did not report the panel: \(daemon?.tail(20) ?? [])")
        }
        sleep(microseconds: 300_000)
    }

    /// With `busy` working 20 ms after each message, the next tap's action (to `idle`) arrives no later than with
    /// `busy` idle, within ``BusyTarget/Comparison/bound``.
    private func checkNextAction() throws(Abort) {
        guard let panel else { throw Abort("no panel") }
        let comparison = try BusyTarget.compare(
            BusyTarget.Pairs(
                target: busy, panel: panel, button: (200, 200), action: "a", nextTouch: (700, 200),
                watch: { [idle] in
                    let cursor = idle.inbox.count
                    return {
                        poll(until: monotonicNow() + Limits.message) {
                            idle.inbox.first(from: cursor) { $0.action == "b" && $0.event == "touchDown" }
                        }?.element.arrival
                    }
                }))
        Console.line(comparison.line(check: "next-action"))
        record(
            "busy-target-next-action: the next tap's action to an idle target does not wait behind a busy one",
            comparison.failure("the next tap's action"))
        if let status = daemon?.exitStatus { throw Abort("touchd exited (\(status))") }
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
