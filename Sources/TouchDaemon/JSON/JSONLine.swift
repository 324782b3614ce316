/// Builds one JSON object with its keys in the order they are added (so simulate's lines and socket messages put
/// their documented fields first), for JSON Lines output.
///
/// The text is built as UTF-8 bytes: every socket target message is one of these, built on the input thread between a
/// touch and its message leaving, and appending bytes costs a fraction of appending to a `String` scalar by
/// scalar.
struct JSONLine {
    private var text: [UInt8]
    private var empty = true

    init() {
        // Room first, then the brace: an array literal would be one more allocation, copied at once.
        text = []
        text.reserveCapacity(192)
        text.append(UInt8(ascii: "{"))
    }

    mutating func add(_ key: String, _ value: String?) {
        separate(key)
        if let value { JSONLine.appendString(value, to: &text) } else { text += "null".utf8 }
    }

    mutating func add(_ key: String, _ value: Int) {
        separate(key)
        JSONLine.appendInteger(value, to: &text)
    }

    mutating func add(_ key: String, _ value: Bool) {
        separate(key)
        text += (value ? "true" : "false").utf8
    }

    /// A finite number, printed without a fraction when it is whole; null otherwise.
    mutating func add(_ key: String, _ value: Double) {
        separate(key)
        JSONLine.appendNumber(value, to: &text)
    }

    /// Microseconds as milliseconds: whole when exact, else with three decimals.
    mutating func add(_ key: String, milliseconds microseconds: UInt64) {
        separate(key)
        text += String(microseconds / 1000).utf8
        if microseconds % 1000 != 0 {
            let fraction = String(microseconds % 1000)
            text += ("." + String(repeating: "0", count: 3 - fraction.count) + fraction).utf8
        }
    }

    /// A member whose value is already JSON text (an object or an array built elsewhere).
    mutating func add(_ key: String, json: String) {
        separate(key)
        text += json.utf8
    }

    /// An array of strings.
    mutating func add(_ key: String, strings: [String]) {
        separate(key)
        text.append(UInt8(ascii: "["))
        for (index, value) in strings.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            JSONLine.appendString(value, to: &text)
        }
        text.append(UInt8(ascii: "]"))
    }

    var line: String { String(decoding: lineBytes(), as: UTF8.self) }

    /// The object as UTF-8, followed by `terminator` when given (a stream target's newline). Consuming, so the bytes
    /// are completed where they are instead of copied.
    consuming func lineBytes(terminator: UInt8? = nil) -> [UInt8] {
        var bytes = text
        text = []
        bytes.append(UInt8(ascii: "}"))
        if let terminator { bytes.append(terminator) }
        return bytes
    }

    /// The members added so far without the braces, for messages that others complete.
    var members: String { String(decoding: text.dropFirst(), as: UTF8.self) }

    /// A JSON array of values that are already JSON text.
    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    private mutating func separate(_ key: String) {
        if !empty { text.append(UInt8(ascii: ",")) }
        empty = false
        JSONLine.appendString(key, to: &text)
        text.append(UInt8(ascii: ":"))
    }

    static func appendNumber(_ value: Double, to text: inout String) {
        text += number(value)
    }

    /// A finite number as JSON (whole numbers without a fraction), else `null`.
    static func number(_ value: Double) -> String {
        var bytes: [UInt8] = []
        appendNumber(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``number(_:)`` written straight into `text`: a whole number's digits without a `String` made for them (a
    /// socket target's message carries the touch's coordinates).
    static func appendNumber(_ value: Double, to text: inout [UInt8]) {
        guard value.isFinite else {
            text += "null".utf8
            return
        }
        // A whole number below 1e15 in magnitude as an integer (`Int(exactly:)` is nil for any other).
        if abs(value) < 1e15, let whole = Int(exactly: value) {
            appendInteger(whole, to: &text)
        } else {
            text += "\(value)".utf8
        }
    }

    /// `value` in decimal, written straight into `text`: a socket target's message has four or five integers, and
    /// making a `String` of each took 43 of the message's 109 µs in the test guest (the probes of "The work after the
    /// write" in `git show 58ec393:docs/performance.md`).
    static func appendInteger(_ value: Int, to text: inout [UInt8]) {
        if value < 0 { text.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        var digits = 1
        var power: UInt = 10
        // At most 20 digits (`UInt.max` has 20): the count stops there, before `power` would wrap.
        while digits < 20, rest >= power {
            digits += 1
            power &*= 10
        }
        let start = text.count
        for _ in 0..<digits { text.append(UInt8(ascii: "0")) }
        var index = start + digits
        repeat {
            index -= 1
            text[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest > 0
    }

    static func appendString(_ value: String, to text: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 2)
        appendString(value, to: &bytes)
        text += String(decoding: bytes, as: UTF8.self)
    }

    /// `value` as a JSON string: quotes, backslashes and control characters escaped, everything else (multi-byte
    /// UTF-8 sequences included, whose bytes are all 0x80 or above) as it is. A string with nothing to escape (every
    /// key and nearly every value) is copied in one piece.
    static func appendString(_ value: String, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "\""))
        let copied =
            value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
                guard !bytes.contains(where: needsEscape) else { return false }
                text.append(contentsOf: bytes)
                return true
            } ?? false
        if copied {
            text.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): text += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): text += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): text += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): text += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): text += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                text += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
                text.append(hexDigits[Int(byte >> 4)])
                text.append(hexDigits[Int(byte & 0x0f)])
            default:
                text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
    }

    /// Whether a UTF-8 byte must be escaped in a JSON string: a quote, a backslash or a control character.
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
