import TOML

/// The smallest textual edit of a configuration file that gives one `[[device]]` entry a `calibration`: every other
/// byte (comments, blank lines, key order, line endings) stays as it was. Pure: text in, text out.
///
/// - the entry has a `calibration` key: the key and its value (`calibration = [ … ]`, over several lines too) are
///   replaced by the new line; what follows the value on its last line (a comment) stays;
/// - the entry has none: the line is inserted right after the entry's `[[device]]` header line;
/// - no entry matches the panel: a new `[[device]]` entry is appended at the end of the file.
enum CalibrationEdit {
    struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        var description: String
    }

    /// What the edit did, for the terminal: `replaced the calibration of device[1] (line 12)`.
    struct Outcome: Hashable, Sendable {
        var text: String
        var summary: String
        /// The 1-based line the calibration is on in the new text.
        var line: Int
    }

    /// Gives `device[index]` (nil: a new entry with `matchers`, each a whole `key = value` line) the calibration
    /// line `line` (`calibration = [ … ]`).
    static func apply(to text: String, device index: Int?, matchers: [String], line: String)
        -> Result<Outcome, Failure>
    {
        let root: TOMLTable
        do {
            root = try TOMLParser.parse(text)
        } catch {
            return .failure(Failure(description: "the file is not valid TOML: \(error)"))
        }
        let scalars = Array(text.unicodeScalars)
        // "\r\n" is one Character: a file with Windows line endings gets them in the new lines too.
        let newline = text.contains("\r\n") ? "\r\n" : "\n"
        let entries = root["device"]
        if entries != nil, entries?.array?.isArrayOfTables != true {
            return .failure(
                Failure(
                    description: "device is not written as [[device]] tables (line "
                        + "\(root.position(of: "device")?.line ?? 0)); add the calibration line to the entry by hand"))
        }
        guard let index else {
            // A new entry at the end, after a blank line.
            var prefix = text
            if !prefix.isEmpty, !prefix.hasSuffix("\n") { prefix += newline }
            let block = (["[[device]]"] + matchers + [line]).joined(separator: newline) + newline
            let separator = prefix.isEmpty ? "" : newline
            let headerLine = lineCount(of: prefix + separator)
            return .success(
                Outcome(
                    text: prefix + separator + block,
                    summary: "added a [[device]] entry for the panel (line \(headerLine))",
                    line: headerLine + matchers.count + 1))
        }
        guard let array = entries?.array, array.indices.contains(index), let table = array[index].table else {
            return .failure(Failure(description: "the file has no device[\(index)] entry (it changed meanwhile?)"))
        }
        let starts = lineStarts(scalars)
        func offset(_ position: TOMLPosition) -> Int? {
            guard position.line >= 1, position.line <= starts.count else { return nil }
            var result = starts[position.line - 1] + position.column - 1
            // A byte order mark at the start takes no column.
            if position.line == 1, scalars.first == "\u{FEFF}" { result += 1 }
            return result <= scalars.count ? result : nil
        }
        if table.contains(key: "calibration") {
            guard let position = table.position(of: "calibration"), let start = offset(position),
                let end = valueEnd(scalars, keyStart: start)
            else {
                return .failure(
                    Failure(description: "cannot find where device[\(index)].calibration ends; edit it by hand"))
            }
            var result = String.UnicodeScalarView()
            result.append(contentsOf: scalars[..<start])
            result.append(contentsOf: line.unicodeScalars)
            result.append(contentsOf: scalars[end...])
            return .success(
                Outcome(
                    text: String(result),
                    summary: "replaced the calibration of device[\(index)] (line \(position.line))",
                    line: position.line))
        }
        guard let header = array.positions.indices.contains(index) ? array.positions[index] : nil,
            let start = offset(header)
        else { return .failure(Failure(description: "cannot find the header of device[\(index)]")) }
        // After the header's line (its comment included).
        var cut = start
        while cut < scalars.count, scalars[cut] != "\n" { cut += 1 }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[..<cut])
        if cut < scalars.count {
            result.append(contentsOf: scalars[cut...cut])
            result.append(contentsOf: (line + newline).unicodeScalars)
            result.append(contentsOf: scalars[(cut + 1)...])
        } else {
            result.append(contentsOf: (newline + line + newline).unicodeScalars)
        }
        return .success(
            Outcome(
                text: String(result),
                summary: "added a calibration to device[\(index)] (line \(header.line + 1), after its header)",
                line: header.line + 1))
    }

    private static func lineStarts(_ scalars: [Unicode.Scalar]) -> [Int] {
        var starts = [0]
        for (index, scalar) in scalars.enumerated() where scalar == "\n" { starts.append(index + 1) }
        return starts
    }

    private static func lineCount(of text: String) -> Int {
        text.unicodeScalars.reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    /// Where the value of the key written at `keyStart` ends (just past its closing `]`): the key, `=`, then an
    /// array, over several lines if need be, with comments and strings inside skipped. Nil when it is not an array.
    static func valueEnd(_ scalars: [Unicode.Scalar], keyStart: Int) -> Int? {
        var index = keyStart
        // The key, bare or quoted.
        var quote: Unicode.Scalar? = nil
        while index < scalars.count {
            let scalar = scalars[index]
            if let open = quote {
                if scalar == "\\", open == "\"" {
                    index += 1
                } else if scalar == open {
                    quote = nil
                }
            } else if scalar == "\"" || scalar == "'" {
                quote = scalar
            } else if scalar == "=" {
                break
            } else if scalar == "\n" {
                return nil
            }
            index += 1
        }
        guard index < scalars.count else { return nil }
        index += 1
        while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
        guard index < scalars.count, scalars[index] == "[" else { return nil }
        var depth = 0
        quote = nil
        while index < scalars.count {
            let scalar = scalars[index]
            if let open = quote {
                if scalar == "\\", open == "\"" {
                    index += 1
                } else if scalar == open {
                    quote = nil
                }
            } else if scalar == "\"" || scalar == "'" {
                quote = scalar
            } else if scalar == "#" {
                while index < scalars.count, scalars[index] != "\n" { index += 1 }
                continue
            } else if scalar == "[" {
                depth += 1
            } else if scalar == "]" {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
            index += 1
        }
        return nil
    }
}
