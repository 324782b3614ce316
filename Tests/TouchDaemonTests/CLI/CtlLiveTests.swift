import Testing

@testable import TouchDaemon

/// `touchd ctl`'s own parts, without a daemon: where it finds the socket, and how a monitor line reads.
@Suite("ctl: socket discovery and monitor lines")
struct CtlLiveTests {
    @Test(
        "[control_socket] socket is read from valid TOML, and line by line from a file that is not",
        arguments: [
            ("[control_socket]\nsocket = \"/run/a.sock\"\n", "/run/a.sock"),
            ("[output]\nwidth = = 1\n[control_socket]\n  socket = \"/run/b.sock\"   # here\n", "/run/b.sock"),
            ("[output\n[ control_socket ]\nsocket='/run/c.sock'\n", "/run/c.sock"),
            ("control_socket.socket = \"/run/d.sock\"\n[output]\nwidth = = 1\n", "/run/d.sock"),
            ("[output]\nwidth = 1\n", "/run/touchd/control.sock"),
            ("[[control]]\nsocket = \"/run/not-this.sock\"\n[output\n", "/run/touchd/control.sock"),
            ("[targets.x]\nsocket = \"/run/target.sock\"\n", "/run/touchd/control.sock"),
            ("[[control]]\ncontrol_socket.socket = \"/run/no.sock\"\n[output\n", "/run/touchd/control.sock"),
        ])
    func socketFromConfiguration(_ text: String, _ expected: String) throws {
        #expect(try ControlSocketLocator.socket(inConfiguration: text, path: "t.toml").get() == expected)
    }

    @Test("a socket that is not a usable path is refused with where it is written")
    func unusableSocket() {
        for (text, prefix) in [
            ("[control_socket]\nsocket = 5\n", "t.toml:2:1: control_socket.socket must be a string"),
            ("[control_socket]\nsocket = \"relative\"\n", "t.toml:2:1: control_socket.socket: "),
            ("[x\n[control_socket]\nsocket = \"relative\"\n", "t.toml:3:1: control_socket.socket: "),
        ] {
            guard case .failure(let failure) = ControlSocketLocator.socket(inConfiguration: text, path: "t.toml")
            else {
                Issue.record("accepted: \(text)")
                continue
            }
            #expect(failure.description.hasPrefix(prefix), "\(failure)")
        }
    }

    @Test("--socket wins; the default file is read only when readable; else the default socket")
    func precedence() throws {
        #expect(
            try ControlSocketLocator.socket(socket: "/x.sock", configuration: "/nonexistent", readable: { _ in true })
                .get() == "/x.sock")
        #expect(
            try ControlSocketLocator.socket(socket: nil, configuration: nil, readable: { _ in false }).get()
                == "/run/touchd/control.sock")
        guard case .failure(let failure) = ControlSocketLocator.socket(socket: nil, configuration: "/nonexistent")
        else {
            Issue.record("a missing --config file was accepted")
            return
        }
        #expect(failure.description.contains("/nonexistent"))
        #expect(failure.description.contains("--socket PATH"))
    }

    @Test("a monitor line reads like libinput debug-events, with the control or none")
    func monitorLine() throws {
        var origin: Int64?
        let down = try JSONValue.parse(
            Array(
                #"{"type":"event","seq":2,"kind":"contact","time_us":5000000,"touch":"down","contact":0,"x":1600,"y":900.04,"device":"event5","control":"pay","gestures":["admin"],"events":["touchDown"],"gesture_events":[{"gesture":"admin","event":"began","state":"began"}],"generation":1}"#
                    .utf8))
        #expect(
            CtlFormat.contact(down, origin: &origin)
                == "event5    down    +0.000s    0   1600.0/900.0   control pay  gestures admin  touchDown  admin:began"
        )
        let up = try JSONValue.parse(
            Array(
                #"{"type":"event","seq":3,"kind":"contact","time_us":6234000,"touch":"up","contact":1,"x":null,"y":null,"device":null,"control":null,"gestures":[],"events":[],"gesture_events":[],"generation":1}"#
                    .utf8))
        #expect(
            CtlFormat.contact(up, origin: &origin) == "-         up      +1.234s    1   -              control none")
    }
}
