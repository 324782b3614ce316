/// Finds where key paths are written in a TOML text, so that semantic problems can be reported as
/// `PATH:LINE:COLUMN`. TOMLKit gives positions only for syntax errors; this walks the structure of
/// a text that already parsed (headers, keys, inline tables, arrays) and records the position of
/// every key and array element under its dotted path (`control[2].frame.width`, `actions[0]`).
struct SourceLocator: Sendable {
    struct Position: Hashable, Sendable {
        var line: Int
        var column: Int
    }

    private(set) var positions: [String: Position] = [:]

    init(text: String) {
        // Unicode scalars, not Characters: "\r\n" is one Character (so lines would not be counted in
        // CRLF files), and TOML parsers count columns in code points.
        var scalars = Array(text.unicodeScalars)
        // A byte order mark at the start is not part of the first line's columns.
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var scanner = Scanner(characters: scalars)
        scanner.scanDocument(into: &positions)
    }

    /// The position of `keyPath`, or of its nearest recorded ancestor.
    func position(of keyPath: String) -> Position? {
        var path = keyPath
        while !path.isEmpty {
            if let position = positions[path] { return position }
            guard let cut = path.lastIndex(where: { $0 == "." || $0 == "[" }) else { break }
            path = String(path[..<cut])
        }
        return nil
    }

    private struct Scanner {
        let characters: [Unicode.Scalar]
        var index = 0
        var line = 1
        var column = 1
        /// For every array of tables (by its resolved path), the index of its latest element.
        var arrayTables: [String: Int] = [:]

        init(characters: [Unicode.Scalar]) {
            self.characters = characters
        }

        var current: Unicode.Scalar? { index < characters.count ? characters[index] : nil }
        var position: Position { Position(line: line, column: column) }

        mutating func advance() {
            guard let character = current else { return }
            index += 1
            if character == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }

        func peek(_ text: String) -> Bool {
            var offset = index
            for character in text.unicodeScalars {
                guard offset < characters.count, characters[offset] == character else { return false }
                offset += 1
            }
            return true
        }

        mutating func skip(_ count: Int) {
            for _ in 0..<count { advance() }
        }

        /// Skips spaces, tabs and comments; with `newlines`, line breaks too.
        mutating func skipTrivia(newlines: Bool) {
            while let character = current {
                if character == " " || character == "\t" || character == "\r" || (newlines && character == "\n") {
                    advance()
                } else if character == "#" {
                    while let next = current, next != "\n" { advance() }
                } else {
                    return
                }
            }
        }

        mutating func scanDocument(into positions: inout [String: Position]) {
            var table = ""
            while current != nil {
                skipTrivia(newlines: true)
                guard current != nil else { return }
                let start = position
                if peek("[[") {
                    skip(2)
                    let keys = scanKey()
                    skipTrivia(newlines: false)
                    if peek("]]") { skip(2) }
                    recordAncestors(of: Array(keys.dropLast()), at: start, into: &positions)
                    let parent = resolve(Array(keys.dropLast()))
                    let base = parent.isEmpty ? (keys.last ?? "") : parent + "." + (keys.last ?? "")
                    let element = (arrayTables[base].map { $0 + 1 }) ?? 0
                    arrayTables[base] = element
                    table = "\(base)[\(element)]"
                    positions[table] = start
                    if positions[base] == nil { positions[base] = start }
                } else if peek("[") {
                    skip(1)
                    let keys = scanKey()
                    recordAncestors(of: Array(keys.dropLast()), at: start, into: &positions)
                    table = resolve(keys)
                    skipTrivia(newlines: false)
                    if peek("]") { skip(1) }
                    if positions[table] == nil { positions[table] = start }
                } else {
                    scanKeyValue(prefix: table, into: &positions)
                }
                // Anything left on the line (a comment) is trivia; a malformed rest is skipped.
                while let character = current, character != "\n" { advance() }
            }
        }

