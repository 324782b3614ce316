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
}
