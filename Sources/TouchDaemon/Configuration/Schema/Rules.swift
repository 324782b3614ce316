import TOML
import TouchModel

/// The rules keys are read by. Each reads through ``TableReader``, whose messages are what `touchd check` prints.
extension Rule where Value == Bool {
    static var boolean: Rule {
        Rule(type: "boolean", read: { $0.bool($1) }, show: { "`\($0)`" })
    }
}

extension Rule where Value == String {
    static var string: Rule {
        Rule(type: "string", read: { $0.string($1) }, show: quoted)
    }

    /// A string `problem` finds nothing wrong with; what it finds is the key's problem.
    static func string(allowed: String, problem: @escaping @Sendable (String) -> String?) -> Rule {
        Rule(
            type: "string", allowed: allowed,
            read: { table, key in
                guard let string = table.string(key) else { return nil }
                if let message = problem(string) {
                    table.report(key, message)
                    return nil
                }
                return string
            }, show: quoted)
    }

    /// One of `names`, in this order in the message that lists them.
    static func oneOf(_ names: [String]) -> Rule {
        Rule(
            type: "string", allowed: names.map(quoted).joined(separator: ", "), read: { $0.choice($1, names) },
            show: quoted)
    }
}

extension Rule where Value: RawRepresentable & CaseIterable & Sendable, Value.RawValue == String {
    /// One of the enumeration's raw values.
    static var choice: Rule {
        let names = Value.allCases.map(\.rawValue)
        return Rule(
            type: "string", allowed: names.map(quoted).joined(separator: ", "),
            read: { table, key in table.choice(key, names).flatMap(Value.init(rawValue:)) },
            show: { quoted($0.rawValue) })
    }
}

extension Rule where Value == Int {
    static func integer(_ range: ClosedRange<Int>, unit: String? = nil) -> Rule {
        Rule(
            type: "integer" + (unit.map { " (\($0))" } ?? ""), allowed: describe(range),
            read: { $0.integer($1, in: range) }, show: { "`\($0)`" })
    }

    /// A 16-bit USB id: an integer, or a string of hexadecimal digits with an optional `0x`.
    static var hexID: Rule {
        Rule(
            type: "integer or string",
            allowed: "integer 0…65535 (`0x222a` is a TOML hex integer); or a string of 1–4 hex digits (no sign) "
                + "with an optional `0x`/`0X`",
            read: { table, key in
                guard let string = table.value(key)?.string else { return table.integer(key, in: 0...0xFFFF) }
                let digits = string.hasPrefix("0x") || string.hasPrefix("0X") ? String(string.dropFirst(2)) : string
                if (1...4).contains(digits.count), digits.allSatisfy(\.isHexDigit),
                    let number = Int(digits, radix: 16)
                {
                    return number
                }
                table.report(key, "'\(string)' is not a 16-bit hexadecimal id (like \"0x222a\")")
                return nil
            })
    }
}

extension Rule where Value == Double {
    /// A finite number, integer or float.
    static func number(_ range: ClosedRange<Double>, unit: String? = nil) -> Rule {
        Rule(
            type: "number" + (unit.map { " (\($0))" } ?? ""), allowed: describe(range),
            read: { $0.number($1, in: range) }, show: { "`\(TableReader.format($0))`" })
    }
}

extension Rule where Value == UInt64 {
    /// An integer number of milliseconds, read as microseconds.
    static func milliseconds(_ range: ClosedRange<Int>) -> Rule {
        integer(range, unit: "ms", scale: 1_000)
    }

    /// An integer number of seconds, read as microseconds.
    static func seconds(_ range: ClosedRange<Int>) -> Rule {
        integer(range, unit: "s", scale: 1_000_000)
    }

    /// An integer in `range`, times `scale`.
    static func integer(_ range: ClosedRange<Int>, unit: String, scale: UInt64) -> Rule {
        Rule(
            type: "integer (\(unit))", allowed: describe(range),
            read: { table, key in table.integer(key, in: range).flatMap { scaled($0, by: scale) } },
            show: { "`\($0 / scale)`" })
    }

    /// A number of seconds, integer or float, read as whole microseconds.
    static func fractionalSeconds(_ range: ClosedRange<Int>) -> Rule {
        Rule(
            type: "number (s)", allowed: describe(range),
            read: { table, key in
                // Finite and in range: at most the bound × 10⁶, which a UInt64 holds exactly.
                table.number(key, in: Double(range.lowerBound)...Double(range.upperBound)).flatMap {
                    UInt64(exactly: ($0 * 1_000_000).rounded())
                }
            }, show: { "`\(TableReader.format(Double($0) / 1_000_000))`" })
    }

    /// `value × scale`, nil if that does not fit (a range too wide for its unit).
    static func scaled(_ value: Int, by scale: UInt64) -> UInt64? {
        guard let value = UInt64(exactly: value) else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: scale)
        return overflow ? nil : product
    }
}

