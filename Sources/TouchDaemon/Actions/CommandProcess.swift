import Glibc
import Subprocess
import SystemPackage

/// How one command run ended.
enum CommandTermination: Hashable, Sendable, CustomStringConvertible {
    /// The program exited with this status.
    case exited(Int32)
    /// A signal ended the program (the signal's number).
    case signalled(Int32)

    var description: String {
        switch self {
        case .exited(let status): "exited with status \(status)"
        case .signalled(let signal): "killed by signal \(signal) (\(Self.signalName(signal)))"
        }
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGHUP: "SIGHUP"
        case SIGINT: "SIGINT"
        case SIGQUIT: "SIGQUIT"
        case SIGILL: "SIGILL"
        case SIGABRT: "SIGABRT"
        case SIGBUS: "SIGBUS"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGSEGV: "SIGSEGV"
        case SIGPIPE: "SIGPIPE"
        case SIGALRM: "SIGALRM"
        case SIGTERM: "SIGTERM"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGSYS: "SIGSYS"
        default: "signal \(signal)"
        }
    }
}

/// Everything one run of a command needs: the exact argv, environment and directory. Built from the target and the
/// delivery on the caller's side, so the spawning code only passes values through.
struct CommandSpec: Hashable, Sendable {
    /// The program's absolute path; `argv[0]` as well.
    var program: String
    /// `argv[1...]`.
    var arguments: [String]
    var environment: [String: String]
    var workingDirectory: String?

    /// The `PATH` every command gets unless its target's `environment` sets another.
    static let path = "/usr/local/bin:/usr/bin:/bin"
    /// The `LANG` every command gets unless its target's `environment` sets another.
    static let language = "C.UTF-8"

    /// The run of `target` for `delivery`: its argv (through `/bin/sh -c` only when `shell = true`) and its
    /// environment, an allow-list built from nothing: `PATH`, `LANG`, the target's `environment` on top, then the
    /// `TOUCHD_*` variables that describe the action. Nothing of touchd's own environment (`NOTIFY_SOCKET`,
    /// `WATCHDOG_USEC`, `LISTEN_FDS`, `JOURNAL_STREAM`, …) reaches the child. Variables whose value is unknown for
    /// this action (`TOUCHD_X`, `TOUCHD_Y`, `TOUCHD_VALUE`, `TOUCHD_DEVICE`) are left out.
    init(target: Configuration.ExecTarget, delivery: ActionDelivery) {
        if target.shell {
            program = "/bin/sh"
            arguments = ["-c"] + target.argv
        } else {
            program = target.argv.first ?? ""
            arguments = Array(target.argv.dropFirst())
        }
        var environment = ["PATH": Self.path, "LANG": Self.language]
        environment.merge(target.environment) { $1 }
        environment["TOUCHD_ACTION"] = delivery.action
        environment["TOUCHD_CONTROL"] = delivery.control
        environment["TOUCHD_EVENT"] = delivery.event
        if let x = delivery.x { environment["TOUCHD_X"] = Self.number(x) }
        if let y = delivery.y { environment["TOUCHD_Y"] = Self.number(y) }
        if let value = delivery.value { environment["TOUCHD_VALUE"] = Self.number(value) }
        if let device = delivery.device { environment["TOUCHD_DEVICE"] = device }
        self.environment = environment
        workingDirectory = target.workingDirectory
    }

    init(program: String, arguments: [String], environment: [String: String], workingDirectory: String? = nil) {
        self.program = program
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// A number as the socket targets' JSON writes it: `1600`, `12.5`.
    private static func number(_ value: Double) -> String {
        var text = ""
        JSONLine.appendNumber(value, to: &text)
        return text
    }
}

/// Where a child's standard output and standard error go. Standard input is always `/dev/null`.
enum CommandOutput: Sendable {
    /// touchd's standard error: the journal under systemd. The child writes to it directly, so touchd never reads
    /// (or buffers) a byte of it, however much the child writes.
    case standardError
    /// `/dev/null`.
    case discarded
}

/// Runs one command with swift-subprocess and waits for it: the only code that talks to the library.
enum CommandProcess {
    enum Outcome: Sendable {
        /// The program ran and ended (after `onSpawn` was called with its process id).
        case ended(CommandTermination)
        /// It could not be started: the program is missing or not executable, the working directory is missing, or
        /// the system is out of processes or descriptors. `errno` is the underlying error when known.
        case notStarted(description: String, errno: Int32?)
    }

