import Glibc
import Synchronization

/// `--self-test`: checks the driver's own parts that need no /dev/uinput — parsing, statistics, expectation
/// matching, the listeners on real sockets and process handling — so a broken driver shows here, on the build
/// machine, and not as a mysterious failure in the VM.
struct SelfTest {
    let options: Options

    func run() -> Int32 {
        let results = Results(verbose: options.verbose)
        statistics(results)
        notifyParsing(results)
        targetParsing(results)
        lineBuffer(results)
        processingLatency(results)
        expectations(results)
        latencyMatching(results)
        arguments(results)
        sockets(results)
        processes(results)
        configurations(results)
        busyTarget(results)
        speechCapture(results)
        stallWatch(results)
        Console.line(
            results.failed == 0
                ? "self-test: all \(results.passed) checks passed"
                : "self-test: \(results.failed) of \(results.passed + results.failed) checks failed")
        return results.failed == 0 ? 0 : 1
    }

    /// StallWatch's sweep: what part of a window some vCPU, and every vCPU, did not run.
    func stallWatch(_ results: Results) {
        typealias Stall = StallWatch.Stall
        let stalls = [
            Stall(cpu: 0, from: 100, to: 200), Stall(cpu: 1, from: 150, to: 300), Stall(cpu: 0, from: 200, to: 220),
            Stall(cpu: 1, from: 500, to: 600),
        ]
        func lost(_ start: UInt64, _ end: UInt64, cpus: Int = 2) -> [UInt64] {
            let value = StallWatch.lost(in: stalls, cpus: cpus, from: start, to: end)
            return [value.anyCPU, value.everyCPU]
        }
        // vCPU 0 stalled 100–220 (two stalls that touch), vCPU 1 150–300: some vCPU 100–300, both 150–220.
        results.equal("stall watch: overlapping stalls of two vCPUs", lost(0, 1000), [300, 70])
        results.equal("stall watch: clipped to the window", lost(160, 210), [50, 50])
        results.equal("stall watch: a window between stalls", lost(300, 500), [0, 0])
        results.equal("stall watch: one vCPU of one", lost(450, 550, cpus: 1), [50, 50])
        results.equal("stall watch: an empty window", lost(200, 100), [0, 0])
        // What a stop leaves out: each stall without the watcher's own 2 ms sleep. vCPU 0 certainly stood still
        // 2,100–2,220 (two that touch), vCPU 1 2,150–2,300 (its other stall is no longer than the sleep).
        let long = [
            Stall(cpu: 0, from: 100, to: 2_200), Stall(cpu: 1, from: 150, to: 2_300),
            Stall(cpu: 0, from: 200, to: 2_220),
            Stall(cpu: 1, from: 500, to: 2_000),
        ]
        results.equal(
            "stall watch: stood still, the watcher's sleep left out",
            StallWatch.stoodStill(in: long, cpus: 2, from: 0, to: 10_000), 200)
        results.equal(
            "stall watch: a stall no longer than the sleep is not standing still",
            StallWatch.stoodStill(in: [Stall(cpu: 0, from: 0, to: 2_000)], cpus: 1, from: 0, to: 10_000), 0)
        func verdict(_ stop: UInt64, _ still: UInt64) -> StallWatch.StopVerdict {
            StallWatch.judge(stop: stop, stoodStill: still, bound: 100_000)
        }
        results.equal("stop verdict: within the bound", verdict(100_000, 0), .within)
        results.equal("stop verdict: within the bound, stalls or not", verdict(40_000, 30_000), .within)
        results.equal("stop verdict: past it, the guest running", verdict(100_001, 0), .late)
        results.equal(
            "stop verdict: past it by less than the guest stood still", verdict(130_000, 30_000), .guestStoodStill)
        results.equal("stop verdict: past it by more than the guest stood still", verdict(130_000, 29_999), .late)
        results.equal("stop verdict: stood still longer than the stop", verdict(150_000, 400_000), .guestStoodStill)
        // Stopped before it started: returns at once, with nothing seen.
        let unstarted = StallWatch()
        unstarted.stop()
        results.equal("stall watch: stop before start", unstarted.all, [])
    }

    /// `--speech`'s reading of a capture: 5 ms windows of a 48 kHz stereo WAV, silence 0 and a tone above the
    /// threshold, a data chunk found after another chunk; and the option itself.
    func speechCapture(_ results: Results) {
        var wav: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8)
        func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        wav += Array("fmt ".utf8) + le32(16) + [1, 0, 2, 0] + le32(48_000) + le32(192_000) + [4, 0, 16, 0]
        wav += Array("LIST".utf8) + le32(4) + Array("INFO".utf8)
        // 10 ms of silence, then 10 ms of a square wave of amplitude 1000 on both channels.
        var samples: [UInt8] = []
        for frame in 0..<960 {
            let value: Int16 = frame < 480 ? 0 : (frame % 48 < 24 ? 1000 : -1000)
            let bytes = [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
            samples += bytes + bytes
        }
        wav += Array("data".utf8) + le32(samples.count) + samples
        let path = "/tmp/touchd-e2e-selftest-\(getpid()).wav"
        let written = wav.withUnsafeBytes { buffer -> Bool in
            guard let file = fopen(path, "w") else { return false }
            defer { fclose(file) }
            return fwrite(buffer.baseAddress, 1, buffer.count, file) == buffer.count
        }
        defer { unlink(path) }
        let windows = written ? SpeechRun.windows(ofWAV: path) : nil
        results.equal("speech capture: 5 ms windows", windows?.count, 4)
        results.expect(
            "speech capture: silence, then energy above the threshold",
            windows.map { $0[0] == 0 && $0[1] == 0 && $0[2] > SpeechRun.threshold && $0[3] > SpeechRun.threshold }
                == true, "\(windows ?? [])")
        results.equal(
            "--speech parses", (try? Options.parse(["--speech", "--touchd", "/t"]))?.speech, true)
        results.expect(
            "--speech is a run of its own",
            (try? Options.parse(["--speech", "--busy-target", "--touchd", "/t"])) == nil)
        results.equal(
            "--speechd-trace goes with --speech",
            (try? Options.parse(["--speech", "--speechd-trace", "--touchd", "/t"]))?.speechdTrace, true)
        results.expect(
            "--speechd-trace and --speechd-queue need --speech",
            (try? Options.parse(["--speechd-trace", "--touchd", "/t"])) == nil
                && (try? Options.parse(["--speechd-queue", "0", "--touchd", "/t"])) == nil)
        speechdTrace(results)
        results.equal(
            "--identify parses", (try? Options.parse(["--identify", "--touchd", "/t"]))?.identify, true)
        results.expect(
            "--identify is a run of its own",
            (try? Options.parse(["--identify", "--filter", "--touchd", "/t"])) == nil)
        results.equal(
            "--calibrate --print-screenshot parses",
            (try? Options.parse(["--calibrate", "--print-screenshot", "--touchd", "/t"])).map {
                [$0.calibrate, $0.printScreenshot]
            }, [true, true])
        results.expect(
            "--calibrate is a run of its own, --print-screenshot goes with it",
            (try? Options.parse(["--calibrate", "--filter", "--touchd", "/t"])) == nil
                && (try? Options.parse(["--print-screenshot", "--touchd", "/t"])) == nil)
    }

