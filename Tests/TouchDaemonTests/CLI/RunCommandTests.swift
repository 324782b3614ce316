import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// `touchd run` as systemd runs it, on a machine without touchscreens: readiness, reloads that keep or replace the
/// configuration, signals, exit statuses. Contacts through real kernel input are the end-to-end test's job.
@Suite("touchd run", .serialized)
struct RunCommandTests {
    /// A bound datagram socket standing in for systemd's NOTIFY_SOCKET.
    final class NotifySocket {
        let receiver: DatagramReceiver
        var path: String { receiver.path }

        init(path: String) throws {
            receiver = try DatagramReceiver(path: path)
        }

        /// The next notification's lines, waiting at most `seconds`.
        func next(within seconds: Int32 = 20) -> [String]? {
            receiver.receive(milliseconds: seconds * 1000).map {
                String(decoding: $0, as: UTF8.self).split(separator: "\n").map(String.init)
            }
        }
    }

    struct Daemon {
        let process: Process
        let standardError: URL

        var errorText: String { (try? String(contentsOf: standardError, encoding: .utf8)) ?? "" }

        func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

        func exitStatus() -> Int32 {
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    static func start(
        config: String, notify: NotifySocket, directory: URL, environment extra: [String: String] = [:],
        extraArguments: [String] = []
    ) throws -> Daemon {
        let errURL = directory.appendingPathComponent("stderr")
        try Data().write(to: errURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = try CheckCommandTests.executable()
        process.arguments = ["run", "--config", config] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment["JOURNAL_STREAM"] = nil
        environment["WATCHDOG_USEC"] = nil
        environment["WATCHDOG_PID"] = nil
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        try err.close()
        return Daemon(process: process, standardError: errURL)
    }

    /// A temporary directory with a configuration file and a notify socket; removed when it goes away.
    final class Fixture {
        let directory: URL
        let config: URL
        let notify: NotifySocket

        /// The control socket: in the fixture's directory, so that daemons of different tests never meet.
        var controlSocket: String { directory.appendingPathComponent("control.sock").path }

        /// `configuration` gets a `[control_socket]` section with ``controlSocket`` unless it has one; `@CONTROL@`
        /// in it stands for ``controlSocket``.
        init(configuration: String = RunCommandTests.valid) throws {
            directory = try TestSupport.makeTemporaryDirectory()
            config = directory.appendingPathComponent("touchd.toml")
            var text = configuration.replacingOccurrences(
                of: "@CONTROL@", with: directory.appendingPathComponent("control.sock").path)
            if !text.contains("[control_socket]") {
                text += "\n[control_socket]\nsocket = \"\(directory.appendingPathComponent("control.sock").path)\"\n"
            }
            // A seat of its own: only one touchd runs per seat (InstanceLock), and tests run daemons side by side.
            // No device is on it, as none is on seat0 of a build machine.
            if !text.contains("[input]") {
                text += "\n[input]\nseat = \"\(Self.uniqueSeat())\"\n"
            }
            try text.write(to: config, atomically: true, encoding: .utf8)
            notify = try NotifySocket(path: directory.appendingPathComponent("notify").path)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        /// A seat name no other test uses: `test-` and 12 hexadecimal digits.
        static func uniqueSeat() -> String {
            "test-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        }

        func start(environment: [String: String] = [:]) throws -> Daemon {
            try RunCommandTests.start(
                config: config.path, notify: notify, directory: directory, environment: environment)
        }
    }

    static let valid = """
        [output]
        width = 1000
        height = 1000

        [targets.kiosk]
        socket = "/run/touchd-test/absent.sock"
        responds_to = ["a"]

        [[control]]
        id = "a"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchUpInside"], target = "kiosk", action = "a" }]

        """

    @Test func readyReloadAndStop() throws {
        let fixture = try Fixture()
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
        try Self.valid.replacingOccurrences(of: "width = 200", with: "width = 300")
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
        let fixture = try Fixture()
        let (config, notify) = (fixture.config, fixture.notify)
        let daemon = try fixture.start()
        defer { if daemon.process.isRunning { daemon.signal(SIGKILL) } }
        #expect(notify.next()?.first == "READY=1")

        let deep = Array(repeating: "a", count: 30_000).joined(separator: ".") + " = 1\n"
        try (Self.valid + deep).write(to: config, atomically: true, encoding: .utf8)
        let line = Self.valid.split(separator: "\n", omittingEmptySubsequences: false).count
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
        try Self.valid.write(to: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(notify.next()?.first == "RELOADING=1")
        #expect(notify.next() == ["READY=1", "STATUS=waiting for a touchscreen"])
        daemon.signal(SIGTERM)
        #expect(daemon.exitStatus() == 0)
    }

    /// C1: an invalid configuration at start is refused with every problem and exit 78 (EX_CONFIG); READY=1 is never
    /// sent.
    @Test func invalidConfigurationAtStartExits78() throws {
        let fixture = try Fixture(configuration: "[output]\nwidth = -5\nheight = 1000\n")
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
        let fixture = try Fixture(configuration: Self.valid + "\n[filter]\nenabled = true\n")
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
        let fixture = try Fixture()
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
        let fixture = try Fixture()
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
        let fixture = try Fixture(
            configuration: Self.valid + """

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

        let invalid = try Fixture(configuration: "[output]\nwidth = -5\nheight = 1000\n")
        let refused = try invalid.start()
        #expect(refused.exitStatus() == 78)
        let errors = refused.errorText.split(separator: "\n").filter { $0.contains(invalid.config.path) }
        #expect(errors.contains { $0.hasPrefix("error: \(invalid.config.path):2:") }, "\(errors)")
        #expect(errors.allSatisfy { !$0.contains(": error: ") }, "\(errors)")
    }
}
