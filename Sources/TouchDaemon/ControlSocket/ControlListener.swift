import Glibc

/// Why the control socket could not be set up; `description` says what was found and what was expected.
struct ControlListenerError: Error, Hashable, Sendable, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Obtains the control socket's listening socket (docs/control-socket.md, "Where it is"): the one systemd passed
/// (socket activation), or one touchd creates itself (standalone). Every descriptor it returns is non-blocking and
/// close-on-exec.
enum ControlListener {
    /// A listening `AF_UNIX` stream socket.
    struct Socket: Sendable {
        let fileDescriptor: Int32
        /// The path it is bound to.
        let path: String
        /// Whether systemd passed it (the file is then systemd's, never removed by touchd).
        let activated: Bool
        /// The socket file as touchd created it, so `close()` removes it only if it is still the same file.
        let identity: FileIdentity?

        /// Closes the socket and, in standalone mode, removes the socket file if it is still the one touchd
        /// created (another touchd may have replaced it).
        func close() {
            _ = Glibc.close(fileDescriptor)
            guard !activated, let identity, let current = ControlListener.fileIdentity(path) else { return }
            if current == identity { unlink(path) }
        }
    }

    /// The longest path `sun_path` holds with its terminating NUL.
    static let maxPathBytes = 107
    /// Connections the kernel queues before `accept`.
    static let backlog: Int32 = 64

    // MARK: - Socket activation

    /// systemd's socket-activation variables, as touchd found them.
    struct Activation: Sendable {
        let listenPID: String?
        let listenFDs: String?
    }

    /// Takes `LISTEN_PID` and `LISTEN_FDS` out of the environment, and `LISTEN_FDNAMES` with them, so that no child
    /// inherits them. Call it before any thread starts: `unsetenv` is not safe while another thread may read the
    /// environment (the Swift runtime and libc read it lazily).
    static func takeActivation() -> Activation {
        let activation = Activation(listenPID: environment("LISTEN_PID"), listenFDs: environment("LISTEN_FDS"))
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        return activation
    }

    /// The socket systemd passed, when `LISTEN_PID` was this process and `LISTEN_FDS` was set; nil otherwise. An
    /// error means a deployment mistake (touchd exits 78).
    static func activated(_ activation: Activation) -> Result<Socket, ControlListenerError>? {
        inherited(
            listenPID: activation.listenPID, listenFDs: activation.listenFDs, processID: getpid(), descriptor: 3)
    }

    /// ``activated(_:)`` with the process id given: `descriptor` stands for fd 3 (tests pass another one).
    static func inherited(
        listenPID: String?, listenFDs: String?, processID: pid_t, descriptor: Int32
    ) -> Result<Socket, ControlListenerError>? {
        guard let listenPID, let listenFDs, pid_t(listenPID) == processID else { return nil }
        guard let count = Int(listenFDs), count >= 0 else {
            return .failure(ControlListenerError(message: "LISTEN_FDS is not a number: \(listenFDs)"))
        }
        guard count == 1 else {
            return .failure(
                ControlListenerError(
                    message: "systemd passed \(count) file descriptors; touchd takes exactly one, the control socket"))
        }
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        guard let domain = option(SO_DOMAIN) else {
            return .failure(
                ControlListenerError(
                    message: "the passed file descriptor \(descriptor) is not a socket: \(UnixSocket.describe(errno))"))
        }
        guard domain == AF_UNIX else {
            return .failure(
                ControlListenerError(
                    message: "the passed socket is of address family \(domain), not AF_UNIX (\(AF_UNIX))"))
        }
        guard let type = option(SO_TYPE), type == Int32(SOCK_STREAM.rawValue) else {
            return .failure(
                ControlListenerError(
                    message: "the passed socket is not a stream socket (SOCK_STREAM); check ListenStream= in the unit"))
        }
        guard option(SO_ACCEPTCONN) == 1 else {
            return .failure(ControlListenerError(message: "the passed socket is not listening"))
        }
        guard let path = boundPath(descriptor) else {
            return .failure(
                ControlListenerError(message: "the passed socket is not bound to a path (unnamed or abstract)"))
        }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0,
            fcntl(descriptor, F_SETFD, FD_CLOEXEC) == 0
        else {
            return .failure(
                ControlListenerError(message: "cannot set the passed socket's flags: \(UnixSocket.describe(errno))"))
        }
        return .success(Socket(fileDescriptor: descriptor, path: path, activated: true, identity: nil))
    }

