import Glibc

/// AF_UNIX sockets by path, close-on-exec so touchd never inherits the driver's end.
enum UnixSocket {
    /// A socket bound to `path` (an existing file there is removed first).
    static func bound(path: String, type: __socket_type) throws(DriverError) -> Int32 {
        let fd = try open(type: type)
        var address = try address(path)
        unlink(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw DriverError("bind \(path): \(describe(errno: code))")
        }
        return fd
    }

    /// A socket connected to `path`: the self-test plays the daemon's side with it.
    static func connected(path: String, type: __socket_type) throws(DriverError) -> Int32 {
        let fd = try open(type: type)
        var address = try address(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw DriverError("connect \(path): \(describe(errno: code))")
        }
        return fd
    }

    /// Writes all of `text` (self-test clients), with MSG_NOSIGNAL so a closed peer is an error, not SIGPIPE.
    static func send(_ fd: Int32, _ text: String) throws(DriverError) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw DriverError("send: \(describe(errno: errno))")
            }
            offset += sent
        }
    }

    /// Waits up to `milliseconds` for `fd` to become readable; true when it is (or has an error or hang-up to read).
    static func readable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = Glibc.poll(&entry, 1, milliseconds)
        return ready > 0
    }

    private static func open(type: __socket_type) throws(DriverError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(type.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DriverError("socket(AF_UNIX): \(describe(errno: errno))") }
        return fd
    }

    private static func address(_ path: String) throws(DriverError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw DriverError("socket path \(path) is \(bytes.count) bytes; AF_UNIX allows \(capacity - 1)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return address
    }
}
