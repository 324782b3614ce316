import Glibc

/// The socket system calls the socket-target sender makes. Each one retries `EINTR`, never raises `SIGPIPE`
/// (`MSG_NOSIGNAL` on every send), never blocks (non-blocking sockets, `MSG_DONTWAIT`) and returns errno as a value
/// instead of leaving it in the thread-local `errno`.
enum UnixSocket {
    enum ConnectResult: Equatable {
        /// Connected at once (what Unix sockets do when the peer listens and has room in its backlog).
        case connected(Int32)
        /// The connection completes later: wait for `POLLOUT`, then read `pendingError`.
        case inProgress(Int32)
        /// No socket is left open.
        case failed(Int32)
    }

    enum SendResult: Equatable {
        /// This many bytes went out (for a stream maybe fewer than asked; a datagram goes whole or not at all).
        case sent(Int)
        /// The socket's buffer or the datagram peer's queue is full: wait for `POLLOUT`.
        case wouldBlock
        case failed(Int32)
    }

    enum InputState: Equatable {
        /// Whatever the peer sent has been read and thrown away; the connection is still open.
        case open
        /// The peer closed the connection.
        case closed
        case failed(Int32)
    }

    /// Flags of every send: no SIGPIPE when the peer has gone, never wait.
    private static let sendFlags = Int32(MSG_NOSIGNAL | MSG_DONTWAIT)

    /// Opens a non-blocking, close-on-exec socket of `type` and connects it to `path`.
    /// The corresponding C functions are `socket` and `connect`.
    static func connect(to path: String, type: Configuration.SocketTarget.SocketType) -> ConnectResult {
        let bytes = Array(path.utf8)
        guard !bytes.contains(0) else { return .failed(EINVAL) }
        // The configuration refuses paths too long for sun_path, so this is defence.
        guard let resolved = address(bytes) else { return .failed(ENAMETOOLONG) }
        var address = resolved.address
        let length = resolved.length

        let kind = type == .stream ? SOCK_STREAM : SOCK_DGRAM
        let descriptor = socket(
            AF_UNIX, Int32(bitPattern: kind.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failed(errno) }

        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, length) }
        }
        if result == 0 { return .connected(descriptor) }
        let error = errno
        // A non-blocking connect interrupted by a signal goes on in the background, like EINPROGRESS.
        if error == EINPROGRESS || error == EINTR { return .inProgress(descriptor) }
        close(descriptor)
        return .failed(error)
    }

    /// The `AF_UNIX` address of `path` (raw bytes, so an abstract name may start with NUL) and its length, which
    /// counts a terminating NUL; nil when the path does not fit `sun_path` with it.
    static func address(_ path: [UInt8]) -> (address: sockaddr_un, length: socklen_t)? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        return (address, socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + 1))
    }

    /// Sends `bytes[offset...]`. The corresponding C function is `send`.
    static func send(_ descriptor: Int32, _ bytes: [UInt8], from offset: Int) -> SendResult {
        bytes.withUnsafeBytes { send(descriptor, $0, from: offset) }
    }

    /// Sends `bytes[offset...]`. The corresponding C function is `send`.
    static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, from offset: Int) -> SendResult {
        precondition(offset < bytes.count, "nothing left to send")
        do throws(SystemCallError) {
            return .sent(
                try systemCall("send") {
                    Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, sendFlags)
                })
        } catch {
            // EWOULDBLOCK is EAGAIN on Linux.
            return error.errno == EAGAIN ? .wouldBlock : .failed(error.errno)
        }
    }

    /// The socket's pending error (0 when none), which reading clears: how a non-blocking connect ended, or why
    /// `poll` reported `POLLERR`. The corresponding C function is `getsockopt(SO_ERROR)`.
    static func pendingError(_ descriptor: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    /// Reads and throws away whatever the peer sent, to find out whether it closed the connection.
    /// The corresponding C function is `recv`.
    static func discardInput(_ descriptor: Int32, scratch: inout [UInt8]) -> InputState {
        scratch.withUnsafeMutableBytes { buffer in
            while true {
                do throws(SystemCallError) {
                    let received = try systemCall("recv") {
                        recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                    }
                    if received == 0 { return .closed }
                } catch {
                    return error.errno == EAGAIN ? .open : .failed(error.errno)
                }
            }
        }
    }

    /// A message for `error`, e.g. "No such file or directory".
    static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}
