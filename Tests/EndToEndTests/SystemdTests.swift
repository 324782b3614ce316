import Foundation
import Testing

/// The shipped units under real systemd: boots the test VM with systemd as PID 1 (`scripts/vm/run --systemd`) and runs
/// `touchd-e2e --systemd-unit`, which installs systemd/touchd.service, touchd.socket and touchd.sysusers with the
/// freshly built touchd as /usr/bin/touchd and checks readiness, reloads, the watchdog, hot-plug and both kinds of
/// target under the full sandbox, and the journal's fields. Fails rather than skips without QEMU, like
/// EndToEndTests. Part of that suite, which is serialized: two emulated guests at once on a 2-core machine starve each
/// other and every other test.
extension EndToEndTests {
    @Test("touchd.service passes touchd-e2e --systemd-unit under systemd", .timeLimit(.minutes(15)))
    func unitPassesUnderSystemd() async throws {
        guard EndToEndTests.onPath("qemu-system-x86_64") else {
            Issue.record("qemu-system-x86_64 is not installed: run scripts/setup first")
            return
        }
        let touchd = try EndToEndTests.product("touchd")
        let driver = try EndToEndTests.product("touchd-e2e")
        let root = EndToEndTests.packageRoot
        try await EndToEndTests.runVM(
            "systemd units",
            arguments: [
                "--systemd", "--timeout", "600", "--", driver.path, "--systemd-unit", "--expect-control-socket",
                "--touchd", touchd.path, "--units", root.appendingPathComponent("systemd").path,
            ])
    }

    /// Filter mode under the shipped unit's full sandbox (ScenarioFilter.swift with `--systemd-unit`): the groups and
    /// the udev rule as the installers put them, /dev/uinput for touchd-uinput only, and every filter check with
    /// touchd.service reloaded by `systemctl reload` and killed by `systemctl kill`.
    @Test("filter mode under touchd.service, in the VM", .timeLimit(.minutes(10)))
    func filterModeUnderSystemd() async throws {
        guard EndToEndTests.onPath("qemu-system-x86_64") else {
            Issue.record("qemu-system-x86_64 is not installed: run scripts/setup first")
            return
        }
        let touchd = try EndToEndTests.product("touchd")
        let driver = try EndToEndTests.product("touchd-e2e")
        let root = EndToEndTests.packageRoot
        try await EndToEndTests.runVM(
            "filter mode under systemd",
            arguments: [
                "--systemd", "--timeout", "600", "--", driver.path, "--filter", "--systemd-unit", "--touchd",
                touchd.path, "--units", root.appendingPathComponent("systemd").path,
            ])
    }

    /// Filter mode under the shipped unit with a real compositor and client (ScenarioCage.swift with
    /// `--systemd-unit`): cage and wev in a guest with systemd as PID 1 and a GPU.
    @Test("filter mode under touchd.service with cage and wev, in the VM", .timeLimit(.minutes(10)))
    func filterModeUnderSystemdAndCage() async throws {
        guard EndToEndTests.onPath("qemu-system-x86_64"), EndToEndTests.onPath("cage"), EndToEndTests.onPath("wev")
        else {
            Issue.record("qemu-system-x86_64, cage or wev is not installed: run scripts/setup first")
            return
        }
        let touchd = try EndToEndTests.product("touchd")
        let driver = try EndToEndTests.product("touchd-e2e")
        let root = EndToEndTests.packageRoot
        try await EndToEndTests.runVM(
            "filter mode under systemd and cage",
            arguments: [
                "--systemd", "--gpu", "--timeout", "600", "--", driver.path, "--cage", "--systemd-unit", "--touchd",
                touchd.path, "--units", root.appendingPathComponent("systemd").path,
            ])
    }
}
