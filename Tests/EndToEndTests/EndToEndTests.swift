import Foundation
import Testing

/// The end-to-end test with real kernel input: boots the test VM (scripts/vm/run, see scripts/vm/README.md), which has
/// /dev/uinput and udevd, and runs the driver `touchd-e2e` in it against the freshly built `touchd`. The driver creates
/// a uinput touchscreen, runs the daemon and checks what reaches its targets; it exits 0 when every check passed.
///
/// The VM needs QEMU and friends from scripts/setup; without them this test fails rather than skips, so that a machine
/// that cannot run it never looks green. The first run also downloads Debian's kernel into .build/vm (apt-get download).
@Suite("end to end, in the test VM", .serialized)
struct EndToEndTests {
    /// The package's root directory (this file lives in Tests/EndToEndTests/).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Where scripts/vm/run keeps its kernel, initramfs and console logs (`console.log` links to the newest).
    static var vmCache: URL {
        if let path = ProcessInfo.processInfo.environment["TOUCHD_VM_CACHE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        return packageRoot.appendingPathComponent(".build/vm")
    }

    /// A product of this package: next to the test bundle in the products directory (SwiftPM builds every product
    /// before it runs tests), else in .build/debug.
    static func product(_ name: String) throws -> URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent(name),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name),
            packageRoot.appendingPathComponent(".build/debug").appendingPathComponent(name),
        ]
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        return try #require(found, "no \(name) executable in \(candidates.map(\.path)); run swift build")
    }

    /// Whether `name` is an executable in one of PATH's directories.
    static func onPath(_ name: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { directory in
            FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)")
        }
    }

    /// The newest console log, for failure messages: the target of the `console.log` link, or the link itself.
    static var consoleLog: String {
        let link = vmCache.appendingPathComponent("console.log").path
        return (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) ?? link
    }

    /// Runs scripts/vm/run with `arguments` from the package's root, its output streaming into the test log, and
    /// records a failure unless it exits 0. Awaited rather than waitUntilExit(): a blocked thread of the cooperative
    /// pool, which has only as many threads as the machine has cores, would starve the other tests' tasks for the
    /// minute the VM runs.
    static func runVM(_ label: String, arguments: [String]) async throws {
        let run = packageRoot.appendingPathComponent("scripts/vm/run")
        let process = Process()
        process.executableURL = run
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        process.standardInput = FileHandle.nullDevice
        // stdout and stderr are this process's own, so the driver's results (latency figures included) and the
        // harness's messages stream into the test log as they come. Written unbuffered, so that it comes before the
        // child's output in the log.
        FileHandle.standardOutput.write(Data("\(label): \(run.path) \(arguments.joined(separator: " "))\n".utf8))
        let (reason, status) = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { ended in
                continuation.resume(returning: (ended.terminationReason, ended.terminationStatus))
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        #expect(
            reason == .exit && status == 0,
            """
            scripts/vm/run ended with status \(status): see its output above; the guest's console log is \
            \(consoleLog) (exit status 125 means the VM itself failed: boot failure, panic or timeout)
            """)
    }

    /// Builds tools/perf/floors into .build/floors (the guest sees the host's files at the same paths), or says why
    /// not and returns nil: the floors are figures beside the comparison, not something the test needs.
    static func buildFloors() -> URL? {
        let output = packageRoot.appendingPathComponent(".build/floors")
        let process = Process()
        process.executableURL = packageRoot.appendingPathComponent("tools/perf/floors")
        process.arguments = [output.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            print("latency: cannot run tools/perf/floors (\(error)); measuring without the floors")
            return nil
        }
        // Three small C files: a few seconds, so waiting here does not hold the cooperative pool for long.
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            print("latency: tools/perf/floors failed (status \(process.terminationStatus)); measuring without them")
            return nil
        }
        return output
    }

    /// Runs the driver in the VM: `scripts/vm/run VM… -- touchd-e2e DRIVER… --touchd TOUCHD` (the freshly built
    /// touchd unless `touchd` names another). QEMU and the `needs` tools must be installed: without them the test
    /// fails rather than skips.
    static func runDriver(
        _ label: String, vm: [String], driver arguments: [String], needs: [String] = [], touchd: URL? = nil
    ) async throws {
        let missing = (["qemu-system-x86_64"] + needs).filter { !onPath($0) }
        guard missing.isEmpty else {
            Issue.record("not installed: \(missing.joined(separator: ", ")); run scripts/setup first")
            return
        }
        let touchd = try touchd ?? product("touchd")
        let driver = try product("touchd-e2e")
        try await runVM(label, arguments: vm + ["--", driver.path] + arguments + ["--touchd", touchd.path])
    }

    @Test("touchd-e2e passes against touchd in the VM", .timeLimit(.minutes(20)))
    func driverPassesInVM() async throws {
        try await Self.runDriver("end to end", vm: ["--timeout", "900"], driver: [])
    }

    /// A panel that appears while touchd starts (ScenarioStartup.swift): created 0, 50, 100, 200, 300, 500, 800 and
    /// 1200 ms after `touchd run`, three rounds each; both taps of every round must reach the socket target.
    @Test("a panel created while touchd starts is always read, in the VM", .timeLimit(.minutes(10)))
    func startupSweepInVM() async throws {
        try await Self.runDriver("start-up sweep", vm: ["--timeout", "600"], driver: ["--startup-sweep"])
    }

    /// End-to-end latency against libinput's own client (ScenarioLatency.swift): in one guest boot, four
    /// rounds each of 20 taps, alternating, read either by touchd (uinput write → the action's message on its socket
    /// target) or by `libinput debug-events` alone (uinput write → its TOUCH_DOWN/TOUCH_UP line). The driver prints
    /// both medians and their ratio (`latency-ratio:`) and says whether the 1.2 target was met.
    ///
    /// It fails only when either reader gave fewer than 40 messages: the ratio is a figure of an emulated guest on a
    /// shared machine (single rounds vary by 2×), so by default it is reported rather than judged, and this is the
    /// debug build. `TOUCHD_LATENCY_TOUCHD` names another touchd to measure (the static release build kiosks run,
    /// docs/performance.md; CI sets it), `TOUCHD_LATENCY_ROUNDS` asks for more rounds than four (at most 16; CI asks
    /// for 8: each new touchd lands on either vCPU, which moves a round's median by up to 2×, so more rounds give a
    /// steadier median and a p99 over 160 taps), and `TOUCHD_LATENCY_MAX_RATIO` makes a ratio above it fail (`--max-ratio`).
    /// `TOUCHD_VM_SMP=1` (read by scripts/vm/run) measures in a guest with one vCPU, where the rounds hold steady.
    ///
    /// With a C compiler on the host it also measures the floors (`tools/perf/floors`): the `latency-floor:` line says
    /// how much of either reader's latency any reader pays in this boot, and the `latency-floor-daemon:` line what a
    /// daemon with touchd's input and output and nothing between measures, so that touchd's time above it is its own
    /// (tools/perf/README.md).
    @Test("latency against libinput debug-events, in the VM", .timeLimit(.minutes(25)))
    func latencyAgainstLibinput() async throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["TOUCHD_LATENCY_ROUNDS"].flatMap { Int($0) }.map { min(max($0, 4), 16) } ?? 4
        var arguments = ["--compare-libinput", "--rounds", "\(rounds)"]
        if let ratio = environment["TOUCHD_LATENCY_MAX_RATIO"], !ratio.isEmpty { arguments += ["--max-ratio", ratio] }
        if let floors = Self.buildFloors() {
            arguments += ["--floor-reader", floors.appendingPathComponent("floor-reader").path]
            arguments += ["--floor-daemon", floors.appendingPathComponent("floor-daemon").path]
        }
        try await Self.runDriver(
            "latency against libinput", vm: ["--timeout", "\(300 + rounds * 75)"], driver: arguments,
            needs: ["libinput"],
            touchd: environment["TOUCHD_LATENCY_TOUCHD"].map { URL(fileURLWithPath: $0) })
    }

    /// Filter mode (docs/kiosk.md) with real kernel input: touchd grabs a uinput panel and forwards to its twin, and
    /// `libinput debug-events` on the whole seat shows what the application gets (ScenarioFilter.swift), also that the
    /// next touch forwarded to the application does not wait behind a busy socket target. It also prints the
    /// app-visible latency (`filter-latency:` lines, medians and p99) through touchd's twin against the panel read
    /// directly and, with a C compiler on the host, through a bare forwarder's twin (scripts/vm/floors), with the
    /// socket target idle and busy (figures, not pass marks). Like the latency test it runs `TOUCHD_LATENCY_TOUCHD`
    /// when that names another touchd (CI: the static release build kiosks run, whose figures docs/performance.md
    /// gives), the freshly built debug touchd otherwise.
    @Test("filter mode: what the app receives, in the VM", .timeLimit(.minutes(10)))
    func filterModeInVM() async throws {
        var arguments = ["--filter"]
        if let floors = Self.buildFloors() {
            arguments += ["--floor-filter", floors.appendingPathComponent("floor-filter").path]
        }
        try await Self.runDriver(
            "filter mode", vm: ["--timeout", "600"], driver: arguments,
            touchd: ProcessInfo.processInfo.environment["TOUCHD_LATENCY_TOUCHD"].map { URL(fileURLWithPath: $0) })
    }

    /// The next tap's action must not wait behind a busy socket target (ScenarioBusyTarget.swift, BusyTarget.swift):
    /// with one CPU kept busy, a tap whose action goes to a target that works 20 ms after each message it reads, then
    /// 5 ms later a tap whose action goes to an idle target; that action's median latency may exceed the same with the
    /// first target idle by at most that idle median and 8 ms (the CPU share the target's work may take; a wait for it
    /// costs 15 ms). The filter-mode test checks the same for the next touch forwarded to the application.
    @Test("the next tap's action does not wait behind a busy target, in the VM", .timeLimit(.minutes(5)))
    func busyTargetInVM() async throws {
        try await Self.runDriver("busy target", vm: ["--timeout", "240"], driver: ["--busy-target"])
    }

    /// Filter mode under a real compositor and client (ScenarioCage.swift): cage, which ignores libinput's touch
    /// cancel, shows wev; with the default settings a recognized admin press ends for wev when it is recognized and
    /// wev still gets the next tap in the same slot.
    @Test("filter mode under cage with a real client, in the VM", .timeLimit(.minutes(10)))
    func filterModeUnderCage() async throws {
        try await Self.runDriver(
            "filter mode under cage", vm: ["--gpu", "--timeout", "600"], driver: ["--cage"], needs: ["cage", "wev"])
    }

    /// `[filter] twin_space` under cage (ScenarioCageTwinSpace.swift): with cage turned to portrait and
    /// `twin_space = "output"`, wev gets each tap where touchd's controls saw it (a rotated panel, a calibrated one, two
    /// panels on halves of the output); with `"device"` under an unrotated cage, as before.
    @Test("the twin in output space under cage with a real client, in the VM", .timeLimit(.minutes(10)))
    func twinSpaceUnderCage() async throws {
        try await Self.runDriver(
            "twin_space under cage", vm: ["--gpu", "--timeout", "600"], driver: ["--cage", "--twin-space"],
            needs: ["cage", "wev"])
    }
}
