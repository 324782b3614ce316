import Glibc

/// Writes a command's output file (`touchd render --output`) without harming whatever already sits at the path.
///
/// `-` is standard output. Any other path must name a regular file or nothing:
/// - a symbolic link is followed to the regular file it names; a link to nothing is refused rather than creating a
///   file wherever it points (the classic link planted in a shared directory), and so is any link on the way that the
///   kernel's fs.protected_symlinks rule would not follow (someone else's link in /tmp), whatever the sysctl says;
/// - a device, FIFO, socket or directory is refused before it is opened: opening some devices has effects of its own,
///   a FIFO blocks, and replacing one (as root, `--output /dev/full` used to replace the device node with a file)
///   breaks the system.
///
/// The bytes go to a new temporary file in the target's directory, which is then renamed over the target. A reader
/// never sees half a file, a failed write (a full disk) leaves the old file as it was, and the rename replaces a
/// directory entry instead of writing into whatever a racing process put at the path. The replaced file keeps its
/// permission bits (and, when touchd runs as root, its owner); a new file gets 0666 minus the umask, as a shell
/// redirection would.
enum OutputFile {
    /// Why nothing was written; `description` completes "PATH: error: ".
    struct Failure: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// Where the bytes went.
    enum Destination: Equatable {
        case standardOutput
        /// The regular file written: the path itself, or the file a symbolic link at the path names.
        case file(String)
    }

    /// Writes `bytes` to `path` as described on the type.
    static func write(_ bytes: [UInt8], to path: String) -> Result<Destination, Failure> {
        if path == "-" {
            if let error = writeAll(bytes, to: STDOUT_FILENO) {
                return .failure(Failure(description: "cannot write to standard output: \(message(error))"))
            }
            return .success(.standardOutput)
        }
        guard !path.isEmpty, !path.utf8.contains(0) else {
            return .failure(Failure(description: "not a file name"))
        }
        var status = stat()
        var target = path
        var through = ""
        // Links are followed here, one at a time, rather than by realpath or the kernel: realpath reads them with
        // readlink, which the kernel's fs.protected_symlinks never checks, so a link planted in /tmp made root's
        // render replace whatever it named. Each link is checked against that rule instead.
        let isLink = lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK
        switch resolve(path) {
        case .failure(.refused(let failure)):
            return .failure(failure)
        case .failure(.lookup(let error)):
            guard isLink else { break }  // nothing through a link: the write below reports it in its own words
            return .failure(
                Failure(
                    description:
                        "refusing to write: it is a symbolic link to nothing (\(message(error))); render does not "
                        + "create files through links"))
        case .success(let resolution):
            if resolution.followedLink { target = resolution.path }
            if isLink {
                guard resolution.exists else {
                    return .failure(
                        Failure(
                            description:
                                "refusing to write: it is a symbolic link to nothing (\(message(ENOENT))); render does "
                                + "not create files through links"))
                }
                through = "it is a symbolic link to \(target), "
            }
        }
        var existing: stat?
        if stat(target, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFREG else {
                return .failure(
                    Failure(
                        description:
                            "refusing to write: \(through.isEmpty ? "it is " : through)\(kind(of: status.st_mode)); "
                            + "render writes regular files only (give - for standard output)"))
            }
            existing = status
        } else if errno != ENOENT {
            return .failure(Failure(description: "cannot write: \(message(errno))"))
        } else if target.hasSuffix("/") {
            return .failure(Failure(description: "cannot write: the path names a directory"))
        }
        return replace(target, with: bytes, keeping: existing).map { .file(target) }
    }

    /// Why ``resolve(_:)`` stopped.
    private enum ResolutionFailure: Error {
        /// A link the kernel's fs.protected_symlinks rule would not follow.
        case refused(Failure)
        /// A directory on the way is missing or unreadable, or links loop: the errno.
        case lookup(Int32)
    }

    /// Where a path leads once every symbolic link on the way is followed.
    private struct Resolution {
        /// The path with no links left (absolute when any was followed).
        var path: String
        var followedLink: Bool
        /// Whether the last component exists; a missing one is where a new file goes.
        var exists: Bool
    }

