import Glibc

/// Reading a configuration file without trusting it: regular files only, at most
/// ``maximumSize`` bytes, valid UTF-8, and nesting no deeper than ``maximumNesting`` (checked
/// before the TOML parser sees the text, so a hostile file cannot exhaust its stack).
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

    /// The position of the first bracket or brace that nests deeper than the limit, ignoring
    /// strings and comments.
    static func nestingViolation(in text: String) -> (line: Int, column: Int)? {
        var depth = 0
        var line = 1
        var column = 0
        var quote: [Character]? = nil  // the closing delimiter while inside a string
        var inComment = false
        var escaped = false
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            column += 1
            if character == "\n" {
                line += 1
                column = 0
                inComment = false
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
                } else if Array(characters[index..<Swift.min(characters.count, index + closing.count)]) == closing {
                    index += closing.count
                    column += closing.count - 1
                    quote = nil
                    continue
                }
                index += 1
                continue
            }
            switch character {
            case "#":
                inComment = true
            case "\"", "'":
                let triple = index + 2 < characters.count && characters[index + 1] == character
                    && characters[index + 2] == character
                quote = triple ? [character, character, character] : [character]
                if triple {
                    index += 3
                    column += 2
                    continue
                }
            case "[", "{":
                depth += 1
                if depth > maximumNesting { return (line, column) }
            case "]", "}":
                depth = Swift.max(0, depth - 1)
            default:
                break
            }
            index += 1
        }
        return nil
    }

    private static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int {
        var low = 0
        var high = bytes.count
        // The longest valid prefix, by bisection over prefixes that decode.
        while low < high {
            let middle = (low + high + 1) / 2
            if String(validating: bytes[0..<middle], as: UTF8.self) != nil || isIncompleteTail(bytes, middle) {
                low = middle
            } else {
                high = middle - 1
            }
        }
        return Swift.min(low, Swift.max(0, bytes.count - 1))
    }

    /// A prefix that ends inside a multi-byte sequence fails to decode although nothing is wrong yet.
    private static func isIncompleteTail(_ bytes: [UInt8], _ length: Int) -> Bool {
        var start = length
        while start > 0 && length - start < 3 && (bytes[start - 1] & 0xC0) == 0x80 { start -= 1 }
        if start > 0 && (bytes[start - 1] & 0xC0) == 0xC0 { start -= 1 }
        return start < length && String(validating: bytes[0..<start], as: UTF8.self) != nil
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
