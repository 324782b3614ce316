import Foundation
import Synchronization

/// One datagram from the daemon on the notify socket: `KEY=VALUE` lines (sd_notify).
struct NotifyMessage: Sendable {
    /// The assignments in the order they were sent.
    let fields: [(key: String, value: String)]
    /// Non-empty lines without `=`, which sd_notify does not allow.
    let malformedLines: [String]
    /// When the reader thread received the datagram.
    let arrival: Microseconds

    init(datagram: String, arrival: Microseconds) {
        var fields: [(String, String)] = []
        var malformed: [String] = []
        for line in datagram.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let equals = line.firstIndex(of: "=") else {
                malformed.append(String(line))
                continue
            }
            fields.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
        }
        self.fields = fields
        self.malformedLines = malformed
        self.arrival = arrival
    }

    /// The last value sent for `key` in this datagram.
    func value(_ key: String) -> String? {
        fields.last { $0.key == key }?.value
    }

    /// The datagram as one line, for failure texts: `READY=1 STATUS=…`.
    var summary: String {
        (fields.map { "\($0.key)=\($0.value)" } + malformedLines).joined(separator: " ")
    }
}

/// One line from a socket-target connection: the JSON object the daemon writes per action.
///
/// The reader thread that stamps a line's arrival only stores it; the JSON is parsed the first time a field is read,
/// on the scenario's thread. So the stamping thread does what `Daemon`'s output reader does for `libinput
/// debug-events`' lines (read, stamp, split) and no more. In the one-vCPU guest a thread that parsed each message
/// (about 1.2 ms of a debug build's Foundation) had run more lately than the sender, so its wake-up did not preempt
/// the sender, as the pipe's reader's did: its stamp waited until touchd slept.
struct TargetMessage: Sendable {
    /// The line as it arrived.
    let raw: String
    /// When the reader thread read the bytes that completed the line.
    let arrival: Microseconds
    /// Which accepted connection it came on (1, 2, … in accept order).
    let connection: Int
    private let parsed: ParsedOnce

    static let requiredFields = ["action", "control", "event", "target", "time_us"]

    init(line: String, arrival: Microseconds, connection: Int) {
        raw = line
        self.arrival = arrival
        self.connection = connection
        parsed = ParsedOnce(line)
    }

    var action: String? { parsed.fields.action }
    var control: String? { parsed.fields.control }
    var event: String? { parsed.fields.event }
    var target: String? { parsed.fields.target }
    var timeMicroseconds: Microseconds? { parsed.fields.timeMicroseconds }
    var contact: Int? { parsed.fields.contact }
    var x: Double? { parsed.fields.x }
    var y: Double? { parsed.fields.y }
    var generation: Int? { parsed.fields.generation }
    var device: String? { parsed.fields.device }
    /// Why the line does not satisfy the contract (not JSON, not an object, a required field missing or of the
    /// wrong type); nil when it does.
    var problem: String? { parsed.fields.problem }

    /// A line's fields, parsed at most once whichever thread asks first.
    private final class ParsedOnce: Sendable {
        private let line: String
        private let cache = Mutex<Fields?>(nil)

        init(_ line: String) { self.line = line }

        var fields: Fields {
            cache.withLock { cache in
                if let fields = cache { return fields }
                let fields = Fields(line: line)
                cache = fields
                return fields
            }
        }
    }

    private struct Fields: Sendable {
        var action: String?
        var control: String?
        var event: String?
        var target: String?
        var timeMicroseconds: Microseconds?
        var contact: Int?
        var x: Double?
        var y: Double?
        var generation: Int?
        var device: String?
        var problem: String?

        init(line: String) {
            var problems: [String] = []
            var object: [String: Any] = [:]
            if let data = line.data(using: .utf8),
                let parsed = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            {
                if let dictionary = parsed as? [String: Any] {
                    object = dictionary
                } else {
                    problems.append("not a JSON object")
                }
            } else {
                problems.append("not valid JSON")
            }
            for key in TargetMessage.requiredFields where object[key] == nil && problems.isEmpty {
                problems.append("missing required field '\(key)'")
            }
            func string(_ key: String) -> String? {
                guard let value = object[key] else { return nil }
                if let text = value as? String { return text }
                if !(value is NSNull) { problems.append("'\(key)' is not a string") }
                return nil
            }
            func integer(_ key: String) -> Int? {
                guard let value = object[key] else { return nil }
                if let number = value as? NSNumber, !TargetMessage.isBoolean(number), let integer = value as? Int {
                    return integer
                }
                if !(value is NSNull) { problems.append("'\(key)' is not an integer") }
                return nil
            }
            func number(_ key: String) -> Double? {
                guard let value = object[key] else { return nil }
                if let number = value as? NSNumber, !TargetMessage.isBoolean(number) { return number.doubleValue }
                if !(value is NSNull) { problems.append("'\(key)' is not a number") }
                return nil
            }
            action = string("action")
            control = string("control")
            event = string("event")
            target = string("target")
            device = string("device")
            contact = integer("contact")
            generation = integer("generation")
            x = number("x")
            y = number("y")
            let time = integer("time_us")
            if let time, time < 0 { problems.append("'time_us' is negative") }
            timeMicroseconds = time.flatMap { $0 >= 0 ? Microseconds($0) : nil }
            problem = problems.isEmpty ? nil : problems.joined(separator: "; ")
        }
    }

