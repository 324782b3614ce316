import Foundation
import Glibc
import Testing

@testable import TouchDaemon

/// The broken configurations of fault-cases.md §2.1 (C2–C4, C6–C9, C11–C14): each must be rejected
/// with exactly the problem lines `touchd check` prints, in file order, all at once.
@Suite("Configuration: broken files")
struct ConfigurationCorpusTests {
    /// Every file of the corpus, by name.
    static let corpus: [String] = {
        let directory = TestSupport.resourceDirectory("BrokenConfigs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".toml") }.sorted()
    }()

    @Test("the corpus is there")
    func corpusIsPresent() {
        // A missing resource folder would make the parameterised test below pass vacuously.
        #expect(Self.corpus.count >= 45)
    }

    @Test("a broken file gives exactly the expected problems", arguments: corpus)
    func brokenFile(_ name: String) throws {
        let path = TestSupport.resourceDirectory("BrokenConfigs").appendingPathComponent(name).path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let expected = TestSupport.expectations(in: bytes)
        try #require(!expected.isEmpty, "\(name) has no '# expect:' line")

        // A file whose expectations are all warnings must load (check exits 0) and give exactly those warnings.
        let warnsOnly = expected.allSatisfy { $0.contains(": warning: ") }
        let result = ConfigurationLoader.load(path: path)
        let lines: [String]
        if warnsOnly, case .success(let configuration) = result {
            lines = configuration.warnings.map { "PATH" + $0.formatted(path: path).dropFirst(path.count) }
        } else {
            lines = TestSupport.problemLines(result)
        }
        #expect(lines == expected)
        // Every line has the contract's shape.
        for line in lines {
            #expect(line.wholeMatch(of: /PATH(:[0-9]+:[0-9]+)?: (error|warning): .+/) != nil, "\(line)")
        }
        // File order: positions never go backwards.
        let positions = lines.compactMap { line -> [Int]? in
            guard let match = line.firstMatch(of: /^PATH:([0-9]+):([0-9]+):/) else { return nil }
            return [Int(match.1)!, Int(match.2)!]
        }
        #expect(positions == positions.sorted { $0.lexicographicallyPrecedes($1) })
    }

    // MARK: - Generated inputs (too big or too repetitive to commit)

    @Test("10⁵ nested arrays stop at the nesting limit, before the parser")
    func deepArrays() {
        let text = "x = " + String(repeating: "[", count: 100_000) + "\n"
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "deep.toml"))
                == ["PATH:1:69: error: arrays or inline tables nested deeper than 64"])
    }

    @Test("10⁵ nested inline tables stop at the nesting limit")
    func deepInlineTables() {
        let text = "[output]\nwidth = 1920\nheight = 1080\nx = " + String(repeating: "{a=", count: 100_000)
        // "x = " is 4 columns and each "{a=" 3: the 65th brace is column 4 + 64 × 3 + 1.
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "deep.toml"))
                == ["PATH:4:197: error: arrays or inline tables nested deeper than 64"])
    }

    @Test("10⁵ nested arrays read from a file are refused the same way")
    func deepArraysFromFile() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("deep.toml").path
        let text = "[output]\nwidth = 1920\nheight = 1080\nx = " + String(repeating: "[", count: 100_000)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(path: path))
                == ["PATH:4:69: error: arrays or inline tables nested deeper than 64"])
    }

    @Test("brackets in comments and strings are not nesting")
    func bracketsInCommentsAndStrings() {
        let brackets = String(repeating: "[", count: 100_000)
        let comment = "# \(brackets)\n[output]\nwidth = 1920\nheight = 1080\n"
        #expect((try? ConfigurationLoader.load(text: comment, path: "x.toml").get()) != nil)
        let string = "[output]\nwidth = 1920\nheight = 1080\nnote = \"\(brackets)\"\nlong = '''\n\(brackets)\n'''\n"
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: string, path: "x.toml")) == [
                "PATH:4:1: error: output.note: unknown key 'note'",
                "PATH:5:1: error: output.long: unknown key 'long'",
            ])
    }

    @Test("more than 64 actions on a control")
    func tooManyActions() {
        var text = "[output]\nwidth = 1920\nheight = 1080\n\n[targets.kiosk]\nsocket = \"/run/k.sock\"\n"
        text += "responds_to = [\"pay\"]\n\n[[control]]\nid = \"pay\"\n"
        text += "frame = { x = 0, y = 0, width = 100, height = 100 }\nactions = [\n"
        for _ in 0..<65 { text += "  { events = [\"touchUpInside\"], target = \"kiosk\", action = \"pay\" },\n" }
        text += "]\n"
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml"))
                == ["PATH:12:1: error: control[0].actions: 65 entries; at most 64 are allowed"])
    }

    @Test("argv, argument, environment and polygon caps")
    func commandAndShapeCaps() {
        let arguments = (0..<65).map { "\"a\($0)\"" }.joined(separator: ", ")
        let long = String(repeating: "x", count: 4_097)
        let variables = (0..<65).map { "V\($0) = \"1\"" }.joined(separator: ", ")
        let points = (0..<1_025).map { "[\($0 % 1000), \($0 % 7)]" }.joined(separator: ", ")
        let text = """
            [output]
            width = 1920
            height = 1080

            [targets.many]
            exec = [\(arguments)]
            responds_to = ["a"]

            [targets.long]
            exec = ["/usr/bin/echo", "\(long)"]
            responds_to = ["b"]

            [targets.env]
            exec = ["/usr/bin/env"]
            responds_to = ["c"]
            environment = { \(variables) }

            [[control]]
            id = "star"
            polygon = [\(points)]

            """
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml")) == [
                "PATH:6:1: error: targets.many.exec: 65 entries; at most 64 are allowed",
                "PATH:10:26: error: targets.long.exec[1]: argument longer than 4096 bytes",
                "PATH:16:1: error: targets.env.environment: 65 variables; at most 64 are allowed",
                "PATH:20:1: error: control[0].polygon: expected 3 to 1024 points, each [x, y]",
            ])
    }

    @Test("more than 256 targets")
    func tooManyTargets() {
        var text = "[output]\nwidth = 1920\nheight = 1080\n"
        for index in 0..<257 { text += "\n[targets.t\(index)]\nsocket = \"/run/t.sock\"\nresponds_to = [\"a\"]\n" }
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: text, path: "x.toml"))
                == ["PATH:5:1: error: targets: 257 targets; at most 256 are allowed"])
    }

    // MARK: - Files that are not configuration files (C1, C4)

    @Test("a missing file")
    func missingFile() {
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(path: "/nonexistent/touchd.toml"))
                == ["PATH: error: cannot open: No such file or directory"])
    }

    @Test("an empty file lacks [output]")
    func emptyFile() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("empty.toml").path
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(path: path))
                == ["PATH: error: output: missing required table [output] (the screen size in pixels)"])
    }

    @Test("a directory, a character device, a FIFO and a symlink to /dev/zero are not regular files")
    func notRegularFiles() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo.toml").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let link = directory.appendingPathComponent("zero.toml").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/zero")
        // The FIFO has no writer: opening must not block, and nothing is read from it.
        for path in [directory.path, "/dev/null", fifo, link] {
            #expect(
                TestSupport.problemLines(ConfigurationLoader.load(path: path)) == ["PATH: error: not a regular file"],
                "\(path)")
        }
    }

    @Test("a file over 1 MiB is refused before it is read")
    func largeFile() throws {
        let directory = try TestSupport.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("large.toml").path
        var text = "[output]\nwidth = 1920\nheight = 1080\n"
        text += String(repeating: "#", count: (1 << 20) + 1 - text.utf8.count)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(path: path))
                == ["PATH: error: file is 1048577 bytes; the limit is 1048576"])
        // Exactly 1 MiB is allowed.
        try Data(text.utf8.dropLast()).write(to: URL(fileURLWithPath: path))
        #expect((try? ConfigurationLoader.load(path: path).get()) != nil)
    }

    // MARK: - Accepted edge cases

    @Test("a byte order mark at the very start is accepted (TOML allows it), and columns do not count it")
    func byteOrderMark() throws {
        let text = "\u{FEFF}[output]\nwidth = 1920\nheight = 1080\n"
        #expect((try? ConfigurationLoader.load(text: text, path: "x.toml").get()) != nil)
        let bad = "\u{FEFF}[output] = 3\n"
        #expect(
            TestSupport.problemLines(ConfigurationLoader.load(text: bad, path: "x.toml"))
                == ["PATH:1:10: error: expected the end of the line after a table header, saw '='"])
    }

    @Test("the example configuration loads")
    func exampleLoads() throws {
        let configuration = try ConfigurationLoader.load(path: TestSupport.kioskConfig).get()
        #expect(configuration.controls.map(\.id) == ["pay", "cancel", "volume", "receipt", "start", "logo"])
        _ = try configuration.makeScene()
    }
}
