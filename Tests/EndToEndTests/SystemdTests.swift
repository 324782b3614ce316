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

    @Test("touchd.service passes touchd-e2e --systemd-unit under systemd", .timeLimit(.minutes(15)))
    func unitPassesUnderSystemd() async throws {
        try await EndToEndTests.runDriver(
            "systemd units", vm: ["--systemd", "--timeout", "600"],
            driver: ["--systemd-unit", "--expect-control-socket", "--units", EndToEndTests.unitsDirectory])
    }

    /// Filter mode under the shipped unit's full sandbox (ScenarioFilter.swift with `--systemd-unit`): the groups and
    /// the udev rule as the installers put them, /dev/uinput for touchd-uinput only, and every filter check with
    /// touchd.service reloaded by `systemctl reload` and killed by `systemctl kill`.
    @Test("filter mode under touchd.service, in the VM", .timeLimit(.minutes(10)))
    func filterModeUnderSystemd() async throws {
        try await EndToEndTests.runDriver(
            "filter mode under systemd", vm: ["--systemd", "--timeout", "600"],
            driver: ["--filter", "--systemd-unit", "--units", EndToEndTests.unitsDirectory])
    }

    /// Filter mode under the shipped unit with a real compositor and client (ScenarioCage.swift with
    /// `--systemd-unit`): cage and wev in a guest with systemd as PID 1 and a GPU.
    @Test("filter mode under touchd.service with cage and wev, in the VM", .timeLimit(.minutes(10)))
    func filterModeUnderSystemdAndCage() async throws {
        try await EndToEndTests.runDriver(
            "filter mode under systemd and cage", vm: ["--systemd", "--gpu", "--timeout", "600"],
            driver: ["--cage", "--systemd-unit", "--units", EndToEndTests.unitsDirectory], needs: ["cage", "wev"])
    }
}