    /// `--speechd-trace`: the times of the server's and the module's log lines, and one CANCEL of each kind.
    func speechdTrace(_ results: Results) {
        let server = SpeechdTrace.time(of: "[Wed Dec  2 14:28:34 2026 : 702182] speechd:    stopping speak_queue")
        results.expect(
            "speechd trace: the server's log time", abs((server ?? 0) - 52_114.702182) < 1e-6, "\(server ?? -1)")
        let module = SpeechdTrace.time(of: " Wed Dec  2 14:28:24 2026 [946135]: Espeak-ng: module_stop().")
        results.expect(
            "speechd trace: the module's log time", abs((module ?? 0) - 52_104.946135) < 1e-6, "\(module ?? -1)")
        let base = "/tmp/touchd-e2e-selftest-\(getpid())"
        let logs = [
            (
                "server",
                "[Wed Dec  2 10:00:00 2026 : 100000] speechd:    stopping speak_queue\n"
                    + "[Wed Dec  2 10:00:00 2026 : 300000] speechd:    speak_queue Stop or pause.\n"
                    + "[Wed Dec  2 10:00:01 2026 : 0] speechd:    module is already done, stop speak_queue directly\n"
                    + "[Wed Dec  2 10:00:01 2026 : 2000] speechd:    speak_queue Stop or pause.\n"
            ),
            (
                "output",
                "[Wed Dec  2 10:00:00 2026 : 150000] speechd: Discarding audio still coming from the synth\n"
                    + "[Wed Dec  2 10:00:00 2026 : 250000] speechd: Discarding audio still coming from the synth\n"
                    + "[Wed Dec  2 10:00:00 2026 : 400000] speechd: Discarding audio still coming from the synth\n"
            ),
            ("module", " Wed Dec  2 10:00:00 2026 [110000]: Espeak-ng: module_stop().\n"),
        ]
        for (name, text) in logs { try? writeFile("\(base).\(name)", text) }
        defer { for (name, _) in logs { unlink("\(base).\(name)") } }
        let report = SpeechdTrace.report(
            server: "\(base).server", outputModule: "\(base).output", module: "\(base).module")
        results.equal(
            "speechd trace: a CANCEL while synthesizing, one after the end",
            Array(report.prefix(2)),
            [
                "trace: CANCEL while the module synthesized: the module read STOP +10 ms; the server read and "
                    + "discarded 2 chunks of its audio, then stopped playback +200 ms",
                "trace: CANCEL after the module's END: playback stopped at once (stop thread +2 ms)",
            ])
    }

    /// Counts and prints self-test verdicts.
    final class Results {
        let verbose: Bool
        private(set) var passed = 0
        private(set) var failed = 0

        init(verbose: Bool) { self.verbose = verbose }

        func expect(_ name: String, _ condition: Bool, _ detail: @autoclosure () -> String = "") {
            if condition {
                passed += 1
                Console.line("self-test PASS \(name)")
            } else {
                failed += 1
                Console.line("self-test FAIL \(name): \(detail())")
            }
        }

        /// Expects `actual == expected`, printing both when they differ.
        func equal<T: Equatable>(_ name: String, _ actual: T, _ expected: T) {
            expect(name, actual == expected, "expected \(expected), got \(actual)")
        }

        /// Expects a check to pass (nil).
        func passes(_ name: String, _ failure: String?) {
            expect(name, failure == nil, "unexpected failure: \(failure ?? "")")
        }

        /// Expects a check to fail with a text that contains each of `fragments`; prints the text with --verbose,
        /// to review how failures read.
        func fails(_ name: String, _ failure: String?, containing fragments: [String]) {
            guard let failure else { return expect(name, false, "passed, expected a failure") }
            let absent = fragments.filter { !failure.contains($0) }
            expect(name, absent.isEmpty, "failure text lacks \(absent): \(failure)")
            if verbose { Console.line("    \(failure)") }
        }
    }

    // MARK: - pure parts

