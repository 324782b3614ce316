import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// `touchd run` as systemd runs it, on a machine without touchscreens: readiness, reloads that keep or replace the
/// configuration, signals, exit statuses. Contacts through real kernel input are the end-to-end test's job.
@Suite("touchd run", .serialized)
struct RunCommandTests {
    @Test func readyReloadAndStop() throws {
        let fixture = try TouchdProcess.Fixture()
        let (config, notify) = (fixture.config, fixture.notify)
        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }

        // READY=1 without a touchscreen (O1, D1).
        let ready = try #require(notify.next(), "no READY=1; stderr:\n\(daemon.errorText)")
        #expect(ready == ["READY=1", "STATUS=waiting for a touchscreen"])

        // SIGHUP, SIGINT and SIGTERM are blocked in every thread by the time READY=1 is sent, so a SIGHUP can never
        // hit a default handler (systemd v262 fails notify-reload services that neither catch nor block it).
        let tasks = try FileManager.default.contentsOfDirectory(
            atPath: "/proc/\(daemon.process.processIdentifier)/task")
        #expect(!tasks.isEmpty)
        for task in tasks {
            // A short-lived thread (the start's scheduling probe) may have ended since the listing.
            guard
                let status = try? String(
                    contentsOfFile: "/proc/\(daemon.process.processIdentifier)/task/\(task)/status", encoding: .utf8)
            else { continue }
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") })
            let mask = try #require(
                UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16))
            for signal in [SIGHUP, SIGINT, SIGTERM] {
                #expect(mask & (1 << UInt64(signal - 1)) != 0, "thread \(task) does not block signal \(signal)")
            }
        }

        // A broken file is refused and the running configuration kept (C17).
        try "[output\nwidth = 1000\n".write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let reloading = try #require(notify.next())
        #expect(reloading.first == "RELOADING=1")
        #expect(reloading.contains { $0.hasPrefix("MONOTONIC_USEC=") && UInt64($0.dropFirst(15)) != nil })
        let refused = try #require(notify.next())
        #expect(refused.first == "READY=1")
        #expect(refused.contains { $0.hasPrefix("STATUS=reload failed: \(config.path):1:") })
        #expect(daemon.process.isRunning)

        // A valid file replaces it (C16).
        try TouchdProcess.valid.replacingOccurrences(of: "width = 200", with: "width = 300")
            .write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(notify.next()?.first == "RELOADING=1")
        #expect(notify.next() == ["READY=1", "STATUS=waiting for a touchscreen"])

        // SIGTERM stops gracefully (O4).
        daemon.signal(SIGTERM)
        #expect(notify.next() == ["STOPPING=1", "STATUS=stopping"])
        #expect(daemon.exitStatus() == 0)
        let log = daemon.errorText
        #expect(log.contains("reload failed; the previous configuration stays in use generation=1"))
        #expect(log.contains("configuration reloaded controls=1 generation=2"))
        #expect(log.contains("processing latency"))
        #expect(log.contains("touchd stopped"))
    }

    /// The hostile-input issue, item 2: a 60 KB line of 30,000 dotted key parts appended to the live file and followed
    /// by SIGHUP killed a running daemon (the parser overflowed its stack). Now the reload is refused with the key's
    /// position and the daemon keeps its configuration and goes on.
    @Test func aDeepDottedKeyAppendedToTheLiveFileIsRefusedAndTheDaemonGoesOn() throws {
        let fixture = try TouchdProcess.Fixture()
        let (config, notify) = (fixture.config, fixture.notify)
        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(notify.next()?.first == "READY=1")

        let deep = Array(repeating: "a", count: 30_000).joined(separator: ".") + " = 1\n"
        try (TouchdProcess.valid + deep).write(to: config, atomically: true, encoding: .utf8)
        let line = TouchdProcess.valid.split(separator: "\n", omittingEmptySubsequences: false).count
        daemon.signal(SIGHUP)
        #expect(notify.next()?.first == "RELOADING=1")
        let refused = try #require(notify.next(), "stderr:\n\(daemon.errorText)")
        #expect(refused.first == "READY=1")
        #expect(
            refused.contains(
                "STATUS=reload failed: \(config.path):\(line):129: error: a key with more than 64 dotted parts"),
            "\(refused)")
        #expect(daemon.process.isRunning)

        // And it still reloads a good file afterwards.
        try TouchdProcess.valid.write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(notify.next()?.first == "RELOADING=1")
        #expect(notify.next() == ["READY=1", "STATUS=waiting for a touchscreen"])
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    /// C1: an invalid configuration at start is refused with every problem and exit 78 (EX_CONFIG); READY=1 is never
    /// sent.
    @Test func invalidConfigurationAtStartExits78() throws {
        let fixture = try TouchdProcess.Fixture(configuration: "[output]\nwidth = -5\nheight = 1000\n")
        let (config, notify) = (fixture.config, fixture.notify)
        let daemon = try fixture.start()
        #expect(daemon.exitStatus() == 78)
        #expect(daemon.errorText.contains("error: \(config.path):2:"))
        let status = notify.next(within: 1)
        #expect(status?.first?.hasPrefix("STATUS=configuration invalid: ") == true)
        #expect(status?.contains("READY=1") == false)
    }

    /// F4: filter mode without write access to /dev/uinput is refused at start (exit 78, a message that says what to
    /// do) before any device is opened, so touchd never grabs a panel it cannot forward. Build machines have no
    /// /dev/uinput; where this process can open it the check cannot be made here (the VM runs filter mode for real).
    @Test func filterModeWithoutUinputExits78() throws {
        guard access("/dev/uinput", W_OK) != 0 else { return }
        let fixture = try TouchdProcess.Fixture(configuration: TouchdProcess.valid + "\n[filter]\nenabled = true\n")
        let daemon = try fixture.start()
        #expect(daemon.exitStatus() == 78)
        #expect(
            daemon.errorText.contains("filter mode is on but touchd cannot create virtual touchscreens: /dev/uinput:"))
        #expect(!daemon.errorText.contains("touchscreen added"))
        let status = fixture.notify.next(within: 1)
        #expect(status?.contains { $0.hasPrefix("STATUS=filter mode refused: /dev/uinput") } == true)
        #expect(status?.contains("READY=1") == false)
    }

    /// O2: with `WatchdogSec=` (WATCHDOG_USEC) the input loop pings `WATCHDOG=1` at least every half interval, even
    /// with no input at all; without it, an idle daemon sends nothing.
    @Test func watchdogPingsComeFromTheInputLoop() throws {
        let fixture = try TouchdProcess.Fixture()
        let notify = fixture.notify
        let daemon = try fixture.start(environment: ["WATCHDOG_USEC": "200000"])
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(notify.next()?.first == "READY=1")
        for _ in 0..<3 {
            #expect(notify.next(within: 20) == ["WATCHDOG=1"], "stderr:\n\(daemon.errorText)")
        }
        daemon.signal(SIGTERM)
        var stopping = false
        while let message = notify.next(within: 20) {
            if message.first == "STOPPING=1" {
                stopping = true
                break
            }
        }
        #expect(stopping)
        #expect(daemon.exitStatus() == 0)
        #expect(daemon.errorText.contains("systemd watchdog enabled interval_us=200000"))

        // A WATCHDOG_PID naming another process means the watchdog is not ours: no pings.
        let quiet = try fixture.start(environment: ["WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"])
        defer { if quiet.process.isRunning { quiet.signal(SIGKILL) } }
        #expect(notify.next()?.first == "READY=1")
        #expect(notify.next(within: 1) == nil)
        quiet.signal(SIGTERM)
        #expect(quiet.exitStatus() == 0)
    }

    @Test func sigintStopsLikeSigterm() throws {
        let fixture = try TouchdProcess.Fixture()
        let notify = fixture.notify
        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(notify.next()?.first == "READY=1")
        daemon.signal(SIGINT)
        #expect(notify.next()?.first == "STOPPING=1")
        #expect(daemon.exitStatus() == 0)
    }

    /// A group's `to_app = false` without filter mode was logged once per control in the group, and
    /// each line said its severity twice (`warning: PATH:9:1: warning: …`). Now once, and a line reads once: the log
    /// level, then the place and the message. An invalid file's errors read once too.
    @Test func aWarningIsLoggedOnceAndSaysWarningOnce() throws {
        let fixture = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + """

                [[group]]
                id = "bar"
                to_app = false

                [[control]]
                id = "b1"
                parent = "bar"
                frame = { x = 400, y = 100, width = 50, height = 50 }

                [[control]]
                id = "b2"
                parent = "bar"
                frame = { x = 500, y = 100, width = 50, height = 50 }

                [[control]]
                id = "b3"
                parent = "bar"
                frame = { x = 600, y = 100, width = 50, height = 50 }

                """)
        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(fixture.notify.next()?.first == "READY=1", "stderr:\n\(daemon.errorText)")
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
        let lines = daemon.errorText.split(separator: "\n").filter { $0.contains("to_app") }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix("warning: \(fixture.config.path):") == true, "\(lines)")
        #expect(lines.allSatisfy { $0.components(separatedBy: "warning").count == 2 }, "\(lines)")

        let invalid = try TouchdProcess.Fixture(configuration: "[output]\nwidth = -5\nheight = 1000\n")
        let refused = try invalid.start()
        #expect(refused.exitStatus() == 78)
        let errors = refused.errorText.split(separator: "\n").filter { $0.contains(invalid.config.path) }
        #expect(errors.contains { $0.hasPrefix("error: \(invalid.config.path):2:") }, "\(errors)")
        #expect(errors.allSatisfy { !$0.contains(": error: ") }, "\(errors)")
    }
}
