import TouchModel

/// The touch script format (README, "Trying a layout without hardware"): one sample per line, `TIME_MS down|move|up|cancel CONTACT [X Y]`, in output
/// pixels, or `TIME_MS screen ID` to switch the active screen (as the control socket's `screen` verb does); `#` starts
/// a comment; blank lines are ignored. Consecutive samples with the same time form one frame; a screen line ends the
/// frame before it. Times must not go backwards.
enum TouchScript {
    /// A line that cannot be played (an error) or that plays but is suspicious (a warning), at its line and column.
    struct Problem: Error, Hashable, Sendable {
        var line: Int
        /// 1-based, in Unicode code points, at the field the message is about.
        var column: Int = 1
        var message: String

        /// `INPUT:LINE:COLUMN: error: MESSAGE`, as `check` prints a configuration's problems.
        func formatted(input: String, severity: ConfigurationProblem.Severity = .error) -> String {
            "\(input):\(line):\(column): \(severity.rawValue): \(message)"
        }
    }

    /// One thing a script does.
    enum Step: Hashable, Sendable {
        /// Samples at one time, in output pixels.
        case frame(Frame)
        /// `TIME_MS screen ID`: the screen `ID` becomes the active one.
        case screen(String, at: Instant)
    }

    /// What a whole script is checked against besides its own syntax: the configuration's screens (a screen line
    /// must name one) and its output (a touch outside it is a warning).
    struct Context: Sendable {
        var screens: [String]
        var outputWidth: Double
        var outputHeight: Double

        init(screens: [String], outputWidth: Double, outputHeight: Double) {
            self.screens = screens
            self.outputWidth = outputWidth
            self.outputHeight = outputHeight
        }

        init(_ configuration: Configuration) {
            self.init(
                screens: configuration.screens.map(\.id), outputWidth: configuration.output.width,
                outputHeight: configuration.output.height)
        }
    }

    /// Every problem and warning of a script.
    struct Report: Hashable, Sendable {
        /// The first ``TouchScript/reportedLimit`` problems.
        var problems: [Problem] = []
        /// How many problems there were beyond those.
        var problemsNotShown = 0
        /// The first ``TouchScript/reportedLimit`` warnings.
        var warnings: [Problem] = []
    }

    /// The largest time a script may use (about 11.5 days), so conversions never overflow.
    static let maximumTime: UInt64 = 1_000_000_000
    /// The largest contact number.
    static let maximumContact = 1_000_000
    /// The longest field quoted in a message; a longer one is cut, so that a hostile line cannot make a huge message.
    static let maximumQuotedField = 40
    /// At most this many problems are kept (as `check` prints at most 100); the report says how many more there were.
    static let reportedLimit = 100

    /// The script's frames (screen lines are left out: ``steps(_:)`` keeps them), or its first problem.
    static func parse(_ text: String) -> Result<[Frame], Problem> {
        steps(text).map { steps in
            steps.compactMap { step in
                if case .frame(let frame) = step { frame } else { nil }
            }
        }
    }

    /// The script's steps, or its first problem.
    static func steps(_ text: String) -> Result<[Step], Problem> {
        var steps: [Step] = []
        if let problem = forEachStep(text, { steps.append($0) }) { return .failure(problem) }
        return .success(steps)
    }

    /// Checks the whole script without keeping its frames: the first problem, or nil.
    static func problem(in text: String) -> Problem? {
        forEachStep(text) { _ in }
    }

    /// Checks the whole script against `context`: every problem (the first ``reportedLimit``) and every warning, so that
    /// one run shows all that is wrong, as `check` does for a configuration.
    static func check(_ text: String, context: Context?) -> Report {
        var report = Report()
        scan(text, context: context) { _ in
        } problem: { problem, isWarning in
            if isWarning {
                if report.warnings.count < reportedLimit { report.warnings.append(problem) }
            } else if report.problems.count < reportedLimit {
                report.problems.append(problem)
            } else {
                report.problemsNotShown += 1
            }
            return true
        }
        return report
    }

    /// Hands each step to `body` as soon as it is complete (the next line has a later time or is a screen line, or the
    /// text ends), so that a long script is played without holding its frames; returns the first problem, after the
    /// steps before it were handed over. Check with ``check(_:context:)`` first to refuse a bad script
    /// before playing any of it.
    @discardableResult
    static func forEachStep(_ text: String, _ body: (Step) -> Void) -> Problem? {
        var first: Problem?
        scan(text, context: nil, body) { problem, isWarning in
            if isWarning { return true }
            first = problem
            return false
        }
        return first
    }

    /// The one pass over the text: steps to `body`, problems to `problem` (which says whether to go on).
    private static func scan(
        _ text: String, context: Context?, _ body: (Step) -> Void,
        problem report: (Problem, _ isWarning: Bool) -> Bool
    ) {
        var current: Frame?
        var lastTime: UInt64 = 0
        var stopped = false
        var text = text
        text.withUTF8 { bytes in
            var line = 0
            var start = 0
            while start < bytes.count || (start == bytes.count && line == 0) {
                line += 1
                var end = start
                // Lines end at "\n" only; a "\r" before it (CRLF) or anywhere else counts as a blank, below.
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                defer { start = end + 1 }
                let parsed = parseLine(
                    UnsafeBufferPointer(rebasing: bytes[start..<end]), line: line, after: lastTime, context: context)
                for warning in parsed.warnings where !report(warning, true) {
                    stopped = true
                    return
                }
                if let time = parsed.time, time >= lastTime { lastTime = time }
                switch parsed.result {
                case .failure(let problem):
                    if !report(problem, false) {
                        stopped = true
                        return
                    }
                case .success(nil):
                    continue
                case .success(.sample(let time, let sample)?):
                    if current != nil, current?.time == .milliseconds(time) {
                        current?.samples.append(sample)
                    } else {
                        if let complete = current { body(.frame(complete)) }
                        current = Frame(time: .milliseconds(time), samples: [sample])
                    }
                case .success(.screen(let time, let screen)?):
                    if let complete = current { body(.frame(complete)) }
                    current = nil
                    body(.screen(screen, at: .milliseconds(time)))
                }
            }
        }
        if !stopped, let last = current { body(.frame(last)) }
    }

