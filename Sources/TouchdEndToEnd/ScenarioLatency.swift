import Glibc

/// touchd against libinput's own client (`touchd-e2e --compare-libinput`): the same uinput taps, in one
/// guest boot, read in alternating rounds by either `touchd run` (from the uinput write to the action's message
/// arriving on its socket target) or `libinput debug-events` (from the uinput write to its TOUCH_DOWN or TOUCH_UP
/// line arriving on its stdout pipe), each alone: the other is not running during a round. Both arrival times are
/// taken by a reader thread of the driver right after read(2) returns, and both threads do the same after it: split
/// the bytes into lines and store them (a target message's JSON is parsed later, when the round reads it). So that
/// the scheduler's history gives no reader a head start, in a guest with one CPU those threads run under SCHED_FIFO
/// (`StampingThreads`) and the thread that writes the taps under SCHED_IDLE (`tapRound`). The driver's main thread
/// sleeps through the taps (it collects the figures after each round), so it competes for the guest's CPUs no more
/// in one round than in the other.
///
/// The emulated guest is noisy (single rounds have ranged from 2.2× to 4.6× in either direction of the median), so
/// the figure is the ratio of the medians over every round, and rounds alternate so slow phases of the host hit both
/// readers alike.
final class LatencyComparison {
    let options: Options
    let touchd: String
    private let scratch: ScratchDirectory
    private let target: TargetListener
    private let notify: NotifyListener
    private let configPath: String
    private var panel: VirtualTouchscreen?
    private var results: [(name: String, failure: String?)] = []
    private var notes: [String] = []
    /// Whether the driver's own threads are scheduled so that no reader gets a head start (one CPU only; see `run`).
    private var evenScheduling = false

    static let panelName = "touchd-e2e latency panel"

    /// One tap's two frames: the touch-down and the lift, with when each was written.
    private struct Tap {
        var control: String
        var down: FrameTiming
        var up: FrameTiming
    }

    /// One reader's samples: microseconds from the write to the arrival, touch-downs and lifts together.
    private struct Samples {
        var values: [Int64] = []
        var missing = 0
        /// The reader's own CPU time over its rounds' taps (every thread, from the scheduler's account) and the taps.
        var cpuNanoseconds: UInt64 = 0
        var cpuTimeslices: UInt64 = 0
        var cpuTaps = 0

        /// Microseconds of CPU per tap, or nil without a measurement.
        var cpuPerTap: UInt64? {
            cpuTaps > 0 ? cpuNanoseconds / UInt64(cpuTaps) / 1000 : nil
        }

        /// Times on a CPU per ten taps: how often the reader woke.
        var timeslicesPerTenTaps: UInt64? { cpuTaps > 0 ? cpuTimeslices * 10 / UInt64(cpuTaps) : nil }

        mutating func addCPU(before: ProcessRunTime?, after: ProcessRunTime?, taps: Int) -> String {
            guard let before, let after, after.nanoseconds >= before.nanoseconds,
                after.timeslices >= before.timeslices, taps > 0
            else { return "cpu n/a" }
            let nanoseconds = after.nanoseconds - before.nanoseconds
            let slices = after.timeslices - before.timeslices
            cpuNanoseconds &+= nanoseconds
            cpuTimeslices &+= slices
            cpuTaps += taps
            return "cpu \(nanoseconds / UInt64(taps) / 1000) µs/tap in \(slices) timeslices"
        }

        var median: Int64? { Self.median(values) }

        static func median(_ values: [Int64]) -> Int64? {
            guard !values.isEmpty else { return nil }
            return Percentiles.rank(50, in: values.sorted())
        }
    }

    init(options: Options, touchd: String) {
        self.options = options
        self.touchd = touchd
        do {
            scratch = try ScratchDirectory()
            target = try TargetListener(path: scratch.file("target.sock"), verbose: options.verbose)
            notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
        } catch {
            Console.line("touchd-e2e: cannot set up: \(error)")
            exit(1)
        }
        configPath = scratch.file("touchd.toml")
    }

