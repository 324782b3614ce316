import Foundation
import Glibc
import Synchronization
import Testing

@testable import TouchDaemon

/// A speech server on a Unix socket that answers SSIP the way speech-dispatcher 0.11 does (the replies were taken
/// from a real one: `208 OK CLIENT NAME SET`, `230 OK RECEIVING DATA`, `225-<id>` / `225 OK MESSAGE QUEUED`, ...) and
/// records every line it receives with its monotonic time, so tests can check what touchd said, in what order, and
/// when. SPEAK's text is recorded line by line as received (dot-escaped), with its closing `.`.
///
/// Its behaviour can be changed while it runs: answer nothing, answer a given command with given bytes (garbage, an
/// error code, an over-long line), hang up on the next connection. It runs one thread of its own, serving one
/// connection at a time (a client makes one).
final class FakeSSIPServer: @unchecked Sendable {
    /// One line received, without its CR LF.
    struct Line: Sendable, Equatable {
        var text: String
        /// Monotonic microseconds, on the clock touchd uses.
        var time: UInt64
        /// Which accepted connection it came on (1 for the first).
        var connection: Int
    }

    enum Behaviour: Sendable {
        /// Answers like speech-dispatcher.
        case normal
        /// Reads and records, never answers.
        case silent
        /// Accepts and closes at once.
        case hangUp
        /// Answers like speech-dispatcher and "speaks" each queued message: 701 BEGIN right after its 225, 702 END
        /// `milliseconds` later, or 703 CANCELED at once on `CANCEL self` (events as speech-dispatcher sends them
        /// with notifications on).
        case speaking(milliseconds: Int)
    }

    let path: String
    private let listener: Int32
    private let wake: [Int32]
    private let state = Mutex(SharedState())
    private var thread: Thread?

    private struct SharedState {
        var lines: [Line] = []
        var behaviour = Behaviour.normal
        /// Commands (matched by prefix, case-insensitive) and the raw bytes to answer them with instead, once each.
        var overrides: [(prefix: String, bytes: [UInt8])] = []
        var accepted = 0
        var toSend: [[UInt8]] = []
        var closeCurrent = false
        var stopped = false
        var nextMessageID = 1
        var connected = false
        /// The command (prefix, upper case) whose reply, and every reply after it, is held back until released.
        var holdFrom: String?
        /// The replies held back, in order: while it holds any, every later reply joins them.
        var held: [[UInt8]] = []
        var releaseHeld = false
    }

