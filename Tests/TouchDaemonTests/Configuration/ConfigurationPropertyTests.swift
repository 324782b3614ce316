import Foundation
import Testing

@testable import TouchDaemon

/// Fault-cases.md C2/C3/C8 (tier F): whatever the bytes, loading returns a configuration or a list
/// of problems. A trap would end the test process, so finishing proves there is none; the checks
/// below add what a result must look like. Seeds are fixed, so a failure reproduces.
///
/// `TOUCHD_FUZZ_ROUNDS` and `TOUCHD_FUZZ_SEED` override the number of inputs and the seeds, for
/// longer runs outside the normal suite.
@Suite("Configuration: properties")
struct ConfigurationPropertyTests {
    static let rounds = TestSupport.fuzzRounds ?? 2_000
    static let seed = TestSupport.fuzzSeed

    /// Checks one input end to end: the byte validation of a file read, then the loader.
    static func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let text: String
        switch ConfigurationSource.text(from: bytes) {
        case .failure(let problem):
            #expect(problem.line != nil && problem.column != nil, sourceLocation: sourceLocation)
            // Still feed the parser whatever a lenient decoder makes of the bytes: it must not trap
            // on replacement characters or NUL either.
            text = String(decoding: bytes, as: UTF8.self)
        case .success(let decoded):
            text = decoded
        }
        check(text, sourceLocation: sourceLocation)
    }

    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch ConfigurationLoader.load(text: text, path: "fuzz.toml") {
        case .success(let configuration):
            // What the loader accepts, the scene accepts: the loader checks everything it does.
            #expect(throws: Never.self, sourceLocation: sourceLocation) { _ = try configuration.makeScene() }
        case .failure(let error):
            #expect(!error.problems.isEmpty, sourceLocation: sourceLocation)
            // Positions lie inside the text (a line after the last newline counts).
            let lineCount = text.unicodeScalars.reduce(1) { $0 + ($1 == "\n" ? 1 : 0) }
            for problem in error.problems {
                if let line = problem.line {
                    #expect((1...lineCount).contains(line), "\(problem)", sourceLocation: sourceLocation)
                    #expect((problem.column ?? 1) >= 1, "\(problem)", sourceLocation: sourceLocation)
                }
                #expect(!problem.message.isEmpty, sourceLocation: sourceLocation)
            }
        }
    }

    @Test("2,000 random byte strings up to 2 KiB")
    func randomBytes() {
        var random = SeededGenerator(seed: Self.seed ?? 0x70_75_63_68)
        // Bytes drawn mostly from TOML's own alphabet, so the parser gets past its first character.
        let alphabet = Array("[]{}=,.\"'#\\ \n\r\t0123456789abcdefxinfnat_-+:eE".utf8)
        for round in 0..<Self.rounds {
            let count = Int.random(in: 0...2_048, using: &random)
            let bytes = (0..<count).map { _ in
                round % 2 == 0 ? UInt8.random(in: 0...255, using: &random) : alphabet.randomElement(using: &random)!
            }
            Self.check(bytes)
        }
    }

    /// Fragments that have broken TOML parsers and numeric conversions before.
    static let fragments: [String] = [
        "nan", "-nan", "inf", "-inf", "+inf", "[[", "]]", "[", "]", "{", "}", "\"\\u0000\"", "\"\\uD800\"",
        "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e999", "-1e999", "1e-999", "0x",
        "0xFFFFFFFFFFFFFFFFFF", "-0.0", "1979-05-27T07:32:00Z", "07:32:00", "\"\"\"", "'''", "\\", "=", ".", ",",
        "\"", "'", "#", "\r", "\u{FEFF}", "\u{0C}", "é", "e\u{301}", "\u{0}", "x = ", "[output]", "[[control]]",
        "[[group]]", "[targets.t]", "id = \"pay\"", "parent = \"checkout-bar\"",
        "frame = {x=1e308,y=0,width=1,height=1}",
        "circle = { cx = 0, cy = 0, r = 1e308 }", "polygon = [[0,0],[0,0],[0,0]]", "kind = \"slider\"",
        "min = -1e9", "max = 1e9", "segments = 64", "kind = \"segmented\"", "value = 1e300", "rotation = 90",
        "width = 32768", "height = 1", "calibration = [nan, 0, 0, 0, 1, 0]", "exec = []", "shell = true",
        "actions = [{ events = [\"allEvents\"], action = \"x\" }]", "z = 9223372036854775807",
        String(repeating: "[", count: 70), String(repeating: "{a=", count: 70),
        // Shapes that crashed or stalled TOMLKit (the hostile-input issue, item 2), and TOML's rarer forms.
        Array(repeating: "a", count: 100).joined(separator: ".") + " = 1",
        "[" + Array(repeating: "a", count: 100).joined(separator: ".") + "]",
        "[[" + Array(repeating: "b", count: 63).joined(separator: ".") + "]]", String(repeating: "k", count: 300),
        #""""\"#, "\"\"\"\\\n  x\"\"\"\"\"", "'''\n'''''", "a.b.c = 1", "[a.b]", "[[a.b]]", #""\U0010FFFF""#,
        #""\U00110000""#, "0b1_0", "0o7_7", "1_000.5e-1_0", "1979-05-27 07:32:00.999+05:30",
        "x = { a.b = 1, a.c = 2 }",
    ]

    @Test("2,000 mutations of config/kiosk.toml")
    func mutations() throws {
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestSupport.kioskConfig)))
        var random = SeededGenerator(seed: Self.seed ?? 0x6B_69_6F_73_6B)
        for _ in 0..<Self.rounds {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                Self.mutate(&bytes, using: &random)
            }
            Self.check(bytes)
        }
    }

    static func mutate(_ bytes: inout [UInt8], using random: inout SeededGenerator) {
        TestSupport.mutate(&bytes, fragments: fragments, valueAfter: UInt8(ascii: "="), using: &random)
    }

    @Test("the same input gives the same problems")
    func deterministic() throws {
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: TestSupport.kioskConfig)))
        var random = SeededGenerator(seed: 7)
        for _ in 0..<100 {
            var bytes = original
            Self.mutate(&bytes, using: &random)
            let text = String(decoding: bytes, as: UTF8.self)
            let first = ConfigurationLoader.load(text: text, path: "x.toml")
            let second = ConfigurationLoader.load(text: text, path: "x.toml")
            switch (first, second) {
            case (.success, .success): break
            case (.failure(let lhs), .failure(let rhs)): #expect(lhs.lines == rhs.lines)
            default: Issue.record("one load succeeded and the other failed")
            }
        }
    }
}