    func statistics(_ results: Results) {
        let hundred = Percentiles((1...100).map { Int64($0) })
        results.equal("percentiles-1-to-100", hundred.map { [$0.p50, $0.p99, $0.maximum] }, [50, 99, 100])
        let shuffled = Percentiles([5, 1, 3])
        results.equal("percentiles-unsorted", shuffled.map { [$0.p50, $0.p99, $0.maximum] }, [3, 5, 5])
        let single = Percentiles([7])
        results.equal("percentiles-one-sample", single.map { [$0.samples, Int($0.p50), Int($0.p99)] }, [1, 7, 7])
        let twoHundred = Percentiles((1...200).map { Int64($0) })
        results.equal("percentiles-1-to-200", twoHundred.map { [$0.p50, $0.p99] }, [100, 198])
        results.expect("percentiles-empty", Percentiles([]) == nil, "expected nil for no samples")
        results.equal(
            "percentiles-text", Percentiles([10, 20, 30])?.description, "samples=3 p50=20µs p99=30µs max=30µs")
        // A command name with spaces and parentheses; utime 250 and stime 50 ticks.
        let line = "42 (touchd (x) y) T 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 0 0"
        let ticks = Microseconds(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        let stat = ProcessStat(statLine: line)
        results.equal("proc-stat-state", stat?.state, "T")
        results.equal("proc-stat-cpu", stat?.cpuTime, 300 * 1_000_000 / ticks)
        results.expect("proc-stat-short", ProcessStat(statLine: "42 (touchd) S 1") == nil, "expected nil")
        results.expect("proc-stat-self", ProcessStat(pid: getpid())?.state == "R", "expected this process running")
        // This process has run (the self-test itself), and each thread at least once.
        let runTime = ProcessRunTime(pid: getpid())
        results.expect(
            "proc-run-time-self", (runTime?.nanoseconds ?? 0) > 0 && (runTime?.timeslices ?? 0) > 0,
            "\(String(describing: runTime))")
        results.expect("proc-run-time-gone", ProcessRunTime(pid: -1) == nil, "expected nil for no process")
    }

    func notifyParsing(_ results: Results) {
        let ready = NotifyMessage(datagram: "READY=1\nSTATUS=1 touchscreen: touchd-e2e touchscreen 1", arrival: 5)
        results.equal("notify-ready", ready.value("READY"), "1")
        results.equal("notify-status", ready.value("STATUS"), "1 touchscreen: touchd-e2e touchscreen 1")
        results.equal("notify-arrival", ready.arrival, 5)
        let reload = NotifyMessage(datagram: "RELOADING=1\nMONOTONIC_USEC=123456\n", arrival: 0)
        results.equal("notify-trailing-newline", reload.fields.map(\.key), ["RELOADING", "MONOTONIC_USEC"])
        let failed = NotifyMessage(datagram: "STATUS=reload failed: a = b\n\nREADY=1", arrival: 0)
        results.equal("notify-value-with-equals", failed.value("STATUS"), "reload failed: a = b")
        results.equal("notify-blank-line-skipped", failed.value("READY"), "1")
        let odd = NotifyMessage(datagram: "garbage\nSTATUS=x\nSTATUS=y", arrival: 0)
        results.equal("notify-malformed-line", odd.malformedLines, ["garbage"])
        results.equal("notify-last-value-wins", odd.value("STATUS"), "y")
        results.equal("notify-summary", odd.summary, "STATUS=x STATUS=y garbage")
    }

    func targetParsing(_ results: Results) {
        let line =
            #"{"action":"a","control":"a","event":"touchDown","target":"e2e","time_us":123456789012,"#
            + #""contact":3,"x":150.0,"y":150.5,"generation":1,"device":"touchd-e2e touchscreen 1"}"#
        let message = TargetMessage(line: line, arrival: 99, connection: 2)
        results.expect("target-valid", message.problem == nil, message.problem ?? "")
        results.equal("target-action", message.action, "a")
        results.equal("target-event", message.event, "touchDown")
        results.equal("target-time", message.timeMicroseconds, 123_456_789_012)
        results.equal("target-contact", message.contact, 3)
        results.equal("target-x-y", [message.x, message.y], [150, 150.5])
        results.equal("target-generation", message.generation, 1)
        results.equal("target-device", message.device, "touchd-e2e touchscreen 1")
        results.equal("target-arrival-connection", [Int(message.arrival), message.connection], [99, 2])
        let minimal = TargetMessage(
            line: #"{"action":"b","control":"b","event":"touchUpInside","target":"e2e","time_us":1}"#, arrival: 0,
            connection: 1)
        results.expect("target-minimal-valid", minimal.problem == nil && minimal.generation == nil, minimal.raw)
        let cases: [(String, String, String)] = [
            ("target-missing-time", #"{"action":"a","control":"a","event":"touchDown","target":"e2e"}"#, "time_us"),
            ("target-not-json", "touchDown a", "not valid JSON"),
            ("target-not-object", "[1,2]", "not a JSON object"),
            (
                "target-bool-contact",
                #"{"action":"a","control":"a","event":"touchDown","target":"e2e","time_us":1,"contact":true}"#,
                "'contact' is not an integer"
            ),
            (
                "target-string-time",
                #"{"action":"a","control":"a","event":"touchDown","target":"e2e","time_us":"1"}"#,
                "'time_us' is not an integer"
            ),
            (
                "target-negative-time",
                #"{"action":"a","control":"a","event":"touchDown","target":"e2e","time_us":-5}"#, "negative"
            ),
        ]
        for (name, line, fragment) in cases {
            let parsed = TargetMessage(line: line, arrival: 0, connection: 1)
            results.expect(
                name, parsed.problem?.contains(fragment) == true,
                "expected a problem mentioning \(fragment), got \(parsed.problem ?? "none")")
        }
    }

    func lineBuffer(_ results: Results) {
        var buffer = LineBuffer()
        var lines = buffer.append(Array("ab".utf8))
        lines += buffer.append(Array("c\nde".utf8))
        lines += buffer.append(Array("f\n\ng".utf8))
        results.equal("lines-split-across-reads", lines, ["abc", "def", ""])
        results.equal("lines-rest-at-end", buffer.finish(), "g")
        results.equal("lines-nothing-left", buffer.finish(), nil)
        results.equal("lines-utf8", buffer.append(Array("drag → exit\n".utf8)), ["drag → exit"])
    }

    func processingLatency(_ results: Results) {
        let terminal = ProcessingLatencyLine("info: processing latency max_us=90 p50_us=12 p99_us=40 samples=200")
        results.equal(
            "latency-line-terminal", [terminal?.samples, terminal?.p50, terminal?.p99, terminal?.maximum],
            [200, 12, 40, 90])
        results.equal("latency-line-complete", terminal?.problem, nil)
        let journal = ProcessingLatencyLine(#"<6>processing latency note="a b=c" samples=3 p50_us=1 p99_us=2 max_us=2"#)
        results.equal("latency-line-journal-quoted", journal?.metadata["note"], "a b=c")
        results.equal("latency-line-journal-figures", journal?.p99, 2)
        let empty = ProcessingLatencyLine("info: processing latency max_us=- p50_us=- p99_us=- samples=0")
        results.expect(
            "latency-line-no-samples", empty?.problem?.contains("p50_us") == true, empty?.problem ?? "no problem")
        let zero = ProcessingLatencyLine("info: processing latency max_us=0 p50_us=0 p99_us=0 samples=0")
        results.expect(
            "latency-line-zero-samples", zero?.problem?.contains("samples=0") == true, "\(String(describing: zero))")
        results.expect("latency-line-other", ProcessingLatencyLine("info: touchd stopped frames=3") == nil)
    }

    // MARK: - expectations

    /// A well-formed message as touchd should send it.
    static func message(
        _ control: String, _ event: String, action: String? = nil, generation: Int? = 1, contact: Int? = 1,
        arrival: Microseconds = 0, time: Microseconds = 0, x: Double? = nil, y: Double? = nil
    ) -> TargetMessage {
        var line = #"{"action":"\#(action ?? control)","control":"\#(control)","event":"\#(event)","#
        line += #""target":"e2e","time_us":\#(time)"#
        if let generation { line += #","generation":\#(generation)"# }
        if let contact { line += #","contact":\#(contact)"# }
        if let x, let y { line += #","x":\#(x),"y":\#(y)"# }
        return TargetMessage(line: line + "}", arrival: arrival, connection: 1)
    }

    func expectations(_ results: Results) {
        func m(
            _ control: String, _ event: String, action: String? = nil, generation: Int? = 1, contact: Int? = 1
        ) -> TargetMessage {
            Self.message(control, event, action: action, generation: generation, contact: contact)
        }
        let fields = Scenario.firstFields
        let tap = [m("a", "touchDown"), m("a", "touchUpInside")]
        results.passes("tap-ok", Expectation.tap(tap, control: "a", fields: fields))
        results.fails(
            "tap-swapped", Expectation.tap(tap.reversed(), control: "a", fields: fields),
            containing: ["expected exactly [a touchDown, a touchUpInside]", "got [a touchUpInside, a touchDown]"])
        results.fails(
            "tap-extra", Expectation.tap([tap[0], m("a", "touchDragInside"), tap[1]], control: "a", fields: fields),
            containing: ["a touchDragInside"])
        results.fails(
            "tap-twice", Expectation.tap(tap + tap, control: "a", fields: fields), containing: ["got [a touchDown"])
        results.fails(
            "tap-nothing", Expectation.tap([], control: "a", fields: fields), containing: ["got [nothing]"])
        results.fails(
            "tap-wrong-action",
            Expectation.tap([m("a", "touchDown", action: "a2"), tap[1]], control: "a", fields: fields),
            containing: ["expected action=a", "action=a2"])
        results.fails(
            "tap-wrong-generation",
            Expectation.tap([m("a", "touchDown", generation: 2), tap[1]], control: "a", fields: fields),
            containing: ["expected generation=1", "generation=2"])
        var strict = fields
        strict.generationRequired = true
        results.passes(
            "tap-generation-absent-allowed",
            Expectation.tap([m("a", "touchDown", generation: nil), tap[1]], control: "a", fields: fields))
        results.fails(
            "tap-generation-absent-required",
            Expectation.tap([m("a", "touchDown", generation: nil), tap[1]], control: "a", fields: strict),
            containing: ["no generation"])
        results.fails(
            "tap-unknown-control", Expectation.tap([m("c", "touchDown"), tap[1]], control: "a", fields: fields),
            containing: ["unexpected control"])
        let malformed = TargetMessage(line: "oops", arrival: 0, connection: 1)
        results.fails(
            "tap-malformed", Expectation.tap([tap[0], malformed], control: "a", fields: fields),
            containing: ["malformed", "oops"])

        func events(_ names: [String], control: String = "a") -> [TargetMessage] { names.map { m(control, $0) } }
        let drag = events(
            [
                "touchDown", "touchDragInside", "touchDragInside", "touchDragExit", "touchDragOutside",
                "touchDragOutside",
                "touchDragEnter", "touchDragInside", "touchUpInside",
            ])
        results.passes(
            "drag-ok", Expectation.sequence(drag, control: "a", pattern: Expectation.dragOutAndBack, fields: fields))
        let minimalDrag = events(["touchDown", "touchDragExit", "touchDragEnter", "touchUpInside"])
        results.passes(
            "drag-minimal-ok",
            Expectation.sequence(minimalDrag, control: "a", pattern: Expectation.dragOutAndBack, fields: fields))
        let twoExits = events(
            ["touchDown", "touchDragExit", "touchDragOutside", "touchDragExit", "touchDragEnter", "touchUpInside"])
        results.fails(
            "drag-two-exits",
            Expectation.sequence(twoExits, control: "a", pattern: Expectation.dragOutAndBack, fields: fields),
            containing: ["event 4 (touchDragExit) does not fit"])
        let noEnter = events(["touchDown", "touchDragExit", "touchDragOutside", "touchDragInside", "touchUpInside"])
        results.fails(
            "drag-no-enter",
            Expectation.sequence(noEnter, control: "a", pattern: Expectation.dragOutAndBack, fields: fields),
            containing: ["touchDragEnter", "event 4 (touchDragInside)"])
        let cut = events(["touchDown", "touchDragInside", "touchDragInside", "touchDragExit"])
        results.fails(
            "drag-cut-short",
            Expectation.sequence(cut, control: "a", pattern: Expectation.dragOutAndBack, fields: fields),
            containing: ["ends too early", "touchDragInside×2"])
        results.fails(
            "drag-other-control",
            Expectation.sequence(
                drag + [m("b", "touchDown")], control: "a", pattern: Expectation.dragOutAndBack, fields: fields),
            containing: ["control a only", "b touchDown"])

        let lift = events(["touchDown", "touchDragInside", "touchDragExit", "touchDragOutside", "touchUpOutside"])
        results.passes(
            "lift-outside-ok",
            Expectation.sequence(lift, control: "a", pattern: Expectation.dragOutAndLift, fields: fields))
        let liftInside = events(["touchDown", "touchDragExit", "touchDragOutside", "touchUpInside"])
        results.fails(
            "lift-outside-got-inside",
            Expectation.sequence(liftInside, control: "a", pattern: Expectation.dragOutAndLift, fields: fields),
            containing: ["touchUpInside"])

        let fingers = [
            m("a", "touchDown", contact: 1), m("b", "touchDown", contact: 2), m("a", "touchDragInside", contact: 1),
            m("b", "touchDragInside", contact: 2), m("a", "touchUpInside", contact: 1),
            m("b", "touchUpInside", contact: 2),
        ]
        results.passes(
            "two-fingers-ok",
            Expectation.twoFingers(
                fingers, controls: ("a", "b"), pattern: Expectation.moveInsideAndLift, fields: fields))
        let sameContact = fingers.map { m($0.control!, $0.event!, contact: 1) }
        results.fails(
            "two-fingers-same-contact",
            Expectation.twoFingers(
                sameContact, controls: ("a", "b"), pattern: Expectation.moveInsideAndLift, fields: fields),
            containing: ["different contacts", "contact=1"])
        let noContact = fingers.map { m($0.control!, $0.event!, contact: nil) }
        results.fails(
            "two-fingers-no-contact",
            Expectation.twoFingers(
                noContact, controls: ("a", "b"), pattern: Expectation.moveInsideAndLift, fields: fields),
            containing: ["one contact value", "absent"])
        results.fails(
            "two-fingers-b-missing",
            Expectation.twoFingers(
                fingers.filter { $0.control == "a" }, controls: ("a", "b"), pattern: Expectation.moveInsideAndLift,
                fields: fields),
            containing: ["control b", "got [nothing]"])

        results.passes(
            "gesture-ok",
            Expectation.recognized([m("admin", "recognized")], gesture: "admin", action: "admin", generation: 1))
        results.fails(
            "gesture-twice",
            Expectation.recognized(
                [m("admin", "recognized"), m("admin", "recognized")], gesture: "admin", action: "admin", generation: 1),
            containing: ["expected exactly [admin recognized admin]", "got [admin recognized admin, admin recognized"])
        results.fails(
            "gesture-missing", Expectation.recognized([], gesture: "back", action: "back", generation: 1),
            containing: ["got [nothing]"])
        results.fails(
            "gesture-wrong-event",
            Expectation.recognized([m("back", "began")], gesture: "back", action: "back", generation: 1),
            containing: ["got [back began back]"])
        results.fails(
            "gesture-old-generation",
            Expectation.recognized(
                [m("back", "recognized", generation: 2)], gesture: "back", action: "back", generation: 1),
            containing: ["generation 2, expected 1"])

        results.passes(
            "cancel-ok",
            Expectation.sequence(
                events(["touchDown", "touchCancel"]), control: "a", pattern: Expectation.cancelled, fields: fields))
        results.fails(
            "cancel-got-up",
            Expectation.sequence(
                events(["touchDown", "touchUpInside"]), control: "a", pattern: Expectation.cancelled, fields: fields),
            containing: ["event 2 (touchUpInside)"])
        results.fails(
            "cancel-and-up",
            Expectation.sequence(
                events(["touchDown", "touchCancel", "touchUpInside"]), control: "a", pattern: Expectation.cancelled,
                fields: fields),
            containing: ["event 3 (touchUpInside)"])

        // One contact that ends exactly once (the flood and SYN_DROPPED checks); other controls are not looked at.
        let flooded = events(["touchDown", "touchDragInside", "touchDragInside", "touchUpInside"])
        results.passes(
            "ends-once-ok", Expectation.endsOnce(flooded + [m("b", "touchDown")], control: "a", fields: fields))
        results.passes(
            "ends-once-cancel",
            Expectation.endsOnce(events(["touchDown", "touchCancel"]), control: "a", fields: fields))
        results.fails(
            "ends-once-twice",
            Expectation.endsOnce(flooded + events(["touchCancel"]), control: "a", fields: fields),
            containing: ["exactly one ending", "got 2"])
        results.fails(
            "ends-once-never",
            Expectation.endsOnce(events(["touchDown", "touchDragInside"]), control: "a", fields: fields),
            containing: ["exactly one ending", "got 0"])
        results.fails(
            "ends-once-no-down", Expectation.endsOnce(events(["touchUpInside"]), control: "a", fields: fields),
            containing: ["one touchDown, first"])
        results.fails(
            "ends-once-not-allowed",
            Expectation.endsOnce(
                events(["touchDown", "touchUpOutside"]), control: "a", allowedEndings: ["touchCancel"],
                fields: fields),
            containing: ["ended with touchUpOutside"])
        results.fails(
            "ends-once-down-between",
            Expectation.endsOnce(
                events(["touchDown", "touchDragInside", "touchDownRepeat", "touchUpInside"]), control: "a",
                fields: fields),
            containing: ["only drag events"])

        // Backtracking: a starred step followed by the same event must leave one for the step after it.
        results.passes(
            "pattern-backtracks", Expectation.match(["x", "x"], [Expectation.any("x"), Expectation.one("x")]))
        results.equal(
            "compress-runs", Expectation.compress(["a", "b", "b", "b", "a"]), "a, b×3, a")

        let outcome = Scenario.Outcome(messages: [], missing: ["an ending from a"], exitNote: "")
        results.fails(
            "outcome-missing-alone", outcome.verdict(nil),
            containing: ["incomplete", "waited 5 s for an ending from a"])
    }

    func latencyMatching(_ results: Results) {
        func write(_ control: String, _ event: String, _ x: Int, _ y: Int, at time: Microseconds) -> LatencyWrite {
            LatencyWrite(
                control: control, action: control == "a" ? "a2" : "b", event: event, x: x, y: y,
                timing: FrameTiming(beforeReport: time, afterReport: time + 10))
        }
        let writes = [
            write("a", "touchDown", 150, 150, at: 1000), write("a", "touchUpInside", 150, 150, at: 2000),
            write("b", "touchDown", 650, 150, at: 3000), write("b", "touchUpInside", 650, 150, at: 4000),
            write("a", "touchDown", 250, 250, at: 5000), write("a", "touchUpInside", 250, 250, at: 6000),
        ]
        func reply(_ write: LatencyWrite, after delay: Microseconds, time: Microseconds? = nil) -> TargetMessage {
            Self.message(
                write.control, write.event, action: write.action, generation: 2,
                arrival: write.timing.beforeReport + delay, time: time ?? write.timing.beforeReport + 5,
                x: Double(write.x), y: Double(write.y))
        }
        let all = LatencyMatch(
            writes: writes, messages: writes.map { reply($0, after: 300) }, generation: 2)
        results.equal(
            "latency-all-matched", [all.pairs.count, all.missing.count, all.unexpected.count, all.mismatches.count],
            [6, 0, 0, 0])
        results.equal("latency-end-to-end", Percentiles(all.pairs.map(\.endToEnd))?.p50, 300)
        results.equal("latency-kernel-to-socket", Percentiles(all.pairs.compactMap(\.kernelToSocket))?.p50, 295)
        results.equal("latency-times-in-window", all.timeProblems, [])

        // The first a touchDown is lost: only that one is missing, the later a touchDown still pairs by position.
        var lossy = writes.map { reply($0, after: 300) }
        lossy.remove(at: 0)
        let lost = LatencyMatch(writes: writes, messages: lossy, generation: 2)
        results.equal("latency-one-lost", [lost.pairs.count, lost.missing.count, lost.unexpected.count], [5, 1, 0])
        results.equal("latency-lost-is-first", lost.missing.first?.x, 150)

        let repeated = LatencyMatch(
            writes: writes,
            messages: writes.map { reply($0, after: 300) } + [
                Self.message("a", "touchDownRepeat", action: "a2", generation: 2)
            ],
            generation: 2)
        results.equal("latency-repeat-unexpected", repeated.unexpected.map(\.event), ["touchDownRepeat"])

        let wrongGeneration = LatencyMatch(
            writes: Array(writes.prefix(1)),
            messages: [Self.message("a", "touchDown", action: "a", generation: 1, arrival: 1500, x: 150, y: 150)],
            generation: 2)
        results.equal("latency-mismatch-counted", wrongGeneration.mismatches.count, 1)

        let early = LatencyMatch(
            writes: Array(writes.prefix(1)), messages: [reply(writes[0], after: 0, time: 900)], generation: 2)
        results.expect(
            "latency-time-before-window", early.timeProblems.first?.contains("100 µs before") == true,
            "\(early.timeProblems)")
        let causal = LatencyMatch(
            writes: Array(writes.prefix(1)),
            messages: [Self.message("a", "touchDown", action: "a2", generation: 2, arrival: 500, x: 150, y: 150)],
            generation: 2)
        results.equal("latency-arrival-before-write-unmatched", [causal.pairs.count, causal.unexpected.count], [0, 1])
    }

    func arguments(_ results: Results) {
        results.equal(
            "arguments-full", try? Options.parse(["--touchd", "/usr/bin/touchd", "--verbose", "--taps", "7"]),
            Options(touchd: "/usr/bin/touchd", verbose: true, taps: 7))
        results.equal("arguments-default-taps", (try? Options.parse(["--touchd", "/t"]))?.taps, 100)
        results.equal("arguments-self-test", (try? Options.parse(["--self-test"]))?.selfTest, true)
        results.equal(
            "arguments-compare-libinput",
            try? Options.parse(["--compare-libinput", "--touchd", "/t", "--rounds", "6", "--max-ratio", "1.2"]),
            Options(touchd: "/t", taps: 20, compareLibinput: true, rounds: 6, maximumRatio: 1.2))
        results.equal(
            "arguments-floor-reader",
            (try? Options.parse(["--compare-libinput", "--touchd", "/t", "--floor-reader", "/f"]))?.floorReader, "/f")
        results.equal(
            "arguments-floor-daemon",
            (try? Options.parse(["--compare-libinput", "--touchd", "/t", "--floor-daemon", "/d"]))?.floorDaemon, "/d")
        results.equal(
            "arguments-floor-filter",
            (try? Options.parse(["--filter", "--touchd", "/t", "--floor-filter", "/f"]))?.floorFilter, "/f")
        results.equal(
            "arguments-floor-filter-libinput",
            (try? Options.parse(["--filter", "--touchd", "/t", "--floor-filter-libinput", "/l"]))?.floorFilterLibinput,
            "/l")
        results.equal(
            "arguments-floor-driver-line",
            (try? Options.parse(["--filter", "--touchd", "/t", "--floor-filter", "/f", "--floor-driver-line"]))?
                .floorDriverLine, true)
        results.equal(
            "arguments-latency-passes",
            (try? Options.parse(["--filter", "--touchd", "/t", "--latency-passes", "30"]))?.latencyPasses, 30)
        results.equal(
            "arguments-filter-also-touchd",
            (try? Options.parse(["--filter", "--touchd", "/t", "--also-touchd", "/o"]))?.otherTouchd, "/o")
        results.equal(
            "arguments-compare-libinput-taps",
            (try? Options.parse(["--compare-libinput", "--touchd", "/t", "--taps", "30"]))?.taps, 30)
        results.equal(
            "debug-events-line-type",
            LatencyComparison.type(
                of: " event4   TOUCH_DOWN              +2.345s\t0 (0) 15.00/15.00 (150.00/150.00mm)"),
            "TOUCH_DOWN")
        results.equal(
            "arguments-busy-target",
            try? Options.parse(["--busy-target", "--touchd", "/t", "--yield-on-send"]),
            Options(touchd: "/t", busyTarget: true, yieldOnSend: true))
        results.equal(
            "arguments-filter-yield-on-send",
            (try? Options.parse(["--filter", "--touchd", "/t", "--yield-on-send"]))?.yieldOnSend, true)
        let failures: [([String], String)] = [
            ([], "--touchd PATH is required"), (["--touchd"], "--touchd needs a value"),
            (["--busy-target", "--filter", "--touchd", "/t"], "separate runs"),
            (["--busy-target", "--systemd-unit", "--touchd", "/t"], "separate runs"),
            (["--touchd", "/t", "--yield-on-send"], "goes with --busy-target or --filter"),
            (["--filter", "--systemd-unit", "--touchd", "/t", "--yield-on-send"], "not under --systemd-unit"),
            (["--filter", "--startup-sweep", "--touchd", "/t", "--yield-on-send"], "--startup-sweep"),
            (["--touchd", "/t", "--taps", "0"], "from 1 to 10000"), (["--touchd", "/t", "--taps", "x"], "not 'x'"),
            (["--bogus"], "unknown argument '--bogus'"),
            (["--self-test", "--without-touchscreen"], "separate runs"),
            (["--filter", "--compare-libinput", "--touchd", "/t"], "separate runs"),
            (["--touchd", "/t", "--max-ratio", "1.2"], "go with --compare-libinput"),
            (["--touchd", "/t", "--rounds", "3"], "go with --compare-libinput"),
            (["--touchd", "/t", "--floor-reader", "/f"], "go with --compare-libinput"),
            (["--touchd", "/t", "--floor-daemon", "/d"], "go with --compare-libinput"),
            (["--touchd", "/t", "--also-touchd", "/o"], "goes with --compare-libinput or --filter"),
            (["--filter", "--systemd-unit", "--touchd", "/t", "--also-touchd", "/o"], "not under --systemd-unit"),
            (["--touchd", "/t", "--floor-filter", "/f"], "go with --filter"),
            (["--touchd", "/t", "--floor-filter-libinput", "/l"], "go with --filter"),
            (["--filter", "--systemd-unit", "--touchd", "/t", "--floor-filter", "/f"], "not under --systemd-unit"),
            (["--filter", "--touchd", "/t", "--floor-driver-line"], "goes with --floor-filter"),
            (["--touchd", "/t", "--latency-passes", "20"], "goes with --filter"),
            (["--filter", "--systemd-unit", "--touchd", "/t", "--latency-passes", "20"], "not under --systemd-unit"),
            (["--filter", "--touchd", "/t", "--latency-passes", "0"], "from 1 to 100"),
            (["--compare-libinput", "--touchd", "/t", "--rounds", "0"], "from 1 to 100"),
            (["--compare-libinput", "--touchd", "/t", "--max-ratio", "-1"], "positive number"),
        ]
        for (arguments, fragment) in failures {
            do {
                _ = try Options.parse(arguments)
                results.expect("arguments-refuse \(arguments)", false, "accepted")
            } catch {
                results.expect(
                    "arguments-refuse \(arguments)", error.message.contains(fragment), "message: \(error.message)")
            }
        }
    }

    // MARK: - real sockets and processes

    func sockets(_ results: Results) {
        do throws(DriverError) {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            results.expect(
                "scratch-path-short", scratch.path.utf8.count + "/target.sock".utf8.count < 108, scratch.path)

            let notify = try NotifyListener(path: scratch.file("notify.sock"), verbose: options.verbose)
            defer { notify.stop() }
            let sender = try UnixSocket.connected(path: notify.path, type: SOCK_DGRAM)
            let sent = monotonicNow()
            try UnixSocket.send(sender, "READY=1\nSTATUS=waiting for a touchscreen")
            try UnixSocket.send(sender, "RELOADING=1\nMONOTONIC_USEC=\(sent)")
            close(sender)
            let arrived = poll(until: monotonicNow() + 2_000_000) { notify.inbox.count >= 2 ? true : nil }
            let datagrams = notify.inbox.all
            results.expect("notify-socket-received", arrived == true, "got \(datagrams.map(\.summary))")
            results.equal("notify-socket-parsed", datagrams.first?.value("STATUS"), "waiting for a touchscreen")
            results.equal("notify-socket-datagrams-apart", datagrams.last?.value("MONOTONIC_USEC"), "\(sent)")
            results.expect(
                "notify-socket-arrival-stamped", datagrams.allSatisfy { $0.arrival >= sent }, "arrival before send")

            let target = try TargetListener(path: scratch.file("target.sock"), verbose: options.verbose)
            defer { target.stop() }
            let first = try UnixSocket.connected(path: target.path, type: SOCK_STREAM)
            let second = try UnixSocket.connected(path: target.path, type: SOCK_STREAM)
            let line = #"{"action":"a","control":"a","event":"touchDown","target":"e2e","time_us":1}"#
            try UnixSocket.send(first, String(line.prefix(20)))
            sleep(microseconds: 30_000)
            let completed = monotonicNow()
            try UnixSocket.send(first, String(line.dropFirst(20)) + "\n" + line + "\n")
            try UnixSocket.send(second, line.replacingOccurrences(of: "touchDown", with: "touchUpInside") + "\n")
            close(first)
            // A reconnect: the daemon may open a new connection at any time, every one is read.
            let third = try UnixSocket.connected(path: target.path, type: SOCK_STREAM)
            try UnixSocket.send(third, "not json\n" + line)  // the last line lacks its newline, then EOF
            close(third)
            close(second)
            let all = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= 5 ? true : nil }
            let messages = target.inbox.all
            results.expect("target-socket-received", all == true, "got \(messages.map(\.raw))")
            results.equal("target-socket-connections", target.connections, 3)
            let fromFirst = messages.filter { $0.connection == 1 }
            results.equal("target-socket-split-line-joined", fromFirst.map(\.event), ["touchDown", "touchDown"])
            results.expect(
                "target-socket-arrival-after-completion", fromFirst.allSatisfy { $0.arrival >= completed },
                "a line was stamped before its last bytes were sent")
            results.equal(
                "target-socket-second-connection", messages.filter { $0.connection == 2 }.map(\.event),
                ["touchUpInside"])
            let fromThird = messages.filter { $0.connection == 3 }
            results.equal("target-socket-malformed-kept", fromThird.first?.problem, "not valid JSON")
            results.equal("target-socket-last-line-at-eof", fromThird.last?.event, "touchDown")
        } catch {
            results.expect("sockets", false, error.description)
        }
    }

    func processes(_ results: Results) {
        do throws(DriverError) {
            setenv("TOUCHD_E2E_SCRUBBED", "leaked", 1)
            let script =
                #"echo out; echo err >&2; echo "$NOTIFY_SOCKET ${TOUCHD_E2E_SCRUBBED:-scrubbed}"; printf tail; exit 3"#
            let shell = try Daemon(
                executable: "/bin/sh", arguments: ["-c", script], environment: ["NOTIFY_SOCKET": "/tmp/n.sock"],
                removing: ["TOUCHD_E2E_SCRUBBED"], echoPrefix: options.verbose ? "sh| " : nil)
            let status = shell.waitForExit(until: monotonicNow() + 5_000_000)
            shell.waitForOutputEnd(until: monotonicNow() + 2_000_000)
            results.equal("process-exit-status", status, .exited(3))
            results.equal("process-output-captured", shell.output.all, ["out", "err", "/tmp/n.sock scrubbed", "tail"])
            results.equal("process-reaped", runningDaemonPID.load(ordering: .relaxed), 0)

            let sleeper = try Daemon(
                executable: "/bin/sleep", arguments: ["30"], environment: [:], echoPrefix: nil)
            results.equal("process-running", sleeper.exitStatus, nil)
            results.equal("process-pid-published", runningDaemonPID.load(ordering: .relaxed), sleeper.pid)
            sleeper.killAndReap()
            results.equal("process-killed", sleeper.exitStatus, .signaled(SIGKILL))
            results.expect("process-no-signal-after-reap", !sleeper.send(SIGTERM), "signalled a reaped pid")

            // The child must get default dispositions even though the driver ignores SIGPIPE and handles SIGTERM.
            let trapped = try Daemon(
                executable: "/bin/sh",
                arguments: ["-c", "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done"],
                environment: [:], echoPrefix: nil)
            _ = poll(until: monotonicNow() + 5_000_000) { trapped.output.count > 0 ? true : nil }
            trapped.send(SIGTERM)
            let stopped = trapped.waitForExit(until: monotonicNow() + 5_000_000)
            trapped.waitForOutputEnd(until: monotonicNow() + 2_000_000)
            if stopped == nil { trapped.killAndReap() }
            results.equal("process-sigterm-handled", stopped, .exited(0))
            results.equal("process-sigterm-output", trapped.output.all, ["ready", "got-term"])
            let pipeDefault = try Daemon(
                executable: "/bin/sh", arguments: ["-c", "kill -PIPE $$; echo survived"], environment: [:],
                echoPrefix: nil)
            results.equal(
                "process-sigpipe-default", pipeDefault.waitForExit(until: monotonicNow() + 5_000_000),
                .signaled(SIGPIPE))

            // The start-up sweep's check that touchd holds the panel's node open: a file this process has open is
            // found in its /proc/PID/fd, one it has not (or another process) is not.
            let held = open("/dev/null", O_RDONLY | O_CLOEXEC)
            results.expect("holds-open-found", StartupSweep.holdsOpen(pid: getpid(), node: "/dev/null"))
            if held >= 0 { close(held) }
            results.expect("holds-open-absent", !StartupSweep.holdsOpen(pid: getpid(), node: "/dev/zero"))
            results.expect("holds-open-no-process", !StartupSweep.holdsOpen(pid: 0, node: "/dev/null"))

            do {
                _ = try Daemon(executable: "/nonexistent/touchd", arguments: [], environment: [:], echoPrefix: nil)
                results.expect("process-missing-executable", false, "started a missing executable")
            } catch {
                results.expect(
                    "process-missing-executable", error.description.contains("No such file"), error.description)
            }
        } catch {
            results.expect("processes", false, error.description)
        }
    }

    /// The generated files, and with --touchd the daemon's own verdict on them: valid ones load, the broken one
    /// is refused with EX_CONFIG.
    func configurations(_ results: Results) {
        let first = TestConfig.valid(socket: "/tmp/e2e-XXXXXX/target.sock", actionForA: "a")
        results.expect("config-socket-type-key", first.contains(#"socket_type = "stream""#), first)
        results.expect(
            "config-actions", first.contains(#"action = "a" }"#) && first.contains(#"action = "b" }"#), first)
        let second = TestConfig.valid(socket: "/tmp/e2e-XXXXXX/target.sock", actionForA: "a2")
        results.expect("config-renamed-action", second.contains(#"action = "a2" }"#), second)
        guard let touchd = options.touchd else {
            Console.line("self-test: no --touchd given, so `touchd check` is not run on the configurations")
            return
        }
        do throws(DriverError) {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            for (name, text, expected) in [
                ("config-first-valid", first, ExitStatus.exited(0)), ("config-second-valid", second, .exited(0)),
                ("config-broken-refused", TestConfig.broken, .exited(78)),
            ] {
                let path = scratch.file(name + ".toml")
                try writeFile(path, text)
                let check = try Daemon(
                    executable: touchd, arguments: ["check", "--config", path], environment: [:], echoPrefix: nil)
                let status = check.waitForExit(until: monotonicNow() + 30_000_000)
                check.waitForOutputEnd(until: monotonicNow() + 2_000_000)
                if status == nil { check.killAndReap() }
                results.expect(
                    name, status == expected,
                    "touchd check exited \(status.map(String.init(describing:)) ?? "not at all"), expected "
                        + "\(expected): \(check.output.all.joined(separator: " / "))")
            }
        } catch {
            results.expect("configurations", false, error.description)
        }
    }

    /// The busy-target checks' parts: the verdict, a target that works after each message, the CPU load, and with
    /// --touchd `touchd check` on their configurations.
    func busyTarget(_ results: Results) {
        func comparison(idle: [Int64], busy: [Int64], duringWork: Int? = nil) -> BusyTarget.Comparison {
            var comparison = BusyTarget.Comparison()
            comparison.idle = idle
            comparison.busy = busy
            comparison.duringWork = duringWork ?? busy.count
            return comparison
        }
        // Idle median 2.5 ms: the bound is 10.5 ms (2.5 + 8).
        let idle: [Int64] = [2_000, 2_500, 3_000, 2_200, 9_000]
        results.passes(
            "busy-verdict-no-wait", comparison(idle: idle, busy: [2_600, 3_100, 4_000, 2_900, 30_000]).failure("x"))
        results.passes(
            "busy-verdict-at-bound",
            comparison(idle: idle, busy: [13_000, 13_000, 13_000, 13_000, 13_000]).failure("x"))
        results.fails(
            "busy-verdict-waited", comparison(idle: idle, busy: [17_000, 18_000, 16_500, 2_400, 17_200]).failure("x"),
            containing: [
                "x waited behind the busy target", "median 17000 µs", "2500 µs idle", "14500 µs later (bound 10500 µs",
            ])
        results.fails(
            "busy-verdict-not-during-work",
            comparison(idle: idle, busy: [2_600, 3_100, 4_000, 2_900, 3_000], duringWork: 2).failure("x"),
            containing: ["only 2 of 5", "tested nothing"])
        var incomplete = comparison(idle: idle, busy: idle)
        incomplete.missing = ["the next touch never arrived (target busy)"]
        results.fails("busy-verdict-incomplete", incomplete.failure("x"), containing: ["1 pair(s) incomplete"])
        results.fails("busy-verdict-empty", comparison(idle: [], busy: []).failure("x"), containing: ["no samples"])
        // A slow path (idle median 17 ms) may lose up to its own length and 8 ms to the busy target, not more.
        let slow: [Int64] = [15_000, 16_000, 17_000, 18_000, 40_000]
        results.passes(
            "busy-verdict-slow-path-shares",
            comparison(idle: slow, busy: [30_000, 40_000, 42_000, 43_000, 60_000]).failure("x"))
        results.fails(
            "busy-verdict-slow-path-waited",
            comparison(idle: slow, busy: [34_000, 42_000, 44_000, 45_000, 60_000]).failure("x"),
            containing: ["27000 µs later (bound 25000 µs"])
        results.equal(
            "busy-verdict-line",
            comparison(idle: idle, busy: [17_000, 18_000, 16_500, 2_400, 17_200]).line(check: "c"),
            "busy-target: check=c idle_p50_us=2500 idle_p99_us=9000 busy_p50_us=17000 busy_p99_us=18000 "
                + "difference_p50_us=14500 bound_us=10500 idle_samples=5 busy_samples=5 during_work=5")

        do throws(DriverError) {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            let target = try TargetListener(path: scratch.file("busy.sock"), verbose: options.verbose)
            defer { target.stop() }
            target.work = 30_000
            let client = try UnixSocket.connected(path: target.path, type: SOCK_STREAM)
            defer { close(client) }
            let line = #"{"action":"a","event":"touchDown"}"#
            try UnixSocket.send(client, line + "\n")
            sleep(microseconds: 5_000)
            try UnixSocket.send(client, line + "\n")
            _ = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= 2 ? true : nil }
            let arrivals = target.inbox.all.map(\.arrival)
            results.expect(
                "busy-target-works-after-each-message",
                arrivals.count == 2 && arrivals[1] >= arrivals[0] + 30_000,
                "arrivals \(arrivals): the second message was read before the first one's 30 ms of work ended")
            target.work = 0
            let quick = monotonicNow()
            try UnixSocket.send(client, line + "\n")
            _ = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= 3 ? true : nil }
            results.expect("busy-target-idle-again", target.inbox.count == 3, "got \(target.inbox.count) messages")
            let before = ProcessRunTime(pid: getpid())?.nanoseconds ?? 0
            let load = try CPULoad()
            defer { load.stop() }
            load.run()
            sleep(microseconds: 100_000)
            // Read while the load's thread runs: the threads that ended are not counted. At least 10 of its 100 ms,
            // however busy the build machine is.
            let spent = (ProcessRunTime(pid: getpid())?.nanoseconds ?? 0) &- before
            load.pause()
            results.expect("cpu-load-spins", spent >= 10_000_000, "the process ran \(spent) ns in 100 ms")
            sleep(microseconds: 20_000)
            let paused = ProcessRunTime(pid: getpid())?.nanoseconds ?? 0
            sleep(microseconds: 100_000)
            let idle = (ProcessRunTime(pid: getpid())?.nanoseconds ?? 0) &- paused
            results.expect("cpu-load-pauses", idle < 10_000_000, "the process ran \(idle) ns in 100 ms while paused")

            // An interlude: once, on the matching message, `after` into the work, with the work going on after it.
            let stamps = Mutex<[Microseconds]>([])
            target.interlude = TargetListener.Interlude(
                after: 10_000, matches: { $0.action == "i" },
                body: { stamps.withLock { $0.append(monotonicNow()) } })
            let cursor = target.inbox.count
            try UnixSocket.send(client, #"{"action":"x"}"# + "\n")
            _ = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= cursor + 1 ? true : nil }
            target.work = 40_000
            try UnixSocket.send(client, #"{"action":"i"}"# + "\n")
            _ = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= cursor + 2 ? true : nil }
            try UnixSocket.send(client, #"{"action":"i"}"# + "\n")
            _ = poll(until: monotonicNow() + 2_000_000) { target.inbox.count >= cursor + 3 ? true : nil }
            let read = target.inbox.since(cursor)
            let ran = stamps.withLock { $0 }
            results.equal("interlude-once", ran.count, 1)
            if read.count == 3, let at = ran.first {
                results.expect(
                    "interlude-on-its-message", at >= read[1].arrival + 10_000 && at < read[2].arrival,
                    "ran at \(at), messages read at \(read.map(\.arrival))")
                results.expect(
                    "interlude-work-goes-on", read[2].arrival >= read[1].arrival + 40_000,
                    "messages read at \(read.map(\.arrival))")
            } else {
                results.expect("interlude-messages", false, "read \(read.map(\.raw)), ran \(ran)")
            }
            target.work = 0
            target.interlude = TargetListener.Interlude(after: 0, matches: { _ in true }, body: {})
            results.expect("interlude-cancel-pending", target.cancelInterlude(), "was not pending")
            results.expect("interlude-cancel-none", !target.cancelInterlude(), "was still pending")
            results.expect("busy-target-quick", monotonicNow() - quick < 2_000_000, "took too long")
        } catch {
            results.expect("busy-target-socket", false, error.description)
        }

        let socket = "/tmp/e2e-XXXXXX/target.sock"
        let busy = "/tmp/e2e-XXXXXX/busy.sock"
        let configs = [
            ("config-busy-target-run", BusyTargetRun.config(busy: busy, idle: socket)),
            ("config-filter", FilterRun.config(socket: socket)),
            ("config-filter-busy", FilterRun.busyConfig(socket: socket, busySocket: busy, measured: false)),
            ("config-filter-busy-measured", FilterRun.busyConfig(socket: socket, busySocket: busy, measured: true)),
        ]
        results.expect(
            "config-filter-busy-z", configs[2].1.contains(#"target = "busy", action = "z""#), configs[2].1)
        results.expect(
            "config-filter-busy-m", configs[3].1.contains(#"id = "m""#) && !configs[2].1.contains(#"id = "m""#),
            configs[3].1)
        guard let touchd = options.touchd else { return }
        do throws(DriverError) {
            let scratch = try ScratchDirectory()
            defer { scratch.remove() }
            for (name, text) in configs {
                let path = scratch.file(name + ".toml")
                try writeFile(path, text)
                let check = try Daemon(
                    executable: touchd, arguments: ["check", "--config", path], environment: [:], echoPrefix: nil)
                let status = check.waitForExit(until: monotonicNow() + 30_000_000)
                check.waitForOutputEnd(until: monotonicNow() + 2_000_000)
                if status == nil { check.killAndReap() }
                results.expect(
                    name, status == .exited(0),
                    "touchd check exited \(status.map(String.init(describing:)) ?? "not at all"): "
                        + check.output.all.joined(separator: " / "))
            }
        } catch {
            results.expect("busy-target-configurations", false, error.description)
        }
    }
}
