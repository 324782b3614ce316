/// One thing wrong with a configuration file, with where it is when that is known.
struct ConfigurationProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The dotted key path (`control[2].frame.width`, arrays of tables by index), when the
    /// problem belongs to a key.
    var keyPath: String?
    /// 1-based line and column in the file, when known.
    var line: Int?
    var column: Int?
    var message: String

    init(keyPath: String? = nil, line: Int? = nil, column: Int? = nil, _ message: String) {
        self.keyPath = keyPath
        self.line = line
        self.column = column
        self.message = message
    }

    /// The line `touchd check` prints: `PATH:LINE:COLUMN: error: KEY.PATH: MESSAGE` when the
    /// position is known (without `KEY.PATH: ` for a problem of the whole file, such as a syntax
    /// error), else `PATH: error: KEY.PATH: MESSAGE`.
    func formatted(path: String) -> String {
        if let line {
            let keyPart = keyPath.map { "\($0): " } ?? ""
            return "\(path):\(line):\(column ?? 1): error: \(keyPart)\(message)"
        }
        if let keyPath {
            return "\(path): error: \(keyPath): \(message)"
        }
        return "\(path): error: \(message)"
    }

    var description: String { formatted(path: "<config>") }
}

/// Every problem found in a configuration file. Loading never stops at the first one.
struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    var path: String
    var problems: [ConfigurationProblem]

    /// At most this many problem lines are printed or logged for one file: a hostile file can hold tens of thousands
    /// of problems, and the first ones are what a person fixes first.
    static let reportedLimit = 100

    /// One line per problem, in file order where positions are known.
    var lines: [String] { problems.map { $0.formatted(path: path) } }

    /// What `touchd check` prints and `touchd run` logs: the first ``reportedLimit`` problem lines, then how many
    /// more there are.
    var reportedLines: [String] {
        var result = problems.prefix(Self.reportedLimit).map { $0.formatted(path: path) }
        if problems.count > Self.reportedLimit {
            result.append("\(path): error: \(problems.count - Self.reportedLimit) more problems not shown")
        }
        return result
    }

    var description: String { lines.joined(separator: "\n") }
}
