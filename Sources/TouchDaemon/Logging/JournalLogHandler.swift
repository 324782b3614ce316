import Glibc
import Logging
import Synchronization

/// A swift-log handler that sends each message to the journal, or writes it as one line to standard error.
///
/// Under systemd (`JOURNAL_STREAM` is set and names touchd's standard error) each message goes to journald natively,
/// as a datagram on `/run/systemd/journal/socket` (see `JournalSocket`), with structured fields: `MESSAGE`,
/// `PRIORITY`, `SYSLOG_IDENTIFIER=touchd`, `MESSAGE_ID` when the metadata has `message_id` (see `MessageID`), one
/// `TOUCHD_<KEY>` field per other metadata key (`device.name` becomes `TOUCHD_DEVICE_NAME`), and `CODE_FILE`,
/// `CODE_LINE`, `CODE_FUNC`. When that datagram cannot be sent, the message is written to standard error as a line
/// with the sd-daemon priority prefix (`<3>` error … `<7>` debug), so journald still files it under the right
/// `PRIORITY`; in a terminal the level is spelled out instead. In both, the text is the message followed by the
/// metadata as `key=value` pairs, sorted, with values quoted when they contain spaces (`message_id` is left out: it
/// is the journal's field, not text). Control characters in the text are escaped (``TerminalText``); the `TOUCHD_*`
/// fields keep each value as it is, for exact matches (journalctl shows a field with such characters as a blob).
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
    /// Where native journal entries go; nil: lines on `sink` only.
    let journal: JournalSocket?

    /// With the `.journal` style and standard error as the sink, entries go to the journal natively when standard
    /// error is the journal's stream (`JournalSocket.forStandardError`), unless `journal` names another socket.
    init(logLevel: Logger.Level, style: Style, sink: LineSink = .standardError, journal: JournalSocket? = nil) {
        self.logLevel = logLevel
        self.style = style
        self.sink = sink
        if let journal {
            self.journal = journal
        } else if style == .journal, sink === LineSink.standardError {
            self.journal = JournalSocket.forStandardError
        } else {
            self.journal = nil
        }
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
        if let journal {
            let entry = Self.journalEntry(
                level: event.level, message: event.message.description, metadata: merged,
                code: CodeLocation(file: event.file, line: event.line, function: event.function))
            if journal.send(entry) { return }
        }
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
        line += text(message: message.replacing("\n", with: "\\n"), metadata: metadata)
        return line
    }

    /// The message and its metadata as `key=value` pairs, sorted; `message_id` is left out. Control characters a
    /// terminal acts on (a device named `ESC]0;…BEL`) are written as visible escapes (``TerminalText``), in the line
    /// and in the journal's `MESSAGE` alike; the message's own newlines stay for the journal.
    static func text(message: String, metadata: Logger.Metadata) -> String {
        var text = TerminalText.escaped(message, keepingNewlines: true)
        for key in metadata.keys.sorted() where key != MessageID.metadataKey {
            text += " \(TerminalText.escaped(key))=\(TerminalText.escaped(quoted("\(metadata[key]!)")))"
        }
        return text
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

    /// Where a log call is in the source, for the journal's `CODE_*` fields.
    struct CodeLocation: Sendable, Equatable {
        let file: String
        let line: UInt
        let function: String
    }

    /// The fields of one native journal entry, in the order they are sent. `MESSAGE` is the same text as a line's
    /// (newlines kept: the native protocol carries them); every metadata key but `message_id` becomes a
    /// `TOUCHD_<KEY>` field with its value as it is.
    static func journalFields(
        level: Logger.Level, message: String, metadata: Logger.Metadata, code: CodeLocation?
    ) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            ("MESSAGE", text(message: message, metadata: metadata)),
            ("PRIORITY", "\(priority(of: level))"),
            ("SYSLOG_IDENTIFIER", "touchd"),
        ]
        var rest = metadata
        if let value = metadata[MessageID.metadataKey], isMessageID("\(value)") {
            fields.append(("MESSAGE_ID", "\(value)"))
            rest[MessageID.metadataKey] = nil
        }
        for key in rest.keys.sorted() {
            fields.append((fieldName(forMetadataKey: key), "\(rest[key]!)"))
        }
        if let code {
            fields.append(("CODE_FILE", code.file))
            fields.append(("CODE_LINE", "\(code.line)"))
            fields.append(("CODE_FUNC", code.function))
        }
        return fields
    }

    /// One native journal entry, ready to send: the fields of `journalFields` in journald's native protocol.
    static func journalEntry(level: Logger.Level, message: String, metadata: Logger.Metadata, code: CodeLocation?)
        -> [UInt8]
    {
        encode(journalFields(level: level, message: message, metadata: metadata, code: code))
    }

    /// journald's native protocol (systemd's "Native Journal Protocol"): `NAME=value\n` per field, or, for a value
    /// that contains a newline, `NAME\n`, the value's length as a 64-bit little-endian integer, the value, `\n`.
    static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            bytes += Array(name.utf8)
            let value = Array(value.utf8)
            if value.contains(UInt8(ascii: "\n")) {
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.count).littleEndian) { bytes += $0 }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes += value
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// `TOUCHD_` and the key in upper case, with every character other than a letter, digit or underscore (`.`, `-`,
    /// anything else) turned into `_`, at most 64 characters: journal field names allow only `A-Z`, `0-9` and `_`.
    static func fieldName(forMetadataKey key: String) -> String {
        var name = "TOUCHD_"
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                name.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                name.append(Character(Unicode.Scalar(byte - 32)))
            default:
                name.append("_")
            }
        }
        return String(name.prefix(64))
    }

    /// Whether `id` is a journal message id: 32 lowercase hexadecimal digits.
    static func isMessageID(_ id: String) -> Bool {
        id.utf8.count == 32
            && id.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
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

/// journald's native socket: one `SOCK_DGRAM` socket, not connected, each entry sent as one datagram. journald learns
/// the sender's pid, unit and so on from the socket's credentials, so entries are filed under touchd.service as the
/// lines on standard error are. Sends never block: an entry that cannot go at once (journald busy, the socket gone,
/// an entry too big for one datagram) is reported as not sent, and the handler writes it to standard error instead.
final class JournalSocket: Sendable {
    /// Where journald listens for native entries.
    static let defaultPath = "/run/systemd/journal/socket"

    let path: String
    private let descriptor: Int32
    private let address: sockaddr_un
    private let addressLength: socklen_t

    /// A socket that sends to `path`; nil when the path does not fit an `AF_UNIX` address or no socket can be made.
    init?(path: String = JournalSocket.defaultPath) {
        guard let (address, length) = UnixSocket.address(Array(path.utf8)) else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        self.path = path
        self.descriptor = descriptor
        self.address = address
        self.addressLength = length
    }

    deinit { close(descriptor) }

    /// The journal socket for this process when its standard error is the journal's stream: `JOURNAL_STREAM`
    /// (`DEVICE:INODE`, set by systemd) names the file that descriptor 2 is, as systemd.exec(5) advises to check, so
    /// that a program that merely inherited the variable (its standard error redirected elsewhere) writes lines
    /// there. nil otherwise, and when the socket does not exist.
    static let forStandardError: JournalSocket? = {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }),
            standardErrorIs(journalStream: value)
        else { return nil }
        var status = stat()
        guard stat(defaultPath, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return JournalSocket()
    }()

    /// Whether descriptor 2 is the file `DEVICE:INODE` names (both decimal).
    static func standardErrorIs(journalStream value: String) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Sends one entry as one datagram, without blocking. True when journald got all of it.
    func send(_ entry: [UInt8]) -> Bool {
        var address = address
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                entry.withUnsafeBytes { bytes in
                    // A failure (journald gone, its queue full) only means the entry is not logged.
                    (try? systemCall("sendto") {
                        sendto(
                            descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT),
                            socketAddress, addressLength)
                    }) ?? -1
                }
            }
        }
        return sent == entry.count
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
