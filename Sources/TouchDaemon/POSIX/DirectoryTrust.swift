import Glibc

/// Who, besides root and touchd's user, could put another file at a path: the directories its lookup goes through.
/// Whoever may change a directory may rename any entry in it away and another into its place,
/// whatever the entry's own owner and mode, unless the directory is sticky (/tmp): then only the entry's owner, the
/// directory's owner and root may rename or remove it.
enum DirectoryTrust {
    /// One directory on the way that someone else could change, or a link there that someone else could re-point.
    struct Finding: Equatable, Sendable, CustomStringConvertible {
        enum Kind: Equatable, Sendable {
            case directory
            /// A symbolic link in `directory`, a sticky directory anyone can write to, owned by neither root, the user
            /// nor the directory's owner: its owner may remove it and link elsewhere (the case fs.protected_symlinks
            /// guards).
            case link(in: String)
        }

        var kind: Kind
        var path: String
        var owner: uid_t
        var mode: mode_t
        /// What is wrong, as words that follow "is": `writable by its group and others`, `not owned by root`.
        var reasons: [String]
        /// The commands that fix it, joined with "and".
        var fixes: [String]

        /// `the directory /srv/kiosk is writable by others (owner uid 0, mode 0777)`.
        var description: String {
            switch kind {
            case .directory:
                "the directory \(path) is \(reasons.joined(separator: " and ")) (owner uid \(owner), mode "
                    + "\(ExecutableProgram.mode(mode)))"
            case .link(let directory):
                "the symbolic link \(path) belongs to uid \(owner) and sits in \(directory), a sticky directory anyone "
                    + "can write to, so its owner can point it elsewhere"
            }
        }

        /// `chmod go-w /srv/kiosk and chown root /srv/kiosk`.
        var fix: String { fixes.joined(separator: " and ") }
    }

    /// The directories (and links on the way) of the lookup of `path` that someone other than root or `user` could
    /// change, outermost first: each one that another user owns, or that its group or others may write to without the
    /// sticky bit, and each link in a sticky world-writable directory that belongs to someone else. `path` itself is
    /// not examined, only what leads to it; what cannot be examined (a missing directory) is skipped.
    static func findings(leadingTo path: String, user: uid_t) -> [Finding] {
        var findings: [Finding] = []
        for directory in directories(leadingTo: path) {
            var status = stat()
            guard lstat(directory, &status) == 0 else { continue }
            if status.st_mode & S_IFMT == S_IFLNK {
                let parent = parentDirectory(directory)
                var container = stat()
                guard stat(parent, &container) == 0,
                    container.st_mode & (S_ISVTX | S_IWOTH) == S_ISVTX | S_IWOTH,
                    status.st_uid != 0, status.st_uid != user, status.st_uid != container.st_uid
                else { continue }
                findings.append(
                    Finding(
                        kind: .link(in: parent), path: directory, owner: status.st_uid, mode: status.st_mode,
                        reasons: [], fixes: ["name the file by a path without the link"]))
                continue
            }
            guard status.st_mode & S_IFMT == S_IFDIR else { continue }
            var reasons: [String] = []
            var fixes: [String] = []
            let writers = [(S_IWGRP, "its group"), (S_IWOTH, "others")].filter { status.st_mode & $0.0 != 0 }.map(\.1)
            if !writers.isEmpty && status.st_mode & S_ISVTX == 0 {
                reasons.append("writable by \(writers.joined(separator: " and "))")
                fixes.append("chmod go-w \(directory)")
            }
            if status.st_uid != 0 && status.st_uid != user {
                reasons.append(user == 0 ? "not owned by root" : "owned by neither root nor touchd's uid \(user)")
                fixes.append("chown root \(directory)")
            }
            guard !reasons.isEmpty else { continue }
            findings.append(
                Finding(
                    kind: .directory, path: directory, owner: status.st_uid, mode: status.st_mode, reasons: reasons,
                    fixes: fixes))
        }
        return findings
    }

    /// The directories a lookup of `path` goes through, each once, outermost first: the ancestors of `path` as written
    /// (a relative path from the working directory), then those of the directory it resolves to when links lead
    /// elsewhere.
    static func directories(leadingTo path: String) -> [String] {
        var absolute = path
        if !path.hasPrefix("/"), let directory = getcwd(nil, 0) {
            absolute = String(cString: directory) + "/" + path
            free(directory)
        }
        var paths = [absolute]
        if let resolved = realpath(parentDirectory(absolute), nil) {
            paths.append(String(cString: resolved) + "/-")
            free(resolved)
        }
        return ancestors(of: paths)
    }

    /// The directories above each of `paths` (absolute), each once, outermost first and in the order of `paths`: "/",
    /// then every prefix that ends before a path's last component.
    static func ancestors(of paths: [String]) -> [String] {
        var result: [String] = []
        for path in paths {
            var directory = "/"
            if !result.contains(directory) { result.append(directory) }
            for component in path.split(separator: "/").dropLast() {
                directory += (directory == "/" ? "" : "/") + component
                if !result.contains(directory) { result.append(directory) }
            }
        }
        return result
    }

    /// The directory part of an absolute path: `/` for `/x`.
    static func parentDirectory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
