/// One JSON value, as the control socket reads and writes it (docs/control-socket.md, "Framing" and "Limits").
///
/// The parser is strict and bounded, because its input comes from any process that may connect: it accepts exactly
/// RFC 8259 JSON in UTF-8, refuses what a lenient parser would guess at (duplicate keys, lone surrogates, numbers
/// that do not fit, trailing bytes), and never recurses: nesting is tracked on an explicit stack limited to
/// `Limits.maxDepth`, so a line of 10⁵ brackets fails at the first bracket over the limit, in constant stack space.
///
/// Numbers keep what the text said: an integer literal that fits 64 bits is `.integer` (exactly), any other number
/// is `.double`, which must be finite (`1e999` is refused). Objects keep their members in order.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits `Int64`.
    case integer(Int64)
    /// Any other number; always finite when it comes from the parser.
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// The members in the order they were written; the parser never produces two with the same key.
    case object([(key: String, value: JSONValue)])

    /// What the parser accepts at most.
    struct Limits: Hashable, Sendable {
        /// Arrays and objects open at once: `[[1]]` has depth 2.
        var maxDepth: Int
        /// UTF-8 bytes of one string (keys included), after unescaping.
        var maxStringBytes: Int

        init(maxDepth: Int = 32, maxStringBytes: Int = 4096) {
            self.maxDepth = maxDepth
            self.maxStringBytes = maxStringBytes
        }

        /// The control socket's: depth 32, strings of 4,096 bytes.
        static let standard = Limits()
    }

    /// Why a text is not acceptable JSON, and where (the byte offset from the start of the text, 0-based).
    struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        var message: String
        var offset: Int

        var description: String { "\(message) at byte \(offset)" }
    }

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    // MARK: - Accessors

    /// The value of the member `key` of an object; nil for a missing member or a value that is not an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var isNull: Bool { self == .null }

    var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// An integer literal's value; nil for any other value, including a number with a fraction or exponent.
    var int64Value: Int64? {
        guard case .integer(let value) = self else { return nil }
        return value
    }

    /// Any number, as a `Double` (an integer beyond 2⁵³ is rounded to the nearest `Double`).
    var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    var arrayValue: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    var objectValue: [(key: String, value: JSONValue)]? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    // MARK: - Encoding

    /// The value as compact JSON text (no spaces, no newline). Strings are escaped as `JSONLine` escapes them;
    /// doubles are written so that they read back to the same `Double` (and stay doubles: `2.0`, not `2`); a
    /// non-finite double, which JSON cannot express, becomes `null`.
    var json: String {
        var text = ""
        append(to: &text)
        return text
    }

    /// Appends `json` to `text` (recursive: meant for values this program built, or that the parser bounded).
    func append(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .integer(let value): text += String(value)
        case .double(let value): text += value.isFinite ? "\(value)" : "null"
        case .string(let value): JSONLine.appendString(value, to: &text)
        case .array(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                item.append(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { text += "," }
                JSONLine.appendString(member.key, to: &text)
                text += ":"
                member.value.append(to: &text)
            }
            text += "}"
        }
    }

    // MARK: - Parsing

    /// Parses `bytes` as exactly one JSON value (whitespace around it allowed, nothing else).
    static func parse(
        _ bytes: some Collection<UInt8>, limits: Limits = .standard
    ) throws(ParseError) -> JSONValue {
        var work = 0
        return try parse(bytes, limits: limits, work: &work)
    }

    /// `parse`, adding to `work` what it did: the bytes of the text, the bytes of every string it decoded, and every
    /// element it moved into a container, counting the whole container again each time its storage was reallocated
    /// or copied. The parser is linear when `work` is, which tests check by counting rather than timing (an array
    /// copied on every append, as a copy-on-write array held in an enum is, shows as quadratic `work`).
    static func parse(
        _ bytes: some Collection<UInt8>, limits: Limits = .standard, work: inout Int
    ) throws(ParseError) -> JSONValue {
        var parser = JSONParser(bytes: Array(bytes), limits: limits)
        defer { work += parser.work }
        return try parser.parse()
    }
}

