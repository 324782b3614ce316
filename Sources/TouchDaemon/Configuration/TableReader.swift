import TOML

/// Collects problems with their positions while a configuration is decoded.
final class ProblemLog {
    private(set) var problems: [ConfigurationProblem] = []
    /// The parsed document, which knows where each key and array element was written.
    let root: TOMLTable

    init(root: TOMLTable) {
        self.root = root
    }

    /// Where `keyPath` (or its nearest ancestor) is written.
    func position(of keyPath: String) -> TOMLPosition? {
        root.position(ofPath: keyPath)
    }

    /// Records a problem at `keyPath` (positioned where the key, or its nearest ancestor, is written).
    func report(_ keyPath: String, _ message: String) {
        let position = position(of: keyPath)
        // The root table has the empty path; a problem about it has no key path to show.
        problems.append(
            ConfigurationProblem(
                keyPath: keyPath.isEmpty ? nil : keyPath, line: position?.line, column: position?.column, message))
    }

    /// The problems in file order; problems without a position last, in the order found.
    var sorted: [ConfigurationProblem] {
        problems.enumerated().sorted { lhs, rhs in
            switch (lhs.element.line, rhs.element.line) {
            case (let left?, let right?):
                (left, lhs.element.column ?? 0, lhs.offset) < (right, rhs.element.column ?? 0, rhs.offset)
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): lhs.offset < rhs.offset
            }
        }.map(\.element)
    }
}

/// Reads one TOML table strictly: every key must be one its ``TableSchema`` declares (others are unknown keys, with
/// a suggestion when one is close), every value must have the expected type and range.
final class TableReader {
    let table: TOMLTable
    /// The dotted path of this table (`control[2]`, `targets.kiosk`, `` for the root).
    let path: String
    let log: ProblemLog
    /// The keys this table may hold; nil, or a schema of ``AnyNameKey``: the keys the decoder reads.
    let schema: TableSchema?
    /// The kind of entry this table declares (`swipe`, `slider`, `exec`), once the decoder knows it: a key of the
    /// schema that belongs to other kinds only is then refused. Nil while the kind is unknown (or invalid, which is
    /// its own problem): every key of the schema is accepted.
    var kind: String?
    private var known: Set<String> = []

    init(_ table: TOMLTable, path: String, log: ProblemLog, schema: TableSchema? = nil) {
        self.table = table
        self.path = path
        self.log = log
        self.schema = schema
    }

    func keyPath(_ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// Reports a problem about `key` of this table.
    func report(_ key: String, _ message: String) {
        log.report(keyPath(key), message)
    }

    /// Reports a problem about this table as a whole.
    func reportTable(_ message: String) {
        log.report(path, message)
    }

    func contains(_ key: String) -> Bool {
        known.insert(key)
        return table.contains(key: key)
    }

    /// The raw value, marking the key as known.
    func value(_ key: String) -> TOMLValue? {
        known.insert(key)
        return table[key]
    }

    func string(_ key: String, required: Bool = false) -> String? {
        guard let value = value(key) else {
            if required { reportTable("missing required key '\(key)'") }
            return nil
        }
        guard let string = value.string else {
            report(key, "expected a string, found \(TableReader.describe(value))")
            return nil
        }
        return string
    }

    func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let bool = value.boolean else {
            report(key, "expected true or false, found \(TableReader.describe(value))")
            return nil
        }
        return bool
    }

    /// An integer within `range`.
    func integer(_ key: String, in range: ClosedRange<Int>, required: Bool = false) -> Int? {
        guard let value = value(key) else {
            if required { reportTable("missing required key '\(key)'") }
            return nil
        }
        guard let integer = value.integer.flatMap({ Int(exactly: $0) }) else {
            report(key, "expected an integer, found \(TableReader.describe(value))")
            return nil
        }
        guard range.contains(integer) else {
            report(key, "\(integer) is out of range \(range.lowerBound)…\(range.upperBound)")
            return nil
        }
        return integer
    }

    /// A finite number (integer or float) within `range`.
    func number(_ key: String, in range: ClosedRange<Double>, required: Bool = false) -> Double? {
        guard let value = value(key) else {
            if required { reportTable("missing required key '\(key)'") }
            return nil
        }
        return TableReader.number(value, in: range, at: keyPath(key), log: log)
    }

    static func number(
        _ value: TOMLValue, in range: ClosedRange<Double>, at keyPath: String, log: ProblemLog
    ) -> Double? {
        let number: Double
        switch value {
        case .integer(let integer):
            number = Double(integer)
        case .float(let double):
            guard double.isFinite else {
                log.report(keyPath, "\(double) is not a finite number")
                return nil
            }
            number = double
        default:
            log.report(keyPath, "expected a number, found \(describe(value))")
            return nil
        }
        guard range.contains(number) else {
            log.report(
                keyPath, "\(format(number)) is out of range \(format(range.lowerBound))…\(format(range.upperBound))")
            return nil
        }
        return number
    }

    /// One of `choices`.
    func choice(_ key: String, _ choices: [String]) -> String? {
        guard let string = string(key) else { return nil }
        guard choices.contains(string) else {
            report(key, "'\(string)' is not one of \(choices.map { "'\($0)'" }.joined(separator: ", "))")
            return nil
        }
        return string
    }

