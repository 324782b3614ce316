import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// Live operation against a running `touchd run` (no touchscreen needed): one instance per seat, idle
/// from the daemon's own deadline, `touchd ctl reload`, and how `touchd ctl` finds its socket.
@Suite("live operation against touchd run", .serialized)
struct LiveOperationRunTests {
    typealias Running = TouchdProcess.Running

    @Test("a second touchd run on the same seat exits 75 at once, naming the first one's pid, and touches nothing")
    func secondInstanceRefused() throws {
        let seat = TouchdProcess.Fixture.uniqueSeat()
        let first = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + "\n[input]\nseat = \"\(seat)\"\n")
        let running = try first.start()
        defer { if running.process.isRunning { running.signal(SIGKILL) } }
        try #require(first.notify.next()?.first == "READY=1", "no READY=1; stderr:\n\(running.errorText)")

        // The second one's control socket path holds a leftover socket nobody listens on: a touchd that started
        // would remove it. It must still be there afterwards.
        let second = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + "\n[input]\nseat = \"\(seat)\"\n")
        let leftover = try DatagramReceiver(path: second.controlSocket)
        _ = leftover  // bound, so the file exists; nobody will ever accept on it
        #expect(FileManager.default.fileExists(atPath: second.controlSocket))
        let refused = try second.start()
        #expect(refused.exitStatus() == ExitStatus.anotherInstance)
        #expect(
            refused.errorText.contains(
                "another touchd is running on \(seat) (pid \(running.process.processIdentifier), uid \(getuid()))"),
            "stderr:\n\(refused.errorText)")
        // Nothing was set up: no control socket, no input layer, no READY=1.
        #expect(!refused.errorText.contains("control socket listening"))
        #expect(!refused.errorText.contains("touchd started"))
        #expect(FileManager.default.fileExists(atPath: second.controlSocket))
        let status = second.notify.next(within: 2)
        #expect(status?.first?.hasPrefix("STATUS=another touchd is running on \(seat)") == true)

        // The first one goes on; once it stops, the seat is free at once (the kernel frees the name).
        #expect(running.process.isRunning)
        running.signal(SIGTERM)
        #expect(running.exitStatus() == 0)
        let third = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + "\n[input]\nseat = \"\(seat)\"\n")
        let after = try third.start()
        defer { if after.process.isRunning { after.signal(SIGKILL) } }
        #expect(third.notify.next()?.first == "READY=1", "stderr:\n\(after.errorText)")
        after.signal(SIGTERM)
        #expect(after.exitStatus() == 0)
    }

    @Test("the lock counts only when root, touchd's own user or the user named touchd holds it")
    func lockHolderTrust() {
        let names: (uid_t) -> String? = { [0: "root", 61_200: "touchd", 1000: "kiosk"][$0] }
        #expect(InstanceLock.isTouchdUser(0, name: names))
        #expect(InstanceLock.isTouchdUser(geteuid(), name: names))
        #expect(InstanceLock.isTouchdUser(61_200, name: names))
        #expect(!InstanceLock.isTouchdUser(1000, name: names) || geteuid() == 1000)
        #expect(!InstanceLock.isTouchdUser(4242, name: names) || geteuid() == 4242)
    }

    @Test("another user holding the seat's lock name cannot keep touchd from starting (it says who holds it)")
    func squattedLockIgnored() throws {
        let seat = TouchdProcess.Fixture.uniqueSeat()
        let fixture = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + "\n[input]\nseat = \"\(seat)\"\n")
        // nobody binds and listens on the name, as any local user can.
        let squatter = Process()
        squatter.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        squatter.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
            """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(b"\\0touchd/seat/\(seat)\\0")
            s.listen(4)
            print("bound", flush=True)
            time.sleep(30)
            """,
        ]
        let output = Pipe()
        squatter.standardOutput = output
        try squatter.run()
        defer { squatter.terminate() }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        try #require(line.hasPrefix("bound"), "the squatter did not bind the name: \(line)")

        let running = try fixture.start()
        defer { if running.process.isRunning { running.signal(SIGKILL) } }
        #expect(fixture.notify.next()?.first == "READY=1", "stderr:\n\(running.errorText)")
        running.signal(SIGTERM)
        #expect(running.exitStatus() == 0)
        #expect(
            running.errorText.contains("the lock name of \(seat) is held by uid 65534"),
            "stderr:\n\(running.errorText)")
    }

    @Test("with filter mode off, every thread of touchd run is under the filter that forbids creating input devices")
    func filterModeOffGivesUpUinput() throws {
        let fixture = try TouchdProcess.Fixture(configuration: TouchdProcess.valid)
        let running = try fixture.start()
        defer { if running.process.isRunning { running.signal(SIGKILL) } }
        #expect(fixture.notify.next()?.first == "READY=1", "stderr:\n\(running.errorText)")
        let pid = running.process.processIdentifier
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        #expect(tasks.count > 1, "expected touchd's threads, found \(tasks)")
        for task in tasks {
            // A short-lived thread (the start's scheduling probe) may be gone by now.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            let line = status.split(separator: "\n").first { $0.hasPrefix("Seccomp:") } ?? "none"
            #expect(line == "Seccomp:\t2", "thread \(task): \(line)")
        }
        running.signal(SIGTERM)
        #expect(running.exitStatus() == 0)
    }

    @Test("a name bound by a socket that does not answer cannot keep touchd from starting either")
    func silentLockIgnored() throws {
        let seat = TouchdProcess.Fixture.uniqueSeat()
        let fixture = try TouchdProcess.Fixture(
            configuration: TouchdProcess.valid + "\n[input]\nseat = \"\(seat)\"\n")
        // Bound without listen: connect(2) is refused, so nobody can be asked who holds it.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        guard let (address, length) = UnixSocket.address(InstanceLock.name(seat: seat)) else {
            Issue.record("no address for the lock name")
            return
        }
        var bound = address
        let result = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        try #require(result == 0)
        let running = try fixture.start()
        defer { if running.process.isRunning { running.signal(SIGKILL) } }
        #expect(fixture.notify.next()?.first == "READY=1", "stderr:\n\(running.errorText)")
        running.signal(SIGTERM)
        #expect(running.exitStatus() == 0)
        #expect(running.errorText.contains("a socket that does not answer"), "stderr:\n\(running.errorText)")
    }

    @Test("a different seat is another instance's business: two daemons on two seats both run")
    func twoSeats() throws {
        let one = try Running()
        let two = try Running()
        #expect(one.daemon.process.isRunning && two.daemon.process.isRunning)
    }

    static let idleConfiguration =
        TouchdProcess.runningConfiguration.replacingOccurrences(
            of: #"responds_to = ["pay", "volume", "refill"]"#,
            with: #"responds_to = ["pay", "volume", "refill", "attract", "welcome"]"#)
            + """

            [idle]
            timeout_s = 1
            screen = "admin"
            actions = [
              { events = ["idle"], target = "kiosk", action = "attract" },
              { events = ["wake"], target = "kiosk", action = "welcome" },
            ]

            """

    @Test("idle comes from the daemon's own deadline timeout_s after start, with the screen switched")
    func idleFromTheDaemon() throws {
        let running = try Running(configuration: Self.idleConfiguration)
        let client = try running.connect()
        _ = try client.request("subscribe", members: #""kinds":["screen"]"#)
        let message = try #require(running.nextMessage(), "no idle message; stderr:\n\(running.daemon.errorText)")
        #expect(message["action"]?.stringValue == "attract")
        #expect(message["event"]?.stringValue == "idle")
        #expect(message["control"]?.stringValue == "idle")
        #expect(message["target"]?.stringValue == "kiosk")
        // Subscribers hear the screen switch.
        let screen = try TouchdProcess.next(client) { $0["kind"]?.stringValue == "screen" }
        #expect(screen?["screen"]?.stringValue == "admin")
        #expect(running.daemon.errorText.contains("idle: nobody touched the screen"))
    }

    @Test("ctl reload prints the new generation; a broken file is refused with every problem and exit 1")
    func ctlReload() throws {
        let running = try Running()
        let good = try running.ctl(["reload"])
        #expect(good.status == 0, "stderr: \(good.error)")
        #expect(good.output == "reloaded: generation 2, 2 controls\n")

        // Broken twice over: both problems are listed with their line and column; the running file stays.
        let path = running.fixture.config.path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let broken = text.replacingOccurrences(of: #"kind = "slider""#, with: #"kind = "slidr""#)
            .replacingOccurrences(of: "min = 0", with: "min = 0\nmystery = 1")
        try broken.write(toFile: path, atomically: false, encoding: .utf8)
        let refused = try running.ctl(["reload"])
        #expect(refused.status == 1)
        #expect(refused.output == "")
        let lines = refused.error.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.hasPrefix("touchd ctl: invalid_configuration: the configuration was refused with ") == true)
        #expect(lines.first?.contains("generation 2 stays in use") == true)
        let problems = lines.dropFirst()
        #expect(problems.count >= 2, "stderr: \(refused.error)")
        #expect(problems.allSatisfy { $0.hasPrefix("\(path):") && $0.contains(": error: ") })
        #expect(problems.contains { $0.contains("slidr") })
        #expect(problems.contains { $0.contains("mystery") })
        // JSON: the problems come as a list.
        let json = try running.ctl(["reload", "--json"])
        #expect(json.status == 1)
        // The daemon still answers with generation 2.
        let state = try running.ctl(["state", "--json"])
        #expect(state.output.contains(#""generation":2"#))
    }

    @Test("ctl finds the socket from --config (even a broken file), and --socket goes before or after the verb")
    func ctlFindsItsSocket() throws {
        let running = try Running()
        let socket = running.fixture.controlSocket
        let before = try TouchdProcess.ctl(["--socket", socket, "screen"])
        #expect(before.status == 0, "stderr: \(before.error)")
        #expect(before.output == "active screen: home\n")
        let after = try TouchdProcess.ctl(["screen", "--socket", socket])
        #expect(after.output == "active screen: home\n")

        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Not even TOML as a whole, yet it names its socket.
        let config = directory.appendingPathComponent("touchd.toml").path
        try """
        [output]
        width = = 1000

        [control_socket]
        socket = "\(socket)"   # where touchd listens
        """.write(toFile: config, atomically: true, encoding: .utf8)
        for arguments in [["--config", config, "screen"], ["screen", "--config", config]] {
            let found = try TouchdProcess.ctl(arguments)
            #expect(found.status == 0, "\(arguments): \(found.error)")
            #expect(found.output == "active screen: home\n")
        }
        // A file that names no usable socket says where and why.
        try "[control_socket]\nsocket = \"relative.sock\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let unusable = try TouchdProcess.ctl(["state", "--config", config])
        #expect(unusable.status == 78)
        #expect(unusable.error.hasPrefix("touchd ctl: \(config):2:1: control_socket.socket: "))
        let missing = try TouchdProcess.ctl(["state", "--config", directory.appendingPathComponent("no").path])
        #expect(missing.status == 78)
        #expect(missing.error.contains("give the socket with --socket PATH"))
    }

    @Test("a controller may watch live contacts; the daemon logs who watches")
    func monitorSubscription() throws {
        let running = try Running()
        let client = try running.connect()
        let response = try client.request("subscribe", members: #""kinds":["contact"]"#)
        #expect(response.value["ok"]?.boolValue == true)
        _ = try client.request("state")
        #expect(eventually { running.daemon.errorText.contains("control client asks to watch live contacts") })
        #expect(running.daemon.errorText.contains("client.pid=\(getpid())"))
    }
}
