import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// Every control-socket verb against a running `touchd run` (no touchscreen needed: `send` fires the actions a touch
/// would), through `ControlClient` and through the `touchd ctl` command line.
@Suite("control socket against touchd run", .serialized)
struct ControlSocketRunTests {
    /// The error code of a refused request, or nil when it was accepted.
    static func refusal(_ body: () throws(ControlClient.Failure) -> ControlClient.Line) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            if case .refused(let code, _, _) = error { return code }
            return "failure: \(error)"
        }
    }

    @Test("hello, state and stats")
    func helloStateStats() throws {
        let running = try TouchdProcess.Running()
        let client = try ControlClient(path: running.fixture.controlSocket, timeout: 10_000_000)
        let hello = try client.hello()
        #expect(hello.value["v"]?.int64Value == 1)
        #expect(hello.value["generation"]?.int64Value == 1)
        #expect(hello.value["role"]?.stringValue == "controller", "root is a controller")
        #expect(hello.value["server"]?.stringValue?.hasPrefix("touchd/") == true)

        let state = try #require(try client.request("state").value["result"])
        #expect(state["generation"]?.int64Value == 1)
        #expect(state["active_screen"]?.stringValue == "home")
        #expect(state["screens"]?.arrayValue?.compactMap(\.stringValue) == ["home", "admin"])
        #expect(state["gestures"]?.arrayValue?.compactMap(\.stringValue) == ["corner"])
        let controls = try #require(state["controls"]?.arrayValue)
        #expect(controls.compactMap { $0["id"]?.stringValue } == ["pay", "volume"])
        #expect(controls[0]["kind"]?.stringValue == "button")
        #expect(controls[0]["enabled"]?.boolValue == true)
        #expect(controls[0]["value"] == nil)
        #expect(controls[1]["value"]?.doubleValue == 5)
        #expect(state["devices"]?.arrayValue?.isEmpty == true, "the build machine has no touchscreen")

        let stats = try #require(try client.request("stats").value["result"])
        #expect(stats["generation"]?.int64Value == 1)
        #expect(stats["frames"]?.int64Value == 0)
        #expect(stats["processing"]?["samples"]?.int64Value == 0)
        #expect(stats["targets"]?["kiosk"]?["kind"]?.stringValue == "socket")
        #expect(stats["control_socket"]?["clients"]?.int64Value == 1)
        #expect(stats["subscribers"]?.int64Value == 0)
    }

    @Test("set changes a control, and subscribers get a state event")
    func setAndStateEvents() throws {
        let running = try TouchdProcess.Running()
        let watcher = try running.connect()
        let snapshot = try watcher.request("subscribe", members: "\"kinds\":[\"state\"],\"controls\":[\"pay\"]")
        let snapshotSeq = try #require(snapshot.value["seq"]?.int64Value)
        #expect(snapshot.value["result"]?["controls"]?.arrayValue?.count == 2)

        let client = try running.connect()
        let disabled = try client.request("set", members: "\"control\":\"pay\",\"enabled\":false")
        #expect(disabled.value["result"]?["enabled"]?.boolValue == false)
        let event = try #require(try TouchdProcess.next(watcher) { $0["type"]?.stringValue == "event" })
        #expect(event["kind"]?.stringValue == "state")
        #expect(event["control"]?.stringValue == "pay")
        #expect(event["enabled"]?.boolValue == false)
        #expect((event["seq"]?.int64Value ?? 0) > snapshotSeq, "events come after the snapshot")

        // The slider's value is clamped; it is not in the watcher's filter (controls: pay).
        let volume = try client.request("set", members: "\"control\":\"volume\",\"value\":99")
        #expect(volume.value["result"]?["value"]?.doubleValue == 10)
        _ = try client.request("set", members: "\"control\":\"pay\",\"selected\":true")
        let selected = try #require(try TouchdProcess.next(watcher) { $0["type"]?.stringValue == "event" })
        #expect(selected["selected"]?.boolValue == true)
        #expect(selected["seq"]?.int64Value == (event["seq"]?.int64Value ?? 0) + 1, "no gap, no volume event")

        let state = try #require(try client.request("state").value["result"]?["controls"]?.arrayValue)
        #expect(state[0]["enabled"]?.boolValue == false)
        #expect(state[0]["selected"]?.boolValue == true)

        // Refusals, each with its stable code; the connection stays usable.
        for (members, code) in [
            ("\"control\":\"pya\",\"enabled\":true", "unknown_control"),
            ("\"control\":\"pay\"", "bad_request"),
        ] {
            #expect(
                Self.refusal { () throws(ControlClient.Failure) in try client.request("set", members: members) } == code
            )
        }
        #expect(try client.request("state").value["ok"]?.boolValue == true)
    }

    @Test("send fires the actions (application events too) and subscribers see them as control events")
    func sendActions() throws {
        let running = try TouchdProcess.Running()
        let watcher = try running.connect()
        _ = try watcher.request("subscribe", members: "\"controls\":[\"pay\"],\"events\":[\"touchUpInside\"]")
        let other = try running.connect()
        _ = try other.request("subscribe", members: "\"kinds\":[\"device\"]")

        let client = try running.connect()
        let sent = try client.request("send", members: "\"control\":\"pay\",\"events\":[\"touchUpInside\"]")
        #expect(sent.value["result"]?["actions"]?.int64Value == 1)
        let message = try #require(running.nextMessage())
        #expect(message["action"]?.stringValue == "pay")
        #expect(message["event"]?.stringValue == "touchUpInside")
        let event = try #require(try TouchdProcess.next(watcher) { $0["type"]?.stringValue == "event" })
        #expect(event["kind"]?.stringValue == "control")
        #expect(event["control"]?.stringValue == "pay")
        #expect(event["event"]?.stringValue == "touchUpInside")
        #expect(event["generation"]?.int64Value == 1)
        #expect(event["x"] == nil && event["y"] == nil, "positions are never sent")

        let refill = try client.request("send", members: "\"control\":\"pay\",\"events\":[\"refill\"]")
        #expect(refill.value["result"]?["actions"]?.int64Value == 1)
        #expect(running.nextMessage()?["action"]?.stringValue == "refill")

        #expect(
            Self.refusal { () throws(ControlClient.Failure) in
                try client.request("send", members: "\"control\":\"pay\",\"events\":[\"tap\"]")
            } == "unknown_event")

        // The device-only subscriber got nothing: its next line is the answer to its own request.
        let answer = try other.request("state")
        #expect(answer.value["id"]?.int64Value != nil)
    }

    @Test("screen switches, reports, and refuses unknown screens")
    func screens() throws {
        let running = try TouchdProcess.Running()
        let watcher = try running.connect()
        _ = try watcher.request("subscribe", members: "\"kinds\":[\"screen\"]")
        let client = try running.connect()
        #expect(try client.request("screen").value["result"]?["active_screen"]?.stringValue == "home")
        let switched = try client.request("screen", members: "\"screen\":\"admin\"")
        #expect(switched.value["result"]?["active_screen"]?.stringValue == "admin")
        let event = try #require(try TouchdProcess.next(watcher) { $0["type"]?.stringValue == "event" })
        #expect(event["kind"]?.stringValue == "screen")
        #expect(event["screen"]?.stringValue == "admin")
        #expect(
            Self.refusal { () throws(ControlClient.Failure) in
                try client.request("screen", members: "\"screen\":\"nowhere\"")
            } == "unknown_screen")
    }

    @Test("a subscriber is a weak target: gone when its connection closes")
    func weakTarget() throws {
        let running = try TouchdProcess.Running()
        let client = try running.connect()
        do {
            let subscriber = try running.connect()
            _ = try subscriber.request("subscribe")
            #expect(try client.request("stats").value["result"]?["subscribers"]?.int64Value == 1)
        }
        // The subscriber's connection closed when it went out of scope; its target and entries go with it.
        var subscribers: Int64? = 1
        for _ in 0..<100 where subscribers != 0 {
            subscribers = try client.request("stats").value["result"]?["subscribers"]?.int64Value
            if subscribers != 0 { usleep(50_000) }
        }
        #expect(subscribers == 0)
        // Actions still go to the configured target, and nowhere else.
        #expect(
            try client.request("send", members: "\"control\":\"pay\",\"events\":[\"touchUpInside\"]").value["result"]?[
                "actions"]?.int64Value == 1)
        #expect(running.nextMessage()?["action"]?.stringValue == "pay")
    }

    @Test("a reload keeps subscriptions, tells subscribers, and a stop sends shutdown")
    func reloadAndShutdown() throws {
        let running = try TouchdProcess.Running()
        let subscriber = try running.connect()
        _ = try subscriber.request("subscribe", members: "\"kinds\":[\"config\",\"control\"]")

        // A broken file: rejected, generation unchanged.
        let good = try String(contentsOf: running.fixture.config, encoding: .utf8)
        try "[output\n".write(to: running.fixture.config, atomically: true, encoding: .utf8)
        running.daemon.signal(SIGHUP)
        let rejected = try #require(try TouchdProcess.next(subscriber) { $0["kind"]?.stringValue == "config" })
        #expect(rejected["change"]?.stringValue == "rejected")
        #expect(rejected["generation"]?.int64Value == 1)

        try good.write(to: running.fixture.config, atomically: true, encoding: .utf8)
        running.daemon.signal(SIGHUP)
        let reloaded = try #require(try TouchdProcess.next(subscriber) { $0["kind"]?.stringValue == "config" })
        #expect(reloaded["change"]?.stringValue == "reloaded")
        #expect(reloaded["generation"]?.int64Value == 2)
        let hello = try ControlClient(path: running.fixture.controlSocket, timeout: 10_000_000).hello()
        #expect(hello.value["generation"]?.int64Value == 2)

        // The subscription followed the new scene.
        let client = try running.connect()
        _ = try client.request("send", members: "\"control\":\"pay\",\"events\":[\"touchUpInside\"]")
        let event = try #require(try TouchdProcess.next(subscriber) { $0["kind"]?.stringValue == "control" })
        #expect(event["generation"]?.int64Value == 2)

        running.daemon.signal(SIGTERM)
        let last = try #require(try TouchdProcess.next(subscriber) { $0["type"]?.stringValue != "event" })
        #expect(last["type"]?.stringValue == "shutdown")
        #expect(running.daemon.exitStatus() == 0)
    }

    @Test("touchd ctl drives every verb")
    func ctlCommands() throws {
        let running = try TouchdProcess.Running()
        let state = try running.ctl(["state"])
        #expect(state.status == 0, "\(state.error)")
        #expect(state.output.contains("generation 1, screen home (of home, admin)"))
        #expect(state.output.contains("pay  button  enabled"))
        #expect(state.output.contains("volume  slider  enabled  value 5"))

        let disable = try running.ctl(["disable", "pay"])
        #expect(disable.status == 0)
        #expect(disable.output == "pay  button  disabled\n")
        #expect(try running.ctl(["enable", "pay"]).output == "pay  button  enabled\n")
        #expect(try running.ctl(["set", "volume", "--value", "2.5"]).output == "volume  slider  enabled  value 2.5\n")

        let send = try running.ctl(["send", "pay", "touchUpInside"])
        #expect(send.output == "1 action fired\n")
        #expect(running.nextMessage()?["action"]?.stringValue == "pay")

        #expect(try running.ctl(["screen", "admin"]).output == "active screen: admin\n")
        #expect(try running.ctl(["screen"]).output == "active screen: admin\n")

        let stats = try running.ctl(["stats"])
        #expect(stats.output.contains("targets.kiosk.sent: 1"))
        #expect(stats.output.contains("processing.samples: 0"))

        let json = try running.ctl(["state", "--json"])
        let line = try JSONValue.parse(Array(json.output.utf8.dropLast()))
        #expect(line["type"]?.stringValue == "response")
        #expect(line["result"]?["generation"]?.int64Value == 1)

        let refused = try running.ctl(["disable", "nope"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("unknown_control"))

        let missing = try TouchdProcess.ctl([
            "state", "--socket", running.fixture.directory.appendingPathComponent("absent").path,
        ])
        #expect(missing.status == 69)
        #expect(missing.error.contains("cannot connect"))
    }

    /// The running configuration with `[accessibility]` on, speech on `speechSocket`, and labels. No `[filter]`: the
    /// host has no uinput (check warns, and the file loads).
    static func accessible(speechSocket: String) -> String {
        TouchdProcess.runningConfiguration.replacingOccurrences(
            of: "[application_events]",
            with: """
                [accessibility]
                enabled = true
                speech_socket = "\(speechSocket)"

                [application_events]
                """
        ).replacingOccurrences(of: "kind = \"button\"\n", with: "kind = \"button\"\nlabel = \"Pay\"\n")
            .replacingOccurrences(of: "kind = \"slider\"\n", with: "kind = \"slider\"\nlabel = \"Volume\"\n")
    }

    /// Explore by touch under `touchd run`: without a speech server speech mode cannot start, and ctl says so; the
    /// stats count the refusal (rule 3).
    @Test("touchd ctl speech: the mode, and a refusal without a speech server")
    func ctlSpeech() throws {
        let running = try TouchdProcess.Running(
            configuration: Self.accessible(speechSocket: "/run/touchd-test/absent-speech.sock"))
        let shown = try running.ctl(["speech"])
        #expect(shown.status == 0, "\(shown.error)")
        #expect(shown.output == "speech mode off, no speech server\n")
        let refused = try running.ctl(["speech", "on"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("speech_unavailable"))
        #expect(try running.ctl(["state"]).output.contains("speech mode off, no speech server"))
        #expect(try running.ctl(["stats"]).output.contains("speech.failures: 1"))
    }

    /// The daemon's speech wiring end to end: `touchd run` connects its SSIP client to the configured socket (a fake
    /// speech-dispatcher), the server's availability reaches the engine, and `ctl speech on` makes the engine's
    /// introduction go out as a `SPEAK` at `important` priority; `ctl speech off` says the farewell.
    @Test("touchd run speaks through a speech server: ctl speech on says the introduction, off the farewell")
    func ctlSpeechSpeaks() async throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FakeSSIPServer(path: directory.appendingPathComponent("speechd.sock").path)
        defer { server.stop() }
        let running = try TouchdProcess.Running(configuration: Self.accessible(speechSocket: server.path))
        // The client's handshake, then the engine hears the server can speak.
        #expect(await eventually { server.texts.contains("SET SELF NOTIFICATION all on") })
        #expect(
            await eventually { (try? running.ctl(["speech"]).output) == "speech mode off\n" },
            "\((try? running.ctl(["speech"]).output) ?? "")")
        let on = try running.ctl(["speech", "on"])
        #expect(on.status == 0, "\(on.error)")
        // The command comes first, then (after the server's 230) the text: wait for the line after it.
        #expect(
            await eventually {
                let texts = server.texts
                return texts.firstIndex(of: "SPEAK").map { texts.count > $0 + 1 } ?? false
            })
        let texts = server.texts
        #expect(texts.contains("SET SELF PRIORITY important"), "\(texts)")
        let speak = try #require(texts.firstIndex(of: "SPEAK"))
        #expect(texts.dropFirst(speak + 1).first?.isEmpty == false, "\(texts)")
        let spoken = server.texts.filter { $0 == "SPEAK" }.count
        let off = try running.ctl(["speech", "off"])
        #expect(off.status == 0, "\(off.error)")
        #expect(await eventually { server.texts.filter { $0 == "SPEAK" }.count > spoken }, "\(server.texts)")
        #expect(try running.ctl(["stats"]).output.contains("speech.sessions: 1"))
    }

    /// `ctl --json reload` on a broken file and `ctl --json send NOSUCH touchUpInside` printed
    /// nothing on standard output; with --json every response, refusals included, is printed as received.
    @Test("touchd ctl --json prints refusals on standard output, with exit status 1")
    func ctlJSONRefusals() throws {
        let running = try TouchdProcess.Running()
        let send = try running.ctl(["send", "NOSUCH", "touchUpInside", "--json"])
        #expect(send.status == 1, "\(send.error)")
        let refusal = try JSONValue.parse(Array(send.output.utf8.dropLast()))
        #expect(refusal["ok"]?.boolValue == false)
        #expect(refusal["error"]?["code"]?.stringValue == "unknown_control")

        try "[output\nwidth = 1000\n".write(to: running.fixture.config, atomically: true, encoding: .utf8)
        let reload = try running.ctl(["reload", "--json"])
        #expect(reload.status == 1, "\(reload.error)")
        let refused = try JSONValue.parse(Array(reload.output.utf8.dropLast()))
        #expect(refused["error"]?["code"]?.stringValue == "invalid_configuration")
        let problems = refused["error"]?["problems"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(problems.first?.hasPrefix("\(running.fixture.config.path):1:") == true, "\(problems)")
    }

    @Test("touchd ctl subscribe prints the snapshot, then events, and stops after --count")
    func ctlSubscribe() throws {
        let running = try TouchdProcess.Running()
        let process = Process()
        process.executableURL = try TouchdProcess.executable()
        process.arguments = [
            "ctl", "subscribe", "--json", "--kind", "control", "--count", "2", "--socket",
            running.fixture.controlSocket,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Wait until the subscription is in place, then fire two events.
        let client = try running.connect()
        var subscribers: Int64 = 0
        for _ in 0..<200 where subscribers == 0 {
            subscribers = try client.request("stats").value["result"]?["subscribers"]?.int64Value ?? 0
            if subscribers == 0 { usleep(50_000) }
        }
        #expect(subscribers == 1)
        _ = try client.request("send", members: "\"control\":\"pay\",\"events\":[\"touchDown\",\"touchUpInside\"]")
        _ = try client.request("send", members: "\"control\":\"volume\",\"events\":[\"valueChanged\"]")
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = try text.split(separator: "\n").map { try JSONValue.parse(Array($0.utf8)) }
        #expect(lines.count == 3, "\(text)")
        #expect(lines.first?["type"]?.stringValue == "response")
        #expect(lines.dropFirst().allSatisfy { $0["kind"]?.stringValue == "control" })
        #expect(lines.dropFirst().compactMap { $0["seq"]?.int64Value } == [2, 3])
    }

    /// K4: who may connect is decided by the socket file's mode and group, then by the peer's credentials. Runs
    /// `touchd ctl` as other users with setpriv(1) (util-linux).
    @Test("an observer may read but not change; a stranger cannot connect; an admin-group member may change")
    func roles() throws {
        let running = try TouchdProcess.Running(
            configuration: TouchdProcess.runningConfiguration
                + "\n[control_socket]\nsocket = \"@CONTROL@\"\ngroup = \"nogroup\"\nadmin_group = \"users\"\n")
        // The fixture's directory must let other users reach the socket; the socket's own mode and group decide.
        chmod(running.fixture.directory.path, 0o755)
        var info = stat()
        #expect(stat(running.fixture.controlSocket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660, "the socket is created 0660")
        #expect(info.st_gid == 65534, "the socket's group is [control_socket] group (nogroup)")

        let socket = ["--socket", running.fixture.controlSocket]
        let observer = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let read = try TouchdProcess.ctl(["state"] + socket, prefix: observer)
        #expect(read.status == 0, "an observer reads the state: \(read.error)")
        let change = try TouchdProcess.ctl(["disable", "pay"] + socket, prefix: observer)
        #expect(change.status == 1)
        #expect(change.error.contains("unauthorized"))

        let admin = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--groups=100"]
        let allowed = try TouchdProcess.ctl(["disable", "pay"] + socket, prefix: admin)
        #expect(allowed.status == 0, "a member of admin_group (users) may change: \(allowed.error)")

        let stranger = ["/usr/bin/setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]
        let refused = try TouchdProcess.ctl(["state"] + socket, prefix: stranger)
        #expect(refused.status == 69)
        #expect(refused.error.contains("Permission denied"))
    }
}
