import Glibc

/// Talks to the service manager the way sd_notify(3) does: datagrams of `KEY=VALUE` lines to `$NOTIFY_SOCKET`.
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
struct Notifier: Sendable {
    /// Where notifications go; nil when touchd was not started with `Type=notify`.
    let socketPath: String?
    /// How often systemd expects `WATCHDOG=1`, when the unit has `WatchdogSec=`.
    let watchdogInterval: UInt64?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from the environment.
    static func fromEnvironment() -> Notifier {
        let path = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        var watchdog: UInt64?
        if let text = getenv("WATCHDOG_USEC").map({ String(cString: $0) }), let usec = UInt64(text), usec > 0 {
            // WATCHDOG_PID, when set, names the process that must ping; a child that inherited it must not.
            let pid = getenv("WATCHDOG_PID").map { String(cString: $0) }
            if pid == nil || pid == String(getpid()) { watchdog = usec }
        }
        return Notifier(socketPath: path?.isEmpty == false ? path : nil, watchdogInterval: watchdog)
    }

    /// Sends one notification made of the given `KEY=VALUE` lines. Returns false when it could not be sent.
    @discardableResult
    func notify(_ lines: [String]) -> Bool {
        guard let socketPath else { return false }
        let message = Array(lines.joined(separator: "\n").utf8)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var path = Array(socketPath.utf8)
        // "@name" is an abstract socket: its name starts with a NUL byte, and its length counts no terminating NUL.
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        guard var (address, length) = UnixSocket.address(path) else { return false }
        if abstract { length -= 1 }
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { bytes in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), address, length)
                }
            }
        }
        return sent == message.count
    }

    func ready(status: String) { notify(["READY=1", "STATUS=\(status)"]) }
    func status(_ status: String) { notify(["STATUS=\(status)"]) }
    /// `RELOADING=1` must carry `MONOTONIC_USEC`, or `Type=notify-reload` services hang in reload.
    func reloading() { notify(["RELOADING=1", "MONOTONIC_USEC=\(monotonicMicroseconds())"]) }
    func stopping() { notify(["STOPPING=1", "STATUS=stopping"]) }
    func watchdog() { notify(["WATCHDOG=1"]) }
}
