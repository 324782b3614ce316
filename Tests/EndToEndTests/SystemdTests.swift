import Foundation
import Testing

/// The shipped units under real systemd: boots the test VM with systemd as PID 1 (`scripts/vm/run --systemd`) and runs
/// `touchd-e2e --systemd-unit`, which installs systemd/touchd.service, touchd.socket and touchd.sysusers with the
/// freshly built touchd as /usr/bin/touchd and checks readiness, reloads, the watchdog, hot-plug and both kinds of
/// target under the full sandbox, and the journal's fields. Fails rather than skips without QEMU, like
/// EndToEndTests. Part of that suite, which is serialized: two emulated guests at once on a 2-core machine starve each
/// other and every other test.
extension EndToEndTests {
    /// The repository's units, which `--systemd-unit` installs.
    static var unitsDirectory: String { packageRoot.appendingPathComponent("systemd").path }

    /// In one guest with systemd as PID 1 and a GPU:
    ///
    /// - `touchd-e2e --systemd-unit`: readiness, reloads, the watchdog, hot-plug, both kinds of target under the full
    ///   sandbox, the journal's fields, the start-up sweep under the unit.
    /// - Filter mode under the shipped unit's full sandbox (ScenarioFilter.swift with `--systemd-unit`): the groups and
    ///   the udev rule as the installers put them, /dev/uinput for touchd-uinput only, and every filter check with
    ///   touchd.service reloaded by `systemctl reload` and killed by `systemctl kill`.
    /// - Filter mode under the shipped unit with a real compositor and client (ScenarioCage.swift with
    ///   `--systemd-unit`): cage and wev.
    @Test(
        "touchd.service under systemd in one guest: the unit, filter mode, filter mode under cage")
    func unitUnderSystemd() async throws {
        let units = EndToEndTests.unitsDirectory
        try await EndToEndTests.runSequence(
            "touchd.service under systemd", vm: ["--systemd", "--gpu", "--timeout", "1800"],
            steps: [
                Step(driver: ["--systemd-unit", "--expect-control-socket", "--units", units]),
                Step(driver: ["--filter", "--systemd-unit", "--units", units]),
                Step(driver: ["--cage", "--systemd-unit", "--units", units], needs: ["cage", "wev"]),
            ])
    }
}
