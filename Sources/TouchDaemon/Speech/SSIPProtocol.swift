/// The Speech Synthesis Interface Protocol (SSIP) as touchd speaks it to speech-dispatcher: what goes on the wire and
/// how the server's lines are read. No I/O here; `SpeechClientLoop` owns the socket.
///
/// From speech-dispatcher's SSIP manual (doc/ssip.texi): every line ends with CR LF; a command is one line; the
/// server answers each with one or more lines `NNN-text` ending with one `NNN text`, whose code says how it went (1xx
/// and 2xx: done; 3xx: the server's error; 4xx and 5xx: the client's). `SPEAK` is answered `230` before the text is
/// sent; the text ends with a line holding a single dot, a line of the text that starts with a dot gets one more in
/// front, and the message is answered `225-<id>` / `225 OK MESSAGE QUEUED`. Events (7xx: 700 index mark, 701 begin,
/// 702 end, 703 canceled, 704 paused, 705 resumed) come by themselves, between replies, once notifications are on.
/// The protocol is synchronous: a client sends a command only after the previous one's reply.
enum SSIP {
    /// What touchd calls itself to the server (`SET SELF CLIENT_NAME user:client:component`): the server's client
    /// list and its per-client configuration (`speechd.conf` `BeginClient "user:touchd:*"`) see it.
    static let clientName = "user:touchd:explore"

    /// The longest line the server may send, CR LF included. speech-dispatcher's replies are short (a status line, a
    /// message id, a client id); a longer line is a broken or hostile server, and the connection is dropped.
    static let maximumLineLength = 4096
    /// The most lines one reply or event may have. A 7xx event has three or four; `LIST VOICES` (which touchd never
    /// sends) would have more.
    static let maximumReplyLines = 64
    /// The most UTF-8 bytes of an utterance's text sent to the server: a label, a value, a role, a hint, an
    /// introduction. What goes beyond is cut at a character boundary (and the cut is logged).
    static let maximumTextBytes = 8192

    // MARK: - Commands