    /// JSON `true` and `false` arrive as NSNumber too (of the private class `__NSCFBoolean` on Linux); they are
    /// not numbers here.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(describing: type(of: number)).contains("Boolean")
    }

    /// `a touchDown` for failure texts, or the raw line when it is malformed.
    var summary: String {
        if let problem { return "malformed line (\(problem)): \(raw)" }
        return "\(control ?? "?") \(event ?? "?")"
    }

    /// The fields a check compares, for failure texts.
    var details: String {
        var parts = ["control=\(control ?? "nil")", "event=\(event ?? "nil")", "action=\(action ?? "nil")"]
        parts.append("target=\(target ?? "nil")")
        parts.append("generation=\(generation.map(String.init) ?? "absent")")
        parts.append("contact=\(contact.map(String.init) ?? "absent")")
        return parts.joined(separator: " ")
    }
}

/// Splits a byte stream into lines. A line ends at `\n`; a partial line waits for the rest of its bytes.
struct LineBuffer {
    private var pending: [UInt8] = []

    /// Adds bytes and returns the lines they complete, without their `\n`.
    mutating func append(_ bytes: some Sequence<UInt8>) -> [String] {
        pending.append(contentsOf: bytes)
        var lines: [String] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
        return lines
    }

    /// What is left after the stream ended: a last line without `\n`, if any.
    mutating func finish() -> String? {
        defer { pending.removeAll() }
        return pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self)
    }
}

/// touchd's own measurement, logged once at SIGTERM:
/// `… processing latency … samples=N p50_us=A p99_us=B max_us=C` (key=value pairs in any order).
struct ProcessingLatencyLine: Sendable, Equatable {
    static let marker = "processing latency"

    let metadata: [String: String]
    let line: String

    /// Parses the metadata after the marker; nil when the line does not contain the marker.
    init?(_ line: String) {
        guard let range = line.range(of: Self.marker) else { return nil }
        self.line = line
        metadata = Self.pairs(in: line[range.upperBound...])
    }

    func figure(_ key: String) -> Int? { metadata[key].flatMap { Int($0) } }

    var samples: Int? { figure("samples") }
    var p50: Int? { figure("p50_us") }
    var p99: Int? { figure("p99_us") }
    var maximum: Int? { figure("max_us") }

    /// What is missing for the summary: nil when samples, p50, p99 and max are all integers and samples > 0.
    var problem: String? {
        let missing = ["samples", "p50_us", "p99_us", "max_us"].filter { figure($0) == nil }
        if !missing.isEmpty { return "no integer \(missing.joined(separator: ", ")) in: \(line)" }
        if samples == 0 { return "samples=0 after the taps: touchd measured nothing: \(line)" }
        return nil
    }

    /// `key=value` tokens separated by spaces; a value may be double-quoted with `\"` and `\\` escapes, as touchd's
    /// log handler writes values that contain spaces. Tokens without `=` (the rest of the message) are skipped.
    static func pairs(in text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            while index < text.endIndex, text[index] == " " { index = text.index(after: index) }
            var token = ""
            var value: String?
            while index < text.endIndex, text[index] != " " {
                let character = text[index]
                index = text.index(after: index)
                if character == "=", value == nil {
                    value = ""
                    if index < text.endIndex, text[index] == "\"" {
                        index = text.index(after: index)
                        while index < text.endIndex, text[index] != "\"" {
                            if text[index] == "\\", text.index(after: index) < text.endIndex {
                                index = text.index(after: index)
                            }
                            value!.append(text[index])
                            index = text.index(after: index)
                        }
                        if index < text.endIndex { index = text.index(after: index) }
                    }
                } else if value != nil {
                    value!.append(character)
                } else {
                    token.append(character)
                }
            }
            if let value, !token.isEmpty { result[token] = value }
        }
        return result
    }
}
