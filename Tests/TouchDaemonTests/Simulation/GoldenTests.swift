import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// `touchd simulate` on the examples and on hand-written `libinput record` files, against frozen
/// JSON Lines (Tests/TouchDaemonTests/Golden). Each golden file was checked line by line against
/// docs/uikit-semantics.md before it was frozen.
@Suite("simulate: golden output")
struct GoldenTests {
    /// The simulation of `config/kiosk.toml` on a touch script, as `touchd simulate` prints it.
    static func simulate(script path: String, config: String = TestSupport.kioskConfig) throws -> [String] {
        let configuration = try ConfigurationLoader.load(path: config).get()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // As `touchd simulate` plays it: checked whole against the configuration, then a step at a time.
        let report = TouchScript.check(text, context: TouchScript.Context(configuration))
        #expect(report.problems.isEmpty && report.warnings.isEmpty)
        var simulation = try Simulation(configuration: configuration)
        return simulation.lines(.scriptText(text))
    }

    /// The simulation of `config/kiosk.toml` on a `libinput record` file.
    static func simulate(recording path: String) throws -> [String] {
        let configuration = try ConfigurationLoader.load(path: TestSupport.kioskConfig).get()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(LibinputRecording.looksLikeRecording(text))
        // As `touchd simulate` plays it: through the engine and its router, as live input.
        let input = try LibinputRecording.input(from: text).get()
        var simulation = try Simulation(configuration: configuration)
        return simulation.lines(.recording(input))
    }

    static func golden(_ name: String) throws -> [String] {
        let url = TestSupport.resourceDirectory("Golden").appendingPathComponent(name)
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test("examples/checkout.touch on config/kiosk.toml")
    func checkout() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/checkout.touch").path)
        let expected = try Self.golden("checkout.jsonl")
        #expect(actual.count == expected.count)
        for (index, (line, golden)) in zip(actual, expected).enumerated() {
            #expect(line == golden, "line \(index + 1)")
        }
    }

    /// The admin long press of config/kiosk.toml: the documented gesture line at the moment it is
    /// recognized, its action, and a later tap on pay that the recognizer leaves alone.
    @Test("examples/admin.touch on config/kiosk.toml")
    func admin() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/admin.touch").path)
        #expect(actual == (try Self.golden("admin.jsonl")))
        #expect(
            actual.contains(#"{"type":"gesture","time_ms":3000,"gesture":"admin","state":"recognized","x":81,"y":80}"#))
    }

