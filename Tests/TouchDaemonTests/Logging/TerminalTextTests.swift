import Testing

@testable import TouchDaemon

/// ``TerminalText``: what a terminal could act on is shown, never sent.
@Suite("TerminalText")
struct TerminalTextTests {
    @Test(
        "every control character a terminal acts on is escaped; other text stays as it is",
        arguments: [
            ("Goodix Capacitive TouchScreen", "Goodix Capacitive TouchScreen"),
            ("", ""),
            ("café – “ü” … → 😀 \\ \"", "café – “ü” … → 😀 \\ \""),
            ("\u{1B}]0;owned\u{07}", #"\x1b]0;owned\x07"#),
            ("a\u{0}b\u{8}c\u{1F}", #"a\x00b\x08c\x1f"#),
            ("tab\tcr\rlf\n", #"tab\tcr\rlf\n"#),
            ("del\u{7F}", #"del\x7f"#),
            ("c1\u{80}\u{85}\u{9B}\u{9F}\u{A0}", #"c1\u0080\u0085\u009b\u009f"# + "\u{A0}"),
            ("bidi\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}", #"bidi\u202a\u202b\u202c\u202d\u202e"#),
            ("isolates\u{2066}\u{2067}\u{2068}\u{2069}\u{2070}", #"isolates\u2066\u2067\u2068\u2069"# + "\u{2070}"),
        ])
    func escaped(_ text: String, _ expected: String) {
        #expect(TerminalText.escaped(text) == expected)
        // Escaping twice changes nothing more: the escapes are plain ASCII.
        #expect(TerminalText.escaped(expected) == expected)
    }

    @Test("newlines can be kept, for messages of several lines; nothing else is")
    func keepingNewlines() {
        #expect(TerminalText.escaped("one\ntwo\u{1B}\r", keepingNewlines: true) == "one\ntwo" + #"\x1b\r"#)
    }

    /// `touchd ctl --json`: the line stays JSON with the same value, and nothing in it is a control character.
    @Test("a JSON line keeps its value; DEL, C1 and bidi controls become \\u escapes, C0 whitespace spaces")
    func jsonLine() throws {
        let line = "{\"name\":\"a\u{7F}\u{9B}\u{202E}b\\u001b\",\t\"n\":1\r}"
        let safe = TerminalText.jsonLine(line)
        #expect(safe == #"{"name":"a\u007f\u009b\u202eb\u001b", "n":1 }"#)
        #expect(try JSONValue.parse(Array(safe.utf8)) == JSONValue.parse(Array(line.utf8)))
        #expect(!safe.unicodeScalars.contains(where: TerminalText.isUnsafe))
        #expect(TerminalText.jsonLine(#"{"plain":"text"}"#) == #"{"plain":"text"}"#)
    }
}
