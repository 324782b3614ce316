import Glibc

/// Reading a configuration file without trusting it: regular files only, at most
/// ``maximumSize`` bytes, valid UTF-8, and nothing the TOML parser cannot take safely (nesting no
/// deeper than ``maximumNesting``, well-formed table header starts), checked before it sees the text.
enum ConfigurationSource {
    static let maximumSize = 1 << 20
    static let maximumNesting = 64

    /// The file's text, or the reason it cannot be used: not a regular file, larger than `limit`
    /// bytes, not UTF-8 or holding NUL bytes.
    static func read(path: String, limit: Int = maximumSize) -> Result<String, ConfigurationProblem> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            return .failure(ConfigurationProblem("cannot open: \(String(cString: strerror(errno)))"))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .failure(ConfigurationProblem("cannot stat: \(String(cString: strerror(errno)))"))
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ConfigurationProblem("not a regular file"))
        }
        guard status.st_size <= limit else {
            return .failure(ConfigurationProblem("file is \(status.st_size) bytes; the limit is \(limit)"))
        }
        // Read with a limit even though fstat said the size: the file may grow while we read.
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ConfigurationProblem("cannot read: \(String(cString: strerror(errno)))"))
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        guard bytes.count <= limit else {
            return .failure(ConfigurationProblem("file is larger than \(limit) bytes"))
        }
        return text(from: bytes)
    }

    /// Validates raw bytes as text: UTF-8 and no NUL.
    static func text(from bytes: [UInt8]) -> Result<String, ConfigurationProblem> {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let offset = firstInvalidUTF8Offset(bytes)
            let (line, column) = position(ofByte: offset, in: bytes)
            return .failure(ConfigurationProblem(line: line, column: column, "invalid UTF-8"))
        }
        if let nul = bytes.firstIndex(of: 0) {
            let (line, column) = position(ofByte: nul, in: bytes)
            return .failure(ConfigurationProblem(line: line, column: column, "NUL byte in the file"))
        }
        return .success(text)
    }

    /// What the text must not hold before the TOML parser sees it: nesting deeper than the limit
    /// (the parser recurses and would exhaust its stack), and two shapes toml++ 3 asserts on
    /// instead of reporting (undefined behaviour once assertions are compiled out): a table header
    /// whose name does not start with a key character (`[` then a line break, `#`, `=`, `.`, `é`),
    /// and `}` where an array expects its next element (`x = [}`, `x = [1, }`).
    /// Strings and comments are skipped. Lines and columns count Unicode scalars, as the TOML
    /// parser does, so "\r\n" ends a line and a leading byte order mark takes no column.
    static func preflight(_ text: String) -> ConfigurationProblem? {
        enum Opener { case header, array, inlineTable }
        var open: [Opener] = []
        var line = 1
        var column = 0
        var quote: [Unicode.Scalar]? = nil  // the closing delimiter while inside a string
        var inComment = false
        var escaped = false
        var atLineStart = true  // only spaces and tabs so far on this line
        var expectingElement = false  // just after an array's `[` or `,` (whitespace and comments aside)
        var characters = Array(text.unicodeScalars)
        if characters.first == "\u{FEFF}" { characters.removeFirst() }
        var index = 0
        while index < characters.count {
            let character = characters[index]
            column += 1
            if character == "\n" {
                line += 1
                column = 0
                inComment = false
                atLineStart = true
                if let open = quote, open.count == 1 { quote = nil }  // a single-line string cannot span lines
                index += 1
                continue
            }
            if inComment {
                index += 1
                continue
            }
            if let closing = quote {
                if escaped {
                    escaped = false
                } else if character == "\\" && closing.first == "\"" {
                    escaped = true
                } else if characters[index..<Swift.min(characters.count, index + closing.count)]
                    .elementsEqual(closing)
                {
                    index += closing.count
                    column += closing.count - 1
                    quote = nil
                    continue
                }
                index += 1
                continue
            }
            let startsHeader = atLineStart && open.isEmpty && character == "["
            atLineStart = atLineStart && (character == " " || character == "\t")
            if character == " " || character == "\t" || character == "\r" || character == "#" {
                // Whitespace and comments do not end the wait for an array element.
                inComment = character == "#"
                index += 1
                continue
            }
            if character == "}" && expectingElement && open.last == .array {
                return ConfigurationProblem(
                    line: line, column: column, "Error while parsing array: expected a value or ']', saw '}'")
            }
            expectingElement = false
            switch character {
            case "\"", "'":
                let triple =
                    index + 2 < characters.count && characters[index + 1] == character
                    && characters[index + 2] == character
                quote = triple ? [character, character, character] : [character]
                if triple {
                    index += 3
                    column += 2
                    continue
                }
            case "[" where startsHeader:
                // `[` or `[[`, then spaces or tabs, then a key character, a quote or `]` (which the
                // parser reports itself); the end of the text is reported by the parser too.
                open.append(.header)
                var next = index + 1
                if next < characters.count && characters[next] == "[" {
                    open.append(.header)
                    next += 1
                }
                let name = next
                while next < characters.count && (characters[next] == " " || characters[next] == "\t") { next += 1 }
                if next < characters.count && !isKeyStart(characters[next]) {
                    return ConfigurationProblem(
                        line: line, column: column + next - index,
                        "Error while parsing table header: expected a key, saw \(describe(characters[next]))")
                }
                column += name - index - 1
                index = name
                continue
            case "[", "{":
                open.append(character == "[" ? .array : .inlineTable)
                expectingElement = character == "["
                if open.count > maximumNesting {
                    return ConfigurationProblem(
                        line: line, column: column, "arrays or inline tables nested deeper than \(maximumNesting)")
                }
            case ",":
                expectingElement = open.last == .array
            case "]", "}":
                _ = open.popLast()
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// A character that may start a key in a table header (TOML 1.0 bare keys are ASCII), or `]`.
    private static func isKeyStart(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || ["_", "-", "\"", "'", "]"].contains(scalar)
    }

    /// A character as an error message shows it.
    private static func describe(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": "a line break"
        case "\r": "a carriage return"
        default:
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
                ? "U+\(String(scalar.value, radix: 16, uppercase: true))" : "'\(scalar)'"
        }
    }

    /// The offset of the first byte of the first sequence that is not valid UTF-8 (a stray
    /// continuation byte, a byte that never starts a sequence, an overlong form, a surrogate, a
    /// truncated sequence).
    private static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: return offset
            case .emptyInput: return Swift.max(0, bytes.count - 1)
            }
        }
    }

    private static func position(ofByte offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var column = 1
        for byte in bytes[0..<Swift.min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if (byte & 0xC0) != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }
}
