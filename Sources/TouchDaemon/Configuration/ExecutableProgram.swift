import Glibc

/// What touchd can tell about a command target's program at load time: the hint for a relative name.
///
/// This looks at the file system, so it only ever adds a hint: the program may be installed after the configuration
/// is written.
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

    /// A regular file with at least one execute bit (following links).
    static func isExecutableFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && status.st_mode & 0o111 != 0
    }
}
