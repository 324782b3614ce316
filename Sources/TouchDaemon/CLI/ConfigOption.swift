import ArgumentParser

/// `--config PATH`, shared by the subcommands that read a configuration.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The configuration file.", valueName: "path"))
    var config: String = "/etc/touchd/touchd.toml"

    /// Loads the configuration as `simulate` and `render` need it (no check of the file's owner and mode, warnings
    /// not printed), or prints the problems to standard error and exits 78 (EX_CONFIG).
    func load() throws -> Configuration {
        try loaded(ConfigurationLoader.load(path: config))
    }

    /// Loads the configuration as `touchd check` does: the file's owner and mode are checked too
    /// (``ConfigurationFile``), and every warning goes to standard error. Exits 78 as ``load()`` does.
    func loadChecked(_ permissions: PermissionsOption) throws -> Configuration {
        let configuration = try loaded(
            ConfigurationFile.load(path: config, strictPermissions: permissions.strictPermissions))
        for warning in configuration.warnings { printError(warning.formatted(path: config)) }
        return configuration
    }

    private func loaded(_ result: Result<Configuration, ConfigurationError>) throws -> Configuration {
        switch result {
        case .success(let configuration):
            return configuration
        case .failure(let error):
            for line in error.warningLines + error.reportedLines { printError(line) }
            throw ExitCode(ExitStatus.configuration)
        }
    }
}

/// `--strict-permissions`, shared by `check` and `run`.
struct PermissionsOption: ParsableArguments {
    @Flag(
        help: """
            Refuse a configuration file that others can change (group- or world-writable, owned by neither root \
            nor touchd's user, or in a directory that is) instead of warning about it.
            """)
    var strictPermissions = false
}

/// Exit statuses decided at the command-line edge.
enum ExitStatus {
    /// sysexits.h EX_CONFIG: the configuration is invalid.
    static let configuration: Int32 = 78
    /// sysexits.h EX_DATAERR: an input file (a touch script, a recording) is invalid.
    static let data: Int32 = 65
    /// sysexits.h EX_NOINPUT: an input file (render's background) cannot be opened or read.
    static let noInput: Int32 = 66
    /// sysexits.h EX_CANTCREAT: an output file cannot be written.
    static let cannotCreate: Int32 = 73
    /// sysexits.h EX_TEMPFAIL: another `touchd run` holds the seat; under systemd the unit tries again later.
    static let anotherInstance: Int32 = 75
}