    func run() -> Int32 {
        // Before any reader starts. With one CPU, the scheduler's history is taken out of the path: every thread that
        // stamps an arrival runs under SCHED_FIFO (StampingThreads) and the taps' writer under SCHED_IDLE (tapRound).
        // With more, they keep the normal policy: a thread under SCHED_FIFO stays on the vCPU where it started, and
        // the fair scheduler's wake-ups, which move a woken thread next to its waker, would then no longer keep the
        // stamping thread beside the reader. A stamping thread born on the other vCPU, as touchd's was while touchd
        // started up, made every message cross vCPUs, which in this emulator holds it for about 2 ms
        // (docs/performance.md, "The test guest").
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        evenScheduling = cpus == 1
        StampingThreads.realtime.store(evenScheduling, ordering: .relaxed)
        notes.append(
            evenScheduling
                ? "one CPU: the taps' writer runs under SCHED_IDLE and the threads that stamp arrivals under SCHED_FIFO"
                : "\(cpus) CPUs: the driver's threads keep the normal policy")
        var touchdSamples = Samples()
        var libinputSamples = Samples()
        var otherSamples = Samples()
        var floorSamples = Samples()
        var floorDaemonSamples = Samples()
        do throws(Abort) {
            try attempt { () throws(DriverError) in
                try writeFile(configPath, TestConfig.valid(socket: target.path, actionForA: "a"))
            }
            panel = try attempt { () throws(DriverError) in
                try VirtualTouchscreen(name: Self.panelName, verbose: options.verbose)
            }
            sleep(microseconds: 500_000)  // udev tags it before anyone looks
            // Each reader gets the same number of rounds, and the order within a round turns around every round:
            // touchd, libinput (, the other touchd, the floor reader, the floor daemon) in odd rounds, the reverse in
            // even ones.
            // A fixed order favoured whichever reader came first: two builds swapped between --touchd and
            // --also-touchd changed places by a few percent in the same kind of boot.
            enum Reader {
                case touchd, libinput
                case other(String)
                case floor(String)
                case floorDaemon(String)
            }
            var order: [Reader] = [.touchd, .libinput]
            if let other = options.otherTouchd { order.append(.other(other)) }
            if let floor = options.floorReader { order.append(.floor(floor)) }
            if let daemon = options.floorDaemon { order.append(.floorDaemon(daemon)) }
            for round in 1...options.rounds {
                for reader in round % 2 == 1 ? order : order.reversed() {
                    switch reader {
                    case .touchd: try touchdRound(round, executable: touchd, into: &touchdSamples)
                    case .libinput: try libinputRound(round, into: &libinputSamples)
                    case .other(let other):
                        try touchdRound(round, executable: other, label: "other touchd", into: &otherSamples)
                    case .floor(let floor): try libinputRound(round, floor: floor, into: &floorSamples)
                    case .floorDaemon(let daemon):
                        try touchdRound(round, executable: daemon, label: "floor daemon", into: &floorDaemonSamples)
                    }
                }
            }
        } catch {
            record("sequence", "stopped: \(error.reason)")
        }
        panel?.destroy()
        target.stop()
        notify.stop()
        judge(touchd: touchdSamples, libinput: libinputSamples)
        if options.otherTouchd != nil { compareOther(otherSamples, touchd: touchdSamples, libinput: libinputSamples) }
        if options.floorReader != nil { compareFloor(floorSamples, touchd: touchdSamples, libinput: libinputSamples) }
        if options.floorDaemon != nil {
            compareFloorDaemon(floorDaemonSamples, touchd: touchdSamples, libinput: libinputSamples)
        }
        for note in notes { Console.line("note: \(note)") }
        let failed = results.filter { $0.failure != nil }
        for (name, failure) in results {
            Console.line(failure.map { "FAIL \(name): \($0)" } ?? "PASS \(name)")
        }
        Console.line("compare-libinput: \(results.count - failed.count)/\(results.count) checks passed")
        scratch.remove()
        return failed.isEmpty ? 0 : 1
    }

    // MARK: - Rounds

