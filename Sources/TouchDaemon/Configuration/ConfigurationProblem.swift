/// One thing wrong with a configuration file, with where it is when that is known.
struct ConfigurationProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// An error makes the file unusable; a warning is printed and the file is used (touchd cannot know that the
    /// thing it warns about, such as a program not installed yet, will still be wrong when it matters).
    enum Severity: String, Hashable, Sendable {
        case error, warning
    }

    /// The dotted key path (`control[2].frame.width`, arrays of tables by index), when the
    /// problem belongs to a key.
    var keyPath: String?
    /// 1-based line and column in the file, when known.
    var line: Int?
    var column: Int?
    var severity: Severity
    var message: String

    init(keyPath: String? = nil, line: Int? = nil, column: Int? = nil, severity: Severity = .error, _ message: String) {
        self.keyPath = keyPath
        self.line = line
        self.column = column
        self.severity = severity
        self.message = message
    }

    /// The line `touchd check` prints: `PATH:LINE:COLUMN: error: KEY.PATH: MESSAGE` when the
    /// position is known (without `KEY.PATH: ` for a problem of the whole file, such as a syntax
    /// error), else `PATH: error: KEY.PATH: MESSAGE`; `warning` instead of `error` for a warning.
    ///
    /// `severity: false` leaves the severity out (`PATH:LINE:COLUMN: KEY.PATH: MESSAGE`), for a log line: the log
    /// handler says the level already (`warning: `, or the journal's priority), and once is enough.
    func formatted(path: String, severity showsSeverity: Bool = true) -> String {
        let label = showsSeverity ? "\(severity.rawValue): " : ""
        if let line {
            let keyPart = keyPath.map { "\($0): " } ?? ""
            return "\(path):\(line):\(column ?? 1): \(label)\(keyPart)\(message)"
        }
        if let keyPath {
            return "\(path): \(label)\(keyPath): \(message)"
        }
        return "\(path): \(label)\(message)"
    }

    var description: String { formatted(path: "<config>") }
}

/// Every problem found in a configuration file. Loading never stops at the first one.
struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    var path: String
    var problems: [ConfigurationProblem]
    /// Warnings found on the way (about the file's owner and mode, or the decoder's when only the file's
    /// permissions made the load fail).
    var warnings: [ConfigurationProblem] = []

    /// At most this many problem lines are printed or logged for one file: a hostile file can hold tens of thousands
    /// of problems, and the first ones are what a person fixes first.
    static let reportedLimit = 100

    /// One line per problem, in file order where positions are known.
    var lines: [String] { problems.map { $0.formatted(path: path) } }

    /// One line per warning.
    var warningLines: [String] { warnings.map { $0.formatted(path: path) } }

    /// One line per warning without the word `warning`, for the log (which says the level itself).
    var loggedWarningLines: [String] { warnings.map { $0.formatted(path: path, severity: false) } }

    /// What `touchd check` prints and `touchd ctl reload` shows: the first ``reportedLimit`` problem lines, then how
    /// many more there are.
    var reportedLines: [String] { reportedLines(severity: true) }

    /// ``reportedLines`` without the word `error`, for the log (which says the level itself).
    var loggedLines: [String] { reportedLines(severity: false) }

    private func reportedLines(severity: Bool) -> [String] {
        var result = problems.prefix(Self.reportedLimit).map { $0.formatted(path: path, severity: severity) }
        if problems.count > Self.reportedLimit {
            let label = severity ? "error: " : ""
            result.append("\(path): \(label)\(problems.count - Self.reportedLimit) more problems not shown")
        }
        return result
    }

    var description: String { lines.joined(separator: "\n") }
}

/// Collects the warnings of a decoding pass, positioned like its problems; they never make a load fail.
final class WarningLog {
    private(set) var warnings: [ConfigurationProblem] = []
    /// Where a key path is written in the file (the problems' locator); a closure, so that this log does not depend
    /// on how the parser finds positions.
    let position: (String) -> (line: Int, column: Int)?

    init(position: @escaping (String) -> (line: Int, column: Int)?) {
        self.position = position
    }

    /// Records a warning at `keyPath` (positioned where the key, or its nearest ancestor, is written).
    func report(_ keyPath: String, _ message: String) {
        let found = position(keyPath)
        warnings.append(
            ConfigurationProblem(
                keyPath: keyPath, line: found?.line, column: found?.column, severity: .warning, message))
    }
}