/// The parser's state: the text, the position and the stack of containers being filled.
///
/// Linear in the size of the text: every byte is looked at a bounded number of times (`position` only moves
/// forward), and every value is moved once into its container, whose storage is mutated in place: a container is a
/// `struct` field of `stack`'s last element, appended to through the subscript, so its storage stays uniquely
/// referenced. (Taking it out into a local and putting it back, or matching it out of an enum, would share the
/// storage for a moment and copy all of it on every append.)
private struct JSONParser {
    /// An array or object that is open, with what it holds so far.
    struct Container {
        enum Kind {
            case array
            case object
        }

        let kind: Kind
        /// An array's items.
        var items: [JSONValue] = []
        /// An object's members so far.
        var members: [(key: String, value: JSONValue)] = []
        /// An object's member names so far, to refuse duplicates.
        var keys: Set<String> = []
        /// The object member whose value is being parsed.
        var key = ""
    }

    let bytes: [UInt8]
    let limits: JSONValue.Limits
    var position = 0
    var stack: [Container] = []
    /// See `JSONValue.parse(_:limits:work:)`.
    var work = 0

    init(bytes: [UInt8], limits: JSONValue.Limits) {
        self.bytes = bytes
        self.limits = limits
        work = bytes.count
    }

    mutating func parse() throws(JSONValue.ParseError) -> JSONValue {
        while true {
            // A value starts here.
            skipWhitespace()
            var value: JSONValue
            switch peek() {
            case UInt8(ascii: "{"):
                try open()
                skipWhitespace()
                if peek() == UInt8(ascii: "}") {
                    position += 1
                    value = .object([])
                } else {
                    var container = Container(kind: .object)
                    container.key = try memberKey(existing: container.keys)
                    container.keys.insert(container.key)
                    stack.append(container)
                    continue
                }
            case UInt8(ascii: "["):
                try open()
                skipWhitespace()
                if peek() == UInt8(ascii: "]") {
                    position += 1
                    value = .array([])
                } else {
                    stack.append(Container(kind: .array))
                    continue
                }
            default:
                value = try scalar()
            }

            // A value ended: put it into its container, closing containers that end with it.
            while true {
                guard !stack.isEmpty else {
                    skipWhitespace()
                    guard position == bytes.count else { throw error("unexpected text after the JSON value") }
                    return value
                }
                let top = stack.count - 1
                skipWhitespace()
                switch stack[top].kind {
                case .array:
                    Self.append(value, to: &stack[top].items, work: &work)
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                    case UInt8(ascii: "]"):
                        position += 1
                        value = .array(stack.removeLast().items)
                        continue
                    default:
                        throw error("expected ',' or ']' in an array")
                    }
                case .object:
                    Self.append((stack[top].key, value), to: &stack[top].members, work: &work)
                    switch peek() {
                    case UInt8(ascii: ","):
                        position += 1
                        skipWhitespace()
                        let next = try memberKey(existing: stack[top].keys)
                        stack[top].keys.insert(next)
                        stack[top].key = next
                    case UInt8(ascii: "}"):
                        position += 1
                        value = .object(stack.removeLast().members)
                        continue
                    default:
                        throw error("expected ',' or '}' in an object")
                    }
                }
                break
            }
        }
    }

    /// Appends `element` to `items` in place, counting the elements moved: one, or all of them when the storage
    /// moved (grown, which doubling keeps linear in total, or copied because it was shared, which is the bug this
    /// counts).
    private static func append<Element>(_ element: Element, to items: inout [Element], work: inout Int) {
        let before = items.withUnsafeBufferPointer { $0.baseAddress }
        items.append(element)
        let after = items.withUnsafeBufferPointer { $0.baseAddress }
        work += before == after ? 1 : items.count
    }

    /// Steps over `{` or `[`, refusing one container too many.
    private mutating func open() throws(JSONValue.ParseError) {
        guard stack.count < limits.maxDepth else {
            throw error("nesting deeper than \(limits.maxDepth) levels")
        }
        position += 1
    }

    /// Reads `"key"` and the colon after it.
    private mutating func memberKey(existing: Set<String>) throws(JSONValue.ParseError) -> String {
        let start = position
        guard peek() == UInt8(ascii: "\"") else { throw error("expected a member name (a string)") }
        let key = try string()
        guard !existing.contains(key) else {
            throw JSONValue.ParseError(message: "duplicate member name \(quoted(key))", offset: start)
        }
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after a member name") }
        position += 1
        return key
    }

    private mutating func scalar() throws(JSONValue.ParseError) -> JSONValue {
        guard let byte = peek() else { throw error("expected a value, found the end of the text") }
        switch byte {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("expected a value")
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONValue.ParseError) -> JSONValue {
        let length = word.utf8CodeUnitCount
        let matches = word.withUTF8Buffer { expected in
            bytes.count - position >= length && bytes[position..<position + length].elementsEqual(expected)
        }
        guard matches else { throw error("expected a value") }
        position += length
        return value
    }

    private mutating func number() throws(JSONValue.ParseError) -> JSONValue {
        let start = position
        var integral = true
        if peek() == UInt8(ascii: "-") { position += 1 }
        switch peek() ?? 0 {
        case UInt8(ascii: "0"):
            position += 1
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            skipDigits()
        default:
            throw error("expected a digit")
        }
        if peek() == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard isDigit(peek()) else { throw error("expected a digit after the decimal point") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            integral = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard isDigit(peek()) else { throw error("expected a digit in the exponent") }
            skipDigits()
        }
        // The grammar above admits ASCII only, so the text is valid UTF-8.
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if integral, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else {
            throw JSONValue.ParseError(message: "number out of range", offset: start)
        }
        return .double(value)
    }

    /// Reads a string from its opening quote to past its closing quote, checking its UTF-8 and its escapes.
    private mutating func string() throws(JSONValue.ParseError) -> String {
        let start = position
        position += 1
        var decoded: [UInt8] = []
        while true {
            guard let byte = peek() else {
                throw JSONValue.ParseError(message: "unterminated string", offset: start)
            }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                work += decoded.count
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &decoded)
            case 0..<0x20:
                throw error("control character in a string (it must be escaped)")
            case 0x20..<0x80:
                decoded.append(byte)
                position += 1
            default:
                let length = try utf8Sequence()
                decoded.append(contentsOf: bytes[position..<position + length])
                position += length
            }
            guard decoded.count <= limits.maxStringBytes else {
                throw JSONValue.ParseError(
                    message: "string longer than \(limits.maxStringBytes) bytes", offset: start)
            }
        }
    }

    /// The length of the well-formed UTF-8 sequence at `position` (a lead byte ≥ 0x80), per the Unicode standard's
    /// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF.
    private func utf8Sequence() throws(JSONValue.ParseError) -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw error("invalid UTF-8")
        }
        guard bytes.count - position >= length else { throw error("invalid UTF-8 (truncated sequence)") }
        guard secondRange.contains(bytes[position + 1]) else { throw error("invalid UTF-8") }
        for index in 2..<max(2, length) where !(0x80...0xBF).contains(bytes[position + index]) {
            throw error("invalid UTF-8")
        }
        return length
    }

    /// Reads one escape (`\n`, `\u00e9`, a surrogate pair …) and appends its UTF-8.
    private mutating func escape(into decoded: inout [UInt8]) throws(JSONValue.ParseError) {
        let start = position
        position += 1
        guard let letter = peek() else { throw error("unterminated escape") }
        position += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(letter)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
                else { throw JSONValue.ParseError(message: "lone surrogate in a \\u escape", offset: start) }
                position += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONValue.ParseError(message: "lone surrogate in a \\u escape", offset: start)
                }
                // Both halves are in range, so this is 0x10000...0x10FFFF.
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONValue.ParseError(message: "lone surrogate in a \\u escape", offset: start)
            }
            // Surrogates were handled above, so this is a valid scalar.
            decoded.append(contentsOf: String(Unicode.Scalar(scalar)!).utf8)
        default:
            throw JSONValue.ParseError(message: "invalid escape", offset: start)
        }
    }

    private mutating func hex4() throws(JSONValue.ParseError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error("expected 4 hexadecimal digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected 4 hexadecimal digits")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private mutating func skipDigits() {
        while isDigit(peek()) { position += 1 }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        {
            position += 1
        }
    }

    private func error(_ message: String) -> JSONValue.ParseError {
        JSONValue.ParseError(message: message, offset: position)
    }

    private func quoted(_ key: String) -> String {
        var text = ""
        JSONLine.appendString(key.count > 40 ? String(key.prefix(40)) + "…" : key, to: &text)
        return text
    }
}
