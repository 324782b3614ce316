import Glibc
import Synchronization

/// The socket target the config names: a listening SOCK_STREAM socket. The daemon connects (and may reconnect, for
/// instance after a reload); every connection is accepted and read on a thread of its own, blocked in read(2) as an
/// application would be, which stamps the arrival time right after read(2) returns, so the latency figures do not
/// include any waiting in the driver (the same as `libinput debug-events`' pipe is read: Daemon.swift).
///
/// ``work`` makes it a busy target: after each message it reads, the reader spins its CPU for that long before it
/// reads again, as an application that works hard right after each action would; an ``Interlude`` has the reader do
/// something at a set time into that work (BusyTarget.swift).
final class TargetListener: Sendable {
    let path: String
    let inbox = Inbox<TargetMessage>()
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)
    private let workMicroseconds = Atomic<UInt64>(0)
    private let pendingInterlude = Mutex<Interlude?>(nil)
    /// The connections being read, so that `stop` can end their blocking reads (under the lock, so a descriptor is
    /// never shut down after its reader closed it and the number was reused).
    private let open = Mutex<Set<Int32>>([])

    init(path: String, verbose: Bool) throws(DriverError) {
        self.path = path
        fd = try UnixSocket.bound(path: path, type: SOCK_STREAM)
        guard listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw DriverError("listen \(path): \(describe(errno: code))")
        }
        startThread("target acceptor") { [self] in
            acceptConnections(verbose: verbose)
        }
    }

    /// The target of a filter-mode scenario (`--filter`, `--cage`): with `underSystemd`, at the unit's path in a
    /// directory and with a mode that touchd's dynamic user may connect to, as a kiosk application's would be;
    /// otherwise in the scratch directory.
    static func forScenario(underSystemd: Bool, scratch: ScratchDirectory, verbose: Bool) throws(DriverError)
        -> TargetListener
    {
        guard underSystemd else { return try TargetListener(path: scratch.file("target.sock"), verbose: verbose) }
        _ = Tool.run(["/usr/bin/install", "-d", "-m", "0755", UnitPaths.scratch], verbose: verbose)
        let target = try TargetListener(path: UnitPaths.target, verbose: verbose)
        _ = chmod(UnitPaths.target, 0o666)
        return target
    }

    /// How many connections the daemon has made so far.
    var connections: Int { accepted.load(ordering: .relaxed) }

    /// How long the reader spins its CPU after each message it reads (wall-clock time, from when the message is in
    /// the inbox), before it reads again: 0 for an idle target. A change applies from the next message on.
    var work: Microseconds {
        get { workMicroseconds.load(ordering: .relaxed) }
        set { workMicroseconds.store(newValue, ordering: .relaxed) }
    }

    /// Something the reader does once, ``after`` the next message that ``matches``, on its own thread, before it reads
    /// again: ``after`` into its work, or, when its ``work`` is shorter, after sleeping that long (an idle target
    /// waits rather than works).
    struct Interlude: Sendable {
        var after: Microseconds
        var matches: @Sendable (TargetMessage) -> Bool
        var body: @Sendable () -> Void
    }

    /// The interlude for the next matching message (nil: none); the reader clears it as it takes it.
    var interlude: Interlude? {
        get { pendingInterlude.withLock { $0 } }
        set { pendingInterlude.withLock { $0 = newValue } }
    }

    /// Clears the interlude; true when it was still waiting for its message (so it will never run), false when there
    /// was none or the reader has taken it (and may be running it now).
    func cancelInterlude() -> Bool {
        pendingInterlude.withLock { pending in
            defer { pending = nil }
            return pending != nil
        }
    }

    /// Ends the reader threads at once and the acceptor within about 100 ms; each closes its own socket.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        open.withLock { connections in
            for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptConnections(verbose: Bool) {
        while !stopped.load(ordering: .relaxed) {
            guard UnixSocket.readable(fd, milliseconds: 100) else { continue }
            let connection = accept(fd, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { continue }
                Console.line("touchd-e2e: target socket: accept: \(describe(errno: errno))")
                break
            }
            // accept4(SOCK_CLOEXEC) is not imported; touchd is started before it can connect, so no child can
            // inherit the connection before the flag is set.
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let number = accepted.add(1, ordering: .relaxed).newValue
            open.withLock { connections in
                connections.insert(connection)
                // A connection accepted after `stop` looked at the set: `stopped` is already true (it is set first).
                if stopped.load(ordering: .relaxed) { shutdown(connection, Int32(SHUT_RDWR)) }
            }
            if verbose { Console.line("target| connection #\(number) accepted") }
            startThread("target reader \(number)") { [self] in
                read(connection, number: number, verbose: verbose)
            }
        }
        close(fd)
    }

    private func read(_ connection: Int32, number: Int, verbose: Bool) {
        StampingThreads.prepareCurrentThread()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var lines = LineBuffer()
        func deliver(_ line: String, arrival: Microseconds) {
            let message = TargetMessage(line: line, arrival: arrival, connection: number)
            inbox.append(message)
            if verbose { Console.line("target| #\(number) \(line)") }
            let start = monotonicNow()
            let work = workMicroseconds.load(ordering: .relaxed)
            let interlude = pendingInterlude.withLock { pending -> Interlude? in
                guard let due = pending, due.matches(message) else { return nil }
                pending = nil
                return due
            }
            if let interlude {
                if work >= interlude.after {
                    CPUWork.spin(until: start + interlude.after)
                } else {
                    sleep(until: start + interlude.after)
                }
                interlude.body()
            }
            if work > 0 { CPUWork.spin(until: start + work) }
        }
        while !stopped.load(ordering: .relaxed) {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(connection, $0.baseAddress, $0.count) }
            let arrival = monotonicNow()
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                Console.line("touchd-e2e: target connection #\(number): read: \(describe(errno: errno))")
                break
            }
            if count == 0 {
                if stopped.load(ordering: .relaxed) { break }  // `stop` shut the connection down
                // The daemon closed this connection: a partial last line is still a message (and likely malformed).
                if let rest = lines.finish() { deliver(rest, arrival: arrival) }
                if verbose { Console.line("target| connection #\(number) closed by touchd") }
                break
            }
            for line in lines.append(buffer[..<count]) { deliver(line, arrival: arrival) }
        }
        open.withLock { connections in
            connections.remove(connection)
            close(connection)
        }
    }
}
