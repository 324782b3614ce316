import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// Fault-cases.md tier F for everything touchd parses besides its configuration (ConfigurationPropertyTests has
/// that): touch scripts, `libinput record` recordings and control-socket request lines, random and mutated. A trap
/// would end the test process, so finishing proves there is none; the checks add what a result or an error must look
/// like, and bound the work and memory by counting (output sizes, problems, the JSON parser's work counter), never by
/// timing. Whatever parses is fed on, as `touchd simulate` and the daemon would: frames through the scene of
/// config/kiosk.toml, where every touch a control began tracking must end exactly once; request lines into the lines
/// the server answers with. Seeds are fixed, so a failure reproduces; `TOUCHD_FUZZ_ROUNDS` and `TOUCHD_FUZZ_SEED`
/// override them for longer runs outside the normal suite.
@Suite("Hostile input: fuzzed scripts, recordings and control lines")
struct HostileInputFuzzTests {
    /// Inputs per test: a test's own number, or `TOUCHD_FUZZ_ROUNDS`.
    static func rounds(_ standard: Int) -> Int { TestSupport.fuzzRounds ?? standard }

    static func random(_ seed: UInt64) -> SeededGenerator { SeededGenerator(seed: TestSupport.fuzzSeed ?? seed) }

    /// A message quotes at most a short cut of what it complains about, so its size does not grow with the input's.
    static let maximumMessageBytes = 400

    /// Lines of `text` as the parsers count them (a line after the last newline counts).
    static func lineCount(_ text: String) -> Int {
        text.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    }

    // MARK: - The scene's invariant

    static let kiosk = ConfigurationLoader.load(path: TestSupport.kioskConfig)

