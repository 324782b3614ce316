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
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["TOUCHD_LATENCY_TOUCHD"], !path.isEmpty else { return nil }
        let waitSeconds =
            environment["TOUCHD_LATENCY_TOUCHD_WAIT"].flatMap { Int($0) }.map { min(max($0, 0), 7200) } ?? 0
        let files = FileManager.default
        var waited = 0
        while !files.isExecutableFile(atPath: path) {
            if files.fileExists(atPath: path + ".failed") {
                throw MissingBuild(description: "no \(path): \(path).failed says its build failed (see CI's output)")
            }
            guard waited < waitSeconds else {
                throw MissingBuild(
                    description: "no executable \(path) after waiting \(waitSeconds) s (TOUCHD_LATENCY_TOUCHD_WAIT)")
            }
            if waited == 0 { print("latency: waiting up to \(waitSeconds) s for \(path) to be built") }
            try await Task.sleep(for: .seconds(1))
            waited += 1
        }
        if waited > 0 { print("latency: \(path) is there after \(waited) s") }
        return URL(fileURLWithPath: path)
    }

    /// In one guest, the touchd of `measuredTouchd()`:
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
    ///   forwarder tools/perf/floor-filter.c and the same forwarder reading through libinput
    ///   (floor-filter-libinput.c), with the socket target idle and busy.
    @Test(
        "touchd-e2e's measurements in one guest: latency against libinput, filter mode against a bare forwarder")
    func measurementsInOneGuest() async throws {
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["TOUCHD_LATENCY_ROUNDS"].flatMap { Int($0) }.map { min(max($0, 4), 16) } ?? 4
        var latency = ["--compare-libinput", "--rounds", "\(rounds)"]
        if let ratio = environment["TOUCHD_LATENCY_MAX_RATIO"], !ratio.isEmpty { latency += ["--max-ratio", ratio] }
        var filter = ["--filter"]
        if let floors = Self.buildFloors() {
            filter += ["--floor-filter", floors.appendingPathComponent("floor-filter").path]
            filter += ["--floor-filter-libinput", floors.appendingPathComponent("floor-filter-libinput").path]
        }
        let measured = try await Self.measuredTouchd()
        // Each step's own bound, in the guest's seconds, as when each had a guest of its own.
        let timeout = (300 + rounds * 40) + 600
        try await Self.runSequence(
            "touchd-e2e measurements in one guest", vm: ["--timeout", "\(timeout)"],
            steps: [
                Step(driver: latency, touchd: measured, needs: ["libinput"]),
                Step(driver: filter, touchd: measured),
            ])
    }
}
