import Glibc
import Logging
import Synchronization

/// A swift-log handler that writes one line per message to standard error.
///
/// Under systemd (`JOURNAL_STREAM` is set) each line starts with the sd-daemon priority prefix (`<3>` error …
/// `<7>` debug), so journald files it under the right `PRIORITY`; in a terminal the level is spelled out instead.
/// Metadata follows the message as `key=value` pairs, sorted, with values quoted when they contain spaces.
struct JournalLogHandler: LogHandler {
    /// How lines are marked with their level.
    enum Style: Sendable {
        /// `<6>message`: journald reads the priority from the prefix.
        case journal
        /// `info: message`: for people reading a terminal.
        case terminal
    }

    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let style: Style
    let sink: LineSink

    init(logLevel: Logger.Level, style: Style, sink: LineSink = .standardError) {
        self.logLevel = logLevel
        self.style = style
        self.sink = sink
    }

    /// The style for this process: journal prefixes when systemd connected standard error to the journal.
    static var detectedStyle: Style {
        getenv("JOURNAL_STREAM") != nil ? .journal : .terminal
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        sink.write(Self.format(level: event.level, message: event.message.description, metadata: merged, style: style))
    }

    /// One formatted line, without the newline.
    static func format(level: Logger.Level, message: String, metadata: Logger.Metadata, style: Style) -> String {
        var line: String
        switch style {
        case .journal: line = "<\(priority(of: level))>"
        case .terminal: line = "\(level.rawValue): "
        }
        // A message is one line: a newline inside it would start a journal entry of its own.
        line += message.replacing("\n", with: "\\n")
        for key in metadata.keys.sorted() {
            line += " \(key)=\(quoted("\(metadata[key]!)"))"
        }
        return line
    }

    /// The syslog priority journald files a level under.
    static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .critical: 2
        case .error: 3
        case .warning: 4
        case .notice: 5
        case .info: 6
        case .debug, .trace: 7
        }
    }

    private static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\n" }
        guard needsQuotes else { return value }
        var result = "\""
        for character in value {
            switch character {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result + "\""
    }
}

/// Where log lines go: standard error, or memory for tests.
final class LineSink: Sendable {
    private let capturing: Bool
    private let lines = Mutex<[String]>([])

    private init(capturing: Bool) {
        self.capturing = capturing
    }

    /// Writes each line to file descriptor 2 with one `write(2)`, so lines from several threads never interleave.
    static let standardError = LineSink(capturing: false)

    /// Keeps lines in memory.
    static func memory() -> LineSink { LineSink(capturing: true) }

    /// The lines kept so far (memory sinks only).
    var captured: [String] { lines.withLock { $0 } }

    func write(_ line: String) {
        guard capturing else { return printError(line) }
        lines.withLock { $0.append(line) }
    }
}

/// Lets a repeating message through `burst` times per `interval`, then counts what it suppressed, the way libinput
/// rate-limits its own warnings. Time is passed in (microseconds, monotonic).
struct RateLimit: Sendable {
    enum Verdict: Equatable, Sendable {
        /// Log it. `suppressed` messages were dropped since the last one that got through.
        case pass(suppressed: Int)
        /// Drop it.
        case suppress
    }

    let burst: Int
    let interval: UInt64
    private var windowStart: UInt64?
    private var passed = 0
    private var suppressed = 0

    init(burst: Int = 5, intervalMicroseconds: UInt64 = 30_000_000) {
        self.burst = burst
        self.interval = intervalMicroseconds
    }

    mutating func check(now: UInt64) -> Verdict {
        if let start = windowStart, now >= start, now - start < interval {
            guard passed < burst else {
                suppressed += 1
                return .suppress
            }
            passed += 1
            return .pass(suppressed: 0)
        }
        windowStart = now
        passed = 1
        defer { suppressed = 0 }
        return .pass(suppressed: suppressed)
    }
}
