import Glibc

/// `touchd ctl`'s connection to the control socket: blocking, one request at a time, every wait bounded by a
/// timeout (a subscription's stream by the deadline it is given, or none).
///
/// It trusts the daemon no more than the daemon trusts it: a reply that breaks the protocol (not JSON, a response
/// to another request, a line over `maxLineBytes`) ends the exchange with `.protocolError` (exit 76) naming what
/// came, at once; memory stays within one line's limit and one read; `timeout` bounds the whole answer to a
/// request, however slowly or endlessly the daemon writes.
final class ControlClient {
    /// Why the exchange stopped; each maps to an exit status.
    enum Failure: Error, CustomStringConvertible {
        /// The socket is not there or refuses us (69, EX_UNAVAILABLE).
        case cannotConnect(path: String, errno: Int32)
        /// The connection ended or timed out half-way (69).
        case lost(String)
        /// The server's answer was not what the protocol says (76, EX_PROTOCOL).
        case protocolError(String)
        /// The server refused the request (1); `problems` are an `invalid_configuration` refusal's problem lines.
        case refused(code: String, message: String, problems: [String])

        var description: String {
            switch self {
            case .cannotConnect(let path, let error):
                let hint = error == EACCES ? " (is your user in the touchd-clients group?)" : ""
                return "cannot connect to \(path): \(UnixSocket.describe(error))\(hint)"
            case .lost(let why): return "connection lost: \(why)"
            case .protocolError(let why): return "unexpected answer from touchd: \(why)"
            case .refused(let code, let message, let problems):
                let hint = code == "unauthorized" ? " (controllers are root and members of touchd-admin)" : ""
                // One problem a line, as `touchd check` prints them.
                return (["\(code): \(message)\(hint)"] + problems).joined(separator: "\n")
            }
        }

        var exitStatus: Int32 {
            switch self {
            case .cannotConnect, .lost: return 69
            case .protocolError: return 76
            case .refused: return 1
            }
        }
    }

    /// One line from the server: its text, as received, and its parsed value.
    struct Line {
        var text: String
        var value: JSONValue
    }

    /// The longest line taken from the daemon, newline excluded. The daemon's own lines are bounded by its queue
    /// (256 KiB, docs/control-socket.md "Limits"): this leaves room and still refuses an endless line quickly.
    static let maxLineBytes = 1 << 20

    private let descriptor: Int32
    /// Bytes received and not yet returned: complete lines from `bufferStart`, then the start of the next one.
    private var buffer: [UInt8] = []
    /// Where the next line starts in `buffer`; the bytes before it were returned and go at the next read.
    private var bufferStart = 0
    /// How far `buffer` was searched for a newline (none before it, from `bufferStart`): no byte is searched twice.
    private var scanned = 0
    private var chunk = [UInt8](repeating: 0, count: 65_536)
    /// Microseconds each read or write may wait; nil for no limit.
    var timeout: UInt64?
    private var nextID: Int64 = 1
    /// The last refusal the server sent, as received: `ctl --json` prints it as it prints every other response.
    private(set) var refusal: Line?

