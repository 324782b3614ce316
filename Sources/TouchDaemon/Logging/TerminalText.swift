/// Text that came from outside touchd, made safe to print to a terminal or a log line.
///
/// Device names, sysnames and device nodes come from the kernel and udev, which take them from the device (a USB
/// descriptor, a uinput client); a control client prints what the server sent; a log line carries both. A device named
/// `ESC]0;…BEL` retitled the terminal of whoever ran `touchd ctl state`. Every character a terminal may act on is
/// written as a visible escape instead:
///
/// - C0 controls (U+0000–U+001F) as `\n`, `\r`, `\t` or `\x1b`, and DEL (U+007F) as `\x7f`;
/// - C1 controls (U+0080–U+009F; some terminals take U+009B as CSI) as `\u009b`;
/// - the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder what follows
///   them on the line, as `\u202e`.
///
/// The escapes are for reading, not for reversing: a backslash is left as it is. Text with nothing to escape (nearly
/// all of it) is returned as it is.
enum TerminalText {
    /// `text` with every character listed on the type escaped; newlines kept when `keepingNewlines` (messages of
    /// several lines, such as a refused configuration's problems).
    static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
        guard text.utf8.contains(where: mayStartUnsafe) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard isUnsafe(scalar), !(keepingNewlines && scalar == "\n") else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result += escape(scalar)
            }
        }
        return result
    }

    /// A JSON line that parsed (`touchd ctl --json` prints the server's lines as received), made safe the JSON way:
    /// DEL, C1 and bidirectional controls become `\u` escapes, which mean the same character, and the C0 controls a
    /// parsed line can still hold (whitespace between tokens: tab, carriage return) become spaces. A parsed line holds
    /// no other control outside its strings and none raw inside them, so the result is the same JSON value.
    static func jsonLine(_ line: String) -> String {
        guard line.utf8.contains(where: mayStartUnsafe) else { return line }
        var result = ""
        result.reserveCapacity(line.utf8.count + 8)
        for scalar in line.unicodeScalars {
            if !isUnsafe(scalar) {
                result.unicodeScalars.append(scalar)
            } else if scalar.value < 0x20 {
                result += " "
            } else {
                result += "\\u" + hex(scalar.value, digits: 4)
            }
        }
        return result
    }

    /// Whether `scalar` is one of the characters listed on the type.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// Whether a UTF-8 byte can begin an unsafe character: a C0 control or DEL, the lead byte of U+0080–U+00BF (C1
    /// lies there) or of U+2000–U+2FFF (the bidirectional controls lie there). A cheap first look, exact after.
    private static func mayStartUnsafe(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xE2
    }

    /// `\x1b` for an ASCII control, `\u009b` for any other character.
    private static func escape(_ scalar: Unicode.Scalar) -> String {
        scalar.value < 0x80 ? "\\x" + hex(scalar.value, digits: 2) : "\\u" + hex(scalar.value, digits: 4)
    }

    /// `value` in lowercase hexadecimal, padded with zeros to `digits`.
    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
