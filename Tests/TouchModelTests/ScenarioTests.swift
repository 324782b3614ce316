import Foundation
import Testing

/// The golden scenarios of Tests/TouchModelTests/Scenarios/ (format: ScenarioRunner.swift, README.md).
@Suite("Golden scenarios")
struct ScenarioTests {
    /// The `.scenario` files copied into the test bundle, sorted by name.
    static let names: [String] = {
        guard let directory = Bundle.module.url(forResource: "Scenarios", withExtension: nil),
            let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        return files.filter { $0.hasSuffix(".scenario") }.sorted()
    }()

    static func text(of name: String) throws -> String {
        let directory = try #require(Bundle.module.url(forResource: "Scenarios", withExtension: nil))
        return try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    /// Where a failure points: the scenario in the source tree, so editors jump to the line.
    static func location(of failure: ScenarioFailure) -> SourceLocation {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Scenarios").appendingPathComponent(failure.file).path
        return SourceLocation(fileID: "TouchModelTests/\(failure.file)", filePath: path, line: failure.line, column: 1)
    }

    @Test("scenario", arguments: names)
    func scenario(_ name: String) throws {
        for failure in ScenarioRunner(file: name).run(try Self.text(of: name)) {
            Issue.record(Comment(rawValue: failure.description), sourceLocation: Self.location(of: failure))
        }
    }

    @Test("the scenarios are bundled")
    func bundled() {
        #expect(Self.names.count >= 30, "found \(Self.names)")
    }

    @Test("every control event a touch can cause appears in some scenario's expected output")
    func everyEventKindIsCovered() throws {
        var seen: Set<String> = []
        for name in Self.names {
            let lines = try #require(ScenarioRunner(file: name).expectedLines(try Self.text(of: name)))
            for line in lines where line.hasPrefix("> event ") {
                seen.insert(line.split(separator: " ")[3].description)
            }
        }
        let required = [
            "touchDown", "touchDownRepeat", "touchDragInside", "touchDragOutside", "touchDragEnter", "touchDragExit",
            "touchUpInside", "touchUpOutside", "touchCancel", "valueChanged", "primaryActionTriggered",
        ]
        #expect(required.filter { !seen.contains($0) } == [])
    }

    // MARK: - The runner itself

    static let tinyScene = """
        target t go
        control b button rect 0 0 100 100
        action b touchUpInside t go

        """

    @Test("a passing script has no failure")
    func passes() {
        let script =
            Self.tinyScene + """
                0 down 0 50 50
                > event b touchDown contact=0 state=highlighted
                10 up 0
                > event b touchUpInside contact=0 state=highlighted
                > action b touchUpInside go target=t responder=b
                > event b primaryActionTriggered contact=0 state=highlighted
                """
        #expect(ScenarioRunner(file: "tiny.scenario").run(script) == [])
    }

    @Test("a different output fails at the step's line with a diff")
    func mismatch() throws {
        let script =
            Self.tinyScene + """
                0 down 0 50 50
                > event b touchDown contact=0 state=normal
                10 up 0
                """
        let failures = ScenarioRunner(file: "tiny.scenario").run(script)
        #expect(failures.map(\.line) == [4, 6])
        let first = try #require(failures.first)
        #expect(first.description.hasPrefix("tiny.scenario:4: step `0 down 0 50 50`"))
        #expect(first.message.contains("\n    - > event b touchDown contact=0 state=normal"))
        #expect(first.message.contains("\n    + > event b touchDown contact=0 state=highlighted"))
        #expect(failures.last?.message.contains("(nothing was expected)") == true)
    }

    /// A script line the runner must refuse, where, and why.
    struct Malformed: Sendable, CustomTestStringConvertible {
        var lines: String
        var line: Int
        var message: String

        init(_ lines: String, _ line: Int, _ message: String) {
            self.lines = lines
            self.line = line
            self.message = message
        }

        var testDescription: String { message }
    }

    @Test(
        "malformed lines fail at their line",
        arguments: [
            Malformed("frobnicate b", 4, "unknown directive"),
            Malformed("control c button rect 0 0 10", 4, "usage: rect"),
            Malformed("control c button rect 0 0 10 10 colour=red", 4, "unknown or misplaced option colour=red"),
            Malformed("control c button rect 0 0 10 10 min=1", 4, "unknown or misplaced option min=1"),
            Malformed("control c button rect 0 0 10 10 z=1 z=2", 4, "option z given twice"),
            Malformed("action b touchUpSideways t go", 4, "unknown event"),
            Malformed("0 down 0 50\n", 4, "sample usage"),
            Malformed(
                "0 down 0 1 1\n> event b touchDown contact=0 state=highlighted\ntarget u x", 6, "after the scene"),
            Malformed("@ disable b", 4, "needs a time"),
            Malformed("@5 untarget t", 4, "takes no time"),
            Malformed("@5 explode b", 4, "unknown command"),
            Malformed("? everything", 4, "unknown query"),
            Malformed("0 up 0\n> nonsense", 5, "unknown output line"),
            Malformed("", 4, "no step"),
        ])
    func strict(_ malformed: Malformed) throws {
        let failures = ScenarioRunner(file: "bad.scenario").run(Self.tinyScene + malformed.lines)
        let failure = try #require(failures.first)
        #expect(failure.line == malformed.line)
        #expect(failure.message.contains(malformed.message), "\(failure)")
    }

    @Test("build errors are expected as `! build error:` lines and otherwise fail")
    func buildErrors() {
        let broken = "control b button rect 0 0 10 10 parent=nowhere\n"
        #expect(
            ScenarioRunner(file: "x.scenario").run(broken + "! build error: control b: unknown parent nowhere") == [])
        let failures = ScenarioRunner(file: "x.scenario").run(broken + "0 down 0 1 1")
        #expect(failures.map(\.line) == [2, 2])
        #expect(failures.first?.message.contains("+ ! build error: control b: unknown parent nowhere") == true)
    }
}
