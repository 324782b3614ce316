import Foundation
import Testing

@testable import TouchDaemon

/// `touchd simulate --execute`: the actions of a script reach their socket target as `touchd run` sends them; without
/// `--execute` nothing is sent.
@Suite("touchd simulate --execute")
struct SimulateExecuteTests {
    static func config(socket: String) -> String {
        """
        [output]
        width = 1000
        height = 1000

        [targets.kiosk]
        socket = "\(socket)"
        socket_type = "datagram"
        responds_to = ["pay"]

        [[control]]
        id = "pay"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchDown", "touchUpInside"], target = "kiosk", action = "pay" }]

        """
    }

    @Test func executeSendsEachActionToItsTarget() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try TouchdProcess.NotifySocket(path: directory.appendingPathComponent("kiosk.sock").path)
        let config = directory.appendingPathComponent("touchd.toml")
        try Self.config(socket: listener.path).write(to: config, atomically: true, encoding: .utf8)
        let script = directory.appendingPathComponent("tap.touch")
        try "0 down 0 150 150\n120 up 0\n".write(to: script, atomically: true, encoding: .utf8)

        let dry = try TouchdProcess.run(["simulate", "--config", config.path, script.path])
        #expect(dry.status == 0)
        #expect(listener.next(within: 1) == nil, "a dry run sent something")

        let run = try TouchdProcess.run(["simulate", "--config", config.path, script.path, "--execute"])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput == dry.standardOutput)
        #expect(
            listener.next() == [
                #"{"action":"pay","target":"kiosk","control":"pay","event":"touchDown","time_us":0,"contact":0,"x":150,"y":150,"responder":"pay","generation":1}"#
            ])
        #expect(
            listener.next() == [
                #"{"action":"pay","target":"kiosk","control":"pay","event":"touchUpInside","time_us":120000,"contact":0,"x":150,"y":150,"responder":"pay","generation":1}"#
            ])
        #expect(listener.next(within: 1) == nil)
        #expect(run.standardError.contains("sent=2"))
    }

    /// Command targets run too, with the action's facts in their environment, and simulate waits for them.
    @Test func executeRunsCommandTargets() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("ran.log").path
        let config = directory.appendingPathComponent("touchd.toml")
        try """
        [output]
        width = 1000
        height = 1000

        [targets.click]
        exec = ["/bin/sh", "-c", "echo \\"$TOUCHD_ACTION $TOUCHD_CONTROL $TOUCHD_EVENT\\" >> \(log)"]
        responds_to = ["click"]
        if_running = "queue"

        [[control]]
        id = "pay"
        kind = "button"
        frame = { x = 100, y = 100, width = 200, height = 200 }
        actions = [{ events = ["touchDown", "touchUpInside"], target = "click", action = "click" }]

        """.write(to: config, atomically: true, encoding: .utf8)
        let script = directory.appendingPathComponent("tap.touch")
        try "0 down 0 150 150\n300 up 0\n".write(to: script, atomically: true, encoding: .utf8)

        let dry = try TouchdProcess.run(["simulate", "--config", config.path, script.path])
        #expect(dry.status == 0)
        #expect(!FileManager.default.fileExists(atPath: log), "a dry run ran a command")

        let run = try TouchdProcess.run(["simulate", "--config", config.path, script.path, "--execute"])
        #expect(run.status == 0, "\(run.standardError)")
        let ran = try String(contentsOfFile: log, encoding: .utf8)
        #expect(ran == "click pay touchDown\nclick pay touchUpInside\n")
        #expect(run.standardError.contains("started=2"))
    }
}