    private func touchdRound(
        _ number: Int, executable: String, label: String = "touchd", into samples: inout Samples
    ) throws(Abort) {
        let cursor = notify.inbox.count
        let daemon = try attempt { () throws(DriverError) in
            try Daemon(
                executable: executable, arguments: ["run", "--config", configPath, "--log-level", options.logLevel],
                environment: ["NOTIFY_SOCKET": notify.path], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "touchd| " : nil)
        }
        currentDaemon.withLock { $0 = daemon }
        defer {
            daemon.killAndReap()
            currentDaemon.withLock { $0 = nil }
        }
        let ready = poll(until: monotonicNow() + Limits.readiness) {
            notify.inbox.first(from: cursor) { $0.value("STATUS")?.hasPrefix("1 touchscreen") == true }
        }
        guard ready != nil else {
            daemon.printTail(40)
            throw Abort("touchd did not report the panel in its status (round \(number))")
        }
        sleep(microseconds: 300_000)
        let messages = target.inbox.count
        let cpuBefore = ProcessRunTime(pid: daemon.pid)
        let taps = try tapRound()
        sleep(microseconds: 500_000)  // the last lift's message
        let cpu = samples.addCPU(before: cpuBefore, after: ProcessRunTime(pid: daemon.pid), taps: taps.count)
        let arrived = target.inbox.since(messages)
        var round: [Int64] = []
        // Each kind apart too: a touch-down and a lift take different paths through the scene.
        var byKind: [String: [Int64]] = [:]
        var lowerBound = 0
        for tap in taps {
            for (event, timing) in [("touchDown", tap.down), ("touchUpInside", tap.up)] {
                guard
                    let index = arrived.indices.dropFirst(lowerBound).first(where: {
                        arrived[$0].event == event && arrived[$0].control == tap.control
                            && arrived[$0].arrival >= timing.beforeReport
                    })
                else {
                    samples.missing += 1
                    continue
                }
                lowerBound = index + 1
                round.append(Int64(arrived[index].arrival) - Int64(timing.beforeReport))
                byKind[event, default: []].append(Int64(arrived[index].arrival) - Int64(timing.beforeReport))
            }
        }
        samples.values += round
        // Stopping makes touchd log its own figures for this round: where the time went inside it.
        daemon.send(SIGTERM)
        _ = daemon.waitForExit(until: monotonicNow() + Limits.stop)
        daemon.waitForOutputEnd(until: monotonicNow() + 2_000_000)
        let figures = daemon.output.all.reversed().lazy.compactMap(ProcessingLatencyLine.init).first
        let kernelToSocket = arrived.compactMap { message -> Int64? in
            guard message.event == "touchDown" || message.event == "touchUpInside",
                let time = message.timeMicroseconds
            else { return nil }
            return Int64(message.arrival) - Int64(time)
        }
        let kinds = ["touchDown", "touchUpInside"].map { kind in
            "\(kind) p50=\(Percentiles(byKind[kind] ?? []).map { "\($0.p50)µs" } ?? "-")"
        }
        notes.append(
            "\(label) round \(number): \(Percentiles(round).map(\.description) ?? "no samples"); "
                + "first tap \(round.prefix(2).map { "\($0)µs" }.joined(separator: "/")), slowest of the rest "
                + "\(round.dropFirst(2).max().map { "\($0)µs" } ?? "-"); "
                + "\(kinds.joined(separator: ", ")); \(cpu); "
                + "kernel event → socket "
                + "\(Percentiles(kernelToSocket).map(\.description) ?? "n/a"); touchd said: "
                + (figures.map { figures in
                    let faults =
                        figures.metadata["input_thread_minor_faults"].map { "; input thread minor faults \($0)" } ?? ""
                    guard let p50 = figures.p50 else { return "its own figures: none" + faults }
                    return "kernel event → executor p50=\(p50)µs, of which poll returned → executor p50="
                        + "\(figures.figure("handling_p50_us").map(String.init) ?? "?")µs" + faults
                } ?? "no processing latency line"))
    }

