import Testing
import TouchModel

@testable import TouchDaemon

/// Touch scripts: a precise message for each bad line, and no whole-file arrays of lines.
@Suite("simulate: hostile touch scripts")
struct TouchScriptHardeningTests {
    @Test(
        "extra fields are named",
        arguments: [
            ("10 down 0 5 5 7", 1, 15, "unexpected field '7' after X and Y"),
            ("0 down 0 1 2\n\n10 move 0 5 5 7 8", 3, 15, "unexpected field '7' after X and Y"),
            ("10 down 0 5 5 7 # note", 1, 15, "unexpected field '7' after X and Y"),
            ("0 down 0 1 2\n10 up 0 5", 2, 9, "up takes no coordinates"),
        ])
    func extraField(_ script: String, _ line: Int, _ column: Int, _ message: String) {
        #expect(
            TouchScript.parse(script) == .failure(TouchScript.Problem(line: line, column: column, message: message)))
    }

    @Test("a huge field is cut in the message")
    func hugeField() {
        let field = String(repeating: "9", count: 100_000)
        let expected =
            "'" + String(repeating: "9", count: TouchScript.maximumQuotedField)
            + "…' is not a time in milliseconds (0…1000000000)"
        #expect(TouchScript.parse(field + " down 0 1 2") == .failure(TouchScript.Problem(line: 1, message: expected)))
    }

    @Test("a long script parses into the same frames, one per time")
    func longScript() throws {
        var script = ""
        for index in 0..<50_000 {
            script += "\(index * 10) down \(index % 10) \(index % 1920) 5\r\n\(index * 10) up \(index % 10)\n"
        }
        let frames = try TouchScript.parse(script).get()
        #expect(frames.count == 50_000)
        #expect(frames[49_999].samples == [.began(9, at: Point(x: Double(49_999 % 1920), y: 5)), .ended(9)])
    }
}
