import Glibc

/// The configuration file as `touchd check` and `touchd run` load it: the loader's result plus a check of who may
/// change the file (fault-cases.md C5).
///
/// Whoever can write the configuration decides what touchd does, including the commands it runs, often as root. So
/// the file should be owned by root or by the user touchd runs as, and be writable by nobody else. touchd warns
/// otherwise, and refuses the file under `--strict-permissions`. `simulate` and `render` do not check: they run
/// nothing as the daemon's user.
///
/// The owner and mode are read with `stat` just before the loader opens the file; a file swapped in between is the
/// kind of change this check cannot stop anyway (whoever can swap it can write the directory).
enum ConfigurationFile {
    /// Loads `path`. A problem with the file's owner or mode is a warning on the configuration, or, when
    /// `strictPermissions` is set, an error that fails the load (reported with any others, before them).
    static func load(path: String, strictPermissions: Bool) -> Result<Configuration, ConfigurationError> {
        let problem = permissionProblem(path: path).map {
            ConfigurationProblem(severity: strictPermissions ? .error : .warning, $0)
        }
        switch ConfigurationLoader.load(path: path) {
        case .success(var configuration):
            guard let problem else { return .success(configuration) }
            if strictPermissions {
                return .failure(ConfigurationError(path: path, problems: [problem], warnings: configuration.warnings))
            }
            configuration.warnings.insert(problem, at: 0)
            return .success(configuration)
        case .failure(var error):
            if let problem {
                if strictPermissions { error.problems.insert(problem, at: 0) } else { error.warnings.append(problem) }
            }
            return .failure(error)
        }
    }

    /// What is wrong with the owner or mode of the file at `path` (links followed), or nil; nil too when the file
    /// cannot be examined, which the loader reports in its own words.
    static func permissionProblem(path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return permissionProblem(path: path, owner: status.st_uid, mode: status.st_mode, user: geteuid())
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