    /// A round of `libinput debug-events`, or with `floor` of the minimal reader at that path, which prints the same
    /// DEVICE_ADDED, TOUCH_DOWN and TOUCH_UP lines (tools/perf/floors).
    private func libinputRound(_ number: Int, floor: String? = nil, into samples: inout Samples) throws(Abort) {
        let label = floor == nil ? "libinput debug-events" : "floor reader"
        let events = try attempt { () throws(DriverError) in
            try Daemon(
                executable: floor ?? "/usr/bin/stdbuf",
                arguments: floor == nil ? ["-oL", "/usr/bin/libinput", "debug-events"] : [Self.panelName],
                environment: [:], removing: Scenario.scrubbedEnvironment,
                echoPrefix: options.verbose ? "events| " : nil, published: false)
        }
        defer { events.killAndReap() }
        let added = poll(until: monotonicNow() + Limits.readiness) {
            events.output.first(from: 0) { $0.contains("DEVICE_ADDED") && $0.contains(Self.panelName) }
        }
        guard added != nil else {
            throw Abort("\(label) did not list the panel (round \(number)): \(events.tail(20))")
        }
        sleep(microseconds: 300_000)
        let cursor = events.output.count
        let cpuBefore = ProcessRunTime(pid: events.pid)
        let taps = try tapRound()
        sleep(microseconds: 500_000)
        let cpu = samples.addCPU(before: cpuBefore, after: ProcessRunTime(pid: events.pid), taps: taps.count)
        let lines = events.output.since(cursor)
        let arrivals = events.arrivals.since(cursor)
        var round: [Int64] = []
        var lowerBound = 0
        for tap in taps {
            for (type, timing) in [("TOUCH_DOWN", tap.down), ("TOUCH_UP", tap.up)] {
                guard
                    let index = lines.indices.dropFirst(lowerBound).first(where: {
                        $0 < arrivals.count && Self.type(of: lines[$0]) == type && arrivals[$0] >= timing.beforeReport
                    })
                else {
                    samples.missing += 1
                    continue
                }
                lowerBound = index + 1
                round.append(Int64(arrivals[index]) - Int64(timing.beforeReport))
            }
        }
        samples.values += round
        notes.append(
            "\(label) round \(number): \(Percentiles(round).map(\.description) ?? "no samples"); "
                + "first tap \(round.prefix(2).map { "\($0)µs" }.joined(separator: "/")), slowest of the rest "
                + "\(round.dropFirst(2).max().map { "\($0)µs" } ?? "-"); \(cpu)")
    }

    /// The second field of a debug-events line (` event3   TOUCH_DOWN       +1.234s …`), or nil.
    static func type(of line: String) -> String? {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2 else { return nil }
        return String(fields[1])
    }

    /// `options.taps` taps, alternating between buttons a and b and between two points on each (141 px apart, more
    /// than the 45 px repeat slop, so no tap is a repeat of the one before on the same control): 30 ms down, 150 ms
    /// between taps. The driver only sleeps meanwhile.
    private func tapRound() throws(Abort) -> [Tap] {
        let points: [(control: String, x: Int, y: Int)] = [
            ("a", 150, 150), ("b", 650, 150), ("a", 250, 250), ("b", 750, 250),
        ]
        guard let panel else { throw Abort("no panel") }
        // The panel's stand-in gives way to every reader at once: a touchscreen's interrupt does not compete with the
        // reader it wakes. Under the normal policy, in the one-vCPU guest, a woken reader preempted this thread only
        // if it had run less than this thread lately, so a reader that uses more CPU per tap waited until this
        // thread slept and one that uses less did not: touchd's input thread about 80 µs a frame, `debug-events`
        // about 25 (docs/performance.md, "The test guest"). Any woken thread of the normal policy preempts one under
        // SCHED_IDLE. Only with one CPU (see `run`).
        var idle = sched_param(sched_priority: 0)
        let schedIdle: Int32 = 5  // SCHED_IDLE of <sched.h>, which Glibc's module leaves out (it needs _GNU_SOURCE)
        let yielding = evenScheduling && sched_setscheduler(0, schedIdle, &idle) == 0
        defer {
            var normal = sched_param(sched_priority: 0)
            if yielding { _ = sched_setscheduler(0, Int32(SCHED_OTHER), &normal) }
        }
        var taps: [Tap] = []
        taps.reserveCapacity(options.taps)
        let start = monotonicNow() + 10_000
        for index in 0..<options.taps {
            let point = points[index % points.count]
            let due = start + Microseconds(index) * 180_000
            sleep(until: due)
            let down = try attempt { () throws(DriverError) in
                try panel.write([.down(slot: 0, x: point.x, y: point.y)])
            }
            sleep(until: due + 30_000)
            let up = try attempt { () throws(DriverError) in try panel.write([.up(slot: 0)]) }
            taps.append(Tap(control: point.control, down: down, up: up))
        }
        return taps
    }