    /// Follows the symbolic links of `path` as the kernel's path walk does, applying the rule of fs.protected_symlinks
    /// (proc_sys_fs(5)) to each one whatever the sysctl says: a link in a sticky world-writable directory (/tmp) is
    /// followed only when it belongs to the caller (the effective uid) or to the directory's owner. Anyone can put a
    /// link in /tmp; only those two can be trusted to have chosen where it points.
    private static func resolve(_ path: String) -> Result<Resolution, ResolutionFailure> {
        var resolved = ""  // no links in it; "" is the root directory
        if !path.hasPrefix("/") {
            guard let directory = getcwd(nil, 0) else { return .failure(.lookup(errno)) }
            resolved = String(cString: directory)
            free(directory)
            if resolved == "/" { resolved = "" }
        }
        var pending = path.split(separator: "/").reversed().map(String.init)
        var followedLink = false
        var links = 0
        while let name = pending.popLast() {
            if name == "." { continue }
            if name == ".." {
                resolved = resolved.lastIndex(of: "/").map { String(resolved[..<$0]) } ?? ""
                continue
            }
            let candidate = resolved + "/" + name
            var status = stat()
            guard lstat(candidate, &status) == 0 else {
                let error = errno
                if error == ENOENT && pending.isEmpty {
                    return .success(
                        Resolution(path: followedLink ? candidate : path, followedLink: followedLink, exists: false))
                }
                return .failure(.lookup(error))
            }
            guard status.st_mode & S_IFMT == S_IFLNK else {
                resolved = candidate
                continue
            }
            links += 1
            // The kernel's own limit (MAXSYMLINKS) on the links one lookup follows.
            guard links <= 40 else { return .failure(.lookup(ELOOP)) }
            let parent = resolved.isEmpty ? "/" : resolved
            if let refusal = protectedLinkProblem(
                link: candidate, owner: status.st_uid, directory: parent, user: geteuid())
            {
                return .failure(.refused(Failure(description: refusal)))
            }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink(candidate, &buffer, buffer.count - 1)
            guard length >= 0 else { return .failure(.lookup(errno)) }
            let destination = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if destination.hasPrefix("/") { resolved = "" }
            pending += destination.split(separator: "/").reversed().map(String.init)
            followedLink = true
        }
        return .success(Resolution(path: followedLink ? resolved : path, followedLink: followedLink, exists: true))
    }

    /// Why the link at `link`, owned by `owner`, in `directory`, is not to be followed by `user`, or nil: the rule of
    /// fs.protected_symlinks (a sticky world-writable directory, a link owned by neither `user` nor the directory's
    /// owner).
    static func protectedLinkProblem(link: String, owner: uid_t, directory: String, user: uid_t) -> String? {
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & (S_ISVTX | S_IWOTH) == S_ISVTX | S_IWOTH,
            owner != user, owner != status.st_uid
        else { return nil }
        return "refusing to follow the symbolic link \(link): it belongs to uid \(owner), and sits in \(directory), a "
            + "sticky directory anyone can write to (mode \(ExecutableProgram.mode(status.st_mode)), owner uid "
            + "\(status.st_uid)); such a link is followed only when it belongs to the user writing (uid \(user)) or to "
            + "the directory's owner, the rule of the kernel's fs.protected_symlinks, since anyone can plant one there "
            + "pointing at any file; remove the link or write elsewhere"
    }

    /// Writes a temporary file next to `target` and renames it over `target`.
    private static func replace(
        _ target: String, with bytes: [UInt8], keeping existing: stat?
    ) -> Result<Void, Failure> {
        let directory = target.lastIndex(of: "/").map { String(target[...$0]) } ?? "./"
        // A new file is made 0666 and the kernel takes the umask away, as for a shell redirection; touchd never reads
        // the umask, which means setting it for every thread of the process. A replacement starts 0600 and gets the
        // replaced file's mode below.
        let descriptor: Int32
        let temporary: String
        switch createTemporary(in: directory, mode: existing == nil ? 0o666 : 0o600) {
        case .success(let created): (descriptor, temporary) = created
        case .failure(let failure): return .failure(failure)
        }
        func fail(_ error: Int32) -> Result<Void, Failure> {
            unlink(temporary)
            return .failure(Failure(description: "cannot write: \(message(error))"))
        }
        var error = writeAll(bytes, to: descriptor)
        if error == nil, let existing {
            // Only root can give a file away; anyone else's replacement is theirs, as with any editor.
            if geteuid() == 0, existing.st_uid != 0 || existing.st_gid != 0 {
                _ = fchown(descriptor, existing.st_uid, existing.st_gid)
            }
            if fchmod(descriptor, existing.st_mode & 0o7777) != 0 { error = errno }
        }
        // close reports delayed write errors of some file systems (NFS); they count as failures too.
        if close(descriptor) != 0, error == nil { error = errno }
        if let error { return fail(error) }
        guard rename(temporary, target) == 0 else { return fail(errno) }
        return .success(())
    }

    /// Creates a temporary file in `directory` under a name of its own (`O_EXCL`, trying again on a name taken), with
    /// `mode` (less the umask) and close-on-exec. A fixed short prefix: the target's own name could make the temporary
    /// one longer than NAME_MAX.
    private static func createTemporary(
        in directory: String, mode: mode_t
    ) -> Result<(descriptor: Int32, path: String), Failure> {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        for _ in 0..<100 {
            let suffix = (0..<8).map { _ in letters[Int.random(in: 0..<letters.count)] }
            let path = directory + ".touchd-output-" + String(decoding: suffix, as: UTF8.self)
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
            if descriptor >= 0 { return .success((descriptor, path)) }
            guard errno == EEXIST else { return .failure(Failure(description: "cannot write: \(message(errno))")) }
        }
        return .failure(Failure(description: "cannot write: no free name for a temporary file in \(directory)"))
    }

    /// Writes every byte, retrying short writes and EINTR; the errno of a failure, else nil.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        do throws(SystemCallError) {
            try TouchDaemon.writeAll(bytes, to: descriptor)
            return nil
        } catch {
            return error.errno
        }
    }

    /// A file type, as the refusal names it.
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }

    private static func message(_ error: Int32) -> String { String(cString: strerror(error)) }
}
