import Glibc

/// Writes a command's output file (`touchd render --output`) without harming whatever already sits at the path.
///
/// `-` is standard output. Any other path must name a regular file or nothing:
/// - a symbolic link is followed to the regular file it names; a link to nothing is refused rather than creating a
///   file wherever it points (the classic link planted in a shared directory);
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
        if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK {
            // realpath resolves every link on the way, so the rename below lands on the file itself, not on the link.
            guard let resolved = realpath(path, nil) else {
                return .failure(
                    Failure(
                        description:
                            "refusing to write: it is a symbolic link to nothing (\(message(errno))); render does not "
                            + "create files through links"))
            }
            target = String(cString: resolved)
            free(resolved)
            through = "it is a symbolic link to \(target), "
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