    // MARK: - The verdict

    private func judge(touchd: Samples, libinput: Samples) {
        let wanted = options.taps * options.rounds * 2
        let enough = 40
        record(
            "at least \(enough) touch-down/up messages from each reader",
            touchd.values.count >= enough && libinput.values.count >= enough
                ? nil
                : "touchd \(touchd.values.count) (missing \(touchd.missing)), libinput debug-events "
                    + "\(libinput.values.count) (missing \(libinput.missing)), of \(wanted) each")
        guard let ours = touchd.median, let theirs = libinput.median, theirs > 0 else {
            record("latency ratio measured", "no samples to compare")
            return
        }
        let ratio = Double(ours) / Double(theirs)
        let text =
            "latency, uinput write → arrival: touchd socket target median \(ours) µs "
            + "(\(Percentiles(touchd.values)!), missing \(touchd.missing)); libinput debug-events median \(theirs) µs "
            + "(\(Percentiles(libinput.values)!), missing \(libinput.missing)); \(options.rounds) rounds each of "
            + "\(options.taps) taps, alternating; median ratio \(Self.format(ratio))"
        let ourTail = Percentiles(touchd.values)!.p99
        let theirTail = Percentiles(libinput.values)!.p99
        let tailRatio = Double(ourTail) / Double(max(theirTail, 1))
        Console.line(
            "latency-ratio: \(Self.format(ratio)) touchd_p50_us=\(ours) libinput_p50_us=\(theirs) "
                + "p99_ratio=\(Self.format(tailRatio)) touchd_p99_us=\(ourTail) libinput_p99_us=\(theirTail)")
        if let touchdCPU = touchd.cpuPerTap, let libinputCPU = libinput.cpuPerTap, libinputCPU > 0 {
            // The readers' own work per tap, less noisy than the latency: the other vCPU's timing does not enter it.
            Console.line(
                "reader-cpu-per-tap: \(Self.format(Double(touchdCPU) / Double(libinputCPU))) touchd_us=\(touchdCPU) "
                    + "libinput_us=\(libinputCPU) touchd_timeslices_per_10_taps=\(touchd.timeslicesPerTenTaps ?? 0) "
                    + "libinput_timeslices_per_10_taps=\(libinput.timeslicesPerTenTaps ?? 0)")
        }
        notes.append(text)
        if let limit = options.maximumRatio {
            record(
                "median latency ratio at most \(Self.format(limit))",
                ratio <= limit ? nil : "\(Self.format(ratio)) > \(Self.format(limit)): \(text)")
        } else {
            let met = ratio <= 1.5 && tailRatio <= 2
            notes.append(
                "the targets are a median ratio of at most 1.5 and a p99 ratio of at most 2: "
                    + "\(met ? "met" : "NOT met") in this run (reported only; --max-ratio makes the median a check)")
        }
    }