    init(path: String) throws {
        unlink(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw SetupError(what: "socket", errno: errno) }
        guard let resolved = UnixSocket.address(Array(path.utf8)) else {
            close(listener)
            throw SetupError(what: "\(path) is too long for a socket", errno: ENAMETOOLONG)
        }
        var address = resolved.address
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, resolved.length) }
        }
        guard bound == 0, listen(listener, 4) == 0 else {
            let error = errno
            close(listener)
            throw SetupError(what: "bind/listen \(path)", errno: error)
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(listener)
            throw SetupError(what: "pipe", errno: errno)
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFL, O_NONBLOCK) }
        self.path = path
        self.listener = listener
        wake = pipeEnds
        let thread = Thread { [self] in serve() }
        thread.start()
        self.thread = thread
    }

    struct SetupError: Error {
        var what: String
        var errno: Int32
    }

    deinit {
        stop()
        close(listener)
        close(wake[0])
        close(wake[1])
    }

    /// Closes the socket and its connection and removes the socket file: the server has gone away. Idempotent.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        poke()
        while state.withLock({ $0.connected }) { usleep(1000) }
        shutdown(listener, Int32(SHUT_RDWR))
        unlink(path)
    }

    var lines: [Line] { state.withLock { $0.lines } }
    var texts: [String] { lines.map(\.text) }
    var acceptedConnections: Int { state.withLock { $0.accepted } }

    func set(_ behaviour: Behaviour) {
        state.withLock { $0.behaviour = behaviour }
    }

    /// Answers the next command starting with `prefix` with `bytes` instead of the usual reply.
    func override(_ prefix: String, with bytes: [UInt8]) {
        state.withLock { $0.overrides.append((prefix.uppercased(), bytes)) }
    }

    /// Holds back the reply to the next command starting with `prefix`, and every reply after it, while it goes on
    /// reading and recording lines: a server slow to answer one command. ``releaseReplies()`` sends them, in order.
    func holdReplies(from prefix: String) {
        state.withLock { $0.holdFrom = prefix.uppercased() }
    }

    func releaseReplies() {
        state.withLock { $0.releaseHeld = true }
        poke()
    }

    /// Sends `bytes` to the connected client now (an event, garbage).
    func send(_ bytes: [UInt8]) {
        state.withLock { $0.toSend.append(bytes) }
        poke()
    }

    /// Closes the current connection (the server restarting, say); the listener stays.
    func dropConnection() {
        state.withLock { $0.closeCurrent = true }
        poke()
    }

    private func poke() {
        var byte: UInt8 = 1
        _ = write(wake[1], &byte, 1)
    }

    // MARK: - The server's thread

    private func serve() {
        while !state.withLock({ $0.stopped }) {
            var descriptors = [
                pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, 1000)
            drainWake()
            guard descriptors[0].revents & Int16(POLLIN) != 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            let (number, behaviour) = state.withLock { state -> (Int, Behaviour) in
                state.accepted += 1
                state.connected = true
                return (state.accepted, state.behaviour)
            }
            if case .hangUp = behaviour {
                close(connection)
                state.withLock { $0.connected = false }
                continue
            }
            converse(connection, number: number)
            close(connection)
            state.withLock {
                $0.connected = false
                $0.closeCurrent = false
                // Held replies belong to the connection that ended.
                $0.held = []
                $0.releaseHeld = false
            }
        }
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wake[0], &buffer, buffer.count) > 0 {}
    }

    private func converse(_ connection: Int32, number: Int) {
        var pending: [UInt8] = []
        var receivingText = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        /// With `.speaking`: the message being spoken and when it ends.
        var speaking: (id: Int, endsAt: UInt64)?
        func event(_ code: Int, _ id: Int, _ text: String) -> [UInt8] {
            Array("\(code)-\(id)\r\n\(code)-\(number)\r\n\(code) \(text)\r\n".utf8)
        }
        while true {
            if let current = speaking, monotonicMicroseconds() >= current.endsAt {
                let bytes = event(702, current.id, "END")
                _ = Glibc.send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL))
                speaking = nil
            }
            let (stop, toSend) = state.withLock { state -> (Bool, [[UInt8]]) in
                defer { state.toSend = [] }
                var toSend = state.toSend
                if state.releaseHeld {
                    toSend = state.held + toSend
                    state.held = []
                    state.releaseHeld = false
                }
                return (state.stopped || state.closeCurrent, toSend)
            }
            if stop { return }
            for bytes in toSend { _ = Glibc.send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL)) }
            var descriptors = [
                pollfd(fd: connection, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0),
            ]
            let timeout = speaking.map {
                Int32(clamping: $0.endsAt.saturatingSubtract(monotonicMicroseconds()) / 1000 + 1)
            }
            _ = poll(&descriptors, 2, timeout ?? 1000)
            drainWake()
            guard descriptors[0].revents != 0 else { continue }
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            let now = monotonicMicroseconds()
            pending += buffer[..<count]
            while let end = pending.firstIndex(of: 10) {
                var line = Array(pending[..<end])
                pending.removeSubrange(...end)
                if line.last == 13 { line.removeLast() }
                let text = String(decoding: line, as: UTF8.self)
                state.withLock { $0.lines.append(Line(text: text, time: now, connection: number)) }
                let queuedID = state.withLock { $0.nextMessageID }
                let wasText = receivingText && text == "."
                if let reply = answer(text, receivingText: &receivingText) {
                    let withheld = state.withLock { state -> Bool in
                        if let prefix = state.holdFrom, text.uppercased().hasPrefix(prefix) {
                            state.holdFrom = nil
                        } else if state.held.isEmpty {
                            return false
                        }
                        state.held.append(reply)
                        return true
                    }
                    if withheld { continue }
                    _ = Glibc.send(connection, reply, reply.count, Int32(MSG_NOSIGNAL))
                    guard case .speaking(let milliseconds) = state.withLock({ $0.behaviour }) else { continue }
                    if wasText, reply.starts(with: Array("225".utf8)) {
                        if let current = speaking {
                            let bytes = event(703, current.id, "CANCELED")
                            _ = Glibc.send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL))
                        }
                        let bytes = event(701, queuedID, "BEGIN")
                        _ = Glibc.send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL))
                        speaking = (queuedID, monotonicMicroseconds() + UInt64(milliseconds) * 1000)
                    } else if text.uppercased() == "CANCEL SELF", let current = speaking {
                        let bytes = event(703, current.id, "CANCELED")
                        _ = Glibc.send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL))
                        speaking = nil
                    }
                }
            }
        }
    }

    /// What speech-dispatcher answers to `line`, or nil (inside SPEAK's text, or when silent).
    private func answer(_ line: String, receivingText: inout Bool) -> [UInt8]? {
        if receivingText {
            guard line == "." else { return nil }
            receivingText = false
        }
        let wasText = line == "."
        return state.withLock { state -> [UInt8]? in
            if case .silent = state.behaviour { return nil }
            let command = wasText ? "." : line.uppercased()
            if let index = state.overrides.firstIndex(where: { command.hasPrefix($0.prefix) }) {
                let bytes = state.overrides.remove(at: index).bytes
                if command == "SPEAK", bytes.starts(with: Array("230".utf8)) { receivingText = true }
                return bytes
            }
            func reply(_ text: String) -> [UInt8] { Array((text + "\r\n").utf8) }
            if wasText {
                defer { state.nextMessageID += 1 }
                return reply("225-\(state.nextMessageID)\r\n225 OK MESSAGE QUEUED")
            }
            switch command {
            case "SPEAK":
                receivingText = true
                return reply("230 OK RECEIVING DATA")
            case "QUIT": return reply("231 HAPPY HACKING")
            case "CANCEL SELF": return reply("213 OK CANCELED")
            case "PAUSE SELF": return reply("211 OK PAUSED")
            case "RESUME SELF": return reply("212 OK RESUMED")
            default:
                if command.hasPrefix("SET SELF CLIENT_NAME ") { return reply("208 OK CLIENT NAME SET") }
                if command.hasPrefix("SET SELF NOTIFICATION ") { return reply("220 OK NOTIFICATION SET") }
                if command.hasPrefix("SET SELF PRIORITY ") {
                    let value = command.dropFirst("SET SELF PRIORITY ".count)
                    return ["IMPORTANT", "MESSAGE", "TEXT", "NOTIFICATION", "PROGRESS"].contains(String(value))
                        ? reply("202 OK PRIORITY SET") : reply("408 ERR UNKNOWN PRIORITY")
                }
                if command.hasPrefix("SET SELF LANGUAGE ") { return reply("201 OK LANGUAGE SET") }
                return reply("500 ERR INVALID COMMAND")
            }
        }
    }
}
