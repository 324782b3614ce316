import Testing

@testable import TouchDaemon

/// The control socket's JSON parser: what it accepts, what it refuses (fault case K3) and that it never traps.
struct JSONValueTests {
    private func parse(_ text: String, limits: JSONValue.Limits = .standard) throws(JSONValue.ParseError) -> JSONValue {
        try JSONValue.parse(Array(text.utf8), limits: limits)
    }

    private func failure(_ bytes: [UInt8], limits: JSONValue.Limits = .standard) -> JSONValue.ParseError? {
        do {
            _ = try JSONValue.parse(bytes, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    private func failure(_ text: String, limits: JSONValue.Limits = .standard) -> JSONValue.ParseError? {
        failure(Array(text.utf8), limits: limits)
    }

    @Test func readsEveryKindOfValueKeepingMemberOrder() throws {
        let value = try parse(
            #" {"b":[1,-2,0,3.5,-0.25e1,1E2,true,false,null],"a":"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","c":{}} "#)
        #expect(value.objectValue?.map(\.key) == ["b", "a", "c"])
        #expect(
            value["b"]
                == .array([
                    .integer(1), .integer(-2), .integer(0), .double(3.5), .double(-2.5), .double(100), .bool(true),
                    .bool(false), .null,
                ]))
        #expect(value["a"]?.stringValue == "x\"\\/\u{8}\u{C}\n\r\té😀")
        #expect(value["c"] == .object([]))
        #expect(value["missing"] == nil)
        #expect(try parse("[]") == .array([]))
        #expect(try parse("\"é\"") == .string("é"))
    }

    @Test func keepsIntegersExactAndTurnsOthersIntoDoubles() throws {
        #expect(try parse("9223372036854775807").int64Value == Int64.max)
        #expect(try parse("-9223372036854775808").int64Value == Int64.min)
        // One past the range is still a number, but no longer an integer: an integer position refuses it.
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("9223372036854775808").int64Value == nil)
        #expect(try parse("1.0").int64Value == nil)
        #expect(try parse("1.0").doubleValue == 1)
        #expect(try parse("7").doubleValue == 7)
        #expect(try parse("1e-400") == .double(0))
    }

    @Test func refusesWhatAStrictParserMust() {
        let cases: [(String, String, Int)] = [
            ("", "expected a value, found the end of the text", 0),
            ("{\"a\":1,\"a\":2}", "duplicate member name \"a\"", 7),
            ("1e999", "number out of range", 0),
            ("-1e999", "number out of range", 0),
            ("{\"a\":1} x", "unexpected text after the JSON value", 8),
            ("[1,]", "expected a value", 3),
            ("{\"a\" 1}", "expected ':' after a member name", 5),
            ("{1:1}", "expected a member name (a string)", 1),
            ("[1 2]", "expected ',' or ']' in an array", 3),
            ("{\"a\":1 \"b\":2}", "expected ',' or '}' in an object", 7),
            ("01", "unexpected text after the JSON value", 1),
            ("1.", "expected a digit after the decimal point", 2),
            ("1e", "expected a digit in the exponent", 2),
            ("-", "expected a digit", 1),
            ("+1", "expected a value", 0),
            ("nul", "expected a value", 0),
            ("NaN", "expected a value", 0),
            ("\"abc", "unterminated string", 0),
            ("\"a\tb\"", "control character in a string (it must be escaped)", 2),
            ("\"\\x\"", "invalid escape", 1),
            ("\"\\u12\"", "expected 4 hexadecimal digits", 3),
            ("\"\\ud800\"", "lone surrogate in a \\u escape", 1),
            ("\"\\udc00\"", "lone surrogate in a \\u escape", 1),
            ("\"\\ud800\\u0041\"", "lone surrogate in a \\u escape", 1),
            ("'a'", "expected a value", 0),
        ]
        for (text, message, offset) in cases {
            let error = failure(text)
            #expect(error == JSONValue.ParseError(message: message, offset: offset), "\(text)")
        }
    }

    @Test func refusesInvalidUTF8() {
        let quote = UInt8(ascii: "\"")
        let sequences: [[UInt8]] = [
            [0xFF], [0x80], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xC3], [0xE2, 0x82], [0xC3, 0x28],
        ]
        for sequence in sequences {
            let error = failure([quote] + sequence + [quote])
            #expect(error?.message.hasPrefix("invalid UTF-8") == true, "\(sequence)")
            #expect(error?.offset == 1)
        }
        // Outside a string, a byte ≥ 0x80 is no value at all.
        #expect(failure([0xC3, 0xA9]) == JSONValue.ParseError(message: "expected a value", offset: 0))
        // Well-formed multi-byte characters pass, the largest scalar included.
        #expect(throws: Never.self) { try JSONValue.parse([quote, 0xF4, 0x8F, 0xBF, 0xBF, 0xEF, 0xBF, 0xBD, quote]) }
    }

    @Test func enforcesTheDepthLimitWithoutRecursing() throws {
        let limits = JSONValue.Limits.standard
        let deepest = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(try parse(deepest).arrayValue != nil)
        let object = String(repeating: "{\"a\":", count: 32) + "1" + String(repeating: "}", count: 32)
        #expect(try parse(object)["a"] != nil)

        let tooDeep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(failure(tooDeep) == JSONValue.ParseError(message: "nesting deeper than 32 levels", offset: 32))
        // 10⁵ levels (and 10⁶): refused at the 33rd bracket, however long the rest.
        for count in [100_000, 1_000_000] {
            let huge = [UInt8](repeating: UInt8(ascii: "["), count: count)
            #expect(failure(huge, limits: limits)?.offset == 32)
            let mixed = Array(String(repeating: "{\"k\":[", count: count / 6).utf8)
            #expect(failure(mixed, limits: limits)?.message == "nesting deeper than 32 levels")
        }
    }

    @Test func enforcesTheStringLimitAfterUnescaping() throws {
        let limits = JSONValue.Limits(maxDepth: 4, maxStringBytes: 8)
        #expect(try parse("\"12345678\"", limits: limits) == .string("12345678"))
        #expect(try parse("\"éééé\"", limits: limits) == .string("éééé"))
        #expect(failure("\"123456789\"", limits: limits)?.message == "string longer than 8 bytes")
        #expect(failure("\"ééééé\"", limits: limits)?.message == "string longer than 8 bytes")
        #expect(failure("{\"123456789\":1}", limits: limits)?.message == "string longer than 8 bytes")
        #expect(try parse("\"\\u00e9\\u00e9\\u00e9\\u00e9\"", limits: limits).stringValue == "éééé")
        #expect(failure("\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"", limits: limits) != nil)
    }

    // MARK: - Linear work (hostile input: a 64 KB line of 32,000 elements)

    /// The parser's work (`JSONValue.parse(_:limits:work:)`) for `text`, checking that it parses.
    private func work(_ text: String) throws -> Int {
        var work = 0
        _ = try JSONValue.parse(Array(text.utf8), limits: .standard, work: &work)
        return work
    }

    @Test func parsesA32000ElementArrayInLinearWork() throws {
        let text = "[" + Array(repeating: "1", count: 32_000).joined(separator: ",") + "]"
        #expect(text.utf8.count < 65_536)
        var work = 0
        let value = try JSONValue.parse(Array(text.utf8), work: &work)
        #expect(value.arrayValue?.count == 32_000)
        #expect(value.arrayValue?.allSatisfy { $0 == .integer(1) } == true)
        // The bytes once, each element moved once, and the storage's growth (doubling: under 2 moves an element).
        // Copying the array on every append, as the parser once did, is 32,000²/2 = 5·10⁸ moves.
        #expect(work < text.utf8.count + 4 * 32_000, "\(work)")
    }

    /// Twice the elements, about twice the work, for every shape a container can take: what was quadratic (arrays,
    /// objects, their key sets, nested containers, many strings) shows as 4× here.
    @Test func workGrowsLinearlyWithTheInput() throws {
        let shapes: [(String, (Int) -> String)] = [
            ("array", { count in "[" + Array(repeating: "1", count: count).joined(separator: ",") + "]" }),
            (
                "object",
                { count in "{" + (0..<count).map { #""k\#($0)":1"# }.joined(separator: ",") + "}" }
            ),
            ("arrays", { count in "[" + Array(repeating: "[1,[2]]", count: count).joined(separator: ",") + "]" }),
            (
                "objects",
                { count in "[" + Array(repeating: #"{"a":{"b":[]}}"#, count: count).joined(separator: ",") + "]" }
            ),
            ("strings", { count in "[" + Array(repeating: #""é\u00e9x""#, count: count).joined(separator: ",") + "]" }),
            (
                "deep",
                { count in
                    String(repeating: "[", count: 31) + Array(repeating: "0", count: count).joined(separator: ",")
                        + String(repeating: "]", count: 31)
                }
            ),
        ]
        for (name, make) in shapes {
            let small = try work(make(4_000))
            let large = try work(make(8_000))
            let ratio = Double(large) / Double(small)
            #expect(ratio > 1.8 && ratio < 2.2, "\(name): \(small) then \(large)")
            // And proportional to the text: a small constant per byte.
            #expect(large < 4 * make(8_000).utf8.count, "\(name): \(large)")
        }
    }

    @Test func theLimitsStillHoldOnLongLines() throws {
        // 64 KiB worth of each: refused with the same precise errors as a short line.
        let longString = "[\"" + String(repeating: "a", count: 4_097) + "\"]"
        #expect(failure(longString)?.message == "string longer than 4096 bytes")
        let many = "[" + Array(repeating: "1e999", count: 10_000).joined(separator: ",") + "]"
        #expect(failure(many) == JSONValue.ParseError(message: "number out of range", offset: 1))
        // Long numbers cost their length once: 65,000 digits read to a Double, or refused when they are infinite.
        #expect(try parse("0." + String(repeating: "9", count: 65_000)) == .double(1))
        let digits = String(repeating: "9", count: 65_000)
        #expect(failure(digits) == JSONValue.ParseError(message: "number out of range", offset: 0))
        let duplicate = "{" + (0..<5_000).map { #""k\#($0)":1"# }.joined(separator: ",") + #","k17":2}"#
        #expect(failure(duplicate)?.message == #"duplicate member name "k17""#)
        let deep =
            "[" + Array(repeating: "1", count: 20_000).joined(separator: ",") + ","
            + String(repeating: "[", count: 32) + String(repeating: "]", count: 33)
        #expect(failure(deep)?.message == "nesting deeper than 32 levels")
    }

    @Test func encodesCompactJSONThatReadsBack() throws {
        let value = JSONValue.object([
            ("s", .string("a\"b\\c\n\u{1}é")), ("i", .integer(-3)), ("d", .double(2)), ("e", .double(1e300)),
            ("n", .null), ("t", .bool(true)), ("a", .array([.integer(1), .object([])])),
        ])
        #expect(
            value.json == #"{"s":"a\"b\\c\n\u0001é","i":-3,"d":2.0,"e":1e+300,"n":null,"t":true,"a":[1,{}]}"#)
        #expect(try parse(value.json) == value)
        #expect(JSONValue.double(.infinity).json == "null")
    }

    @Test func randomValuesRoundTripThroughEncodeAndParse() throws {
        var generator = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<2_000 {
            let value = randomValue(depth: 0, using: &generator)
            let text = value.json
            #expect(try parse(text) == value, "\(text)")
        }
    }

    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        let alphabet = Array("{}[]\",:\\u0123456789abcdefE.-+ tnrl".utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        var accepted = 0
        for round in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<count).map { _ in
                round % 2 == 0
                    ? alphabet.randomElement(using: &generator)!
                    : UInt8.random(in: 0...255, using: &generator)
            }
            if let value = try? JSONValue.parse(bytes, limits: JSONValue.Limits(maxDepth: 4, maxStringBytes: 16)) {
                accepted += 1
                // Whatever is accepted re-encodes to text that reads back the same.
                #expect((try? parse(value.json)) == value)
            }
        }
        #expect(accepted > 0)
        // Valid JSON with random mutations: still no trap.
        for _ in 0..<5_000 {
            var bytes = Array(randomValue(depth: 0, using: &generator).json.utf8)
            guard !bytes.isEmpty else { continue }
            for _ in 0..<3 {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? JSONValue.parse(bytes)
        }
    }

    private func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        switch Int.random(in: 0..<(depth < 5 ? 8 : 6), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .integer(Int64.random(in: .min ... .max, using: &generator))
        case 3:
            let value = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &generator))
            return .double(value.isFinite ? value : Double.random(in: -1e6...1e6, using: &generator))
        case 4, 5: return .string(randomString(using: &generator))
        case 6:
            return .array(
                (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    randomValue(depth: depth + 1, using: &generator)
                })
        default:
            var members: [(key: String, value: JSONValue)] = []
            for index in 0..<Int.random(in: 0...4, using: &generator) {
                members.append(
                    ("\(randomString(using: &generator))#\(index)", randomValue(depth: depth + 1, using: &generator)))
            }
            return .object(members)
        }
    }

    private func randomString(using generator: inout SeededGenerator) -> String {
        let scalars: [Unicode.Scalar] = [
            "a", "\"", "\\", "\n", "\u{0}", "\u{1F}", "é", "\u{FFFF}", "😀", "\u{2028}", " ",
        ]
        return String(
            String.UnicodeScalarView(
                (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                    scalars.randomElement(using: &generator)!
                }))
    }
}