    /// Spawns `spec` in a session (and so a process group) of its own, with only descriptors 0–2 (stdin from
    /// `/dev/null`, stdout and stderr as `output` says), calls `onSpawn` with its process id as soon as it runs, and
    /// returns once it has ended and been reaped.
    ///
    /// The caller signals the process group itself (``signalGroup(_:_:)``) for timeouts and stops; the teardown
    /// sequence given to the library only matters if this task is cancelled, which touchd never does.
    static func run(
        _ spec: CommandSpec, output: CommandOutput, killGrace: Duration, onSpawn: @Sendable (Int32) -> Void
    ) async -> Outcome {
        var options = PlatformOptions()
        // setsid(): a new session and process group whose id is the child's pid, so signalling -pid reaches the
        // child and everything it started in its group, and never touchd.
        options.createSession = true
        options.teardownSequence = [.gracefulShutDown(toProcessGroup: true, allowedDurationToNextStep: killGrace)]
        var environment: [Environment.Key: String] = [:]
        for (name, value) in spec.environment {
            guard let key = Environment.Key(rawValue: name) else { continue }
            environment[key] = value
        }
        let configuration = Subprocess.Configuration(
            executable: .path(FilePath(spec.program)),
            arguments: Arguments(spec.arguments),
            environment: .custom(environment),
            workingDirectory: spec.workingDirectory.map { FilePath($0) },
            platformOptions: options)
        do {
            let result: ExecutionResult<Void, FileDescriptorOutput, FileDescriptorOutput>
            switch output {
            case .standardError:
                result = try await Subprocess.run(
                    configuration, input: .none, output: .currentStandardError, error: .currentStandardError
                ) { execution in
                    onSpawn(execution.processIdentifier.value)
                }
            case .discarded:
                let discarded = try await Subprocess.run(
                    configuration, input: .none, output: .discarded, error: .discarded
                ) { execution in
                    onSpawn(execution.processIdentifier.value)
                }
                return .ended(termination(discarded.terminationStatus))
            }
            return .ended(termination(result.terminationStatus))
        } catch let error as SubprocessError {
            let code: Int32? =
                switch error.underlyingError {
                case .some(let errno): errno.rawValue
                case .none: nil
                }
            return .notStarted(description: "\(error)", errno: programError(spec.program) ?? code)
        } catch {
            return .notStarted(description: "\(error)", errno: programError(spec.program))
        }
    }

    /// Why `program` cannot be executed (ENOENT, EACCES, …), or nil when it looks executable. swift-subprocess
    /// reports every failed candidate path as "not found" with ENOENT; this tells a missing program from one that
    /// is not executable, for the log.
    private static func programError(_ program: String) -> Int32? {
        access(program, X_OK) == 0 ? nil : errno
    }

    private static func termination(_ status: TerminationStatus) -> CommandTermination {
        switch status {
        case .exited(let code): .exited(code)
        case .signaled(let signal): .signalled(signal)
        }
    }

    /// Sends `signal` to the process group `group` (a command's pid, which leads its own session). Refuses group ids
    /// that could be touchd's own group or init's. Returns false when no process of the group is left (ESRCH).
    @discardableResult
    static func signalGroup(_ group: Int32, _ signal: Int32) -> Bool {
        guard group > 1, group != getpgrp() else { return false }
        return kill(-group, signal) == 0 || errno != ESRCH
    }

    /// Whether any process of the group `group` exists (a zombie that is not reaped yet counts).
    static func groupExists(_ group: Int32) -> Bool {
        guard group > 1, group != getpgrp() else { return false }
        return kill(-group, 0) == 0 || errno == EPERM
    }
}