    /// An array of strings with at most `limit` elements.
    func strings(_ key: String, limit: Int, required: Bool = false) -> [String]? {
        guard let value = value(key) else {
            if required { reportTable("missing required key '\(key)'") }
            return nil
        }
        guard let array = value.array else {
            report(key, "expected an array of strings, found \(TableReader.describe(value))")
            return nil
        }
        guard array.count <= limit else {
            report(key, "\(array.count) entries; at most \(limit) are allowed")
            return nil
        }
        var result: [String] = []
        for (index, element) in array.enumerated() {
            guard let string = element.string else {
                log.report("\(keyPath(key))[\(index)]", "expected a string, found \(TableReader.describe(element))")
                return nil
            }
            result.append(string)
        }
        return result
    }

    /// A sub-table (a `[header]` table or an inline table) whose keys `schema` declares.
    func table(_ key: String, schema: TableSchema? = nil) -> TableReader? {
        guard let value = value(key) else { return nil }
        guard let table = value.table else {
            report(key, "expected a table, found \(TableReader.describe(value))")
            return nil
        }
        return TableReader(table, path: keyPath(key), log: log, schema: schema)
    }

    /// An array of tables (`[[key]]` or an array of inline tables) with at most `limit` elements, whose keys `schema`
    /// declares.
    func tables(_ key: String, limit: Int, schema: TableSchema? = nil) -> [TableReader] {
        guard let value = value(key) else { return [] }
        guard let array = value.array else {
            report(key, "expected an array of tables, found \(TableReader.describe(value))")
            return []
        }
        guard array.count <= limit else {
            report(key, "\(array.count) entries; at most \(limit) are allowed")
            return []
        }
        var result: [TableReader] = []
        for (index, element) in array.enumerated() {
            let elementPath = "\(keyPath(key))[\(index)]"
            guard let table = element.table else {
                log.report(elementPath, "expected a table, found \(TableReader.describe(element))")
                continue
            }
            result.append(TableReader(table, path: elementPath, log: log, schema: schema))
        }
        return result
    }

    /// Reports every key the schema does not declare (with the closest it does, if one is close), and every key of
    /// another kind of entry; without a schema, every key that was never read.
    func finish() {
        guard let schema, !schema.anyName else {
            for key in table.keys.sorted() where !known.contains(key) {
                report(key, "unknown key '\(key)'\(didYouMean(key, in: known.sorted()))")
            }
            return
        }
        for key in table.keys.sorted() {
            if let descriptor = schema.descriptor(key) {
                guard let kind, let kinds = descriptor.kinds, !kinds.contains(kind) else { continue }
                report(
                    key,
                    schema.otherKind?(key, kind)
                        ?? "unknown key '\(key)'\(didYouMean(key, in: schema.names(for: kind)))")
            } else {
                report(key, "unknown key '\(key)'\(didYouMean(key, in: schema.names(for: kind)))")
            }
        }
    }

    static func describe(_ value: TOMLValue) -> String {
        switch value.kind {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        case .array: "an array"
        case .table: "a table"
        case .dateTime: "a date or time"
        }
    }

    static func format(_ number: Double) -> String {
        if number == number.rounded(), abs(number) < 1e15 {
            return String(Int64(number))
        }
        return "\(number)"
    }
}

/// The candidate closest to `word` by edit distance, when it is close enough to be a likely typo.
func closest(to word: String, in candidates: some Sequence<String>) -> String? {
    suggestions(for: word, in: candidates).first
}

/// The candidates close enough to `word` to be what was meant, closest first (ties in the candidates' order): those
/// within an edit distance of a third of the shorter word (at least 1), else the only one that `word` (three
/// characters or more besides leading dashes) begins, as `--prom` for `--prometheus`. The one did-you-mean of touchd: configuration keys
/// and names, script verbs, `touchd` verbs and options.
func suggestions(for word: String, in candidates: some Sequence<String>) -> [String] {
    var close: [(name: String, distance: Int)] = []
    var prefixed: [String] = []
    for candidate in candidates where candidate != word {
        let distance = editDistance(word, candidate)
        if distance <= Swift.max(1, Swift.min(word.count, candidate.count) / 3) {
            close.append((candidate, distance))
        } else if word.drop(while: { $0 == "-" }).count >= 3, candidate.hasPrefix(word) {
            prefixed.append(candidate)
        }
    }
    if !close.isEmpty {
        // A stable sort: equally close candidates keep their order.
        return close.enumerated().sorted { ($0.element.distance, $0.offset) < ($1.element.distance, $1.offset) }
            .map(\.element.name)
    }
    return prefixed.count == 1 ? prefixed : []
}

/// ` (did you mean 'stats' or 'state'?)` for the first `limit` of ``suggestions(for:in:)``; empty when there is none.
func didYouMean(_ word: String, in candidates: some Sequence<String>, limit: Int = 1) -> String {
    let names = suggestions(for: word, in: candidates).prefix(limit).map { "'\($0)'" }
    return names.isEmpty ? "" : " (did you mean \(names.joined(separator: " or "))?)"
}

/// Edit distance (optimal string alignment: Levenshtein with a swap of two neighbours as one edit, so that `mvoe` is
/// one edit from `move`).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var beforePrevious = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            current[j] = Swift.min(
                previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                current[j] = Swift.min(current[j], beforePrevious[j - 2] + 1)
            }
        }
        (beforePrevious, previous, current) = (previous, current, beforePrevious)
    }
    return previous[b.count]
}
