import Glibc

/// The socket paths a configuration may give (a socket target's `socket`, `[control_socket] socket`).
enum SocketPath {
    /// The most bytes of a path in sun_path: 108 with the terminating NUL.
    static let maximumBytes = 107

    /// Why `path` cannot name a Unix socket, or nil when it can.
    ///
    /// A NUL comes first, and the path is not quoted then: the kernel reads sun_path up to the first NUL, so
    /// `touchd run` would bind or connect to the part before it, a different file from the one configured.
    static func problem(_ path: String) -> String? {
        if let nul = path.utf8.firstIndex(of: 0) {
            let offset = path.utf8.distance(from: path.utf8.startIndex, to: nul)
            return "the path holds a NUL byte (after \(offset) bytes); a socket path cannot contain NUL, and the "
                + "kernel would cut it short there"
        }
        guard path.hasPrefix("/") else {
            return "'\(path)' is not an absolute path (abstract and relative socket names are refused)"
        }
        guard path.utf8.count <= maximumBytes else {
            return "the path is \(path.utf8.count) bytes; a Unix socket path holds at most \(maximumBytes)"
        }
        guard !path.hasSuffix("/") else {
            return "'\(path)' ends with '/': name the socket file, not a directory"
        }
        return nil
    }

    /// Directories every local user may write to by design: named, so that `touchd check` says the same whatever
    /// machine it runs on.
    static let sharedDirectories = ["/tmp", "/var/tmp", "/dev/shm"]

    /// Why a socket target at `path` (valid by ``problem(_:)``) could reach an impostor, or nil: it lies under a
    /// directory every local user can write to, where anyone can bind the path first, or again after the kiosk
    /// application stops, and receive every action touchd sends with its position.
    static func sharedDirectoryWarning(_ path: String) -> String? {
        guard let shared = sharedDirectory(holding: path) else { return nil }
        return "'\(path)' is under \(shared), a directory every local user can write to: another user can create the "
            + "socket (or its directory) there first, or again after the kiosk application stops, and receive every "
            + "action touchd sends, with its position; put it in a directory only the kiosk's user can write, such as "
            + "/run/kiosk"
    }

    /// The shared directory the socket at `path` would be created in: its own directory when that is shared, else,
    /// while that directory does not exist (anyone could create it), the nearest one above it that does, when that is
    /// shared. Shared: one of ``sharedDirectories``, or any directory others may write to, sticky or not.
    static func sharedDirectory(holding path: String) -> String? {
        var components: [Substring] = []
        for component in path.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        _ = components.popLast()  // the socket's own name
        while !components.isEmpty {
            let directory = "/" + components.joined(separator: "/")
            if sharedDirectories.contains(directory) { return directory }
            var status = stat()
            if stat(directory, &status) == 0 {
                let shared = status.st_mode & S_IFMT == S_IFDIR && status.st_mode & S_IWOTH != 0
                return shared ? directory : nil
            }
            components.removeLast()
        }
        return nil
    }
}
