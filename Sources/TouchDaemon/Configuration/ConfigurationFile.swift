import Glibc

/// The configuration file as `touchd check` and `touchd run` load it: the loader's result plus a check of who may
/// change the file (fault-cases.md C5).
///
/// Whoever can write the configuration decides what touchd does, including the commands it runs, often as root. So
/// the file should be owned by root or by the user touchd runs as, and be writable by nobody else; and so should every
/// directory on its path, since whoever may change a directory may rename another file into the configuration's
/// place (a sticky directory such as /tmp lets only an entry's owner do that). touchd warns otherwise, and refuses the
/// file under `--strict-permissions`. `simulate` and `render` do not check: they run nothing as the daemon's user.
///
/// The file's owner and mode are those of the descriptor the loader reads (`fstat`), not of a `stat` of the path just
/// before it is opened, which a file swapped in between would have passed. The directories are examined
/// by path after that: someone who could swap them is what the check reports.
enum ConfigurationFile {
    /// Loads `path`. A problem with the owner or mode of the file or of a directory on its path is a warning on the
    /// configuration, or, when `strictPermissions` is set, an error that fails the load (reported with any others,
    /// before them).
    static func load(path: String, strictPermissions: Bool) -> Result<Configuration, ConfigurationError> {
        var messages: [String] = []
        let loaded = ConfigurationLoader.load(path: path) { status in
            messages = permissionProblems(path: path, status: status, user: geteuid())
        }
        let problems = messages.map {
            ConfigurationProblem(severity: strictPermissions ? .error : .warning, $0)
        }
        switch loaded {
        case .success(var configuration):
            guard !problems.isEmpty else { return .success(configuration) }
            if strictPermissions {
                return .failure(ConfigurationError(path: path, problems: problems, warnings: configuration.warnings))
            }
            configuration.warnings.insert(contentsOf: problems, at: 0)
            return .success(configuration)
        case .failure(var error):
            if strictPermissions {
                error.problems.insert(contentsOf: problems, at: 0)
            } else {
                error.warnings.append(contentsOf: problems)
            }
            return .failure(error)
        }
    }

    /// What is wrong with the owner or mode of the file at `path`, whose status (`fstat` of the descriptor opened) is
    /// `status`, and of the directories its lookup goes through, when touchd runs as `user`; the file's problem first.
    static func permissionProblems(path: String, status: stat, user: uid_t) -> [String] {
        let file = permissionProblem(path: path, owner: status.st_uid, mode: status.st_mode, user: user)
        let directories = DirectoryTrust.findings(leadingTo: path, user: user).map {
            "\($0): whoever can change it can put another file in the configuration's place, and so decides what "
                + "touchd does, including the commands it runs; \($0.fix)"
        }
        return (file.map { [$0] } ?? []) + directories
    }

    /// What is wrong with a file owned by `owner` with `mode` when touchd runs as `user` (its effective uid), or nil:
    /// the message says who owns it, its mode, why that matters and the commands that fix it.
    static func permissionProblem(path: String, owner: uid_t, mode: mode_t, user: uid_t) -> String? {
        var reasons: [String] = []
        var fixes: [String] = []
        let writers = [(S_IWGRP, "its group"), (S_IWOTH, "others")].filter { mode & $0.0 != 0 }.map(\.1)
        if !writers.isEmpty {
            reasons.append("writable by \(writers.joined(separator: " and "))")
            fixes.append("chmod go-w \(path)")
        }
        if owner != 0 && owner != user {
            reasons.append(user == 0 ? "not owned by root" : "owned by neither root nor touchd's uid \(user)")
            fixes.append("chown root \(path)")
        }
        guard !reasons.isEmpty else { return nil }
        return "the file is \(reasons.joined(separator: " and ")) (owner uid \(owner), mode "
            + "\(ExecutableProgram.mode(mode))): whoever can change it decides what touchd does, including the "
            + "commands it runs; \(fixes.joined(separator: " and "))"
    }
}
