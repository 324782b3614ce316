import Testing

@testable import TOML
@testable import TouchDaemon

/// The TOML parser on its own: TOML 1.0's forms, its refusals with positions, its bounds on hostile
/// input, and that a parsed tree is freed (TOMLKit, which it replaced, leaked every tree it parsed).
/// It was also checked against toml-test's TOML 1.0 list (709 files: every valid file gives the
/// expected values, every invalid one is refused); that suite is not vendored here.
@Suite("TOML parser")
struct TOMLParserTests {
    private func parse(_ text: String) throws -> TOMLTable { try TOMLParser.parse(text) }

    private func refusal(_ text: String) -> TOMLError? {
        do {
            _ = try TOMLParser.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("strings: basic with escapes, literal, multi-line with trimming and up to two closing quotes")
    func strings() throws {
        let table = try parse(
            #"""
            basic = "tab\there \"q\" \u00E9 \U0001F600 back\\slash"
            literal = 'C:\path\n'
            multi = """
            one
            two \
                three"""
            quotes = """a""""" 
            lit = '''
            x\y'''
            "quoted key" = 1
            'literal key' = 2
            "" = 3
            """#)
        #expect(table["basic"]?.string == "tab\there \"q\" é 😀 back\\slash")
        #expect(table["literal"]?.string == #"C:\path\n"#)
        #expect(table["multi"]?.string == "one\ntwo three")
        #expect(table["quotes"]?.string == "a\"\"")
        #expect(table["lit"]?.string == #"x\y"#)
        #expect(table["quoted key"]?.integer == 1)
        #expect(table["literal key"]?.integer == 2)
        #expect(table[""]?.integer == 3)
    }

    @Test("numbers: every integer form, the 64-bit limits, floats, inf and nan")
    func numbers() throws {
        let table = try parse(
            """
            a = 1_000
            b = -9223372036854775808
            c = 9223372036854775807
            d = 0xDEAD_beef
            e = 0o755
            f = 0b1010
            g = +0
            h = 6.626e-34
            i = -0.5
            j = 1E3
            k = inf
            l = -inf
            m = nan
            n = 224_617.445_991
            """)
        #expect(table["a"]?.integer == 1000)
        #expect(table["b"]?.integer == Int64.min)
        #expect(table["c"]?.integer == Int64.max)
        #expect(table["d"]?.integer == 0xDEAD_BEEF)
        #expect(table["e"]?.integer == 0o755)
        #expect(table["f"]?.integer == 10)
        #expect(table["g"]?.integer == 0)
        #expect(table["h"]?.float == 6.626e-34)
        #expect(table["i"]?.float == -0.5)
        #expect(table["j"]?.float == 1000)
        #expect(table["k"]?.float == .infinity)
        #expect(table["l"]?.float == -.infinity)
        #expect(table["m"]?.float?.isNaN == true)
        #expect(table["n"]?.float == 224_617.445_991)
        // An integer is not a float and the other way round.
        #expect(table["a"]?.float == nil)
        #expect(table["h"]?.integer == nil)
    }

    @Test("dates and times are values of their own")
    func dates() throws {
        let table = try parse(
            """
            a = 1979-05-27T07:32:00Z
            b = 1979-05-27 07:32:00.999-07:00
            c = 1979-05-27
            d = 07:32:00
            """)
        #expect(table["a"]?.kind == .dateTime)
        #expect(table["b"]?.kind == .dateTime)
        #expect(table["c"]?.kind == .dateTime)
        #expect(table["d"]?.kind == .dateTime)
    }

    @Test("tables: headers, dotted keys, arrays of tables, sub-tables of the latest element, inline tables")
    func tables() throws {
        let table = try parse(
            """
            top.level = true
            [a.b]
            c = 1
            [a]
            d = 2
            [[list]]
            id = "x"
            [list.frame]
            width = 10
            [[list]]
            id = "y"
            inline = { p = [1, [2, 3]], q.r = "s" }
            """)
        #expect(table["top"]?.table?["level"]?.boolean == true)
        #expect(table["a"]?.table?["b"]?.table?["c"]?.integer == 1)
        #expect(table["a"]?.table?["d"]?.integer == 2)
        let list = try #require(table["list"]?.array)
        #expect(list.count == 2)
        #expect(list[0].table?["frame"]?.table?["width"]?.integer == 10)
        #expect(list[1].table?["id"]?.string == "y")
        let inline = try #require(list[1].table?["inline"]?.table)
        #expect(inline["p"]?.array?[1].array?[1].integer == 3)
        #expect(inline["q"]?.table?["r"]?.string == "s")
        #expect(table.keys == ["top", "a", "list"])
    }

    /// Each invalid text with the position and message it gets.
    static let invalid: [(text: String, line: Int, column: Int, message: String)] = [
        ("a = 1\na = 2", 2, 1, "key 'a' is defined twice (first at line 1)"),
        ("[t]\n[t]", 2, 1, "table [t] is defined twice (first at line 1)"),
        ("[t]\nx.y = 1\n[t.x]", 3, 1, "table [t.x] was already defined by dotted keys (line 2)"),
        ("t = { a = 1 }\n[t]", 2, 1, "table [t] was already defined as an inline table (line 1)"),
        ("t = { a = 1 }\nt.b = 2", 2, 1, "cannot add keys to 't' with a dotted key: it is an inline table (line 1)"),
        ("a = []\n[[a]]", 2, 3, "cannot define array of tables [[a]]: 'a' is already an array (line 1)"),
        ("[[a]]\n[a]", 2, 2, "cannot define table [a]: 'a' is already an array of tables (line 1)"),
        ("a = 1\n[a.b]", 2, 2, "cannot define table [a.b]: 'a' is already an integer (line 1)"),
        ("a = 01", 1, 5, "'01': leading zeros are not allowed"),
        ("a = 1__0", 1, 5, "'1__0': an underscore must be between digits"),
        ("a = 9223372036854775808", 1, 5, "'9223372036854775808' is not representable in 64 bits"),
        ("a = -0x1", 1, 5, "'-0x1': hexadecimal, octal and binary integers take no sign"),
        ("a = 1.", 1, 5, "'1.': a decimal point needs digits on both sides"),
        ("a = 1979-13-01", 1, 5, "'1979-13-01' is not a valid date or time"),
        ("a = True", 1, 5, "expected a value, saw 'T'"),
        ("a = \"x", 1, 5, "unterminated string"),
        ("a = \"\\q\"", 1, 7, "unknown escape sequence '\\q'"),
        ("a = \"\\uD800\"", 1, 7, "'\\u' escape of U+D800, which is not a Unicode scalar value"),
        ("a = { b = 1, }", 1, 14, "a trailing comma is not allowed in an inline table"),
        ("a = { b = 1\n}", 1, 12, "an inline table must be closed on the line it starts (TOML 1.0), saw a line break"),
        ("a = [1 2]", 1, 8, "expected ',' or ']' after an array element, saw '2'"),
        ("a = 1 b = 2", 1, 7, "expected the end of the line after a value, saw 'b'"),
        ("a = 1\r", 1, 7, "expected a line feed after a carriage return, saw the end of the file"),
        ("# \u{7F}", 1, 3, "U+007F is not allowed in a comment"),
        ("[a", 1, 3, "expected ']' to close the table header, saw the end of the file"),
        ("= 1", 1, 1, "expected a key or a table header, saw '='"),
    ]

    @Test("invalid documents are refused with a position and a precise message", arguments: invalid.indices)
    func invalidDocument(_ index: Int) {
        let (text, line, column, message) = Self.invalid[index]
        let error = refusal(text)
        #expect(error == TOMLError(TOMLPosition(line: line, column: column), message), "\(text.debugDescription)")
    }

    // MARK: - Hostile input (the hostile-input issue, item 2)

    @Test("a 30,000-part dotted key is refused at its 65th part, without recursion")
    func deepDottedKey() {
        // This line overflowed the stack of a debug build under TOMLKit (SIGSEGV) and, appended to the live
        // file and followed by SIGHUP, killed a running daemon.
        let text = Array(repeating: "a", count: 30_000).joined(separator: ".") + " = 1"
        #expect(
            refusal(text) == TOMLError(TOMLPosition(line: 1, column: 129), "a key with more than 64 dotted parts"))
        let huge = Array(repeating: "a", count: 100_000).joined(separator: ".") + " = 1"
        #expect(refusal(huge)?.message == "a key with more than 64 dotted parts")
    }

    @Test("a 20,000-part table header is refused at its 65th part")
    func deepHeader() {
        // Under TOMLKit this took over 60 s (a quadratic scan of ancestors) and memory grew with the square of the depth.
        let text = "[" + Array(repeating: "a", count: 20_000).joined(separator: ".") + "]\nx = 1"
        #expect(
            refusal(text) == TOMLError(TOMLPosition(line: 1, column: 130), "a key with more than 64 dotted parts"))
    }

    @Test("64 header parts plus 64 dotted parts stay under the depth limit; more tables are refused")
    func depthLimit() throws {
        let header = Array(repeating: "h", count: 64).joined(separator: ".")
        let dotted = Array(repeating: "d", count: 63).joined(separator: ".")
        _ = try parse("[\(header)]\n\(dotted).x = 1")
        // Inline tables with dotted keys inside one another would go deeper still.
        let inline =
            "x = " + String(repeating: "{ " + dotted + " = ", count: 3) + "1" + String(repeating: " }", count: 3)
        #expect(refusal(inline)?.message == "tables and arrays nested deeper than 128")
    }

    @Test("keys longer than 256 characters are refused, bare or quoted")
    func longKeys() {
        let long = String(repeating: "k", count: 257)
        #expect(refusal("\(long) = 1")?.message == "a key longer than 256 characters")
        #expect(refusal("\"\(long)\" = 1")?.message == "a key longer than 256 characters")
        #expect(refusal("[\(long)]")?.message == "a key longer than 256 characters")
    }

    @Test("a parsed tree is freed when the last reference goes (no leak per reload)")
    func treeIsFreed() throws {
        weak var root: TOMLTable?
        weak var nested: TOMLTable?
        weak var array: TOMLArray?
        do {
            let table = try parse(
                """
                [[control]]
                id = "a"
                frame = { x = 1, y = 2 }
                [control.more]
                list = [[1], [2]]
                """)
            root = table
            nested = table["control"]?.array?[0].table?["frame"]?.table
            array = table["control"]?.array?[0].table?["more"]?.table?["list"]?.array
            #expect(root != nil && nested != nil && array != nil)
        }
        #expect(root == nil)
        #expect(nested == nil)
        #expect(array == nil)
    }

    @Test("positions of decoder key paths, with the nearest ancestor for what is not there")
    func positions() throws {
        let table = try parse(
            """
            [output]
            width = 1920
            [[control]]
            id = "a"
            [[control]]
            id = "b"
            actions = [
              { events = ["touchUpInside", "x"], action = "go" },
            ]
            [targets."odd.name"]
            exec = ["/bin/true"]
            """)
        #expect(table.position(ofPath: "output.width") == TOMLPosition(line: 2, column: 1))
        #expect(table.position(ofPath: "control") == TOMLPosition(line: 3, column: 1))
        #expect(table.position(ofPath: "control[1]") == TOMLPosition(line: 5, column: 1))
        #expect(table.position(ofPath: "control[1].actions[0]") == TOMLPosition(line: 8, column: 3))
        #expect(table.position(ofPath: "control[1].actions[0].events[1]") == TOMLPosition(line: 8, column: 32))
        #expect(table.position(ofPath: "control[1].nothing") == TOMLPosition(line: 5, column: 1))
        #expect(table.position(ofPath: "control[7]") == TOMLPosition(line: 3, column: 1))
        #expect(table.position(ofPath: "targets.odd.name.exec") == TOMLPosition(line: 11, column: 1))
        #expect(table.position(ofPath: "nothing") == nil)
    }
}
