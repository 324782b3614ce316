import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// The built `touchd` executable run as a user and systemd run it: `check` and friends with their streams, `run`
/// with a notify socket and a configuration of its own, `ctl` against a running daemon. Shared by the command-line,
/// control-socket, configuration and daemon suites.
enum TouchdProcess {
    struct Run {
        var status: Int32
        var standardOutput: String
        var standardError: String

        var errorLines: [String] { standardError.split(separator: "\n").map(String.init) }
    }

    /// The `touchd` product: next to the test bundle in the products directory (SwiftPM builds every
    /// product before it runs tests), or `TOUCHD_EXECUTABLE` when set.
    static func executable() throws -> URL {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["TOUCHD_EXECUTABLE"] {
            candidates.append(URL(fileURLWithPath: path))
        }
        // The resource bundle (touchd_TouchDaemonTests.resources) and the test bundle live in the
        // products directory, as does the executable.
        candidates.append(Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("touchd"))
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("touchd"))
        candidates.append(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("touchd"))
        candidates.append(TestSupport.packageRoot.appendingPathComponent(".build/debug/touchd"))
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        return try #require(
            found, "no touchd executable in \(candidates.map(\.path)); build it or set TOUCHD_EXECUTABLE")
    }

    /// Runs `touchd` with `arguments`, capturing both streams through files (no pipe can fill up).
    static func run(_ arguments: [String], standardInput: Data? = nil) throws -> Run {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        if let standardInput {
            let inURL = directory.appendingPathComponent("stdin")
            try standardInput.write(to: inURL)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            standardOutput: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            standardError: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

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
        process.executableURL = try TouchdProcess.executable()
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
        init(configuration: String = TouchdProcess.valid) throws {
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
            try TouchdProcess.start(
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

    static let runningConfiguration = """
        [output]
        width = 1000
        height = 1000

        [targets.kiosk]
        socket = "SOCKET"
        socket_type = "datagram"
        responds_to = ["pay", "volume", "refill"]

        [application_events]
        refill = 0

        [[screen]]
        id = "home"
        groups = ["main"]

        [[screen]]
        id = "admin"
        groups = ["service"]

        [[group]]
        id = "main"

        [[group]]
        id = "service"

        [[control]]
        id = "pay"
        kind = "button"
        parent = "main"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [
          { events = ["touchUpInside"], target = "kiosk", action = "pay" },
          { events = ["refill"], target = "kiosk", action = "refill" },
        ]

        [[control]]
        id = "volume"
        kind = "slider"
        parent = "main"
        frame = { x = 100, y = 500, width = 600, height = 100 }
        min = 0
        max = 10
        value = 5
        actions = [{ events = ["valueChanged"], target = "kiosk", action = "volume" }]

        [[gesture]]
        id = "corner"
        kind = "long_press"
        frame = { x = 0, y = 0, width = 50, height = 50 }
        actions = [{ events = ["recognized"], target = "kiosk", action = "pay" }]

        """

    /// A running daemon with a datagram socket target standing in for the kiosk application.
    final class Running {
        let fixture: TouchdProcess.Fixture
        let daemon: TouchdProcess.Daemon
        let target: DatagramReceiver
        /// Holds the target's socket; removed with the daemon.
        let directory: URL

        init(configuration: String = TouchdProcess.runningConfiguration) throws {
            directory = try TestSupport.makeTemporaryDirectory()
            let targetPath = directory.appendingPathComponent("kiosk.sock").path
            target = try DatagramReceiver(path: targetPath)
            fixture = try TouchdProcess.Fixture(
                configuration: configuration.replacingOccurrences(of: "SOCKET", with: targetPath))
            daemon = try fixture.start()
            try #require(fixture.notify.next()?.first == "READY=1", "no READY=1; stderr:\n\(daemon.errorText)")
        }

        deinit {
            if daemon.process.isRunning { daemon.signal(SIGKILL) }
            try? FileManager.default.removeItem(at: directory)
        }

        func connect() throws -> ControlClient {
            let client = try ControlClient(path: fixture.controlSocket, timeout: 10_000_000)
            _ = try client.hello()
            return client
        }

        /// The next message the socket target received, waiting at most 10 s.
        func nextMessage() -> JSONValue? {
            target.receive(milliseconds: 10_000).flatMap { try? JSONValue.parse($0) }
        }

        /// Runs `touchd ctl ARGUMENTS --socket …` and returns its exit status and standard output.
        func ctl(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try TouchdProcess.ctl(arguments + ["--socket", fixture.controlSocket])
        }
    }

    static func ctl(_ arguments: [String], prefix: [String] = []) throws -> (
        status: Int32, output: String, error: String
    ) {
        let process = Process()
        let touchd = try TouchdProcess.executable()
        if prefix.isEmpty {
            process.executableURL = touchd
            process.arguments = ["ctl"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: prefix[0])
            process.arguments = Array(prefix.dropFirst()) + [touchd.path, "ctl"] + arguments
        }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self)
        )
    }

    /// Reads lines until one satisfies `match` (at most 50), returning it.
    static func next(_ client: ControlClient, where match: (JSONValue) -> Bool) throws -> JSONValue? {
        for _ in 0..<50 {
            let line = try client.readLine()
            if match(line.value) { return line.value }
        }
        return nil
    }
}