    /// Runs `frames` through the scene of config/kiosk.toml as `touchd simulate` does, then lifts every contact still
    /// down and lets every timer fire. Checks the model's invariant: every touch a control began tracking (touchDown)
    /// ends exactly once (touchUpInside, touchUpOutside or touchCancel), no end comes without a beginning, and the
    /// model reports no impossible transition. What the scene says is bounded by what it was fed.
    static func checkScene(_ frames: [Frame], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let configuration = try kiosk.get()
        var down: Set<ContactID> = []
        var samples = 0
        for frame in frames {
            samples += frame.samples.count
            for sample in frame.samples {
                switch sample.phase {
                case .began: down.insert(sample.contact)
                case .moved: break
                case .ended, .cancelled: down.remove(sample.contact)
                }
            }
        }
        let last = frames.last?.time ?? .zero
        // The cancel takes what input left down; the frame an hour later comes after every timer (the stuck-contact
        // timeout is 30 s, recognizers wait seconds), so Simulation.run fires them all before it.
        let closing = [
            Frame(time: last.advanced(by: 1000), samples: down.sorted().map { .cancelled($0) }),
            Frame(time: last.advanced(by: 3_600_000_000), samples: []),
        ]
        var simulation = try Simulation(configuration: configuration)
        var tracking: [String: ContactID] = [:]
        var violations: [String] = []
        var entries = 0
        simulation.run(.script(frames + closing)) { effects in
            for case .output(let output, let time) in effects {
                entries += output.entries.count + output.diagnostics.count
                for diagnostic in output.diagnostics {
                    switch diagnostic {
                    case .unexpectedTransition, .unexpectedGestureTransition:
                        violations.append("model bug: \(diagnostic)")
                    default: break
                    }
                }
                for record in output.events {
                    let contact = record.contact ?? -1
                    switch record.event {
                    case .touchDown:
                        if let earlier = tracking[record.control] {
                            violations.append("\(time): touchDown of \(record.control) by \(contact) while \(earlier)")
                        }
                        tracking[record.control] = contact
                    case .touchDownRepeat, .touchDragInside, .touchDragOutside, .touchDragEnter, .touchDragExit:
                        if tracking[record.control] != contact {
                            violations.append(
                                "\(time): \(record.event) of \(record.control) by \(contact), not tracked")
                        }
                    case .touchUpInside, .touchUpOutside, .touchCancel:
                        if tracking.removeValue(forKey: record.control) != contact {
                            violations.append(
                                "\(time): \(record.event) of \(record.control) by \(contact), not tracked")
                        }
                    default:
                        break
                    }
                }
            }
        }
        for (control, contact) in tracking { violations.append("\(control) still tracks \(contact) at the end") }
        if simulation.engine.nextDeadline != nil { violations.append("a deadline is left after every timer fired") }
        if !violations.isEmpty {
            Issue.record(
                "\(violations.count) violations; first: \(violations.prefix(3).joined(separator: " | "))",
                sourceLocation: sourceLocation)
        }
        // Each sample reaches at most one control and the recognizer: a handful of events, actions and diagnostics
        // (the fuzzed inputs make at most about 2.5 per sample). The closing cancels and timers add a few per contact.
        #expect(
            entries <= 10 * (samples + down.count + 1), "\(entries) entries for \(samples) samples",
            sourceLocation: sourceLocation)
    }

    // MARK: - Touch scripts

    /// Checks one script: a problem names a line of the script and stays short; frames keep the script's order and
    /// hold no more samples than it has lines; they run through the scene.
    static func checkScript(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let lines = lineCount(text)
        switch TouchScript.parse(text) {
        case .failure(let problem):
            #expect((1...lines).contains(problem.line), "\(problem)", sourceLocation: sourceLocation)
            #expect(!problem.message.isEmpty, sourceLocation: sourceLocation)
            #expect(problem.message.utf8.count <= maximumMessageBytes, sourceLocation: sourceLocation)
        case .success(let frames):
            #expect(frames.reduce(0) { $0 + $1.samples.count } <= lines, sourceLocation: sourceLocation)
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time < $1.time }, sourceLocation: sourceLocation)
            for sample in frames.flatMap(\.samples) {
                let needsLocation = sample.phase == .began || sample.phase == .moved
                #expect(needsLocation == (sample.location?.isFinite == true), sourceLocation: sourceLocation)
            }
            try checkScene(frames, sourceLocation: sourceLocation)
        }
    }

    /// Fields and fragments that have broken line parsers and number conversions before.
    static let scriptFragments: [String] = [
        "down", "move", "up", "cancel", "DOWN", "downn", "0", "-0", "+5", "1000000000", "1000000001",
        "18446744073709551615", "18446744073709551616", "-1", "1e3", "0x10", "nan", "-nan", "inf", "-inf", "infinity",
        "1e308", "1e309", "-1e308", "4.9e-324", "0.1", ".5", "5.", "1_000", "１", "1000000", "1000001", "#", " # x",
        "\t", "\r", "\r\n", "\n", "\u{0}", "\u{FEFF}", "\u{2028}", "\u{85}", "é", "e\u{301}", "\u{FFFD}",
        String(repeating: "9", count: 300), String(repeating: " ", count: 300), "0 down 0 1600 900", "5 up 0",
        "5 cancel 0", "5 move 0 1 1", "0 down 1 40 40", "0 down 2 120 60", "0 down 3 80 140",
    ]

    @Test("random lines of script fields")
    func randomScripts() throws {
        var random = Self.random(0x73_63_72_69_70_74)
        let verbs = ["down", "move", "up", "cancel"]
        for _ in 0..<Self.rounds(3_000) {
            var text = ""
            var time = 0
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                // Mostly well-formed lines in time order, so that the scene sees long scripts; now and then a field
                // from the fragments, which ends the parse at that line.
                time += Int.random(in: 0...400, using: &random)
                var fields = [
                    String(time), verbs.randomElement(using: &random)!, String(Int.random(in: 0...4, using: &random)),
                    String(Double.random(in: -100...2000, using: &random)),
                    String(Int.random(in: -100...1200, using: &random)),
                ]
                if fields[1] == "up" || fields[1] == "cancel" { fields.removeLast(2) }
                if Int.random(in: 0..<12, using: &random) == 0 {
                    fields[Int.random(in: 0..<fields.count, using: &random)] =
                        Self.scriptFragments.randomElement(using: &random)!
                }
                text += fields.joined(separator: Int.random(in: 0..<4, using: &random) == 0 ? "\t " : " ")
                text += Int.random(in: 0..<6, using: &random) == 0 ? "  # note\r\n" : "\n"
            }
            try Self.checkScript(text)
        }
    }

    @Test("mutations of examples/*.touch")
    func mutatedScripts() throws {
        let examples = try ["checkout.touch", "admin.touch"].map {
            try [UInt8](Data(contentsOf: TestSupport.packageRoot.appendingPathComponent("examples/\($0)")))
        }
        var random = Self.random(0x74_6F_75_63_68)
        for _ in 0..<Self.rounds(3_000) {
            var bytes = examples.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                TestSupport.mutate(
                    &bytes, fragments: Self.scriptFragments, valueAfter: UInt8(ascii: " "),
                    numbers: Self.scriptFragments.filter { $0.first?.isNumber == true }, using: &random)
            }
            // A script file is read as UTF-8 with replacement characters; the parser must take whatever results.
            try Self.checkScript(String(decoding: bytes, as: UTF8.self))
        }
    }

    // MARK: - libinput recordings

    /// Checks one recording: refused with a short message, or frames in time order whose samples the text could hold
    /// (each needs an event of its own, and an event takes more than one byte), run through the scene.
    static func checkRecording(
        _ text: String, allowList: [Configuration.DeviceMatch] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let output = try kiosk.get().output
        var notes: [String] = []
        switch LibinputRecording.frames(
            from: text, output: output, allowList: allowList, ignored: { notes.append($0) },
            noted: { notes.append($0) })
        {
        case .failure(let problem):
            #expect(!problem.message.isEmpty, sourceLocation: sourceLocation)
            #expect(
                problem.message.utf8.count <= maximumMessageBytes, "\(problem.message.prefix(200))…",
                sourceLocation: sourceLocation)
            // Yams complains about an alias only if the scan before it let one through.
            #expect(!problem.message.contains("undefined alias"), "\(problem)", sourceLocation: sourceLocation)
        case .success(let frames):
            // One note per device at most, no more devices than the limit, and short notes.
            #expect(notes.count <= LibinputRecording.maximumDevices, sourceLocation: sourceLocation)
            #expect(notes.allSatisfy { $0.utf8.count <= maximumMessageBytes }, sourceLocation: sourceLocation)
            #expect(frames.reduce(0) { $0 + $1.samples.count } <= text.utf8.count, sourceLocation: sourceLocation)
            #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time <= $1.time }, sourceLocation: sourceLocation)
            try checkScene(frames, sourceLocation: sourceLocation)
        }
    }

    /// YAML's rarer forms (anchors, aliases, tags, block scalars, flow collections, directives, odd line breaks),
    /// numbers no kernel writes, and pieces of a recording.
    static let yamlFragments: [String] = [
        "&a ", "*a", "&a [1, 2]\nb: *a", "<<: *a", "- *a", "{*a : 1}", "!!str ", "!!binary ", "!<tag:x> ", "!local ",
        "|\n  x\n", ">-\n  folded\n", "|+2\n", "[", "]", "{", "}", ",", "[[[[[[[[", String(repeating: "[", count: 40),
        String(repeating: "{a: ", count: 40), String(repeating: "- ", count: 40), "? ", ": ", "- ", "-", "'", "''",
        "\"", "\"\\x41\\u00e9\"", "\"\\uD800\"", "\"\\", "#", " #", " # &x *y", "%YAML 1.1\n", "%TAG ! x\n---\n",
        "---\n", "...\n", "\t", "\r", "\r\n", "\u{2028}", "\u{85}", "\u{FEFF}", "\u{0}", "~", "null", ".inf", "-.inf",
        ".nan", "0x7FFFFFFF", "0o777", "0b1010", "1_000", "+12", "1e400", "99999999999999999999999999",
        "-9223372036854775809", "9223372036854775807", "2147483648", "-2147483649", "devices:", "devices: []",
        "evdev:", "events:", "absinfo: {0: [0, 1], 1: [0, 1]}", "- evdev: [[0, 0, 3, 57, 1], [0, 0, 0, 0, 0]]",
        "[0, 0, 0, 3, 0]", "[0, 0, 3, 47, 63]", "[0, 0, 1, 330, 1]", "{a: 1, a: 2}", "a: AT&T *b", "'&x *y'",
        String(repeating: "x", count: 5_000),
    ]

    /// Replacements for the numbers of a recording: the limits of its checks, and either side of them.
    static let recordingNumbers: [String] = [
        "0", "1", "-1", "3", "47", "53", "54", "57", "63", "64", "330", "4095", "4096", "65535", "65536", "999999",
        "1000000", "2147483647", "2147483648", "-2147483648", "-2147483649", "1099511627775", "1099511627776",
        "9223372036854775807", "9223372036854775808", "99999999999999999999", "0x10", "1e3", "-0", "+1", ".5",
    ]

    /// The recordings the other tests use: the golden files and RecordingHardeningTests' two-device recording.
    static func recordings() throws -> [[UInt8]] {
        let golden = try ["tap.yaml", "tap-single-touch.yaml"].map {
            try [UInt8](Data(contentsOf: TestSupport.resourceDirectory("Golden").appendingPathComponent($0)))
        }
        let twoDevices = RecordingFixture.recording(
            RecordingFixture.device(node: 0, frames: [RecordingFixture.tap(slot: 0)]),
            RecordingFixture.device(
                node: 1,
                frames: [RecordingFixture.tap(slot: 3), RecordingFixture.tap(slot: 9, second: 1)]
            ))
        return golden + [Array(twoDevices.utf8)]
    }

    @Test("mutations of the golden recordings, with YAML's rarer forms")
    func mutatedRecordings() throws {
        let originals = try Self.recordings()
        var random = Self.random(0x72_65_63_6F_72_64)
        // Every other input is read as a configuration with a [[device]] allow-list would read it, which names the
        // devices it leaves out.
        let allowList = [
            Configuration.DeviceMatch(name: "ILITEK*", region: Rect(x: 960, y: 0, width: 960, height: 540))
        ]
        for round in 0..<Self.rounds(2_000) {
            var bytes = originals.randomElement(using: &random)!
            // Half the inputs get numbers only, which mostly keeps the YAML valid and so reaches the checks of the
            // events behind it; the others get YAML's rarer forms too.
            let fragments = round % 4 < 2 ? Self.recordingNumbers : Self.yamlFragments
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                TestSupport.mutate(
                    &bytes, fragments: fragments, valueAfter: UInt8(ascii: ":"), numbers: Self.recordingNumbers,
                    using: &random)
            }
            try Self.checkRecording(String(decoding: bytes, as: UTF8.self), allowList: round % 2 == 0 ? [] : allowList)
        }
    }

    @Test("random YAML lines after a recording's header")
    func randomRecordings() throws {
        var random = Self.random(0x79_61_6D_6C)
        let header = "version: 1\nndevices: 1\nlibinput:\n  version: \"1.26.1\"\ndevices:\n"
        let pieces = Self.yamlFragments + Self.recordingNumbers + ["- ", "  ", "evdev:", "name: x", "node: /dev/x"]
        for _ in 0..<Self.rounds(1_000) {
            var text = header
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                text += String(repeating: " ", count: Int.random(in: 0...8, using: &random))
                for _ in 0..<Int.random(in: 1...3, using: &random) { text += pieces.randomElement(using: &random)! }
                text += "\n"
            }
            #expect(LibinputRecording.looksLikeRecording(text))
            try Self.checkRecording(text)
        }
    }

    // MARK: - Control-socket request lines

    /// The parser's work per byte of a line, at most: each byte is read once, a string's bytes are decoded once, and
    /// elements are moved into their containers a bounded number of times (doubling growth). The fuzzed lines reach
    /// about 2; a container copied on every append would reach hundreds.
    static let workPerByte = 4

    /// Checks one request line: the parser's work is linear in the line, whatever it parses to keeps its meaning
    /// when written back, and the line gets an answer the server can send, a response or a structured error.
    static func checkRequest(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        var work = 0
        let parsed: JSONValue?
        do {
            parsed = try JSONValue.parse(line, limits: .standard, work: &work)
        } catch {
            parsed = nil
            #expect((0...line.count).contains(error.offset), "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.utf8.count <= maximumMessageBytes, sourceLocation: sourceLocation)
        }
        #expect(
            work <= workPerByte * line.count + 16, "work \(work) for \(line.count) bytes",
            sourceLocation: sourceLocation)
        if let parsed {
            // Written back, it reads the same (the writer is what the server answers with).
            let written = parsed.json
            #expect((try? JSONValue.parse(Array(written.utf8))) == parsed, "\(written)", sourceLocation: sourceLocation)
        }

        let answer: String
        let id: ControlRequestID?
        switch ControlProtocol.decode(line) {
        case .success(.hello(let helloID, _)):
            #expect(parsed != nil, sourceLocation: sourceLocation)
            id = helloID
            answer = ControlProtocol.hello(
                id: helloID, server: "touchd/fuzz", generation: 1, role: .observer, client: 1)
        case .success(.request(let requestID, _)):
            #expect(parsed != nil, sourceLocation: sourceLocation)
            id = requestID
            answer = ControlProtocol.response(id: requestID, result: "{}")
        case .failure(let refusal):
            // A line that is not JSON cannot name its id; a request that is gets its id back when it has one.
            if parsed == nil {
                #expect(refusal.id == nil && refusal.error.code == .badRequest, sourceLocation: sourceLocation)
            }
            #expect(!refusal.error.message.isEmpty, sourceLocation: sourceLocation)
            #expect(refusal.error.message.utf8.count <= maximumMessageBytes, sourceLocation: sourceLocation)
            id = refusal.id
            answer = ControlProtocol.failure(id: refusal.id, error: refusal.error)
        }
        // The answer is one JSON object on one line that carries the request's id (null when it had none).
        #expect(!answer.contains("\n"), sourceLocation: sourceLocation)
        let reply = try? JSONValue.parse(Array(answer.utf8))
        #expect(reply?.objectValue != nil, "\(answer)", sourceLocation: sourceLocation)
        let expectedID = id.map { (try? JSONValue.parse(Array($0.json.utf8))) ?? .null } ?? .null
        #expect(reply?["id"] == expectedID, "\(answer)", sourceLocation: sourceLocation)
    }

    /// One request of each verb, well formed.
    static let requests: [String] = [
        #"{"type":"hello","v":1,"id":1}"#, #"{"type":"state","id":"a"}"#, #"{"type":"stats","id":-2}"#,
        #"{"type":"set","id":3,"control":"pay","enabled":false,"selected":true,"value":0.5}"#,
        #"{"type":"send","id":4,"control":"pay","events":["touchUpInside","touchDown"]}"#,
        #"{"type":"screen","id":5,"screen":"main"}"#, #"{"type":"screen","id":"s"}"#,
        #"{"type":"subscribe","id":6,"kinds":["control"],"controls":["pay"],"events":[],"gestures":["admin"]}"#,
        #" { "type" : "unsubscribe" , "id" : 7 } "#,
    ]

    /// JSON's corners: escapes, surrogates, numbers at and past the limits, nesting past the depth limit, strings
    /// past the length limit, duplicate members, and pieces of requests.
    static let jsonFragments: [String] = [
        "{", "}", "[", "]", ",", ":", "\"", "\\", "\"\\u0000\"", "\"\\uD800\"", "\"\\uDBFF\\uDFFF\"", "\"\\uDC00\"",
        "\"\\u00e9\\n\\t\\/\"", "\"\\x\"", "null", "true", "false", "nul", "-", "-0", "0", "01", "1.", ".1", "1e",
        "1e999", "-1e999", "1e-999", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "123456789012345678901234567890", "1.7976931348623157e308", "\u{0}", "\u{7F}", "\t",
        "\r", "\n", "\u{FEFF}", "é", "\u{10FFFF}", String(repeating: "[", count: 40),
        String(repeating: "{\"a\":", count: 40),
        String(repeating: "[1,", count: 200), "\"" + String(repeating: "x", count: 4_097) + "\"",
        "\"" + String(repeating: "\\u00e9", count: 2_049) + "\"", "\"type\"", "\"id\"", "\"v\"", "\"hello\"",
        "\"set\"", "\"send\"", "\"subscribe\"", "\"events\":[]", "\"id\":1,\"id\":2", "\"value\":1e308",
        "\"id\":\"" + String(repeating: "i", count: 65) + "\"", "\"control\":" + String(repeating: "[", count: 31),
    ]

    @Test("mutations of well-formed requests")
    func mutatedRequests() {
        var random = Self.random(0x63_6F_6E_74_72_6F_6C)
        let numbers = ["0", "-1", "1", "2", "9223372036854775807", "9223372036854775808", "1e3", "0.5", "-0", "1e999"]
        for _ in 0..<Self.rounds(5_000) {
            var bytes = Array(Self.requests.randomElement(using: &random)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                TestSupport.mutate(
                    &bytes, fragments: Self.jsonFragments, valueAfter: UInt8(ascii: ":"), numbers: numbers,
                    using: &random)
            }
            // The server splits lines at "\n" and drops a "\r" before it: a request line has neither at its end.
            while bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                Self.checkRequest(Array(line))
            }
        }
    }

    @Test("random JSON values and random bytes")
    func randomRequests() {
        var random = Self.random(0x6A_73_6F_6E)
        for round in 0..<Self.rounds(5_000) {
            var line: [UInt8]
            if round % 3 == 0 {
                line = (0..<Int.random(in: 0...512, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                var text = ""
                Self.appendRandomValue(to: &text, depth: 0, using: &random)
                line = Array(text.utf8)
            }
            line.removeAll { $0 == UInt8(ascii: "\n") }
            Self.checkRequest(line)
        }
    }

    /// A random JSON value (sometimes not quite JSON: a fragment in place of a value), nested up to past the depth
    /// limit, with objects that often look like requests.
    static func appendRandomValue(to text: inout String, depth: Int, using random: inout SeededGenerator) {
        let keys = ["type", "id", "v", "control", "enabled", "selected", "value", "events", "screen", "kinds", "x"]
        let verbs = ControlProtocol.Verb.allCases.map(\.rawValue).sorted()
        switch Int.random(in: 0..<(depth > 36 ? 5 : 8), using: &random) {
        case 0: text += ["null", "true", "false"].randomElement(using: &random)!
        case 1:
            text += String(Int64.random(in: .min ... .max, using: &random) >> UInt64.random(in: 0...63, using: &random))
        case 2: text += "\(Double.random(in: -1e6...1e6, using: &random))"
        case 3: JSONLine.appendString(verbs.randomElement(using: &random)!, to: &text)
        case 4: text += jsonFragments.randomElement(using: &random)!
        case 5, 6:
            text += "{"
            for index in 0..<Int.random(in: 0...4, using: &random) {
                if index > 0 { text += "," }
                JSONLine.appendString(keys.randomElement(using: &random)!, to: &text)
                text += ":"
                appendRandomValue(to: &text, depth: depth + 1, using: &random)
            }
            text += "}"
        default:
            text += "["
            for index in 0..<Int.random(in: 0...4, using: &random) {
                if index > 0 { text += Int.random(in: 0..<4, using: &random) == 0 ? " , " : "," }
                appendRandomValue(to: &text, depth: depth + 1, using: &random)
            }
            text += "]"
        }
    }
}