        /// A header `[a.b.c]` also defines `a` and `a.b` where they were not written before; problems
        /// about those tables (too many targets, say) point at the first header that mentions them.
        func recordAncestors(of keys: [String], at start: Position, into positions: inout [String: Position]) {
            for count in stride(from: 1, through: keys.count, by: 1) {
                let path = resolve(Array(keys.prefix(count)))
                if positions[path] == nil { positions[path] = start }
            }
        }

        /// Header components with array tables replaced by their latest element.
        func resolve(_ keys: [String]) -> String {
            var path = ""
            for key in keys {
                path = path.isEmpty ? key : path + "." + key
                if let element = arrayTables[path] { path += "[\(element)]" }
            }
            return path
        }

        mutating func scanKeyValue(prefix: String, into positions: inout [String: Position]) {
            let start = position
            let keys = scanKey()
            guard !keys.isEmpty else {
                advance()
                return
            }
            var path = prefix
            for key in keys {
                path = path.isEmpty ? key : path + "." + key
                if positions[path] == nil { positions[path] = start }
            }
            skipTrivia(newlines: false)
            guard current == "=" else { return }
            advance()
            skipTrivia(newlines: false)
            scanValue(path: path, into: &positions)
        }

        /// A dotted key: bare or quoted components.
        mutating func scanKey() -> [String] {
            var keys: [String] = []
            while true {
                skipTrivia(newlines: false)
                guard let character = current else { return keys }
                if character == "\"" || character == "'" {
                    keys.append(scanQuoted(character))
                } else if Self.isBareKey(character) {
                    var key = ""
                    while let next = current, Self.isBareKey(next) {
                        key.unicodeScalars.append(next)
                        advance()
                    }
                    keys.append(key)
                } else {
                    return keys
                }
                skipTrivia(newlines: false)
                guard current == "." else { return keys }
                advance()
            }
        }

        /// A character of a bare key: ASCII letters, digits, `_` and `-` (TOML 1.0), and letters and
        /// digits of other scripts (TOML 1.1).
        static func isBareKey(_ scalar: Unicode.Scalar) -> Bool {
            if scalar.isASCII {
                return ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                    || scalar == "_" || scalar == "-"
            }
            return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
        }

        mutating func scanQuoted(_ quote: Unicode.Scalar) -> String {
            advance()
            var text = ""
            while let character = current, character != quote, character != "\n" {
                if character == "\\" && quote == "\"" {
                    advance()
                }
                if let escaped = current { text.unicodeScalars.append(escaped) }
                advance()
            }
            advance()
            return text
        }

        mutating func scanValue(path: String, into positions: inout [String: Position]) {
            guard let character = current else { return }
            switch character {
            case "{":
                advance()
                while true {
                    skipTrivia(newlines: true)
                    guard let next = current else { return }
                    if next == "}" {
                        advance()
                        return
                    }
                    if next == "," {
                        advance()
                        continue
                    }
                    let before = index
                    scanKeyValue(prefix: path, into: &positions)
                    if index == before { advance() }
                }
            case "[":
                advance()
                var element = 0
                while true {
                    skipTrivia(newlines: true)
                    guard let next = current else { return }
                    if next == "]" {
                        advance()
                        return
                    }
                    if next == "," {
                        advance()
                        continue
                    }
                    let elementPath = "\(path)[\(element)]"
                    positions[elementPath] = position
                    let before = index
                    scanValue(path: elementPath, into: &positions)
                    if index == before { advance() }
                    element += 1
                }
            case "\"", "'":
                if peek(String(repeating: String(character), count: 3)) {
                    let closing = String(repeating: String(character), count: 3)
                    skip(3)
                    while current != nil && !peek(closing) {
                        if current == "\\" && character == "\"" { advance() }
                        advance()
                    }
                    skip(3)
                } else {
                    _ = scanQuoted(character)
                }
            default:
                while let next = current, next != ",", next != "]", next != "}", next != "\n", next != "#" {
                    advance()
                }
            }
        }
    }
}