    /// Connects to `path` (a blocking socket, close-on-exec).
    init(path: String, timeout: UInt64?) throws(Failure) {
        guard let resolved = UnixSocket.address(Array(path.utf8)) else {
            throw .cannotConnect(path: path, errno: ENAMETOOLONG)
        }
        var address = resolved.address
        let descriptor = socket(AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .cannotConnect(path: path, errno: errno) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, resolved.length) }
        }
        guard result == 0 else {
            let error = errno
            close(descriptor)
            throw .cannotConnect(path: path, errno: error)
        }
        self.descriptor = descriptor
        self.timeout = timeout
    }

    deinit {
        close(descriptor)
    }

    /// Says hello and returns the server's hello line.
    func hello() throws(Failure) -> Line {
        let id = takeID()
        let deadline = answerDeadline()
        try send("{\"type\":\"hello\",\"v\":1,\"id\":\(id)}")
        while true {
            let line = try readLine(deadline: deadline)
            switch try Self.type(of: line) {
            case "hello":
                guard line.value["id"]?.int64Value == id else {
                    throw .protocolError("a hello for another id (ours was \(id)): \(Self.excerpt(line.text))")
                }
                return line
            case "response":
                try Self.checkResponse(line, id: id)
                // A response to our hello is always a refusal (a hello is answered with a hello).
                guard let error = Self.error(of: line) else {
                    throw .protocolError("a response to hello that is not a refusal: \(Self.excerpt(line.text))")
                }
                refusal = line
                throw error
            default:
                continue
            }
        }
    }

    /// Sends a request (`members`: the request's members after `type` and `id`, without braces, may be empty) and
    /// returns its response; lines before it (events) go to `other`.
    func request(
        _ type: String, members: String = "", other: (Line) throws(Failure) -> Void = { _ in }
    ) throws(Failure) -> Line {
        let id = takeID()
        var text = "{\"type\":"
        JSONLine.appendString(type, to: &text)
        text += ",\"id\":\(id)"
        if !members.isEmpty { text += "," + members }
        text += "}"
        let deadline = answerDeadline()
        try send(text)
        while true {
            let line = try readLine(deadline: deadline)
            guard try Self.type(of: line) == "response" else {
                try other(line)
                continue
            }
            try Self.checkResponse(line, id: id)
            if let error = Self.error(of: line) {
                refusal = line
                throw error
            }
            guard line.value["ok"]?.boolValue == true else {
                throw .protocolError("a response with neither ok nor an error: \(Self.excerpt(line.text))")
            }
            return line
        }
    }

    /// A subscription's stream, after its response: hands every line but responses to `show` (which says whether the
    /// line counts towards `count`) until `count` lines counted (nil: for ever) or `deadline` (microseconds,
    /// `monotonicMicroseconds()`; nil: none) passes. Lines come when they come, so only the deadline bounds the wait;
    /// an `overflow` or `shutdown` line ends the stream as a lost connection. Returns how many lines counted.
    @discardableResult
    func stream(count: Int?, until deadline: UInt64? = nil, _ show: (Line) -> Bool) throws(Failure) -> Int {
        timeout = nil
        var received = 0
        while count.map({ received < $0 }) ?? true {
            guard let line = try nextLine(deadline: deadline) else { return received }
            let type = line.value["type"]?.stringValue
            guard type != "response" else { continue }
            if show(line) { received += 1 }
            fflush(nil)
            switch type {
            case "overflow": throw .lost("touchd dropped this subscriber: it read too slowly")
            case "shutdown": throw .lost("touchd is stopping")
            default: break
            }
        }
        return received
    }

    /// The next line from the server, by `deadline` (microseconds, `monotonicMicroseconds()`) when there is one,
    /// else each wait bounded by `timeout`.
    func readLine(deadline: UInt64? = nil) throws(Failure) -> Line {
        guard let line = try nextLine(deadline: deadline) else { throw noAnswer }
        return line
    }

    /// The next line from the server, or nil when `deadline` (else `timeout`) passes first.
    private func nextLine(deadline: UInt64?) throws(Failure) -> Line? {
        while true {
            if let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                let bytes = buffer[bufferStart..<newline]
                bufferStart = newline + 1
                scanned = bufferStart
                guard bytes.count <= Self.maxLineBytes else { throw Self.tooLong(bytes) }
                let text = String(decoding: bytes, as: UTF8.self)
                do {
                    return Line(text: text, value: try JSONValue.parse(bytes))
                } catch {
                    throw .protocolError("a line that is not valid JSON (\(error)): \(Self.excerpt(text))")
                }
            }
            scanned = buffer.count
            // Refused as soon as it passes the limit: never more than the limit and one read are held.
            guard buffer.count - bufferStart <= Self.maxLineBytes else { throw Self.tooLong(buffer[bufferStart...]) }
            guard try wait(for: Int16(POLLIN), deadline: deadline) else { return nil }
            let received = chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemCallError) in
                    try systemCall("recv") { recv(descriptor, buffer.baseAddress, buffer.count, 0) }
                }
            }
            let count: Int
            switch received {
            case .success(let value): count = value
            case .failure(let error): throw .lost(UnixSocket.describe(error.errno))
            }
            if count == 0 {
                throw .lost(
                    buffer.count == bufferStart
                        ? "touchd closed the connection" : "touchd closed the connection mid-line")
            }
            // The lines already returned go now: what moves is at most the start of one line.
            if bufferStart > 0 {
                buffer.removeFirst(bufferStart)
                scanned -= bufferStart
                bufferStart = 0
            }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// The refusal of a line over `maxLineBytes`, quoting its start.
    private static func tooLong(_ bytes: ArraySlice<UInt8>) -> Failure {
        .protocolError(
            "a line longer than \(maxLineBytes) bytes: \(excerpt(String(decoding: bytes.prefix(200), as: UTF8.self)))")
    }

    /// The deadline for an answer: `timeout` from now, or none.
    private func answerDeadline() -> UInt64? {
        timeout.map { monotonicMicroseconds().saturatingSum($0) }
    }

    private func send(_ text: String) throws(Failure) {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        let deadline = answerDeadline()
        while offset < bytes.count {
            guard try wait(for: Int16(POLLOUT), deadline: deadline) else { throw noAnswer }
            let result = bytes[offset...].withUnsafeBytes { buffer in
                Result { () throws(SystemCallError) in
                    try systemCall("send") {
                        Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                    }
                }
            }
            switch result {
            case .success(let sent): offset += sent
            case .failure(let error): throw .lost(UnixSocket.describe(error.errno))
            }
        }
    }

    /// Waits until the socket is ready for `events` (true), or until `deadline` if there is one, else at most
    /// `timeout`, passes (false).
    private func wait(for events: Int16, deadline: UInt64?) throws(Failure) -> Bool {
        var descriptors = [pollfd(fd: descriptor, events: events, revents: 0)]
        while true {
            let microseconds =
                deadline.map { $0 > monotonicMicroseconds() ? $0 - monotonicMicroseconds() : 0 } ?? timeout
            let milliseconds = microseconds.map { Int32(clamping: ($0 + 999) / 1000) } ?? -1
            let ready = poll(&descriptors, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { throw .lost(UnixSocket.describe(errno)) }
        }
    }

    /// The failure of an answer that did not come within `timeout`.
    private var noAnswer: Failure { .lost("no answer within \(Self.seconds(timeout ?? 0)) s") }

    /// Microseconds as seconds for a message: `5`, `0.5`.
    static func seconds(_ microseconds: UInt64) -> String {
        microseconds % 1_000_000 == 0 ? "\(microseconds / 1_000_000)" : "\(Double(microseconds) / 1_000_000)"
    }

    private func takeID() -> Int64 {
        defer { nextID &+= 1 }
        return nextID
    }

    /// A line's `type`; a line that is not an object with a string `type` is no line of the protocol.
    private static func type(of line: Line) throws(Failure) -> String {
        guard let type = line.value["type"]?.stringValue else {
            throw .protocolError("a line without a \"type\": \(excerpt(line.text))")
        }
        return type
    }

    /// Checks that a response answers request `id`: it echoes it, or says `null` for a request the server could not
    /// read (then it must be a refusal). Only one request is ever outstanding, so any other id is the daemon's
    /// mistake, never an answer to wait past.
    private static func checkResponse(_ line: Line, id: Int64) throws(Failure) {
        switch line.value["id"] {
        case .integer(id)?:
            return
        case .null? where line.value["ok"]?.boolValue == false:
            return
        default:
            throw .protocolError("a response to another request (ours was id \(id)): \(excerpt(line.text))")
        }
    }

    /// What the daemon sent, for a message: the first 200 characters, as a JSON string (so control characters and
    /// escape sequences are shown, never sent to the terminal).
    static func excerpt(_ text: String) -> String {
        var quoted = ""
        JSONLine.appendString(text.count > 200 ? String(text.prefix(200)) + "…" : text, to: &quoted)
        return quoted
    }

    /// The refusal a response carries, if it is one.
    static func error(of line: Line) -> Failure? {
        guard line.value["ok"]?.boolValue == false else { return nil }
        let error = line.value["error"]
        return .refused(
            code: error?["code"]?.stringValue ?? "unknown", message: error?["message"]?.stringValue ?? line.text,
            problems: error?["problems"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }
}
