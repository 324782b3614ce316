import Glibc

/// What touchd can tell about a command target's program at load time: the hint for a relative name, and the
/// warnings about an absolute path (fault-cases.md C13).
///
/// These look at the file system, so they only ever add hints and warnings: the program may be installed, or a
/// directory fixed, after the configuration is written.
enum ExecutableProgram {
    /// Where a program named without its path is looked for, for the hint only (touchd never searches PATH):
    /// systemd's default PATH for services, in its order.
    static let standardDirectories = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    /// The absolute path to suggest for `program`, a path that does not start with `/`: the first standard directory
    /// holding an executable file with the program's base name. Nil when there is none: gluing the name onto a
    /// directory (`bin/true` onto /usr/bin) would suggest a path that does not exist.
    static func suggestion(for program: String, isExecutable: (String) -> Bool = isExecutableFile) -> String? {
        guard !program.hasSuffix("/"), !program.utf8.contains(0),
            let name = program.split(separator: "/").last.map(String.init), name != ".", name != ".."
        else { return nil }
        return standardDirectories.lazy.map { "\($0)/\(name)" }.first(where: isExecutable)
    }

    /// Whether anything is at `path` (following links).
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// A regular file with at least one execute bit (following links).
    static func isExecutableFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && status.st_mode & 0o111 != 0
    }

    /// What may be wrong with the program at the absolute path `program`, one message per problem: missing, not a
    /// regular file, not executable, writable by anyone, or under a directory anyone may write to without the sticky
    /// bit (anyone could then replace the program, and touchd, often root, would run theirs).
    static func warnings(for program: String) -> [String] {
        guard program.hasPrefix("/"), !program.utf8.contains(0) else { return [] }
        var warnings: [String] = []
        var status = stat()
        if stat(program, &status) != 0 {
            let error = errno
            if error == ENOENT || error == ENOTDIR {
                warnings.append("'\(program)' does not exist; the target's commands fail until it is installed")
            } else {
                warnings.append("cannot check '\(program)': \(String(cString: strerror(error)))")
            }
        } else if status.st_mode & S_IFMT != S_IFREG {
            warnings.append("'\(program)' is \(OutputFile.kind(of: status.st_mode)), not a program")
        } else {
            if status.st_mode & 0o111 == 0 {
                warnings.append(
                    "'\(program)' is not executable (mode \(mode(status.st_mode))); chmod +x it, or run it through "
                        + "its interpreter")
            }
            if status.st_mode & S_IWOTH != 0 {
                warnings.append(
                    "'\(program)' is writable by anyone (mode \(mode(status.st_mode))): anyone could change what "
                        + "touchd runs; chmod o-w it")
            }
        }
        for directory in directories(of: program) {
            guard stat(directory, &status) == 0, status.st_mode & S_IWOTH != 0, status.st_mode & S_ISVTX == 0
            else { continue }
            warnings.append(
                "'\(program)' is under \(directory), which anyone can write to (mode \(mode(status.st_mode)), no "
                    + "sticky bit): anyone could replace the program; chmod o-w \(directory), or install the program "
                    + "where only root can write")
        }
        return warnings
    }

    /// The directories a lookup of `path` goes through: its own ancestors, then those of the file it resolves to
    /// when links lead elsewhere (a link's target can sit in a directory the link's own path never names).
    static func directories(of path: String) -> [String] {
        var paths = [path]
        if let resolved = realpath(path, nil) {
            paths.append(String(cString: resolved))
            free(resolved)
        }
        return DirectoryTrust.ancestors(of: paths)
    }

    /// Permission bits as `ls -l`'s numeric form: four octal digits, the sticky and set-id bits first.
    static func mode(_ mode: mode_t) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