    /// `--also-touchd`: a second touchd (another build) measured in the same boot, in rounds of its own.
    private func compareOther(_ other: Samples, touchd: Samples, libinput: Samples) {
        guard let theirs = other.median, let ours = touchd.median, let floor = libinput.median, floor > 0 else {
            record("the other touchd measured", "no samples to compare")
            return
        }
        let ratio = Double(theirs) / Double(floor)
        Console.line(
            "latency-ratio-other: \(Self.format(ratio)) other_touchd_p50_us=\(theirs) libinput_p50_us=\(floor)")
        if let otherCPU = other.cpuPerTap, let libinputCPU = libinput.cpuPerTap, libinputCPU > 0 {
            Console.line(
                "reader-cpu-per-tap-other: \(Self.format(Double(otherCPU) / Double(libinputCPU))) other_touchd_us="
                    + "\(otherCPU) libinput_us=\(libinputCPU) other_touchd_timeslices_per_10_taps="
                    + "\(other.timeslicesPerTenTaps ?? 0)")
        }
        notes.append(
            "other touchd (\(options.otherTouchd ?? "")) median \(theirs) µs (\(Percentiles(other.values)!), missing "
                + "\(other.missing)): \(Self.format(ratio))× libinput debug-events, "
                + "\(Self.format(Double(theirs) / Double(max(ours, 1))))× the touchd under test")
    }

    /// `--floor-reader`: how much of each reader's latency and CPU a reader that does nothing but read the device and
    /// write a line has too (the guest's cost of the wake-ups and the hops themselves).
    private func compareFloor(_ floor: Samples, touchd: Samples, libinput: Samples) {
        guard let bottom = floor.median, bottom > 0, let ours = touchd.median, let theirs = libinput.median else {
            record("the floor reader measured", "no samples to compare")
            return
        }
        Console.line(
            "latency-floor: floor_p50_us=\(bottom) touchd_above_floor_us=\(ours - bottom) "
                + "libinput_above_floor_us=\(theirs - bottom) touchd_over_floor=\(Self.format(Double(ours) / Double(bottom))) "
                + "libinput_over_floor=\(Self.format(Double(theirs) / Double(bottom)))")
        printFloorCPU(floor, line: "reader-cpu-per-tap-floor", key: "floor", touchd: touchd, libinput: libinput)
    }

    /// `--floor-daemon`: what a daemon with touchd's input and output and nothing between costs against
    /// `debug-events` (the transport's share: a stream socket instead of a pipe), and touchd against it (its own work).
    private func compareFloorDaemon(_ daemon: Samples, touchd: Samples, libinput: Samples) {
        guard let bottom = daemon.median, bottom > 0, let ours = touchd.median, let theirs = libinput.median,
            theirs > 0
        else {
            record("the floor daemon measured", "no samples to compare")
            return
        }
        Console.line(
            "latency-floor-daemon: floor_daemon_p50_us=\(bottom) floor_daemon_over_libinput="
                + "\(Self.format(Double(bottom) / Double(theirs))) touchd_above_floor_daemon_us=\(ours - bottom) "
                + "touchd_over_floor_daemon=\(Self.format(Double(ours) / Double(bottom)))")
        printFloorCPU(
            daemon, line: "reader-cpu-per-tap-floor-daemon", key: "floor_daemon", touchd: touchd, libinput: libinput)
        notes.append(
            "floor daemon (\(options.floorDaemon ?? "")) median \(bottom) µs (\(Percentiles(daemon.values)!), missing "
                + "\(daemon.missing))")
    }

    /// A floor's CPU per tap beside touchd's and libinput's, as `LINE: KEY_us=… touchd_us=… libinput_us=…
    /// KEY_timeslices_per_10_taps=…`; nothing when a reader has no measurement.
    private func printFloorCPU(_ floor: Samples, line: String, key: String, touchd: Samples, libinput: Samples) {
        guard let floorCPU = floor.cpuPerTap, let touchdCPU = touchd.cpuPerTap, let libinputCPU = libinput.cpuPerTap
        else { return }
        Console.line(
            "\(line): \(key)_us=\(floorCPU) touchd_us=\(touchdCPU) libinput_us=\(libinputCPU) "
                + "\(key)_timeslices_per_10_taps=\(floor.timeslicesPerTenTaps ?? 0)")
    }

    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        let hundredths = (value * 100).rounded()
        return "\(hundredths / 100)"
    }

    private func record(_ name: String, _ failure: String?) {
        results.append((name, failure))
    }

    private func attempt<T>(_ body: () throws(DriverError) -> T) throws(Abort) -> T {
        do {
            return try body()
        } catch {
            throw Abort(error.description)
        }
    }
}
