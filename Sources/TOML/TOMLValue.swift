/// A position in a TOML text: 1-based line and column, columns counted in Unicode scalars (as TOML
/// parsers count them), a byte order mark at the start taking no column.
public struct TOMLPosition: Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

/// Why a text is not a TOML document this parser accepts, and where.
public struct TOMLError: Error, Hashable, Sendable, CustomStringConvertible {
    public var position: TOMLPosition
    public var message: String

    public init(_ position: TOMLPosition, _ message: String) {
        self.position = position
        self.message = message
    }

    public var description: String { "\(position): \(message)" }
}

/// One TOML value. Tables and arrays are reference types so that the parser can fill them in place
/// (no copy of a growing array or dictionary per key); nothing changes them once parsing is done.
public enum TOMLValue {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    /// An offset or local date-time, a local date or a local time, as written (validated).
    case dateTime(String)
    case array(TOMLArray)
    case table(TOMLTable)

    /// The kinds of value, for messages such as "expected a string, found an integer".
    public enum Kind: Hashable, Sendable, CaseIterable {
        case string, integer, float, boolean, dateTime, array, table
    }

    public var kind: Kind {
        switch self {
        case .string: .string
        case .integer: .integer
        case .float: .float
        case .boolean: .boolean
        case .dateTime: .dateTime
        case .array: .array
        case .table: .table
        }
    }

    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The value of an integer (not of a float).
    public var integer: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The value of a float (not of an integer).
    public var float: Double? {
        if case .float(let value) = self { value } else { nil }
    }

    public var boolean: Bool? {
        if case .boolean(let value) = self { value } else { nil }
    }

    public var array: TOMLArray? {
        if case .array(let value) = self { value } else { nil }
    }

    public var table: TOMLTable? {
        if case .table(let value) = self { value } else { nil }
    }
}

/// A TOML array: a static array (`[1, 2]`) or an array of tables (`[[name]]`), with the position of
/// each element.
public final class TOMLArray: RandomAccessCollection {
    public private(set) var elements: [TOMLValue] = []
    /// Where each element starts (for an array of tables, its `[[` header).
    public private(set) var positions: [TOMLPosition] = []
    /// Whether `[[name]]` headers made it (and may append to it).
    public let isArrayOfTables: Bool

    init(isArrayOfTables: Bool) {
        self.isArrayOfTables = isArrayOfTables
    }

    func append(_ value: TOMLValue, at position: TOMLPosition) {
        elements.append(value)
        positions.append(position)
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(index: Int) -> TOMLValue { elements[index] }
}

/// A TOML table: keys in the order they were written, each with its value and where its key was
/// first written (for a table made by a header, the header's `[`).
public final class TOMLTable {
    /// How the table came to be, which decides what may still add keys to it (TOML 1.0).
    enum Origin {
        /// Made on the way to a header's table (`a` in `[a.b]`): a later `[a]` may still define it.
        case implicit
        /// Defined by its own `[header]` or `[[header]]`.
        case header
        /// Made by a dotted key (`a.b = 1` makes `a`): only more dotted keys of the same section extend it.
        case dotted
        /// An inline table: complete once written.
        case inline
    }

    struct Entry {
        var value: TOMLValue
        var position: TOMLPosition
    }

    public private(set) var keys: [String] = []
    private(set) var entries: [String: Entry] = [:]
    var origin: Origin
    /// Tables and arrays between the root and this table.
    let depth: Int

    init(origin: Origin, depth: Int) {
        self.origin = origin
        self.depth = depth
    }

    public var count: Int { keys.count }

    public func contains(key: String) -> Bool { entries[key] != nil }

    public subscript(key: String) -> TOMLValue? { entries[key]?.value }

    /// Where `key` was first written.
    public func position(of key: String) -> TOMLPosition? { entries[key]?.position }

    func insert(_ value: TOMLValue, for key: String, at position: TOMLPosition) {
        keys.append(key)
        entries[key] = Entry(value: value, position: position)
    }

    /// The position of a key path as the configuration decoder writes them (`control[2].frame.width`,
    /// `targets.kiosk.exec[0]`: keys joined by dots, array elements as `[N]`), or of its nearest ancestor
    /// that exists; nil when not even the first key exists. Keys that hold dots or brackets themselves
    /// are matched too: at each table the shortest key that fits the path is taken.
    public func position(ofPath path: String) -> TOMLPosition? {
        var scalars = Substring(path)
        var table: TOMLTable? = self
        var array: TOMLArray? = nil
        var found: TOMLPosition? = nil
        while !scalars.isEmpty {
            if let current = array {
                // "[N]" then the rest.
                guard scalars.first == "[", let close = scalars.firstIndex(of: "]"),
                    let index = Int(scalars[scalars.index(after: scalars.startIndex)..<close]),
                    current.indices.contains(index)
                else { return found }
                found = current.positions[index]
                scalars = scalars[scalars.index(after: close)...]
                if scalars.first == "." { scalars = scalars.dropFirst() }
                (table, array) = (current[index].table, current[index].array)
                continue
            }
            guard let current = table else { return found }
            var matched: Entry? = nil
            var end = scalars.startIndex
            while true {
                end = scalars[end...].firstIndex(where: { $0 == "." || $0 == "[" }) ?? scalars.endIndex
                if let entry = current.entries[String(scalars[..<end])] {
                    matched = entry
                    break
                }
                if end == scalars.endIndex { return found }
                end = scalars.index(after: end)
            }
            guard let entry = matched else { return found }
            found = entry.position
            scalars = scalars[end...]
            if scalars.first == "." { scalars = scalars.dropFirst() }
            (table, array) = (entry.value.table, entry.value.array)
        }
        return found
    }
}
