import Foundation
import Testing
import TouchModel

@testable import TouchDaemon

/// `touchd simulate` on hostile `libinput record` files and touch scripts: each ends in a precise error or a correct
/// result, in bounded time and memory, never a trap.
@Suite("simulate: hostile recordings and scripts")
struct RecordingHardeningTests {
    static func failure(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        switch LibinputRecording.frames(from: text, output: RecordingFixture.output) {
        case .success:
            Issue.record("the recording was accepted", sourceLocation: sourceLocation)
            return nil
        case .failure(let problem): return problem.message
        }
    }

    /// Found by the VM's record-and-replay check: the kernel sends an axis only when it changes, so a touch where the
    /// slot's last touch before the recording was carries no position in the recording. It is left out with a note,
    /// never half-played (no lift for a touch the scene never saw).
    @Test("a touch that begins without a position is left out and noted")
    func touchWithoutPosition() throws {
        let unplaced: [[Int]] = [[0, 0, 3, 47, 0], [0, 0, 3, 57, 3], [0, 0, 1, 330, 1], [0, 0, 0, 0, 0]]
        let lift: [[Int]] = [[0, 30_000, 3, 57, -1], [0, 30_000, 1, 330, 0], [0, 30_000, 0, 0, 0]]
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 4, frames: [unplaced, lift] + [RecordingFixture.tap(slot: 0, second: 1)]))
        var notes: [String] = []
        let frames = try LibinputRecording.frames(
            from: text, output: RecordingFixture.output, noted: { notes.append($0) }
        ).get()
        #expect(frames.map(\.samples.count) == [1])
        #expect(frames.first?.time == .milliseconds(1000))
        #expect(notes.count == 1)
        #expect(
            notes.first?.hasPrefix("device 0: 1 touches began without a position and were left out (the first at 0 ms)")
                == true)
    }

    // MARK: Slots and numbers

    @Test("a second device's ABS_MT_SLOT of 2^63−1 is refused with a message, not a trap")
    func hugeSlot() {
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 0, frames: [RecordingFixture.tap(slot: 0)]),
            RecordingFixture.device(node: 1, frames: [RecordingFixture.tap(slot: Int.max)]))
        #expect(
            Self.failure(text)
                == "device 1: malformed event [0, 0, 3, 47, 9223372036854775807]: the value 9223372036854775807 "
                + "is outside evdev's 32-bit range")
    }

    @Test("events for a slot outside the device's range are ignored and counted; the other slots still work")
    func slotOutOfRange() throws {
        var notes: [String] = []
        let frames: [[[Int]]] = [
            RecordingFixture.tap(slot: 10),  // slots are 0…9
            [[0, 1000, 3, 57, -1], [0, 1000, 0, 0, 0]],
            RecordingFixture.tap(slot: Int(Int32.max), second: 1),
            RecordingFixture.tap(slot: 2, second: 2),
            [[2, 50000, 3, 57, -1], [2, 50000, 0, 0, 0]],
        ]
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 0, frames: [RecordingFixture.tap(slot: 0)]),
            RecordingFixture.device(node: 1, frames: frames))
        let result = try LibinputRecording.frames(
            from: text, output: RecordingFixture.output, noted: { notes.append($0) }
        ).get()
        // Device 0's touch (contact 0, never lifted) and device 1's slot 2 (contact 1002), nothing of slots 10 and
        // 2^31−1.
        #expect(
            result.map(\.samples) == [
                [.began(0, at: Point(x: 240, y: 135))],
                [.began(1002, at: Point(x: 240, y: 135))],
                [.ended(1002)],
            ])
        #expect(notes == ["device 1: 9 events for slots outside 0…9 were ignored (the first for slot 10)"])
    }

    @Test("a device declaring more slots than libinput tracks uses the first 64")
    func slotCap() throws {
        var notes: [String] = []
        let text = RecordingFixture.recording(
            RecordingFixture.device(
                node: 0, slots: 1_000_000, frames: [RecordingFixture.tap(slot: 63), RecordingFixture.tap(slot: 64)]))
        let result = try LibinputRecording.frames(
            from: text, output: RecordingFixture.output, noted: { notes.append($0) }
        ).get()
        #expect(result.map(\.samples) == [[.began(63, at: Point(x: 240, y: 135))]])
        #expect(notes == ["device 0: 4 events for slots outside 0…63 were ignored (the first for slot 64)"])
    }

    @Test("an axis whose minimum equals its maximum makes no touch device, and divides nothing by zero")
    func flatAxis() throws {
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 0, axisMaximum: 0, frames: [RecordingFixture.tap(slot: 0)]))
        #expect(try LibinputRecording.frames(from: text, output: RecordingFixture.output).get().isEmpty)
    }

    @Test(
        "numbers no kernel writes are refused with the event and the reason",
        arguments: [
            ([-1, 0, 3, 47, 0], "the time must be 0…1099511627775 seconds and 0…999999 microseconds"),
            ([1 << 40, 0, 3, 47, 0], "the time must be 0…1099511627775 seconds and 0…999999 microseconds"),
            ([0, 1_000_000, 3, 47, 0], "the time must be 0…1099511627775 seconds and 0…999999 microseconds"),
            ([0, 0, 65536, 0, 0], "the type and code must be 0…65535"),
            ([0, 0, 3, -1, 0], "the type and code must be 0…65535"),
            ([0, 0, 3, 53, Int(Int32.min) - 1], "the value -2147483649 is outside evdev's 32-bit range"),
        ])
    func outOfRange(_ event: [Int], _ reason: String) {
        let text = RecordingFixture.recording(RecordingFixture.device(node: 0, frames: [[event]]))
        let raw = "[" + event.map(String.init).joined(separator: ", ") + "]"
        #expect(Self.failure(text) == "device 0: malformed event \(raw): \(reason)")
    }

    @Test("an axis range wider than 32 bits is refused")
    func wideAxis() {
        let text = RecordingFixture.recording(
            RecordingFixture.device(node: 0, axisMaximum: Int.max, frames: [RecordingFixture.tap(slot: 0)]))
        #expect(
            Self.failure(text)
                == "device 0: absinfo 53 has minimum 0 and maximum 9223372036854775807; evdev's values are 32-bit")
    }

    // MARK: YAML's rarer forms

    /// Found by HostileInputFuzzTests (TOUCHD_FUZZ_SEED=987654321): Yams.load trapped on a mapping key that is a list
    /// or a mapping (a force unwrap in its Constructor), so `touchd simulate` crashed on such a file. Each case runs in
    /// a process of its own, so that a trap fails this test instead of ending the test run.
    @Test(
        "a mapping key that is a list or a mapping is refused, not a trap",
        arguments: [
            ("? [a, b]\n: 1\n", "line 4, column 3"), ("x: {[1]: 2}\n", "line 4, column 5"),
            ("x: {{a: 1}: 2}\n", "line 4, column 5"), ("? - a\n: 1\n", "line 4, column 3"),
            ("s: !!set {[1]}\n", "line 4, column 11"),
        ])
    func complexKeys(_ yaml: String, _ position: String) async {
        await #expect(processExitsWith: .success) { [yaml, position] in
            #expect(
                Self.failure("version: 1\nlibinput: {}\ndevices: []\n" + yaml)
                    == "not a valid libinput recording: \(position): a mapping key is a list or a mapping")
        }
    }

    @Test("nesting as deep as libyaml allows is read without running out of stack; deeper is refused")
    func deepNesting() async {
        await #expect(processExitsWith: .success) {
            for depth in [990, 1_001] {
                let text = "version: 1\nlibinput: {}\ndevices: []\nx:\n" + String(repeating: "- ", count: depth) + "x\n"
                let result = LibinputRecording.frames(from: text, output: RecordingFixture.output)
                if depth < 1_000 {
                    #expect((try? result.get())?.isEmpty == true, "\(result)")
                } else {
                    #expect(Self.failure(text)?.contains("Maximum nesting level reached") == true)
                }
            }
        }
    }

    // MARK: Messages

    /// Found by HostileInputFuzzTests: messages quoted the file without limit (an event's whole value; Yams' error
    /// with the whole line of the problem, or for duplicate keys the whole file), so a 16 MiB recording made a
    /// message of megabytes.
    @Test("a message quotes at most a short cut of the file")
    func shortMessages() throws {
        let long = String(repeating: "x", count: 100_000)
        let event = RecordingFixture.recording(RecordingFixture.device(node: 0, frames: [[[0, 0, 3]]]))
            .replacingOccurrences(
                of: "[0, 0, 3]", with: "[0, 0, \"\(long)\"]")
        #expect(
            Self.failure(event)
                == "device 0: malformed event " + ("[0, 0, \"" + long).prefix(LibinputRecording.maximumQuoted) + "…")

        // A key given twice: Yams described the whole file. (YAML allows plain keys of up to 1024 characters.)
        let key = String(repeating: "k", count: 1000)
        let duplicate = "version: 1\nlibinput: {}\ndevices: []\n" + key + ": 1\n" + key + ": 2\n# " + long + "\n"
        #expect(
            Self.failure(duplicate)
                == "not a valid libinput recording: line 4, column 1: duplicate keys '"
                + key.prefix(LibinputRecording.maximumQuoted) + "…'")

        // A syntax error at the end of a long line: Yams quoted the line and a caret under the column.
        let line = "version: 1\nlibinput: {}\ndevices: [" + long + "\n"
        #expect(
            Self.failure(line)
                == "not a valid libinput recording: line 4, column 1: while parsing a flow sequence (line 3, column 10): "
                + "did not find expected ',' or ']'")

        // The name of a device the allow-list leaves out.
        let named = RecordingFixture.recording(RecordingFixture.device(node: 0, frames: [])).replacingOccurrences(
            of: "\"Touch 0\"", with: "\"\(long)\"")
        var ignored: [String] = []
        _ = try LibinputRecording.frames(
            from: named, output: RecordingFixture.output, allowList: [Configuration.DeviceMatch(name: "other")],
            ignored: { ignored.append($0) }
        ).get()
        #expect(
            ignored == [
                "device 0 (" + String(repeating: "x", count: LibinputRecording.maximumQuoted)
                    + "…, /dev/input/event0) matches no [[device]] entry"
            ])
    }

    // MARK: Size

    @Test("many slots and many frames decode in one pass, correctly")
    func manySlotsAndFrames() throws {
        // 20,000 slot selections, most out of range and ignored, then 20,000 frames moving slot 5: the decoder's
        // work per SYN_REPORT no longer grows with the slots seen before (it did: 8,000 × 8,000 took 71 s).
        let count = 20_000
        var first: [[Int]] = []
        for slot in 0..<count { first += [[0, 0, 3, 47, slot], [0, 0, 3, 57, slot + 1], [0, 0, 3, 53, 512]] }
        first += [[0, 0, 3, 47, 5], [0, 0, 3, 54, 512], [0, 0, 0, 0, 0]]
        var frames = [first]
        for index in 0..<count {
            frames.append([
                [1 + index / 1000, index % 1000 * 1000, 3, 53, 1024 + index % 2 * 1024],
                [1 + index / 1000, index % 1000 * 1000, 0, 0, 0],
            ])
        }
        var notes: [String] = []
        let text = RecordingFixture.recording(RecordingFixture.device(node: 0, slots: count, frames: frames))
        let result = try LibinputRecording.frames(
            from: text, output: RecordingFixture.output, noted: { notes.append($0) }
        ).get()
        // Slots 0…63 began (only slot 5 has a y, so only it has a location), then one move per frame.
        #expect(result.count == 1 + count)
        #expect(result[0].samples == [.began(5, at: Point(x: 240, y: 135))])
        #expect(result[1].samples == [.moved(5, to: Point(x: 480, y: 135))])
        #expect(result[count].samples == [.moved(5, to: Point(x: 960, y: 135))])
        #expect(notes.count == 2)
        // The other 63 slots began without a y: left out, and said so.
        #expect(notes.first?.hasPrefix("device 0: 63 touches began without a position and were left out") == true)
        #expect(
            notes.last
                == "device 0: \((count - 64) * 3) events for slots outside 0…63 were ignored (the first for slot 64)"
        )
    }

    @Test("a recording over 16 MiB, or with too many devices, is refused naming the limit")
    func limits() {
        let big = String(repeating: "#", count: LibinputRecording.maximumSize + 1)
        #expect(
            Self.failure(big)
                == "the recording is 16777217 bytes; a libinput recording may be at most 16 MiB (16777216 bytes)")
        let devices = Array(repeating: "- {}\n", count: LibinputRecording.maximumDevices + 1).joined()
        #expect(
            Self.failure("version: 1\nlibinput: {}\ndevices:\n" + devices)
                == "the recording lists 65 devices; at most 64 are allowed")
    }

    // MARK: YAML aliases

    /// Nine aliases nested nine deep: 9^9 strings once expanded. Refused before Yams sees it, so the test is quick.
    @Test("a billion-laughs recording is refused before it is expanded")
    func billionLaughs() {
        let lols = Array(repeating: "\"lol\"", count: 9).joined(separator: ",")
        var text = "version: 1\nlibinput: {}\ndevices: []\na: &a [\(lols)]\n"
        var previous = "a"
        for name in ["b", "c", "d", "e", "f", "g", "h", "i"] {
            text += "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 9).joined(separator: ",") + "]\n"
            previous = name
        }
        #expect(LibinputRecording.looksLikeRecording(text))
        #expect(Self.failure(text) == "YAML anchors (&) are not allowed in a libinput recording (line 4)")
    }

    @Test(
        "anchors, aliases and block scalars are found where libyaml would see them",
        arguments: [
            ("devices: *x", "YAML aliases (*) are not allowed in a libinput recording (line 1)"),
            ("a: 1\ndevices:\n- *x\n", "YAML aliases (*) are not allowed in a libinput recording (line 3)"),
            ("devices: [1,*x]", "YAML aliases (*) are not allowed in a libinput recording (line 1)"),
            ("devices: {\"a\":*x}", "YAML aliases (*) are not allowed in a libinput recording (line 1)"),
            ("devices: ['a'&x 1]", "YAML anchors (&) are not allowed in a libinput recording (line 1)"),
            ("devices: !!seq &x []", "YAML anchors (&) are not allowed in a libinput recording (line 1)"),
            ("# c\r&x a: 1", "YAML anchors (&) are not allowed in a libinput recording (line 2)"),
            ("# c\u{2028}&x a: 1", "YAML anchors (&) are not allowed in a libinput recording (line 2)"),
            ("\u{FEFF}&x a: 1", "YAML anchors (&) are not allowed in a libinput recording (line 1)"),
            ("a: 'it''s'\nb: *x", "YAML aliases (*) are not allowed in a libinput recording (line 2)"),
            ("a: \"q\\\"\" &x [1]", "YAML anchors (&) are not allowed in a libinput recording (line 1)"),
            // The line may continue the plain scalar "foo" (then the quote is text and &x an anchor) or start a
            // quoted one: libyaml decides by indentation, the scan takes both.
            ("- k: foo\n  'x: &a' : 1", "YAML anchors (&) are not allowed in a libinput recording (line 2)"),
            ("a: |\n  *x", "YAML block scalars (| and >) are not allowed in a libinput recording (line 1)"),
            ("a: >-\n  text", "YAML block scalars (| and >) are not allowed in a libinput recording (line 1)"),
            (String(repeating: "[", count: 33), "flow collections ([ ] and { }) nest deeper than 32 levels (line 1)"),
            // Over-cautious: libyaml reads "&y" as more of the plain scalar "x" (the line is indented), but telling
            // needs its indentation stack, so the scan takes it as an anchor too. libinput never writes such a line.
            ("a: x\n  &y\n", "YAML anchors (&) are not allowed in a libinput recording (line 2)"),
        ])
    func found(_ text: String, _ message: String) {
        #expect(LibinputRecording.yamlProblem(in: text) == LibinputRecording.Problem(message: message))
    }

    @Test(
        "& and * in comments, quoted strings and the middle of plain scalars are text",
        arguments: [
            "a: AT&T *2 b*c # &x *y\n",
            "name: \"Touch &x *y\"\nb: 'p &q *r'\n",
            "a: \"multi\n  line &x\n  *y\"\nb: 'x\n *z'\n",
            "- ID_MODEL=A&B\n- ID_X=foo *bar\n",
            "a: 1 # *x\n# &y\n  # *z\n",
            "k: [a, 'b*c', \"&d\"] # e\n",
            "devices: {a:*x}\n",  // in a flow collection ":*" does not end the plain scalar "a:*x"
        ])
    func text(_ text: String) {
        #expect(LibinputRecording.yamlProblem(in: text) == nil)
    }

    @Test("the golden recordings pass the check")
    func goldenRecordings() throws {
        for name in ["tap.yaml", "tap-single-touch.yaml"] {
            let url = TestSupport.resourceDirectory("Golden").appendingPathComponent(name)
            #expect(LibinputRecording.yamlProblem(in: try String(contentsOf: url, encoding: .utf8)) == nil)
        }
    }
}
