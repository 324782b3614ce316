/// Builds one JSON object with its keys in the order they are added (so simulate's lines and socket messages put
/// their documented fields first), for JSON Lines output.
struct JSONLine {
    private var text = "{"

    init() {}

    mutating func add(_ key: String, _ value: String?) {
        separate(key)
        if let value { JSONLine.appendString(value, to: &text) } else { text += "null" }
    }

    mutating func add(_ key: String, _ value: Int) {
        separate(key)
        text += String(value)
    }

    mutating func add(_ key: String, _ value: Bool) {
        separate(key)
        text += value ? "true" : "false"
    }

    /// A finite number, printed without a fraction when it is whole; null otherwise.
    mutating func add(_ key: String, _ value: Double) {
        separate(key)
        JSONLine.appendNumber(value, to: &text)
    }

    /// Microseconds as milliseconds: whole when exact, else with three decimals.
    mutating func add(_ key: String, milliseconds microseconds: UInt64) {
        separate(key)
        text += String(microseconds / 1000)
        if microseconds % 1000 != 0 {
            let fraction = String(microseconds % 1000)
            text += "." + String(repeating: "0", count: 3 - fraction.count) + fraction
        }
    }

    /// A member whose value is already JSON text (an object or an array built elsewhere).
    mutating func add(_ key: String, json: String) {
        separate(key)
        text += json
    }

    /// An array of strings.
    mutating func add(_ key: String, strings: [String]) {
        separate(key)
        text += JSONLine.array(
            strings.map { value in
                var item = ""
                JSONLine.appendString(value, to: &item)
                return item
            })
    }

    var line: String { text + "}" }

    /// The members added so far without the braces, for messages that others complete.
    var members: String { String(text.dropFirst()) }

    /// A JSON array of values that are already JSON text.
    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    private mutating func separate(_ key: String) {
        if text.count > 1 { text += "," }
        JSONLine.appendString(key, to: &text)
        text += ":"
    }

    static func appendNumber(_ value: Double, to text: inout String) {
        guard value.isFinite else {
            text += "null"
            return
        }
        if value == value.rounded(), abs(value) < 1e15 {
            text += String(Int64(value))
        } else {
            text += "\(value)"
        }
    }

    static func appendString(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
