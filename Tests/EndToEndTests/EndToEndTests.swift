import Foundation
import Testing

/// The end-to-end test with real kernel input: boots the test VM (scripts/vm/run, see scripts/vm/README.md), which has
/// /dev/uinput and udevd, and runs the driver `touchd-e2e` in it against the freshly built `touchd`. The driver creates
/// a uinput touchscreen, runs the daemon and checks what reaches its targets; it exits 0 when every check passed.
///
/// The VM needs QEMU and friends from scripts/setup; without them this test fails rather than skips, so that a machine
/// that cannot run it never looks green. The first run also downloads Debian's kernel into .build/vm (apt-get download).
///
/// Its tests carry no `.timeLimit`: `scripts/vm/run --timeout` bounds every guest (a guest past it is killed and the
/// test fails with status 125), and a time limit makes Swift Testing run the test's body in a new task, queued behind
/// every unit test's task on a pool of two threads. In CI that held the first guest back 41 s after its test had
/// started; without it the body runs in the serialized suite's own task, which already has a thread.
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

    /// One check of the driver's: its arguments, the touchd it runs (the freshly built one unless it names another),
    /// and the host tools it needs. Or, with `command`, a program of the repository's run as it is (the install check).
    struct Step {
        var driver: [String]
        var touchd: URL?
        var needs: [String] = []
        var command: [String]?

        init(driver: [String], touchd: URL? = nil, needs: [String] = []) {
            self.driver = driver
            self.touchd = touchd
            self.needs = needs
        }

        init(command: [String], needs: [String] = []) {
            driver = []
            self.needs = needs
            self.command = command
        }
    }

    /// Runs the steps in one guest, one after the other (scripts/vm/sequence): `scripts/vm/run VM… --
    /// scripts/vm/sequence touchd-e2e STEP… --touchd TOUCHD :: …`. Every step runs whatever the others did; the test
    /// fails when any of them failed, and the `sequence:` lines in the log say which. One boot for all, rather than one
    /// per step: each boot costs 10–20 s of the build machine's two cores. QEMU and the steps' `needs` must be
    /// installed: without them the test fails rather than skips.
    static func runSequence(_ label: String, vm: [String], steps: [Step]) async throws {
        let missing = (["qemu-system-x86_64"] + steps.flatMap(\.needs)).filter { !onPath($0) }
        guard missing.isEmpty else {
            Issue.record(
                "not installed: \(Array(Set(missing)).sorted().joined(separator: ", ")); run scripts/setup first")
            return
        }
        let driver = try product("touchd-e2e")
        var command = [packageRoot.appendingPathComponent("scripts/vm/sequence").path]
        for (index, step) in steps.enumerated() {
            if index > 0 { command.append("::") }
            if let program = step.command {
                command += program
            } else {
                let touchd = try step.touchd ?? product("touchd")
                command += [driver.path] + step.driver + ["--touchd", touchd.path]
            }
        }
        try await runVM(label, arguments: vm + ["--"] + command)
    }

    /// The driver's checks that need no systemd and judge no speed, in one guest with a GPU (the measurements have a
    /// guest of their own, TimingTests.swift; cage's checks come last, so that nothing they start is left to load
    /// the guest while the busy-target check times the next tap):
    ///
    /// - A panel that appears while touchd starts (ScenarioStartup.swift): created 0, 50, 100, 200, 300, 500, 800
    ///   and 1200 ms after `touchd run`, three rounds each; both taps of every round must reach the socket target.
    /// - `touchd identify` (ScenarioIdentify.swift): a uhid panel with a sibling mouse node is listed with its entry
    ///   and its sibling, `--touch` names the panel a tap came from, and filter mode's `grab_siblings` keeps the
    ///   sibling's motion from the compositor.
    /// - `touchd calibrate` (ScenarioCalibrate.swift): a panel the driver skews is calibrated through the targets
    ///   calibrate draws on the VM's display; afterwards every check point lands within 2 output pixels, the file
    ///   keeps its comments, and a reload applies it.
    /// - The default run (touchd-e2e with no mode): taps, gestures, reloads, hot-plug, faults, record and replay.
    /// - The next tap's action does not wait behind a busy target (ScenarioBusyTarget.swift): its median may exceed
    ///   the same with the first target idle by at most that idle median and 8 ms.
    /// - Explore by touch with a real speech server (ScenarioSpeech.swift): speech-dispatcher with its espeak-ng module
    ///   through the shipped launcher (packaging/speech/sd_espeak-ng), playing into ALSA's loopback card, captured
    ///   with arecord; touchd in filter mode with `[accessibility]`: the start gesture, exploring, both double taps,
    ///   every CANCEL sent and heard within 100 ms of it, and touches flowing with the server stopped. A stop past
    ///   100 ms only by the time the guest stood still (the emulator did not run it: StallWatch.swift) is reported
    ///   and not judged late; one past it with the guest running fails (docs/speech-server.md, "Measured").
    /// - Filter mode under a real compositor and client (ScenarioCage.swift): cage, which ignores libinput's touch
    ///   cancel, shows wev; a recognized admin press ends for wev when it is recognized, and wev still gets the next
    ///   tap in the same slot.
    /// - `[filter] twin_space` under cage (ScenarioCageTwinSpace.swift): with cage turned to portrait and
    ///   `twin_space = "output"`, wev gets each tap where touchd's controls saw it.
    @Test(
        "touchd-e2e's checks in one guest: start-up, identify, calibrate, default, busy target, speech, cage")
    func checksInOneGuest() async throws {
        // Each step's own bound, in the guest's seconds, as when each had a guest of its own.
        let timeout = 600 + 300 + 300 + 900 + 240 + 600 + 600 + 600
        try await Self.runSequence(
            "touchd-e2e in one guest", vm: ["--gpu", "--timeout", "\(timeout)"],
            steps: [
                Step(driver: ["--startup-sweep"]),
                Step(driver: ["--identify"]),
                Step(driver: ["--calibrate"]),
                Step(driver: []),
                Step(driver: ["--busy-target"]),
                Step(
                    driver: ["--speech"],
                    needs: ["speech-dispatcher", "espeak-ng", "arecord", "sox"]),
                Step(driver: ["--cage"], needs: ["cage", "wev"]),
                Step(driver: ["--cage", "--twin-space"], needs: ["cage", "wev"]),
            ])
    }
}
