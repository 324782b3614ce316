import Glibc

/// One `touchd run` per seat: an abstract Unix socket named `@touchd/seat/SEAT`, bound and listening for as long as
/// touchd runs (docs/operations.md, "One instance per seat").
///
/// Why an abstract socket rather than a lock file: it needs no directory that both a service under the shipped unit
/// (a dynamic user, `ProtectSystem=strict`, a private state directory) and a `touchd run` started by hand can write;
/// the kernel frees the name the moment the process dies, however it dies, so nothing is ever stale; and the second
/// instance learns the first one's pid from the socket itself (`SO_PEERCRED` of a connection). The name lives in the
/// network namespace, which the unit shares with the host (it sets no `PrivateNetwork=`, which would also cut off
/// udev's hot-plug events).
///
/// A second instance takes the lock before it does anything else that touches the system: no control socket created
/// or removed, no device opened, no thread started.
///
/// Any local user can bind an abstract name, so the name alone proves nothing: a holder counts as another touchd only
/// when it answers on the name and its credentials (`SO_PEERCRED`) are root's, this process's own user's, or those of
/// the user named `touchd` (the shipped unit's dynamic user). Anyone else holding the name cannot keep touchd from
/// starting: touchd starts without the lock and says who holds the name (``Failure/untrusted(seat:pid:uid:)``).
final class InstanceLock: Sendable {
    /// Why the lock could not be taken.
    enum Failure: Error, CustomStringConvertible {
        /// Another process holds the seat's name; its pid and uid when it answered.
        case held(seat: String, pid: pid_t?, uid: uid_t?)
        /// Someone who is not touchd holds the seat's name (another user, or a socket that does not answer): touchd
        /// starts without the lock.
        case untrusted(seat: String, pid: pid_t?, uid: uid_t?)
        /// The system refused a call (`socket`, `bind`, `listen`).
        case system(seat: String, call: String, errno: Int32)

        var description: String {
            switch self {
            case .held(let seat, let pid, let uid):
                let who = pid.map { "pid \($0)" + (uid.map { ", uid \($0)" } ?? "") } ?? "its pid could not be read"
                return "another touchd is running on \(seat) (\(who)); not starting"
            case .untrusted(let seat, let pid, let uid):
                let who =
                    uid.map { "uid \($0)" + (pid.map { ", pid \($0)" } ?? "") }
                    ?? "a socket that does not answer"
                return "the lock name of \(seat) is held by \(who), which is not touchd's user (root, uid "
                    + "\(geteuid()) or touchd): running without the one-instance lock"
            case .system(let seat, let call, let error):
                return "cannot take the lock of \(seat) (\(call): \(UnixSocket.describe(error)))"
            }
        }
    }

    /// The listening socket; readable when a second instance probed it (``drain()`` clears it).
    let fileDescriptor: Int32

    private init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    deinit {
        close(fileDescriptor)
    }

    /// The abstract address of `seat`'s lock: a NUL, then `touchd/seat/SEAT` (seat names are checked at load: short,
    /// letters, digits, `-` and `_`).
    static func name(seat: String) -> [UInt8] {
        [0] + Array("touchd/seat/\(seat)".utf8)
    }

    /// Takes `seat`'s lock, or says who holds it.
    static func acquire(seat: String) -> Result<InstanceLock, Failure> {
        guard let (address, length) = UnixSocket.address(name(seat: seat)) else {
            return .failure(.system(seat: seat, call: "bind", errno: ENAMETOOLONG))
        }
        let descriptor = socket(
            AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return .failure(.system(seat: seat, call: "socket", errno: errno)) }
        var bound = address
        let result = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            let error = errno
            close(descriptor)
            guard error == EADDRINUSE else { return .failure(.system(seat: seat, call: "bind", errno: error)) }
            let holder = Self.holder(address, length: length)
            guard let holder, isTouchdUser(holder.uid) else {
                return .failure(.untrusted(seat: seat, pid: holder?.pid, uid: holder?.uid))
            }
            return .failure(.held(seat: seat, pid: holder.pid, uid: holder.uid))
        }
        guard listen(descriptor, 4) == 0 else {
            let error = errno
            close(descriptor)
            return .failure(.system(seat: seat, call: "listen", errno: error))
        }
        return .success(InstanceLock(fileDescriptor: descriptor))
    }

    /// Whether a lock held by `uid` is another touchd's: root, this process's own user, or the user named `touchd`
    /// (the shipped unit's dynamic user, seen from a `touchd run` started by hand).
    static func isTouchdUser(_ uid: uid_t, name: (uid_t) -> String? = userName) -> Bool {
        uid == 0 || uid == geteuid() || name(uid) == "touchd"
    }

    /// The name of `uid` (getpwuid_r), or nil.
    static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name
        else { return nil }
        return String(cString: name)
    }

    /// Accepts and closes the probes of instances that were refused; never blocks.
    func drain() {
        while true {
            let connection = Glibc.accept(fileDescriptor, nil, nil)
            if connection >= 0 {
                close(connection)
                continue
            }
            if errno == EINTR { continue }
            return
        }
    }

    /// The pid and uid of whoever listens on the lock's name (`SO_PEERCRED` of a connection to it), or nil when it
    /// does not answer at once.
    private static func holder(_ address: sockaddr_un, length: socklen_t) -> (pid: pid_t, uid: uid_t)? {
        let descriptor = socket(
            AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var peer = address
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard connected == 0 else { return nil }
        let credentials = ControlServerLoop.credentials(descriptor)
        guard credentials.pid > 0 else { return nil }
        return (credentials.pid, credentials.uid)
    }
}