    /// Whether `name` can follow `SOUND_ICON` on a command line: 1 to 64 ASCII letters, digits, `-` and `_`.
    static func isIconName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }

    /// One command line, with its CR LF.
    static func line(_ text: String) -> [UInt8] {
        Array(text.utf8) + [13, 10]
    }

    /// The bytes that follow `SPEAK`'s `230` reply: `text` as CR LF lines, a line starting with a dot given another,
    /// then the closing dot line. Line breaks in `text` (LF, CR LF or a lone CR) become CR LF; NUL and the other C0
    /// controls but tab, and DEL, become spaces (speech-dispatcher would speak them or choke on them); an empty text
    /// becomes one empty line. Returns the bytes and whether the text was cut to `maximumTextBytes`.
    static func speakData(_ text: String, limit: Int = maximumTextBytes) -> (bytes: [UInt8], truncated: Bool) {
        var utf8 = Array(text.utf8)
        var truncated = false
        if utf8.count > limit {
            // Back to the start of a character: continuation bytes are 10xxxxxx.
            var end = max(limit, 0)
            while end > 0, utf8[end] & 0xC0 == 0x80 { end -= 1 }
            utf8.removeSubrange(end...)
            truncated = true
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count + 8)
        var atLineStart = true
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            index += 1
            if byte == 13 || byte == 10 {
                if byte == 13, index < utf8.count, utf8[index] == 10 { index += 1 }
                bytes += [13, 10]
                atLineStart = true
                continue
            }
            if atLineStart, byte == UInt8(ascii: ".") { bytes.append(UInt8(ascii: ".")) }
            atLineStart = false
            bytes.append(byte < 0x20 && byte != 9 || byte == 0x7F ? UInt8(ascii: " ") : byte)
        }
        bytes += [13, 10, UInt8(ascii: "."), 13, 10]
        return (bytes, truncated)
    }

    /// Whether `language` can go into `SET SELF LANGUAGE` as it is: an RFC 1766 / BCP 47 tag or ISO 639 code (letters,
    /// digits, `-` and `_`, at most 35 characters). Anything else could end the command line early and start another,
    /// so it is never sent.
    static func isValidLanguage(_ language: String) -> Bool {
        let bytes = language.utf8
        guard !bytes.isEmpty, bytes.count <= 35 else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    // MARK: - Replies

    /// One complete reply or event: its final code and every line's text after the code and separator.
    struct Reply: Equatable, Sendable {
        var code: Int
        /// The texts of the lines, in order; the last one is the final line's (e.g. "OK MESSAGE QUEUED").
        var lines: [String]

        /// What the code's first digit says.
        enum Kind: Equatable, Sendable {
            /// 1xx, 2xx.
            case success
            /// 3xx: the server failed.
            case serverError
            /// 4xx, 5xx: the server refused the command.
            case clientError
            /// 7xx: an event, not a reply.
            case event
            /// 0xx, 6xx, 8xx, 9xx: no such group in SSIP.
            case unknown
        }

        var kind: Kind {
            switch code / 100 {
            case 1, 2: .success
            case 3: .serverError
            case 4, 5: .clientError
            case 7: .event
            default: .unknown
            }
        }

        /// The final line, code included, for log lines: "408 ERR UNKNOWN PRIORITY".
        var summary: String { "\(code) \(lines.last ?? "")" }
    }

    /// What a message event (7xx) says.
    struct Event: Equatable, Sendable {
        enum Kind: String, Equatable, Sendable {
            case indexMark = "index_mark"
            case begin, end
            case canceled
            case paused, resumed
        }

        var kind: Kind
        /// The message's id, as the server gave it in `SPEAK`'s `225-<id>` line; nil when the event's line did not
        /// hold a number.
        var messageID: Int?
        /// The mark's name for `indexMark`.
        var mark: String?

        /// The event `reply` (a 7xx) carries, or nil for a code SSIP does not define.
        init?(_ reply: Reply) {
            switch reply.code {
            case 700: kind = .indexMark
            case 701: kind = .begin
            case 702: kind = .end
            case 703: kind = .canceled
            case 704: kind = .paused
            case 705: kind = .resumed
            default: return nil
            }
            messageID = reply.lines.first.flatMap { SSIP.decimal($0) }
            mark = kind == .indexMark && reply.lines.count >= 4 ? reply.lines[2] : nil
        }
    }

    /// A decimal number of at most 9 digits (message ids), or nil: no arithmetic on what the server sent can trap.
    static func decimal(_ text: String) -> Int? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 9, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Why the server's input cannot be read as SSIP; the connection is dropped for any of them.
    enum ReadError: Error, Equatable, CustomStringConvertible {
        /// A line longer than `maximumLineLength` without its end.
        case lineTooLong(limit: Int)
        /// A line that does not start with three digits and `-` or a space; `line` is its start, for the log.
        case malformed(line: String)
        /// A multi-line reply whose lines changed code half-way.
        case mixedCodes(first: Int, then: Int)
        /// More than `maximumReplyLines` lines in one reply.
        case tooManyLines(limit: Int)

        var description: String {
            switch self {
            case .lineTooLong(let limit): "a line longer than \(limit) bytes"
            case .malformed(let line): "a line that is not SSIP: \"\(line)\""
            case .mixedCodes(let first, let then): "a reply whose code changed from \(first) to \(then)"
            case .tooManyLines(let limit): "a reply of more than \(limit) lines"
            }
        }
    }

    /// Reads the server's bytes into complete replies, keeping at most one line and one reply's lines: memory stays
    /// bounded whatever the server sends. Lines end with LF; a CR before it is dropped (the server sends CR LF, a
    /// sloppy one may send LF alone).
    struct Reader {
        private var line: [UInt8] = []
        private var pending: [String] = []
        private var pendingCode: Int?
        let maximumLineLength: Int
        let maximumReplyLines: Int

        init(maximumLineLength: Int = SSIP.maximumLineLength, maximumReplyLines: Int = SSIP.maximumReplyLines) {
            self.maximumLineLength = maximumLineLength
            self.maximumReplyLines = maximumReplyLines
        }

        /// Whether part of a line or reply is waiting for the rest.
        var isMidReply: Bool { !line.isEmpty || pendingCode != nil }

        /// Reads `bytes`, appending each reply they complete to `replies`. After an error the reader must not be fed
        /// again (the connection is dropped).
        mutating func feed(_ bytes: UnsafeRawBufferPointer, into replies: inout [Reply]) throws(ReadError) {
            for byte in bytes {
                if byte == 10 {
                    if line.last == 13 { line.removeLast() }
                    try take(line, into: &replies)
                    line.removeAll(keepingCapacity: true)
                    continue
                }
                guard line.count < maximumLineLength - 2 else { throw .lineTooLong(limit: maximumLineLength) }
                line.append(byte)
            }
        }

        private mutating func take(_ line: [UInt8], into replies: inout [Reply]) throws(ReadError) {
            guard line.count >= 4, line[0...2].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                line[3] == UInt8(ascii: "-") || line[3] == UInt8(ascii: " ")
            else {
                // Three digits alone are a final line with no text; anything else is not SSIP.
                if line.count == 3, line.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                    return try finish(code: Self.code(line), text: "", into: &replies)
                }
                throw .malformed(line: Self.excerpt(line))
            }
            let code = Self.code(line)
            if let pendingCode, pendingCode != code { throw .mixedCodes(first: pendingCode, then: code) }
            let text = String(decoding: line[4...], as: UTF8.self)
            if line[3] == UInt8(ascii: "-") {
                guard pending.count < maximumReplyLines - 1 else { throw .tooManyLines(limit: maximumReplyLines) }
                pendingCode = code
                pending.append(text)
            } else {
                try finish(code: code, text: text, into: &replies)
            }
        }

        private mutating func finish(code: Int, text: String, into replies: inout [Reply]) throws(ReadError) {
            if let pendingCode, pendingCode != code { throw .mixedCodes(first: pendingCode, then: code) }
            pending.append(text)
            replies.append(Reply(code: code, lines: pending))
            pending = []
            pendingCode = nil
        }

        private static func code(_ line: [UInt8]) -> Int {
            Int(line[0] - 0x30) * 100 + Int(line[1] - 0x30) * 10 + Int(line[2] - 0x30)
        }

        /// The first 40 bytes of a line, escaped for a log line.
        private static func excerpt(_ line: [UInt8]) -> String {
            let start = String(decoding: line.prefix(40), as: UTF8.self)
            return TerminalText.escaped(start) + (line.count > 40 ? "…" : "")
        }
    }
}