    // MARK: - Standalone

    /// Creates the socket at `path` (docs/control-socket.md, "Standalone"): the directory 0750 if missing (refused
    /// if it exists but is not a directory owned by us or root, or is writable by group or others, and refused as well
    /// when a directory above it is owned by another user or writable by group or others without the sticky bit), a
    /// leftover socket that nobody answers removed (anything else at the path refused), made 0660 before it is bound,
    /// its group set to `group` when that group exists. `warn` hears about what did not stop the socket from
    /// working (a missing group, a failed chown).
    static func create(
        path: String, group: String?, warn: (String) -> Void = { _ in }
    ) -> Result<Socket, ControlListenerError> {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else {
            return .failure(ControlListenerError(message: "the control socket path must be absolute: \(path)"))
        }
        guard !bytes.contains(0) else {
            return .failure(ControlListenerError(message: "the control socket path contains a NUL byte"))
        }
        guard bytes.count <= maxPathBytes, let resolved = UnixSocket.address(bytes) else {
            return .failure(
                ControlListenerError(
                    message: "the control socket path is \(bytes.count) bytes long; at most \(maxPathBytes) fit"))
        }
        let directory = directoryName(path)
        // Every directory above the socket's own: whoever may change one of them may move the socket's directory
        // aside and put one of their own, with their socket, in its place.
        if let finding = DirectoryTrust.findings(leadingTo: directory, user: geteuid()).first {
            return .failure(
                ControlListenerError(
                    message: "\(finding): whoever can change it can replace the control socket; refusing to use it"))
        }
        if let problem = prepareDirectory(directory) { return .failure(problem) }
        if let problem = clearPath(path) { return .failure(problem) }

        let descriptor = socket(
            AF_UNIX, Int32(bitPattern: SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return .failure(ControlListenerError(message: "cannot create a socket: \(UnixSocket.describe(errno))"))
        }
        // The mode goes on the socket before `bind`, which creates the file with it less the umask: the file is never
        // more open than 0660, not even between `bind` and the chmod below.
        guard fchmod(descriptor, 0o660) == 0 else {
            let error = errno
            Glibc.close(descriptor)
            return .failure(
                ControlListenerError(message: "cannot set the mode of the socket: \(UnixSocket.describe(error))"))
        }
        var address = resolved.address
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, resolved.length) }
        }
        guard bound == 0 else {
            let error = errno
            Glibc.close(descriptor)
            return .failure(ControlListenerError(message: "cannot bind \(path): \(UnixSocket.describe(error))"))
        }
        // 0660 before `listen`, in case the umask took bits away at `bind` (a service's UMask=0077 would leave the
        // group out): until then nobody can connect. (Not by setting the umask around `bind`: the umask is the
        // process's, and a file that another thread created, or a command that the runner started, in that moment got
        // 0117 instead of its own: the tests saw directories made 0660 by their neighbours.) Without following a
        // link: every directory on the way was checked above, so only root or touchd could have put one there.
        guard fchmodat(AT_FDCWD, path, 0o660, AT_SYMLINK_NOFOLLOW) == 0 else {
            let error = errno
            Glibc.close(descriptor)
            unlink(path)
            return .failure(
                ControlListenerError(message: "cannot set the mode of \(path): \(UnixSocket.describe(error))"))
        }
        guard listen(descriptor, backlog) == 0 else {
            let error = errno
            Glibc.close(descriptor)
            unlink(path)
            return .failure(ControlListenerError(message: "cannot listen on \(path): \(UnixSocket.describe(error))"))
        }
        if let group {
            if let gid = groupID(named: group) {
                if lchown(path, uid_t.max, gid) != 0 {
                    warn("cannot set the group of \(path) to \(group): \(UnixSocket.describe(errno))")
                }
            } else {
                warn("group \(group) does not exist; \(path) keeps touchd's group")
            }
        }
        // After chown, which changes the file's change time.
        let identity = fileIdentity(path)
        return .success(Socket(fileDescriptor: descriptor, path: path, activated: false, identity: identity))
    }

    /// Creates the directory (0750) when it is missing; checks its owner and mode either way.
    private static func prepareDirectory(_ directory: String) -> ControlListenerError? {
        var status = stat()
        if lstat(directory, &status) != 0 {
            let error = errno
            guard error == ENOENT else {
                return ControlListenerError(message: "cannot inspect \(directory): \(UnixSocket.describe(error))")
            }
            if mkdir(directory, 0o750) != 0 && errno != EEXIST {
                return ControlListenerError(message: "cannot create \(directory): \(UnixSocket.describe(errno))")
            }
            guard lstat(directory, &status) == 0 else {
                return ControlListenerError(message: "cannot inspect \(directory): \(UnixSocket.describe(errno))")
            }
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            return ControlListenerError(message: "\(directory) exists and is not a directory; refusing to use it")
        }
        guard status.st_uid == geteuid() || status.st_uid == 0 else {
            return ControlListenerError(
                message: "\(directory) is owned by uid \(status.st_uid), neither touchd (\(geteuid())) nor root; "
                    + "refusing to use it")
        }
        if let shared = sharedDirectoryProblem(directory, mode: status.st_mode) {
            return ControlListenerError(message: shared + "; refusing to use it")
        }
        return nil
    }

    /// `directory is writable by group or others (mode 1777)` when `mode` lets others than its owner write there:
    /// another user could then put a socket of their own at the path. nil otherwise.
    static func sharedDirectoryProblem(_ directory: String, mode: mode_t) -> String? {
        guard mode & 0o022 != 0 else { return nil }
        return "\(directory) is writable by group or others (mode \(String(mode & 0o7777, radix: 8)))"
    }

    /// What ``create(path:group:warn:)`` will refuse about the directory of `path` as it is now, for `touchd check`:
    /// an existing directory that others can write to (as /tmp). nil when there is nothing to say (a directory that
    /// does not exist yet is created 0750).
    static func directoryProblem(ofSocket path: String) -> String? {
        let directory = directoryName(path)
        var status = stat()
        guard lstat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return nil }
        return sharedDirectoryProblem(directory, mode: status.st_mode)
    }

    /// Removes a socket file nobody listens on (left over from a crash); refuses a live socket or any other file.
    private static func clearPath(_ path: String) -> ControlListenerError? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            let error = errno
            return error == ENOENT
                ? nil : ControlListenerError(message: "cannot inspect \(path): \(UnixSocket.describe(error))")
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            return ControlListenerError(message: "\(path) exists and is not a socket; refusing to replace it")
        }
        switch UnixSocket.connect(to: path, type: .stream) {
        case .connected(let descriptor), .inProgress(let descriptor):
            Glibc.close(descriptor)
            return ControlListenerError(message: "another process is listening on \(path)")
        case .failed(EAGAIN):
            // The backlog is full: someone listens and does not accept.
            return ControlListenerError(message: "another process is listening on \(path)")
        case .failed(ECONNREFUSED), .failed(ENOENT):
            guard unlink(path) == 0 || errno == ENOENT else {
                return ControlListenerError(
                    message: "cannot remove the stale socket \(path): \(UnixSocket.describe(errno))")
            }
            return nil
        case .failed(let error):
            return ControlListenerError(
                message: "cannot tell whether \(path) is in use: \(UnixSocket.describe(error)); refusing to replace it")
        }
    }

    // MARK: - Helpers

    /// The group id of `name` (getgrnam_r); nil when there is no such group.
    static func groupID(named name: String) -> gid_t? {
        var size = 1024
        while size <= 1 << 20 {
            var group = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: size)
            let status = getgrnam_r(name, &group, &buffer, size, &result)
            if status == ERANGE {
                size *= 2
                continue
            }
            guard status == 0, result != nil else { return nil }
            return group.gr_gid
        }
        return nil
    }

    /// The path a socket is bound to; nil for an unnamed or abstract one.
    static func boundPath(_ descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        let offset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX), Int(length) > offset else { return nil }
        let bytes = withUnsafeBytes(of: &address.sun_path) { raw in
            Array(raw.prefix(min(raw.count, Int(length) - offset)))
        }
        guard let first = bytes.first, first != 0 else { return nil }
        let path = bytes.prefix { $0 != 0 }
        return String(validating: path, as: UTF8.self)
    }

    /// What tells one file apart from a later one at the same path: an inode number can be reused at once, so the
    /// change time goes with it.
    struct FileIdentity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        var changeSeconds: Int
        var changeNanoseconds: Int
    }

    static func fileIdentity(_ path: String) -> FileIdentity? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return FileIdentity(
            device: UInt64(status.st_dev), inode: UInt64(status.st_ino), changeSeconds: status.st_ctim.tv_sec,
            changeNanoseconds: status.st_ctim.tv_nsec)
    }

    private static func directoryName(_ path: String) -> String {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash > 0 else { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
