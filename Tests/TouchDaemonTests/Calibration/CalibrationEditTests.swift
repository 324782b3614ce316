import Foundation
import Testing

@testable import TouchDaemon

/// The edit `touchd calibrate` makes to the file: one line replaced or inserted, or an entry appended; every other
/// byte as it was.
@Suite("touchd calibrate: the edit of the file")
struct CalibrationEditTests {
    static let line = "calibration = [1.02, -0.01, 0.003, 0.02, 0.98, -0.004]"

    static let file = """
        # A kiosk.   Comments, odd spacing and blank lines must all survive.
        [output]
        width = 1280
        height = 800

        [[device]]   # the left panel
        match_name = "Left*"
        calibration = [ 1.0, 0.0, 0.0,    # first row
                        0.0, 1.0, 0.0 ]   # second row, and a comment after
        rotation = 90

        [[device]] # the right panel
        match_name = "Right*"
        region = { x = 640, y = 0, width = 640, height = 800 }

        # The end.
        """

    /// The lines of `new` that differ from `old`'s, when the edit only replaced or added lines.
    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false) }

    @Test("replaces an existing calibration, over several lines, keeping the comment after it")
    func replace() throws {
        let outcome = try CalibrationEdit.apply(to: Self.file, device: 0, matchers: [], line: Self.line).get()
        let expected = Self.file.replacingOccurrences(
            of: "calibration = [ 1.0, 0.0, 0.0,    # first row\n                0.0, 1.0, 0.0 ]",
            with: Self.line)
        #expect(outcome.text == expected)
        #expect(outcome.line == 8)
        #expect(outcome.summary == "replaced the calibration of device[0] (line 8)")
        #expect(Self.lines(outcome.text)[7] == "\(Self.line)   # second row, and a comment after")
    }

    @Test("inserts a calibration right after the entry's header line")
    func insert() throws {
        let outcome = try CalibrationEdit.apply(to: Self.file, device: 1, matchers: [], line: Self.line).get()
        var lines = Self.lines(Self.file)
        lines.insert(Substring(Self.line), at: 12)
        #expect(outcome.text == lines.joined(separator: "\n"))
        #expect(outcome.line == 13)
        #expect(Self.lines(outcome.text)[11] == "[[device]] # the right panel")
    }

    @Test("adds an entry at the end when none matches; a file without a final newline gets one first")
    func append() throws {
        let outcome = try CalibrationEdit.apply(
            to: Self.file, device: nil, matchers: ["match_name = \"Other\""], line: Self.line
        ).get()
        #expect(outcome.text == Self.file + "\n\n[[device]]\nmatch_name = \"Other\"\n\(Self.line)\n")
        #expect(outcome.line == Self.lines(Self.file).count + 4)
        #expect(Self.lines(outcome.text)[outcome.line - 1] == Substring(Self.line))
        let ended = try CalibrationEdit.apply(
            to: "[output]\nwidth = 1\nheight = 1\n", device: nil, matchers: [], line: Self.line
        ).get()
        #expect(ended.text == "[output]\nwidth = 1\nheight = 1\n\n[[device]]\n\(Self.line)\n")
        #expect(ended.line == 6)
    }

    @Test("Windows line endings, a byte order mark and a header on the last line")
    func lineEndings() throws {
        let crlf =
            "\u{FEFF}[output]\r\nwidth = 10\r\nheight = 10\r\n[[device]]\r\nmatch_name = \"x\"\r\ncalibration = [1, 0, 0, 0, 1, 0]\r\n"
        let replaced = try CalibrationEdit.apply(to: crlf, device: 0, matchers: [], line: Self.line).get()
        #expect(replaced.text == crlf.replacingOccurrences(of: "calibration = [1, 0, 0, 0, 1, 0]", with: Self.line))
        let last = "[output]\nwidth = 10\nheight = 10\n[[device]]"
        let inserted = try CalibrationEdit.apply(to: last, device: 0, matchers: [], line: Self.line).get()
        #expect(inserted.text == last + "\n" + Self.line + "\n")
        let first = "\u{FEFF}[[device]] # one\r\nmatch_name = \"x\"\r\n"
        let added = try CalibrationEdit.apply(to: first, device: 0, matchers: [], line: Self.line).get()
        #expect(added.text == "\u{FEFF}[[device]] # one\r\n\(Self.line)\r\nmatch_name = \"x\"\r\n")
    }

    @Test("a quoted key, and strings with brackets inside the old value's comments")
    func quoted() throws {
        let text = "[[device]]\n\"calibration\" = [1, 0, 0, # ] [ \"\n 0, 1, 0] # kept\nmatch_name = \"a]\"\n"
        let outcome = try CalibrationEdit.apply(to: text, device: 0, matchers: [], line: Self.line).get()
        #expect(outcome.text == "[[device]]\n\(Self.line) # kept\nmatch_name = \"a]\"\n")
    }

    @Test("refuses what it cannot edit line by line: invalid TOML, inline device tables, a missing entry")
    func refusals() {
        #expect(throws: CalibrationEdit.Failure.self) {
            try CalibrationEdit.apply(to: "[output\n", device: 0, matchers: [], line: Self.line).get()
        }
        let inline = "device = [{ match_name = \"x\" }]\n"
        #expect(throws: CalibrationEdit.Failure.self) {
            try CalibrationEdit.apply(to: inline, device: 0, matchers: [], line: Self.line).get()
        }
        #expect(throws: CalibrationEdit.Failure.self) {
            try CalibrationEdit.apply(to: inline, device: nil, matchers: [], line: Self.line).get()
        }
        #expect(throws: CalibrationEdit.Failure.self) {
            try CalibrationEdit.apply(to: Self.file, device: 2, matchers: [], line: Self.line).get()
        }
    }

    @Test("a new entry's matchers: the port when the panel has one, else its name as a literal glob and its ids")
    func matchers() {
        var panel = DeviceInfo(
            id: 1, name: "ILITEK [touch] *2*", sysname: "event5", vendor: 0x222a, product: 1, devnode: nil, links: [],
            isTouchscreen: true, touchCount: 10)
        #expect(
            CalibrationSession.matchers(for: panel) == [
                #"match_name = "ILITEK \\[touch\\] \\*2\\*""#, #"match_vendor = "0x222a""#,
                #"match_product = "0x0001""#,
            ])
        #expect(Configuration.DeviceMatch.glob("ILITEK \\[touch\\] \\*2\\*", matches: panel.name))
        panel.links = ["/dev/input/by-path/pci-0000:00:14.0-usb-0:1:1.0-event", "pci-0000:00:14.0-usb-0:1:1.0"]
        #expect(CalibrationSession.matchers(for: panel) == [#"match_path = "pci-0000:00:14.0-usb-0:1:1.0""#])
    }
}