    private enum Line {
        case sample(UInt64, ContactSample)
        case screen(UInt64, String)
    }

    /// One line (without its "\n"): its sample or screen switch (nil for a blank or comment line) or its problem, its
    /// time when that field is valid (later lines are checked against it), and its warnings.
    private static func parseLine(
        _ bytes: UnsafeBufferPointer<UInt8>, line: Int, after lastTime: UInt64, context: Context?
    ) -> (result: Result<Line?, Problem>, time: UInt64?, warnings: [Problem]) {
        // The fields before a '#': at most six are looked at (the sixth only to be named in a message), each with the
        // column where it starts.
        var fields: [String] = []
        var columns: [Int] = []
        var index = 0
        var column = 1
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }
        /// A byte that starts a code point (not a UTF-8 continuation byte) moves the column on.
        func advance(_ byte: UInt8) { if byte & 0xC0 != 0x80 { column += 1 } }
        while index < bytes.count, bytes[index] != UInt8(ascii: "#"), fields.count < 6 {
            if isBlank(bytes[index]) {
                advance(bytes[index])
                index += 1
                continue
            }
            let fieldStart = index
            columns.append(column)
            while index < bytes.count, !isBlank(bytes[index]), bytes[index] != UInt8(ascii: "#") {
                advance(bytes[index])
                index += 1
            }
            fields.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[fieldStart..<index]), as: UTF8.self))
        }
        if fields.isEmpty { return (.success(nil), nil, []) }
        /// The column of field `field`, or just after the last one when the line has fewer.
        func columnOf(_ field: Int) -> Int { field < columns.count ? columns[field] : column }
        func fail(_ field: Int, _ message: String, time: UInt64? = nil) -> (Result<Line?, Problem>, UInt64?, [Problem])
        {
            (.failure(Problem(line: line, column: columnOf(field), message: message)), time, [])
        }
        guard fields.count >= 3 else {
            return fail(fields.count, "expected TIME_MS down|move|up|cancel CONTACT [X Y], or TIME_MS screen ID")
        }
        guard let time = UInt64(fields[0]), time <= maximumTime else {
            return fail(0, "'\(quoted(fields[0]))' is not a time in milliseconds (0…\(maximumTime))")
        }
        guard time >= lastTime else {
            return fail(0, "time \(time) ms is earlier than the previous line's \(lastTime) ms")
        }
        if fields[1] == "screen" {
            guard fields.count == 3 else {
                return fail(3, "unexpected field '\(quoted(fields[3]))' after the screen id")
            }
            if let context, !context.screens.contains(fields[2]) {
                let message =
                    context.screens.isEmpty
                    ? "no screen called '\(quoted(fields[2]))': the configuration has no [[screen]]"
                    : Engine.unknown("screen", quoted(fields[2]), among: context.screens)
                return fail(2, message, time: time)
            }
            return (.success(.screen(time, fields[2])), time, [])
        }
        let phase: ContactSample.Phase
        switch fields[1] {
        case "down": phase = .began
        case "move": phase = .moved
        case "up": phase = .ended
        case "cancel": phase = .cancelled
        default:
            let verbs = ["down", "move", "up", "cancel", "screen"]
            let hint = fields[1].count <= 64 ? didYouMean(String(fields[1]), in: verbs) : ""
            return fail(
                1, "'\(quoted(fields[1]))' is not one of \(verbs.joined(separator: ", "))\(hint)", time: time)
        }
        guard let contact = Int(fields[2]), (0...maximumContact).contains(contact) else {
            return fail(2, "'\(quoted(fields[2]))' is not a contact number (0…\(maximumContact))", time: time)
        }
        var location: Point?
        var warnings: [Problem] = []
        switch phase {
        case .began, .moved:
            guard fields.count >= 5, let x = Double(fields[3]), let y = Double(fields[4]), x.isFinite, y.isFinite else {
                return fail(3, "\(fields[1]) needs finite X and Y pixel coordinates", time: time)
            }
            guard fields.count == 5 else {
                return fail(5, "unexpected field '\(quoted(fields[5]))' after X and Y", time: time)
            }
            location = Point(x: x, y: y)
            if let context, !(0...context.outputWidth).contains(x) || !(0...context.outputHeight).contains(y) {
                warnings.append(
                    Problem(
                        line: line, column: columnOf(3),
                        message:
                            "\(fields[1]) at (\(fields[3]), \(fields[4])) is outside the output "
                            + "(\(Configuration.number(context.outputWidth))×\(Configuration.number(context.outputHeight))): "
                            + "no touchscreen reports a touch there"))
            }
        case .ended, .cancelled:
            guard fields.count == 3 else { return fail(3, "\(fields[1]) takes no coordinates", time: time) }
        }
        return (
            .success(.sample(time, ContactSample(contact: contact, phase: phase, location: location))), time, warnings
        )
    }

    /// A field as a message shows it: cut to `maximumQuotedField` characters.
    private static func quoted(_ field: String) -> String {
        field.count <= maximumQuotedField ? field : field.prefix(maximumQuotedField) + "…"
    }
}
