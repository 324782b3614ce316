import Glibc

/// `touchd ctl`'s connection to the control socket: blocking, one request at a time, every wait bounded by a
/// timeout (except a subscription's stream, which waits as long as it runs).
final class ControlClient {
    /// Why the exchange stopped; each maps to an exit status.
    enum Failure: Error, CustomStringConvertible {
        /// The socket is not there or refuses us (69, EX_UNAVAILABLE).
        case cannotConnect(path: String, errno: Int32)
        /// The connection ended or timed out half-way (69).
        case lost(String)
        /// The server's answer was not what the protocol says (76, EX_PROTOCOL).
        case protocolError(String)
        /// The server refused the request (1).
        case refused(code: String, message: String)

        var description: String {
            switch self {
            case .cannotConnect(let path, let error):
                let hint = error == EACCES ? " (is your user in the touchd-clients group?)" : ""
                return "cannot connect to \(path): \(UnixSocket.describe(error))\(hint)"
            case .lost(let why): return "connection lost: \(why)"
            case .protocolError(let why): return "unexpected answer from touchd: \(why)"
            case .refused(let code, let message): return "\(code): \(message)"
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

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Microseconds each read or write may wait; nil for no limit.
    var timeout: UInt64?
    private var nextID: Int64 = 1

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
        try send("{\"type\":\"hello\",\"v\":1,\"id\":\(id)}")
        while true {
            let line = try readLine()
            if line.value["type"]?.stringValue == "hello" { return line }
            if line.value["type"]?.stringValue == "response", let error = Self.error(of: line) { throw error }
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
        try send(text)
        while true {
            let line = try readLine()
            guard line.value["type"]?.stringValue == "response", line.value["id"]?.int64Value == id else {
                if line.value["type"]?.stringValue == "response", let error = Self.error(of: line) { throw error }
                try other(line)
                continue
            }
            if let error = Self.error(of: line) { throw error }
            guard line.value["ok"]?.boolValue == true else {
                throw .protocolError("a response with neither ok nor an error: \(line.text)")
            }
            return line
        }
    }

    /// The next line from the server.
    func readLine() throws(Failure) -> Line {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let bytes = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                let text = String(decoding: bytes, as: UTF8.self)
                do {
                    return Line(text: text, value: try JSONValue.parse(bytes))
                } catch {
                    throw .protocolError("\(error) in \(text.prefix(200))")
                }
            }
            guard buffer.count <= 16 << 20 else { throw .protocolError("a line of more than 16 MiB") }
            try wait(for: Int16(POLLIN))
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .lost(UnixSocket.describe(errno))
            }
            if count == 0 {
                throw .lost(buffer.isEmpty ? "touchd closed the connection" : "touchd closed the connection mid-line")
            }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    private func send(_ text: String) throws(Failure) {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT))
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw .lost(UnixSocket.describe(errno))
            }
            offset += sent
        }
    }

    /// Waits until the socket is ready for `events`, at most `timeout`.
    private func wait(for events: Int16) throws(Failure) {
        var descriptors = [pollfd(fd: descriptor, events: events, revents: 0)]
        let milliseconds = timeout.map { Int32(clamping: ($0 + 999) / 1000) } ?? -1
        while true {
            let ready = poll(&descriptors, 1, milliseconds)
            if ready > 0 { return }
            if ready == 0 { throw .lost("no answer within \((timeout ?? 0) / 1_000_000) s") }
            if errno != EINTR { throw .lost(UnixSocket.describe(errno)) }
        }
    }

    private func takeID() -> Int64 {
        defer { nextID &+= 1 }
        return nextID
    }

    /// The refusal a response carries, if it is one.
    static func error(of line: Line) -> Failure? {
        guard line.value["ok"]?.boolValue == false else { return nil }
        let error = line.value["error"]
        return .refused(
            code: error?["code"]?.stringValue ?? "unknown", message: error?["message"]?.stringValue ?? line.text)
    }
}