    /// Filter mode (docs/kiosk.md): the `app` lines say what the browser receives through the twin. Checked by hand
    /// against SceneApp.swift's rules before it was frozen: a page tap reaches it; a second finger never does
    /// (app_max_contacts = 1); the bezel strip never does; the admin press ends for it when recognized (a lift that
    /// is a cancel, `cancel_with = "lift"`), not at the physical lift; the edge swipe that is recognized never
    /// reaches it, the edge tap that fails reaches it whole at its lift; the wake touch after 60 s is swallowed.
    @Test("examples/filter.touch on config/filter-kiosk.toml")
    func filter() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/filter.touch").path,
            config: TestSupport.packageRoot.appendingPathComponent("config/filter-kiosk.toml").path)
        #expect(actual == (try Self.golden("filter.jsonl")))
        let app = actual.filter { $0.hasPrefix(#"{"type":"app""#) }
        #expect(app.count == 11)
        #expect(actual.contains(#"{"type":"app","time_ms":5000,"contact":0,"touch":"up","cancelled":true}"#))
        #expect(!app.contains { $0.contains(#""x":1000"#) || $0.contains(#""y":1060"#) || $0.contains(#""x":10,"#) })
        #expect(!app.contains { $0.contains(#""time_ms":70000"#) })
    }

    /// Explore by touch (docs/accessibility.md) on config/accessible-kiosk.toml: checked by hand against the contract's
    /// rules before it was frozen. The corner held 3 s starts speech mode (the browser's touch ends there); exploring
    /// speaks each item at once, the hint 400 ms later, touching the focused item again repeats it at once; a
    /// double tap gives the browser exactly one down/up at the element's centre; swipes walk the reading order and
    /// step the slider (only the new value spoken); a two-finger tap pauses, another resumes with the last
    /// announcement; the signature pad passes through; the payment screen speaks its title in German; the private
    /// key's activation says nothing; the end of the list is a sound; a split tap activates; the corner ends it.
    @Test("examples/accessible-kiosk.touch on config/accessible-kiosk.toml")
    func accessibleKiosk() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/accessible-kiosk.touch").path,
            config: TestSupport.packageRoot.appendingPathComponent("config/accessible-kiosk.toml").path)
        #expect(actual == (try Self.golden("accessible-kiosk.jsonl")))
        let app = actual.filter { $0.hasPrefix(#"{"type":"app""#) }
        // The corner's touch until speech mode took it, the one activation, the signature, the tap after the end.
        #expect(app.count == 9)
        #expect(
            actual.filter { $0.hasPrefix(#"{"type":"speech_mode""#) } == [
                #"{"type":"speech_mode","time_ms":3000,"on":true}"#,
                #"{"type":"speech_mode","time_ms":21000,"on":false}"#,
            ])
        #expect(actual.contains(#"{"type":"speech","time_ms":4000,"text":"Single ticket, 3 euros, button"}"#))
    }

    /// The attract loop of config/kiosk.toml: `idle` 120 s after start (start-up counts as a lift) and again 120 s
    /// after the next lift, each once; `wake` at the touch-down after each, then a `wake_touch` line and nothing else
    /// of that touch (it reaches no control: the start button under it stays quiet); the next tap is the button's.
    @Test("examples/idle.touch on config/kiosk.toml: idle and wake at their times")
    func idle() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/idle.touch").path)
        #expect(actual == (try Self.golden("idle.jsonl")))
        let idle = actual.filter { $0.contains(#""control":"idle""#) }
        #expect(
            idle == [
                #"{"type":"action","time_ms":120000,"control":"idle","event":"idle","action":"attract","target":"kiosk","responder":null}"#,
                #"{"type":"action","time_ms":125000,"control":"idle","event":"wake","action":"welcome","target":"kiosk","responder":null}"#,
                #"{"type":"action","time_ms":245680,"control":"idle","event":"idle","action":"attract","target":"kiosk","responder":null}"#,
                #"{"type":"action","time_ms":250000,"control":"idle","event":"wake","action":"welcome","target":"kiosk","responder":null}"#,
            ])
        // The wake touch is a line of its own, right after the wake, and no control event or action carries its time.
        #expect(
            actual.firstIndex(of: idle[1]).map { actual[$0 + 1] }
                == #"{"type":"wake_touch","time_ms":125000,"contact":0,"x":960,"y":540}"#)
        let start = actual.filter { $0.contains(#""control":"start""#) }
        #expect(start.count == 4 && start.allSatisfy { $0.contains(#""time_ms":1256"#) })
    }

    /// A portrait ticket machine with three screens, all exercised in one script. Checked line by line against
    /// docs/uikit-semantics.md before it was frozen: the attract tap (§3, §5 button); a `screen` line; the zone list counts its
    /// rows from the top, valueChanged after touchUpInside (§5 segmented); the quantity slider snaps to whole tickets,
    /// a move on the same ticket sends no valueChanged, and a change sends valueChanged and primaryActionTriggered
    /// before that move's touchDragInside (continueTracking before the drag event); switching the screen away from a
    /// tracked control cancels it (§3.4: touchCancel, not highlighted, no touchUp at the lift).
    @Test("examples/ticket-machine.touch on config/ticket-machine.toml: screen lines, steps, vertical segments")
    func ticketMachine() throws {
        let actual = try Self.simulate(
            script: TestSupport.packageRoot.appendingPathComponent("examples/ticket-machine.touch").path,
            config: TestSupport.packageRoot.appendingPathComponent("config/ticket-machine.toml").path)
        #expect(actual == (try Self.golden("ticket-machine.jsonl")))
        #expect(
            actual.filter { $0.hasPrefix(#"{"type":"screen""#) } == [
                #"{"type":"screen","time_ms":100,"screen":"tickets"}"#,
                #"{"type":"screen","time_ms":3100,"screen":"payment"}"#,
                #"{"type":"screen","time_ms":4100,"screen":"tickets"}"#,
            ])
        let quantity = actual.filter {
            $0.hasPrefix(#"{"type":"event","time_ms":2"#) && $0.contains(#""event":"valueChanged""#)
        }
        #expect(quantity.count == 2)
        #expect(quantity.allSatisfy { $0.contains(#""value":3}"#) || $0.contains(#""value":4}"#) })
    }

    @Test(
        "libinput recordings on config/kiosk.toml",
        arguments: [
            ("tap.yaml", "tap.jsonl"),  // multitouch, protocol B: slots, two fingers, SYN_DROPPED
            ("tap-single-touch.yaml", "tap-single-touch.jsonl"),  // BTN_TOUCH + ABS_X/ABS_Y, no slots
        ])
    func recording(_ input: String, _ output: String) throws {
        let path = TestSupport.resourceDirectory("Golden").appendingPathComponent(input).path
        #expect(try Self.simulate(recording: path) == (try Self.golden(output)))
    }

    @Test("recording frames: device units map onto output pixels, contacts keyed by slot")
    func recordingFrames() throws {
        let configuration = try ConfigurationLoader.load(path: TestSupport.kioskConfig).get()
        let path = TestSupport.resourceDirectory("Golden").appendingPathComponent("tap.yaml").path
        let frames = try LibinputRecording.frames(
            from: String(contentsOfFile: path, encoding: .utf8), output: configuration.output
        ).get()
        #expect(frames.count == 10)
        #expect(frames[0].time == .milliseconds(0))
        #expect(frames[0].samples == [.began(0, at: Point(x: 1680, y: 945))])
        #expect(frames[3].time == .milliseconds(1000))
        #expect(frames[3].samples == [.began(0, at: Point(x: 1680, y: 945)), .began(1, at: Point(x: 240, y: 945))])
        #expect(frames[9].samples == [.cancelled(0)])
    }

    @Test("recording frames follow the [[device]] allow-list and land on the matching entry's region")
    func recordingAllowList() throws {
        let configuration = try ConfigurationLoader.load(path: TestSupport.kioskConfig).get()
        let path = TestSupport.resourceDirectory("Golden").appendingPathComponent("tap.yaml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // The recorded device is "ILITEK ILITEK-TP", 222a:0001, /dev/input/event5; this entry puts it on the
        // right half of the 1920×1080 output.
        let right = Configuration.DeviceMatch(
            name: "ILITEK*", vendor: 0x222a, path: "/dev/input/event5",
            region: Rect(x: 960, y: 0, width: 960, height: 1080))
        let frames = try LibinputRecording.frames(from: text, output: configuration.output, allowList: [right]).get()
        #expect(frames.count == 10)
        #expect(frames[0].samples == [.began(0, at: Point(x: 960 + 840, y: 945))])

        var ignored: [String] = []
        let other = Configuration.DeviceMatch(name: "eGalax*")
        let none = try LibinputRecording.frames(
            from: text, output: configuration.output, allowList: [other], ignored: { ignored.append($0) }
        ).get()
        #expect(none.isEmpty)
        #expect(ignored == ["device 0 (ILITEK ILITEK-TP, /dev/input/event5) matches no [[device]] entry"])
    }

    @Test("a file that is not a recording is refused with a message")
    func notARecording() throws {
        let output = Configuration.Output(width: 1920, height: 1080, rotation: .normal, calibration: nil)
        guard case .failure(let problem) = LibinputRecording.frames(from: "version: 1\nlibinput: {}\n", output: output)
        else {
            Issue.record("accepted a recording without devices")
            return
        }
        #expect(problem.message == "not a libinput recording: no 'devices' list")
        let malformed =
            "version: 1\nlibinput: {}\ndevices:\n- evdev:\n    absinfo: {0: [0, 99], 1: [0, 99]}\n"
            + "  events:\n  - evdev:\n    - [0, 0, 3]\n"
        guard case .failure(let problem) = LibinputRecording.frames(from: malformed, output: output) else {
            Issue.record("accepted a malformed event")
            return
        }
        #expect(problem.message.hasPrefix("device 0: malformed event"))
    }

    /// An edge swipe reported `failed` for every touch anywhere, though it only takes touches that
    /// start in its strip. A touch-down it cannot take leaves it silent; one in its strip that goes nowhere still fails;
    /// a second finger off the strip while it has one still fails it. With and without filter mode (the scene's quick
    /// lane takes plain taps only without it).
    @Test("an edge swipe is silent about touches outside its strip", arguments: [false, true])
    func edgeSwipeIsSilentOutsideItsStrip(filter: Bool) throws {
        let configuration = try ConfigurationLoader.load(
            text: """
                [output]
                width = 1000
                height = 1000

                [filter]
                enabled = \(filter)

                [[control]]
                id = "pay"
                frame = { x = 400, y = 400, width = 200, height = 200 }

                [[gesture]]
                id = "back"
                kind = "swipe"
                directions = ["right"]
                edge = "left"
                edge_margin = 30
                minimum_distance = 150

                [[gesture]]
                id = "two"
                kind = "swipe"
                fingers = 2
                directions = ["right"]
                edge = "left"
                edge_margin = 30
                """, path: "t.toml"
        ).get()
        var simulation = try Simulation(configuration: configuration)
        let lines = simulation.lines(
            .scriptText(
                """
                0 down 0 500 500
                80 up 0
                1000 down 0 900 100
                1080 up 0
                2000 down 0 10 500
                2080 up 0
                3000 down 0 10 500
                3000 down 1 500 500
                3080 up 0
                3080 up 1
                """))
        let failures = lines.filter { $0.contains(#""state":"failed""#) }
        #expect(
            failures == [
                #"{"type":"gesture","time_ms":2080,"gesture":"back","state":"failed","x":10,"y":500}"#,
                #"{"type":"gesture","time_ms":2080,"gesture":"two","state":"failed","x":10,"y":500}"#,
                #"{"type":"gesture","time_ms":3000,"gesture":"back","state":"failed","x":255,"y":500}"#,
                #"{"type":"gesture","time_ms":3000,"gesture":"two","state":"failed","x":255,"y":500}"#,
            ], "\(lines.joined(separator: "\n"))")
        let tap = #"{"type":"event","time_ms":80,"control":"pay","event":"touchUpInside""#
        #expect(lines.contains { $0.hasPrefix(tap) })
    }
}

/// The touch script format and its errors.
@Suite("simulate: touch scripts")
struct TouchScriptTests {
    @Test(
        "a malformed script names the line, the column and the problem",
        arguments: [
            ("abc down 0 1 2", 1, 1, "'abc' is not a time in milliseconds (0…1000000000)"),
            ("-5 down 0 1 2", 1, 1, "'-5' is not a time in milliseconds (0…1000000000)"),
            ("1000000001 down 0 1 2", 1, 1, "'1000000001' is not a time in milliseconds (0…1000000000)"),
            ("10 down 0 1 2\n# comment\n\n5 up 0", 4, 1, "time 5 ms is earlier than the previous line's 10 ms"),
            ("0 press 0 1 2", 1, 3, "'press' is not one of down, move, up, cancel, screen"),
            ("0 down 0", 1, 9, "down needs finite X and Y pixel coordinates"),
            ("0 down 0 5", 1, 10, "down needs finite X and Y pixel coordinates"),
            ("0 down 0 1 2\n1 move 0 nan 2", 2, 10, "move needs finite X and Y pixel coordinates"),
            ("0 down 0 1 2\n1 move 0 inf 2", 2, 10, "move needs finite X and Y pixel coordinates"),
            ("0 down 0 1 2\n1 up 0 1 2", 2, 8, "up takes no coordinates"),
            ("0 down 0 1 2\n1 cancel 0 1", 2, 12, "cancel takes no coordinates"),
            ("0 down x 1 2", 1, 8, "'x' is not a contact number (0…1000000)"),
            ("0 down -1 1 2", 1, 8, "'-1' is not a contact number (0…1000000)"),
            ("0 down", 1, 7, "expected TIME_MS down|move|up|cancel CONTACT [X Y], or TIME_MS screen ID"),
        ])
    func malformed(_ script: String, _ line: Int, _ column: Int, _ message: String) {
        #expect(
            TouchScript.parse(script) == .failure(TouchScript.Problem(line: line, column: column, message: message)))
    }

    @Test("check reports every problem at once, with its column, and touches outside the output as warnings")
    func checkAll() {
        let context = TouchScript.Context(screens: ["attract", "tickets"], outputWidth: 1080, outputHeight: 1920)
        let script = "0 down 0 5000 10\n10 screen tikets\n20 up 0 1\nx y\n30 screen attract extra\n40 move 0 -5 2\n"
        let report = TouchScript.check(script, context: context)
        #expect(
            report.problems == [
                TouchScript.Problem(
                    line: 2, column: 11, message: "no screen called 'tikets' (did you mean 'tickets'?)"),
                TouchScript.Problem(line: 3, column: 9, message: "up takes no coordinates"),
                TouchScript.Problem(
                    line: 4, column: 4,
                    message: "expected TIME_MS down|move|up|cancel CONTACT [X Y], or TIME_MS screen ID"),
                TouchScript.Problem(line: 5, column: 19, message: "unexpected field 'extra' after the screen id"),
            ])
        #expect(
            report.warnings.map { "\($0.line):\($0.column): \($0.message)" } == [
                "1:10: down at (5000, 10) is outside the output (1080×1920): no touchscreen reports a touch there",
                "6:11: move at (-5, 2) is outside the output (1080×1920): no touchscreen reports a touch there",
            ])
        // The output's edges are inside: a touchscreen's largest value maps onto them.
        #expect(TouchScript.check("0 down 0 1080 1920\n0 up 0\n", context: context).warnings.isEmpty)
        // Without screens, a screen line says so; columns count code points, not bytes.
        let none = TouchScript.Context(screens: [], outputWidth: 100, outputHeight: 100)
        #expect(
            TouchScript.check("5 screen attract", context: none).problems == [
                TouchScript.Problem(
                    line: 1, column: 10, message: "no screen called 'attract': the configuration has no [[screen]]")
            ])
        #expect(
            TouchScript.check("0 dówn 0 1 2", context: none).problems.map(\.column) == [3]
                && TouchScript.check("0 dówn é 1 2", context: none).problems.map(\.column) == [3])
    }

    @Test("check keeps the first 100 problems and counts the rest; a script is never refused past a bad line")
    func manyProblems() {
        let script = String(repeating: "0 tap 0 1 2\n", count: 150) + "7 screen x y\n"
        let report = TouchScript.check(script, context: nil)
        #expect(report.problems.count == 100)
        #expect(report.problemsNotShown == 51)
        #expect(report.problems.last?.line == 100)
    }

    @Test("a screen line ends the frame before it and becomes a step of its own")
    func screenSteps() throws {
        let steps = try TouchScript.steps("0 down 0 1 2\n0 screen a\n0 up 0\n").get()
        #expect(
            steps == [
                .frame(Frame(time: .milliseconds(0), samples: [.began(0, at: Point(x: 1, y: 2))])),
                .screen("a", at: .milliseconds(0)),
                .frame(Frame(time: .milliseconds(0), samples: [.ended(0)])),
            ])
        #expect(
            TouchScript.steps("10 screen a\n5 down 0 1 2").map { _ in 0 }
                == .failure(
                    TouchScript.Problem(
                        line: 2, column: 1, message: "time 5 ms is earlier than the previous line's 10 ms")))
    }

    @Test("comments, blank lines, tabs and CRLF; samples at the same time form one frame")
    func wellFormed() throws {
        let script =
            "# header\r\n\r\n0\tdown 0 10 20  # finger\r\n0 down 1 30 40\r\n"
            + "16 move 0 11.5 20\r\n16 up 1\r\n20 cancel 0\r\n"
        let frames = try TouchScript.parse(script).get()
        #expect(frames.map(\.time) == [.milliseconds(0), .milliseconds(16), .milliseconds(20)])
        #expect(
            frames.map(\.samples) == [
                [.began(0, at: Point(x: 10, y: 20)), .began(1, at: Point(x: 30, y: 40))],
                [.moved(0, to: Point(x: 11.5, y: 20)), .ended(1)],
                [.cancelled(0)],
            ])
    }
}