extension Rule where Value == [String] {
    /// An array of at most `limit` strings.
    static func strings(limit: Int, allowed: String? = nil) -> Rule {
        Rule(
            type: "array of strings", allowed: allowed, read: { $0.strings($1, limit: limit) },
            show: { "`[\($0.map { "\"\($0)\"" }.joined(separator: ", "))]`" })
    }

    /// An array of at most `limit` strings, each of which `problem` finds nothing wrong with; what it finds is the
    /// element's problem, and the array is kept as written.
    static func strings(limit: Int, allowed: String, problem: @escaping @Sendable (String) -> String?) -> Rule {
        Rule(
            type: "array of strings", allowed: allowed,
            read: { table, key in
                let strings = table.strings(key, limit: limit)
                for (index, string) in (strings ?? []).enumerated() {
                    if let message = problem(string) { table.log.report("\(table.keyPath(key))[\(index)]", message) }
                }
                return strings
            })
    }
}

extension Rule where Value == TableReader {
    /// A table, written inline or as a `[header]`, whose keys `schema` declares.
    static func table(_ schema: TableSchema, type: String = "table") -> Rule {
        Rule(type: type, read: { $0.table($1, schema: schema) })
    }
}

extension Rule where Value == [TableReader] {
    /// An array of at most `limit` tables whose keys `schema` declares.
    static func tables(_ schema: TableSchema, limit: Int) -> Rule {
        Rule(
            type: "array of tables", allowed: "at most \(limit) entries",
            read: { $0.tables($1, limit: limit, schema: schema) })
    }
}

extension Rule where Value == TOMLValue {
    /// Any value: the decoder checks it, with what it knows of the entry.
    static func value(type: String, allowed: String? = nil) -> Rule {
        Rule(type: type, allowed: allowed, read: { $0.value($1) })
    }
}

extension Rule where Value == Configuration.Rotation {
    static var rotation: Rule {
        let allowed = Configuration.Rotation.allCases.map { String($0.rawValue) }.joined(separator: ", ")
        return Rule(
            type: "integer", allowed: "\(allowed) (degrees clockwise)",
            read: { table, key in
                // Any integer, so that -90 and 360 are answered with the allowed values, as 45 is.
                guard let degrees = table.integer(key, in: Int.min...Int.max) else { return nil }
                guard let rotation = Configuration.Rotation(rawValue: degrees) else {
                    table.report(key, "\(degrees) is not one of \(allowed)")
                    return nil
                }
                return rotation
            }, show: { "`\($0.rawValue)`" })
    }
}

extension Rule where Value == [Double] {
    /// libinput's 2×3 calibration matrix, row-major, with an inverse.
    static var calibration: Rule {
        Rule(
            type: "array of exactly 6 numbers", allowed: "each −10000…10000",
            read: { table, key in
                guard let array = table.value(key)?.array, array.count == 6 else {
                    table.report(key, "expected an array of 6 numbers (libinput's 2×3 matrix)")
                    return nil
                }
                let numbers = array.enumerated().compactMap { index, element in
                    TableReader.number(element, in: -1e4...1e4, at: "\(table.keyPath(key))[\(index)]", log: table.log)
                }
                guard numbers.count == 6 else { return nil }
                // touchd maps the application's touches back through it in filter mode: a matrix with no inverse
                // would send them nowhere.
                let determinant = numbers[0] * numbers[4] - numbers[1] * numbers[3]
                guard abs(determinant) > 1e-9 else {
                    table.report(
                        key,
                        "the matrix has no inverse (a·e − b·d is 0): it would map the whole panel onto a line or a "
                            + "point")
                    return nil
                }
                return numbers
            })
    }
}

extension Rule where Value == GestureRecognizer.Directions {
    /// At most four of `left`, `right`, `up`, `down`.
    static var directions: Rule {
        let names = GestureRecognizer.Directions.named.map(\.name)
        return Rule(
            type: "array of strings", allowed: "at most 4 of " + names.map(quoted).joined(separator: ", "),
            read: { table, key in
                guard let strings = table.strings(key, limit: names.count) else { return nil }
                var directions = GestureRecognizer.Directions()
                for (index, name) in strings.enumerated() {
                    if let direction = GestureRecognizer.Directions(name: name) {
                        directions.formUnion(direction)
                    } else {
                        table.log.report(
                            "\(table.keyPath(key))[\(index)]",
                            "'\(name)' is not one of \(names.joined(separator: ", "))")
                    }
                }
                return directions
            }, show: { $0 == .all ? "all four" : "`\($0.names)`" })
    }
}

// MARK: - Names

/// What an id (of a control, group, screen or gesture), a target name or an application event name may be.
let idRule = "letters, digits, '_' and '-', starting with a letter, at most 64 characters"
/// What an action name may be.
let actionRule = "letters, digits, '_', '-' and '.', starting with a letter, at most 128 characters"

func isValidID(_ id: String) -> Bool {
    guard let first = id.first, first.isASCII, first.isLetter, id.count <= ConfigurationLoader.Limits.idLength else {
        return false
    }
    return id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
}

func isValidAction(_ action: String) -> Bool {
    guard let first = action.first, first.isASCII, first.isLetter,
        action.count <= ConfigurationLoader.Limits.actionLength
    else { return false }
    return action.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
}

func isValidEnvironmentName(_ name: String) -> Bool {
    guard let first = name.first, first.isASCII, first.isLetter || first == "_" else { return false }
    return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
}

/// `1…32768`, `−1000…1000`: a range as the docs write it.
private func describe(_ range: ClosedRange<Int>) -> String {
    "\(signed(String(range.lowerBound)))…\(signed(String(range.upperBound)))"
}

private func describe(_ range: ClosedRange<Double>) -> String {
    "\(signed(TableReader.format(range.lowerBound)))…\(signed(TableReader.format(range.upperBound)))"
}

/// `` `"lift"` ``: a string value as the docs write it.
@Sendable private func quoted(_ string: String) -> String {
    "`\"\(string)\"`"
}

/// A minus sign, not a hyphen.
private func signed(_ number: String) -> String {
    number.hasPrefix("-") ? "−" + number.dropFirst() : number
}
