import Glibc
import Synchronization

/// A line of SSIP seen by ``SSIPProxy``: which way it went and when the proxy read it (CLOCK_MONOTONIC).
struct SSIPLine: Sendable {
    enum Direction: Sendable {
        /// From touchd to speech-dispatcher.
        case sent
        /// From speech-dispatcher to touchd (replies and 7xx events).
        case received
    }

    let direction: Direction
    let text: String
    let arrival: Microseconds
}

/// Stands between touchd and speech-dispatcher on a socket of its own and copies every byte both ways at once,
/// stamping each line as it reads it: so the scenario sees when touchd's `SPEAK` or `CANCEL` left touchd (within
/// one read and write on this side, well under a millisecond next to the figures it measures) and when the server
/// answered, without touching either program.
final class SSIPProxy: @unchecked Sendable {
    // @unchecked: `listener` and `upstream` are set in init and only read after; the rest is Mutex and Atomic.
    let path: String
    let upstream: String
    let lines = Inbox<SSIPLine>()
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)
    private let open = Mutex<Set<Int32>>([])

    init(path: String, upstream: String) throws(DriverError) {
        self.path = path
        self.upstream = upstream
        listener = try UnixSocket.bound(path: path, type: SOCK_STREAM)
        guard listen(listener, 4) == 0 else {
            let code = errno
            close(listener)
            throw DriverError("listen \(path): \(describe(errno: code))")
        }
        startThread("ssip proxy") { [self] in acceptConnections() }
    }

    /// Ends every connection at once (touchd then sees the server go away) and the acceptor within about 100 ms.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        open.withLock { connections in
            for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections() {
        while !stopped.load(ordering: .relaxed) {
            guard UnixSocket.readable(listener, milliseconds: 100) else { continue }
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { continue }
                Console.line("touchd-e2e: SSIP proxy: accept: \(describe(errno: errno))")
                break
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let server: Int32
            do {
                server = try UnixSocket.connected(path: upstream, type: SOCK_STREAM)
            } catch {
                // As if the server were absent: touchd's client sees the connection close and retries.
                Console.line("touchd-e2e: SSIP proxy: \(error)")
                close(client)
                continue
            }
            open.withLock { connections in
                connections.formUnion([client, server])
                if stopped.load(ordering: .relaxed) {
                    shutdown(client, Int32(SHUT_RDWR))
                    shutdown(server, Int32(SHUT_RDWR))
                }
            }
            let remaining = Remaining()
            startThread("ssip proxy sent") { [self] in copy(from: client, to: server, .sent, remaining) }
            startThread("ssip proxy received") { [self] in copy(from: server, to: client, .received, remaining) }
        }
        close(listener)
    }

    /// How many of a connection's two copying threads still run: the last closes both descriptors, so neither is
    /// closed (and its number reused) while the other thread may still write to it.
    private final class Remaining: Sendable {
        let count = Atomic<Int>(2)
    }

    /// Copies until either side ends, then ends both (the other thread's read returns).
    private func copy(
        from source: Int32, to destination: Int32, _ direction: SSIPLine.Direction, _ remaining: Remaining
    ) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var pending = LineBuffer()
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, $0.count) }
            let arrival = monotonicNow()
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            var offset = 0
            var failed = false
            while offset < count {
                let written = buffer.withUnsafeBytes {
                    Glibc.send(destination, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    failed = true
                    break
                }
                offset += written
            }
            for line in pending.append(buffer[..<count]) {
                let text = line.hasSuffix("\r") ? String(line.dropLast()) : line
                lines.append(SSIPLine(direction: direction, text: text, arrival: arrival))
            }
            if failed { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
        guard remaining.count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        open.withLock {
            $0.remove(source)
            $0.remove(destination)
        }
        close(source)
        close(destination)
    }
}
