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
        let run = root.appendingPathComponent("scripts/vm/run")

        let process = Process()
        process.executableURL = run
        process.arguments = [
            "--systemd", "--timeout", "600", "--", driver.path, "--systemd-unit", "--expect-control-socket", "--touchd",
            touchd.path, "--units",
            root.appendingPathComponent("systemd").path,
        ]
        process.currentDirectoryURL = root
        process.standardInput = FileHandle.nullDevice
        FileHandle.standardOutput.write(
            Data("systemd units: \(run.path) \(process.arguments!.joined(separator: " "))\n".utf8))
        // Awaited rather than waitUntilExit(): a blocked thread of the cooperative pool, which has only as many
        // threads as the machine has cores, would starve the other tests' tasks for the minute the VM runs.
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
            scripts/vm/run --systemd ended with status \(status): see its output above; the guest's console log is \
            \(EndToEndTests.consoleLog) (exit status 125 means the VM itself failed: boot failure, panic or timeout)
            """)
    }
}
