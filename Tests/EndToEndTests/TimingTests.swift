import Foundation
import Testing

/// The VM suite's measurements, in a guest of their own: they are figures of one boot, so nothing else runs in that
/// guest, and this file sorts after the others so that the serialized suite runs it last (CI's release build, which
/// they measure, is still compiling while the other guests run).
extension EndToEndTests {
    /// The touchd `TOUCHD_LATENCY_TOUCHD` names never came: the test fails with this.
    struct MissingBuild: Error, CustomStringConvertible {
        let description: String
    }

    /// The touchd to measure: `TOUCHD_LATENCY_TOUCHD` (the static release build kiosks run, docs/performance.md; CI
    /// sets it), else the freshly built one. With `TOUCHD_LATENCY_TOUCHD_WAIT=SECONDS` the file may not exist yet: the
    /// test waits that long for it, and fails at once when `PATH.failed` appears instead (CI builds the release
    /// binary beside the tests and moves it into place only once it is whole). Throws when it never comes.
    static func measuredTouchd() async throws -> URL? {
        guard let path = ProcessInfo.processInfo.environment["TOUCHD_LATENCY_TOUCHD"], !path.isEmpty else { return nil }
        return try await built(path, executable: true)
    }

    /// The Debian package of the measured touchd that `TOUCHD_INSTALL_DEB` names (CI builds it from its release build,
    /// scripts/package-deb), waited for as the binary is; nil without the variable. The variable without
    /// `TOUCHD_LATENCY_TOUCHD` is an error: the install check installs the package's binary both ways.
    static func installPackage(for measured: URL?) async throws -> URL? {
        guard let path = ProcessInfo.processInfo.environment["TOUCHD_INSTALL_DEB"], !path.isEmpty else { return nil }
        guard measured != nil else {
            throw MissingBuild(
                description: "TOUCHD_INSTALL_DEB=\(path) needs TOUCHD_LATENCY_TOUCHD, the touchd it was built from")
        }
        return try await built(path, executable: false)
    }

    /// `path` once it exists (and is executable, for a binary), waiting up to `TOUCHD_LATENCY_TOUCHD_WAIT` seconds;
    /// throws at once when `PATH.failed` appears, or when the wait is over.
    static func built(_ path: String, executable: Bool) async throws -> URL {
        let waitSeconds =
            ProcessInfo.processInfo.environment["TOUCHD_LATENCY_TOUCHD_WAIT"].flatMap { Int($0) }
            .map { min(max($0, 0), 7200) } ?? 0
        let files = FileManager.default
        var waited = 0
        while !(executable ? files.isExecutableFile(atPath: path) : files.isReadableFile(atPath: path)) {
            if files.fileExists(atPath: path + ".failed") {
                throw MissingBuild(description: "no \(path): \(path).failed says its build failed (see CI's output)")
            }
            guard waited < waitSeconds else {
                throw MissingBuild(
                    description: "no \(executable ? "executable " : "")\(path) after waiting \(waitSeconds) s "
                        + "(TOUCHD_LATENCY_TOUCHD_WAIT)")
            }
            if waited == 0 { print("latency: waiting up to \(waitSeconds) s for \(path) to be built") }
            try await Task.sleep(for: .seconds(1))
            waited += 1
        }
        if waited > 0 { print("latency: \(path) is there after \(waited) s") }
        return URL(fileURLWithPath: path)
    }

    /// In one guest with systemd as PID 1, as on a kiosk, the touchd of `measuredTouchd()`:
    ///
    /// - Latency against libinput's own client (ScenarioLatency.swift): rounds of 20 taps, alternating, read either
    ///   by touchd (uinput write → the action's message on its socket target) or by `libinput debug-events` alone.
    ///   The driver prints both medians, both p99 and their ratios (`latency-ratio:`). It fails only when either
    ///   reader gave fewer than 40 messages: the ratio is a figure of an emulated guest on a shared machine, reported
    ///   rather than judged (`TOUCHD_LATENCY_MAX_RATIO` makes a ratio above it fail). `TOUCHD_LATENCY_ROUNDS` asks
    ///   for more rounds than four (at most 16; CI asks for 8). The floors of tools/perf (a bare reader and a bare
    ///   daemon) are measured by hand only (tools/perf/README.md).
    /// - Filter mode with real kernel input (ScenarioFilter.swift): touchd grabs a uinput panel and forwards to its
    ///   twin, `libinput debug-events` on the whole seat shows what the application gets; also that the next touch
    ///   forwarded does not wait behind a busy socket target, and the app-visible latency (`filter-latency:` lines)
    ///   through touchd's twin against the panel read directly and, with a C compiler on the host, through the bare
    ///   forwarder tools/perf/floor-filter.c, with the socket target idle and busy, in ten passes of a round per reader
    ///   and condition (`TOUCHD_FILTER_PASSES` asks for more, at most 30; CI asks for 20). (The same forwarder reading
    ///   through libinput, floor-filter-libinput.c, is measured by hand: tools/perf/README.md.)
    /// - With `TOUCHD_INSTALL_DEB` (CI sets it), after the measurements: installing on a kiosk
    ///   (`scripts/vm/check-install --in-guest`), the .deb with dpkg -i and --purge, then scripts/install and
    ///   scripts/uninstall with the same binary, each checked under systemd. It needs a systemd guest and the release
    ///   build, which is why it is here rather than in a guest of its own (one boot fewer in CI).
    @Test(
        "touchd-e2e's measurements in one guest: latency against libinput, filter mode against a bare forwarder")
    func measurementsInOneGuest() async throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["TOUCHD_LATENCY_ROUNDS"].flatMap { Int($0) }.map { min(max($0, 4), 16) } ?? 4
        var latency = ["--compare-libinput", "--rounds", "\(rounds)"]
        if let ratio = environment["TOUCHD_LATENCY_MAX_RATIO"], !ratio.isEmpty { latency += ["--max-ratio", ratio] }
        let passes = environment["TOUCHD_FILTER_PASSES"].flatMap { Int($0) }.map { min(max($0, 10), 30) } ?? 10
        var filter = ["--filter", "--latency-passes", "\(passes)"]
        if let floors = Self.buildFloors() {
            filter += ["--floor-filter", floors.appendingPathComponent("floor-filter").path]
        }
        let measured = try await Self.measuredTouchd()
        var steps = [
            Step(driver: latency, touchd: measured, needs: ["libinput"]),
            Step(driver: filter, touchd: measured),
        ]
        // Each step's own bound, in the guest's seconds, as when each had a guest of its own.
        var timeout = (300 + rounds * 40) + (600 + (passes - 10) * 25)
        if let package = try await Self.installPackage(for: measured), let measured {
            let check = Self.packageRoot.appendingPathComponent("scripts/vm/check-install").path
            steps.append(
                Step(command: [check, "--in-guest", "--binary", measured.path, "--deb", package.path], needs: ["dpkg"]))
            timeout += 600
        }
        try await Self.runSequence(
            "touchd-e2e measurements in one guest", vm: ["--systemd", "--timeout", "\(timeout)"], steps: steps)
    }
}
