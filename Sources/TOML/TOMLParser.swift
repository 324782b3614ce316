/// A TOML 1.0 parser written for untrusted files: one pass over the text, no recursion deeper than
/// the nesting limit, every size bounded, every number checked, and every problem an error with a
/// position (never a trap). It keeps where each key and array element was written, so that problems
/// found later, while decoding, can be reported as `LINE:COLUMN`.
public struct TOMLParser {
    /// Arrays and inline tables inside one another, at most.
    public static let maximumNesting = 64
    /// Parts of one dotted key or table header (`a.b.c` has three), at most.
    public static let maximumKeyParts = 64
    /// Unicode scalars in one key, at most.
    public static let maximumKeyLength = 256
    /// Tables and arrays between the root and any value, at most.
    public static let maximumDepth = 128

    /// Parses a whole document.
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        var parser = TOMLParser(text)
        return try parser.parseDocument()
    }

    private let text: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private let root = TOMLTable(origin: .header, depth: 0)

    private init(_ text: String) {
        self.text = Array(text.unicodeScalars)
        // A byte order mark at the very start is not part of the document (nor of the first line's columns).
        if self.text.first == "\u{FEFF}" {
            index = 1
            lineStart = 1
        }
    }

    // MARK: - Reading characters

    private var current: Unicode.Scalar? { index < text.count ? text[index] : nil }

    private func peek(_ offset: Int) -> Unicode.Scalar? {
        index + offset < text.count ? text[index + offset] : nil
    }

    private var position: TOMLPosition { TOMLPosition(line: line, column: index - lineStart + 1) }

    private func error(_ message: String) -> TOMLError { TOMLError(position, message) }

    /// Consumes a line break (LF or CRLF) at the current position.
    private mutating func consumeNewline() throws(TOMLError) {
        if current == "\r" {
            guard peek(1) == "\n" else {
                index += 1
                throw error("expected a line feed after a carriage return, saw \(describe(current))")
            }
            index += 1
        }
        index += 1
        line += 1
        lineStart = index
    }

    private var atNewline: Bool { current == "\n" || current == "\r" }

    private mutating func skipWhitespace() {
        while let character = current, character == " " || character == "\t" { index += 1 }
    }

    /// Skips a comment from its `#` up to (not including) the line break.
    private mutating func skipComment() throws(TOMLError) {
        index += 1
        while let character = current, character != "\n" {
            if character == "\r" {
                guard peek(1) == "\n" else {
                    index += 1
                    throw error("expected a line feed after a carriage return, saw \(describe(current))")
                }
                return
            }
            if isForbiddenControl(character) {
                throw error("\(describe(character)) is not allowed in a comment")
            }
            index += 1
        }
    }

    /// Skips spaces, tabs, comments and line breaks (inside arrays).
    private mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while true {
            skipWhitespace()
            if current == "#" {
                try skipComment()
            } else if atNewline {
                try consumeNewline()
            } else {
                return
            }
        }
    }

    /// After a key-value pair or a header: only a comment may follow on the line.
    private mutating func expectLineEnd(after what: String) throws(TOMLError) {
        skipWhitespace()
        if current == "#" { try skipComment() }
        guard let character = current else { return }
        guard character == "\n" || character == "\r" else {
            throw error("expected the end of the line after \(what), saw \(describe(character))")
        }
        try consumeNewline()
    }

    // MARK: - Document

    private mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        var section = root
        while true {
            try skipWhitespaceCommentsAndNewlines()
            guard let character = current else { return root }
            if character == "[" {
                section = try parseHeader()
                try expectLineEnd(after: "a table header")
            } else if isBareKeyCharacter(character) || character == "\"" || character == "'" {
                try parseKeyValue(into: section, nesting: 0)
                try expectLineEnd(after: "a value")
            } else if character == "\u{FEFF}" {
                throw error("a byte order mark is only allowed at the start of the file")
            } else if character == "\u{0B}" || character == "\u{0C}" {
                throw error("vertical tabs and form feeds are not line breaks in TOML")
            } else {
                throw error("expected a key or a table header, saw \(describe(character))")
            }
        }
    }

    /// `[a.b]` or `[[a.b]]`; returns the table that the following key-value pairs go into.
    private mutating func parseHeader() throws(TOMLError) -> TOMLTable {
        let start = position
        let isArray = peek(1) == "["
        index += isArray ? 2 : 1
        skipWhitespace()
        let keys = try parseKey(what: "table header")
        skipWhitespace()
        guard current == "]", !isArray || peek(1) == "]" else {
            throw error("expected '\(isArray ? "]]" : "]")' to close the table header, saw \(describe(current))")
        }
        index += isArray ? 2 : 1
        let name = keys.map(\.name).joined(separator: ".")

        var table = root
        for key in keys.dropLast() {
            if let entry = table.entries[key.name] {
                switch entry.value {
                case .table(let next) where next.origin != .inline:
                    table = next
                case .array(let array) where array.isArrayOfTables:
                    // A header inside an array of tables goes into its latest element.
                    guard let last = array.elements.last?.table else { throw TOMLError(key.position, "bug") }
                    table = last
                default:
                    throw TOMLError(
                        key.position,
                        "cannot define table [\(name)]: '\(key.name)' is already \(describe(entry.value)) (line \(entry.position.line))"
                    )
                }
            } else {
                let next = try makeTable(origin: .implicit, in: table, at: key.position)
                table.insert(.table(next), for: key.name, at: start)
                table = next
            }
        }
        let last = keys[keys.count - 1]
        if isArray {
            let array: TOMLArray
            if let entry = table.entries[last.name] {
                guard case .array(let existing) = entry.value, existing.isArrayOfTables else {
                    throw TOMLError(
                        last.position,
                        "cannot define array of tables [[\(name)]]: '\(last.name)' is already \(describe(entry.value)) (line \(entry.position.line))"
                    )
                }
                array = existing
            } else {
                array = TOMLArray(isArrayOfTables: true)
                try checkDepth(table.depth + 1, at: last.position)
                table.insert(.array(array), for: last.name, at: start)
            }
            let element = try makeTable(origin: .header, in: table, extraDepth: 1, at: last.position)
            array.append(.table(element), at: start)
            return element
        }
        if let entry = table.entries[last.name] {
            guard case .table(let existing) = entry.value else {
                throw TOMLError(
                    last.position,
                    "cannot define table [\(name)]: '\(last.name)' is already \(describe(entry.value)) (line \(entry.position.line))"
                )
            }
            switch existing.origin {
            case .implicit:
                existing.origin = .header
                return existing
            case .header:
                throw TOMLError(start, "table [\(name)] is defined twice (first at line \(entry.position.line))")
            case .dotted:
                throw TOMLError(
                    start, "table [\(name)] was already defined by dotted keys (line \(entry.position.line))")
            case .inline:
                throw TOMLError(
                    start, "table [\(name)] was already defined as an inline table (line \(entry.position.line))")
            }
        }
        let created = try makeTable(origin: .header, in: table, at: last.position)
        table.insert(.table(created), for: last.name, at: start)
        return created
    }

    private func makeTable(
        origin: TOMLTable.Origin, in parent: TOMLTable, extraDepth: Int = 0, at position: TOMLPosition
    ) throws(TOMLError) -> TOMLTable {
        let depth = parent.depth + 1 + extraDepth
        try checkDepth(depth, at: position)
        return TOMLTable(origin: origin, depth: depth)
    }

    private func checkDepth(_ depth: Int, at position: TOMLPosition) throws(TOMLError) {
        guard depth <= Self.maximumDepth else {
            throw TOMLError(position, "tables and arrays nested deeper than \(Self.maximumDepth)")
        }
    }

    // MARK: - Keys

    private struct Key {
        var name: String
        var position: TOMLPosition
    }

    /// A dotted key: bare or quoted parts separated by dots (spaces and tabs allowed around the dots).
    private mutating func parseKey(what: String) throws(TOMLError) -> [Key] {
        var keys: [Key] = []
        while true {
            let start = position
            guard let character = current else { throw error("expected a key in the \(what), saw the end of the file") }
            let name: String
            if character == "\"" {
                if peek(1) == "\"" && peek(2) == "\"" { throw error("a key cannot be a multi-line string") }
                name = try parseBasicString(maximumLength: Self.maximumKeyLength)
            } else if character == "'" {
                if peek(1) == "'" && peek(2) == "'" { throw error("a key cannot be a multi-line string") }
                name = try parseLiteralString(maximumLength: Self.maximumKeyLength)
            } else if isBareKeyCharacter(character) {
                var bare = String.UnicodeScalarView()
                while let next = current, isBareKeyCharacter(next) {
                    guard bare.count < Self.maximumKeyLength else {
                        throw TOMLError(start, "a key longer than \(Self.maximumKeyLength) characters")
                    }
                    bare.append(next)
                    index += 1
                }
                name = String(bare)
            } else {
                throw error("expected a key in the \(what), saw \(describe(character))")
            }
            guard keys.count < Self.maximumKeyParts else {
                throw TOMLError(start, "a key with more than \(Self.maximumKeyParts) dotted parts")
            }
            keys.append(Key(name: name, position: start))
            skipWhitespace()
            guard current == "." else { return keys }
            index += 1
            skipWhitespace()
        }
    }

    /// `key = value` into `table`, the dotted parts making (or extending) tables as TOML 1.0 allows.
    private mutating func parseKeyValue(into section: TOMLTable, nesting: Int) throws(TOMLError) {
        let start = position
        let keys = try parseKey(what: "key-value pair")
        guard current == "=" else {
            throw error("expected '=' after the key, saw \(describe(current))")
        }
        index += 1
        skipWhitespace()

        var table = section
        for key in keys.dropLast() {
            if let entry = table.entries[key.name] {
                guard case .table(let next) = entry.value, next.origin == .dotted else {
                    let what =
                        if case .table(let next) = entry.value {
                            next.origin == .inline ? "an inline table" : "a table defined by a header"
                        } else {
                            describe(entry.value)
                        }
                    throw TOMLError(
                        key.position,
                        "cannot add keys to '\(key.name)' with a dotted key: it is \(what) (line \(entry.position.line))"
                    )
                }
                table = next
            } else {
                let next = try makeTable(origin: .dotted, in: table, at: key.position)
                table.insert(.table(next), for: key.name, at: start)
                table = next
            }
        }
        let last = keys[keys.count - 1]
        if let entry = table.entries[last.name] {
            throw TOMLError(
                start, "key '\(last.name)' is defined twice (first at line \(entry.position.line))")
        }
        let value = try parseValue(nesting: nesting, depth: table.depth)
        table.insert(value, for: last.name, at: start)
    }

    // MARK: - Values

    private mutating func parseValue(nesting: Int, depth: Int) throws(TOMLError) -> TOMLValue {
        guard let character = current else { throw error("expected a value, saw the end of the file") }
        switch character {
        case "\"":
            if peek(1) == "\"" && peek(2) == "\"" {
                return .string(try parseMultilineString(quote: "\"", escapes: true))
            }
            return .string(try parseBasicString(maximumLength: nil))
        case "'":
            if peek(1) == "'" && peek(2) == "'" { return .string(try parseMultilineString(quote: "'", escapes: false)) }
            return .string(try parseLiteralString(maximumLength: nil))
        case "[":
            return .array(try parseArray(nesting: nesting + 1, depth: depth + 1))
        case "{":
            return .table(try parseInlineTable(nesting: nesting + 1, depth: depth + 1))
        case "t", "f":
            let word = character == "t" ? "true" : "false"
            if matches(word) && !isBareKeyCharacter(peek(word.unicodeScalars.count) ?? " ") {
                index += word.unicodeScalars.count
                return .boolean(character == "t")
            }
            throw error(
                "expected a value, saw \(describe(character)) (true and false are lowercase, strings are quoted)")
        default:
            if character == "+" || character == "-" || character == "i" || character == "n"
                || ("0"..."9").contains(character)
            {
                return try parseNumberOrDate()
            }
            throw error("expected a value, saw \(describe(character))")
        }
    }

    private func matches(_ word: String) -> Bool {
        var offset = 0
        for scalar in word.unicodeScalars {
            guard peek(offset) == scalar else { return false }
            offset += 1
        }
        return true
    }

    private mutating func parseArray(nesting: Int, depth: Int) throws(TOMLError) -> TOMLArray {
        try checkNesting(nesting)
        try checkDepth(depth, at: position)
        index += 1
        let array = TOMLArray(isArrayOfTables: false)
        while true {
            try skipWhitespaceCommentsAndNewlines()
            guard let character = current else { throw error("unterminated array: expected a value or ']'") }
            if character == "]" {
                index += 1
                return array
            }
            guard character != "," && character != "}" else {
                throw error("expected a value or ']' in the array, saw \(describe(character))")
            }
            let start = position
            array.append(try parseValue(nesting: nesting, depth: depth), at: start)
            try skipWhitespaceCommentsAndNewlines()
            if current == "," {
                index += 1
            } else if current == "]" {
                index += 1
                return array
            } else {
                throw error("expected ',' or ']' after an array element, saw \(describe(current))")
            }
        }
    }

    private mutating func parseInlineTable(nesting: Int, depth: Int) throws(TOMLError) -> TOMLTable {
        try checkNesting(nesting)
        try checkDepth(depth, at: position)
        index += 1
        // Made as a dotted-key section so that `{ a.b = 1, a.c = 2 }` works; complete once closed.
        let table = TOMLTable(origin: .dotted, depth: depth)
        skipWhitespace()
        if current == "}" {
            index += 1
            table.origin = .inline
            return table
        }
        while true {
            skipWhitespace()
            guard let character = current, !atNewline else {
                throw error("an inline table must be closed on the line it starts (TOML 1.0), saw \(describe(current))")
            }
            guard isBareKeyCharacter(character) || character == "\"" || character == "'" else {
                throw error(
                    character == "}"
                        ? "a trailing comma is not allowed in an inline table"
                        : "expected a key in the inline table, saw \(describe(character))")
            }
            try parseKeyValue(into: table, nesting: nesting)
            skipWhitespace()
            if current == "," {
                index += 1
            } else if current == "}" {
                index += 1
                table.origin = .inline
                return table
            } else if atNewline {
                throw error("an inline table must be closed on the line it starts (TOML 1.0), saw a line break")
            } else {
                throw error("expected ',' or '}' in the inline table, saw \(describe(current))")
            }
        }
    }

    private func checkNesting(_ nesting: Int) throws(TOMLError) {
        guard nesting <= Self.maximumNesting else {
            throw error("arrays or inline tables nested deeper than \(Self.maximumNesting)")
        }
    }

    // MARK: - Strings

    /// `"…"` with escapes; `maximumLength` bounds keys.
    private mutating func parseBasicString(maximumLength: Int?) throws(TOMLError) -> String {
        try parseString(quote: "\"", escapes: true, maximumLength: maximumLength)
    }

    /// `'…'`: no escapes.
    private mutating func parseLiteralString(maximumLength: Int?) throws(TOMLError) -> String {
        try parseString(quote: "'", escapes: false, maximumLength: maximumLength)
    }

    /// A single-line string from its opening quote.
    private mutating func parseString(
        quote: Unicode.Scalar, escapes: Bool, maximumLength: Int?
    ) throws(TOMLError) -> String {
        let start = position
        index += 1
        var result = String.UnicodeScalarView()
        while true {
            guard let character = current else { throw TOMLError(start, "unterminated string") }
            if character == quote {
                index += 1
                return String(result)
            }
            if character == "\n" || character == "\r" {
                throw TOMLError(start, "unterminated string: a single-line string cannot span lines")
            }
            if let maximumLength, result.count >= maximumLength {
                throw TOMLError(start, "a key longer than \(maximumLength) characters")
            }
            if escapes && character == "\\" {
                result.append(try parseEscape())
                continue
            }
            try checkAllowedInString(character, escapes: escapes)
            result.append(character)
            index += 1
        }
    }

    /// A multi-line string from its opening delimiter: `"""` with escapes (a backslash at the end of a line trims up
    /// to the next text) or `'''` without. Line breaks are kept (a CRLF as LF), but one right after the opening.
    private mutating func parseMultilineString(quote: Unicode.Scalar, escapes: Bool) throws(TOMLError) -> String {
        let start = position
        index += 3
        if atNewline { try consumeNewline() }
        var result = String.UnicodeScalarView()
        while true {
            guard let character = current else { throw TOMLError(start, "unterminated multi-line string") }
            if character == quote && peek(1) == quote && peek(2) == quote {
                // Up to two more quotes belong to the content: `""""a"""""`.
                var quotes = 3
                while peek(quotes) == quote { quotes += 1 }
                guard quotes <= 5 else {
                    index += 5
                    throw error("too many quotes at the end of a multi-line string")
                }
                for _ in 3..<quotes { result.append(quote) }
                index += quotes
                return String(result)
            }
            if escapes && character == "\\" {
                // A line-ending backslash: skip whitespace and line breaks up to the next text.
                var lookahead = 1
                while peek(lookahead) == " " || peek(lookahead) == "\t" { lookahead += 1 }
                if peek(lookahead) == "\n" || peek(lookahead) == "\r" {
                    index += lookahead
                    while true {
                        skipWhitespace()
                        guard atNewline else { break }
                        try consumeNewline()
                    }
                    continue
                }
                result.append(try parseEscape())
                continue
            }
            if atNewline {
                try consumeNewline()
                result.append("\n")
                continue
            }
            try checkAllowedInString(character, escapes: escapes)
            result.append(character)
            index += 1
        }
    }

    /// Control characters (but tab) cannot stand in a string as they are; a basic string can escape them.
    private func checkAllowedInString(_ character: Unicode.Scalar, escapes: Bool) throws(TOMLError) {
        guard isForbiddenControl(character) else { return }
        throw error(
            escapes
                ? "\(describe(character)) is not allowed in a string (write it as an escape)"
                : "\(describe(character)) is not allowed in a literal string")
    }

    /// An escape sequence from its backslash.
    private mutating func parseEscape() throws(TOMLError) -> Unicode.Scalar {
        index += 1
        guard let code = current else { throw error("unterminated string") }
        let simple: Unicode.Scalar? =
            switch code {
            case "b": "\u{08}"
            case "t": "\t"
            case "n": "\n"
            case "f": "\u{0C}"
            case "r": "\r"
            case "\"": "\""
            case "\\": "\\"
            default: nil
            }
        if let simple {
            index += 1
            return simple
        }
        guard code == "u" || code == "U" else {
            throw error("unknown escape sequence '\\\(code)'")
        }
        let digits = code == "u" ? 4 : 8
        var value: UInt32 = 0
        for offset in 1...digits {
            guard let digit = peek(offset), let nibble = hexValue(digit) else {
                throw error("'\\\(code)' needs \(digits) hexadecimal digits")
            }
            value = value << 4 | nibble
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw error(
                "'\\\(code)' escape of U+\(String(value, radix: 16, uppercase: true)), which is not a Unicode scalar value"
            )
        }
        index += 1 + digits
        return scalar
    }

    // MARK: - Numbers, booleans, dates

    /// An integer, a float, `inf`/`nan`, or a date/time; the token ends at whitespace, `,`, `]`, `}`, `#`
    /// or the end of the line.
    private mutating func parseNumberOrDate() throws(TOMLError) -> TOMLValue {
        let start = position
        let first = index
        while let character = current, isTokenCharacter(character) { index += 1 }
        // A date and a time separated by one space: `1979-05-27 07:32:00`.
        if index - first == 10, current == " ", let next = peek(1), ("0"..."9").contains(next),
            peek(2).map({ ("0"..."9").contains($0) }) == true, peek(3) == ":"
        {
            index += 1
            while let character = current, isTokenCharacter(character) { index += 1 }
        }
        let token = String(String.UnicodeScalarView(text[first..<index]))
        if let value = TOMLScalars.dateTime(token) {
            return .dateTime(value)
        }
        if token.contains(":") || (token.count >= 8 && token.dropFirst(4).first == "-" && !token.hasPrefix("-")) {
            throw TOMLError(start, "'\(token)' is not a valid date or time")
        }
        switch TOMLScalars.number(token) {
        case .integer(let value): return .integer(value)
        case .float(let value): return .float(value)
        case .problem(let message): throw TOMLError(start, message)
        }
    }

    private func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        isBareKeyCharacter(scalar) || scalar == "+" || scalar == "." || scalar == ":"
    }

    // MARK: - Characters

    /// ASCII letters, digits, `_` and `-` (TOML 1.0 bare keys).
    private func isBareKeyCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || scalar == "_" || scalar == "-"
    }

    /// Control characters TOML allows in no string or comment (tab is allowed; line breaks are handled apart).
    private func isForbiddenControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t" && scalar != "\n") || scalar.value == 0x7F
    }

    private func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 0x30
        case "a"..."f": scalar.value - 0x61 + 10
        case "A"..."F": scalar.value - 0x41 + 10
        default: nil
        }
    }

    private func describe(_ scalar: Unicode.Scalar?) -> String {
        guard let scalar else { return "the end of the file" }
        return switch scalar {
        case "\n": "a line break"
        case "\r": "a carriage return"
        case "\t": "a tab"
        default:
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
                || scalar.value == 0x7F
                ? "U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4))" : "'\(scalar)'"
        }
    }

    private func describe(_ value: TOMLValue) -> String {
        switch value.kind {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        case .dateTime: "a date or time"
        case .array: value.array?.isArrayOfTables == true ? "an array of tables" : "an array"
        case .table: value.table?.origin == .inline ? "an inline table" : "a table"
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
