import Glibc
import Synchronization

/// The driver's side of NOTIFY_SOCKET: a SOCK_DGRAM socket that collects the daemon's sd_notify datagrams
/// (READY=1, STATUS=…, RELOADING=1, STOPPING=1) with their arrival times.
final class NotifyListener: Sendable {
    let path: String
    let inbox = Inbox<NotifyMessage>()
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)

    init(path: String, verbose: Bool) throws(DriverError) {
        self.path = path
        fd = try UnixSocket.bound(path: path, type: SOCK_DGRAM)
        startThread("notify reader") { [self] in
            receive(verbose: verbose)
        }
    }

    /// Ends the reader thread within about 100 ms; it closes the socket.
    func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private func receive(verbose: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !stopped.load(ordering: .relaxed) {
            guard UnixSocket.readable(fd, milliseconds: 100) else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            let arrival = monotonicNow()
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                Console.line("touchd-e2e: notify socket: recv: \(describe(errno: errno))")
                break
            }
            let message = NotifyMessage(datagram: String(decoding: buffer[..<count], as: UTF8.self), arrival: arrival)
            inbox.append(message)
            if verbose { Console.line("notify| \(message.summary)") }
        }
        close(fd)
    }
}
