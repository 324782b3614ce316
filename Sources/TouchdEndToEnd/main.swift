import Glibc

// touchd-e2e: the end-to-end driver. See Options.usage, and Scenario for the sequence of checks.

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    Console.line("touchd-e2e: \(error.message)\n\n\(Options.usage)")
    exit(2)
}
if options.help {
    Console.line(Options.usage)
    exit(0)
}
Watchdog.installSignalHandlers()
// A filter run as a child also makes the busy-target pairs and the latency rounds of three readers, idle and busy;
// the twin_space run starts cage and touchd once per case; the speech run waits for speech-dispatcher to list its
// voices, then speaks through touchd speak and through touches. Each latency pass beyond the default ten
// (`--latency-passes`) is a round per reader and condition more: 40 s each, for up to five readers of about 3 s.
Watchdog.start(
    limit: options.systemdUnit
        ? Limits.systemdUnitRun
        : options.startupSweep
            ? StartupSweep.limit(rounds: options.sweepRounds)
            : options.filter
                ? 2 * Limits.global + Microseconds(max(0, options.latencyPasses - Options.defaultLatencyPasses))
                    * 40_000_000
                : options.twinSpace || options.speech ? 2 * Limits.global : Limits.global)

if options.selfTest {
    let status = SelfTest(options: options).run()
    runFinished.store(true, ordering: .relaxed)
    exit(status)
}

guard let touchd = options.touchd, access(touchd, X_OK) == 0 else {
    Console.line("touchd-e2e: --touchd \(options.touchd ?? ""): not an executable file: \(describe(errno: errno))")
    exit(2)
}
if !options.withoutTouchscreen, let reason = VirtualTouchscreen.unavailableReason() {
    Console.line("touchd-e2e: SKIP: \(reason)")
    exit(77)
}
/// Ends a run of one mode: its status, or 1 when it could not be set up, once the run is marked finished.
func finish(_ run: () throws -> Int32) -> Never {
    let status: Int32
    do {
        status = try run()
    } catch {
        Console.line("touchd-e2e: cannot set up: \(error)")
        status = 1
    }
    runFinished.store(true, ordering: .relaxed)
    exit(status)
}

if options.cage && options.twinSpace { finish { CageTwinSpaceRun(options: options, touchd: touchd).run() } }
if options.cage { finish { CageRun(options: options, touchd: touchd).run() } }
if options.compareLibinput { finish { LatencyComparison(options: options, touchd: touchd).run() } }
if options.startupSweep { finish { try StartupSweep(options: options, touchd: touchd).run() } }
if options.busyTarget { finish { try BusyTargetRun(options: options, touchd: touchd).run() } }
if options.speech { finish { try SpeechRun(options: options, touchd: touchd).run() } }
if options.identify { finish { try IdentifyRun(options: options, touchd: touchd).run() } }
if options.calibrate { finish { try CalibrateRun(options: options, touchd: touchd).run() } }
if options.filter { finish { FilterRun(options: options, touchd: touchd).run() } }
if options.systemdUnit { finish { SystemdUnitRun(options: options, touchd: touchd).run() } }
let scenario: Scenario
do {
    scenario = try Scenario(options: options)
} catch {
    Console.line("touchd-e2e: cannot set up: \(error)")
    exit(1)
}
let status = options.withoutTouchscreen ? scenario.runWithoutTouchscreen() : scenario.run()
runFinished.store(true, ordering: .relaxed)
exit(status)
