import CProcess
import Glibc

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

/// Starts one command and reads how it ended: the only code that spawns or reaps. ``CommandSupervisor`` calls it on
/// its thread.
enum CommandProcess {
    enum Outcome: Sendable {
        /// The program ran and ended.
        case ended(CommandTermination)
        /// It could not be started: the program is missing or not executable, the working directory is missing, or
        /// the system is out of processes or descriptors. `errno` is the underlying error when known.
        case notStarted(description: String, errno: Int32?)
    }

    /// Spawns `spec` in a session (and so a process group) of its own, with only descriptors 0–2 (stdin from
    /// `/dev/null`, stdout and stderr as `output` says), an empty signal mask and default signal dispositions, and
    /// returns its process id at once, or why it could not be started (an `Outcome.notStarted`). The caller reaps
    /// it (``reap(_:)``).
    static func spawn(_ spec: CommandSpec, output: CommandOutput) -> Result<Int32, SpawnFailure> {
        let argv = [spec.program] + spec.arguments
        let environment = spec.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // A NUL inside an argument or variable would silently cut it short in C; the loader refuses such files, so
        // this only guards against a value built elsewhere.
        guard !(argv + environment).contains(where: { $0.utf8.contains(0) }) else {
            return .failure(SpawnFailure(description: "an argument or variable contains a NUL byte", errno: EINVAL))
        }
        var processID: pid_t = 0
        let mode = output == .discarded ? TOUCHD_SPAWN_OUTPUT_DISCARD : TOUCHD_SPAWN_OUTPUT_STDERR
        let spawned = withCStrings(argv) { argv in
            withCStrings(environment) { environment in
                if let directory = spec.workingDirectory {
                    return touchd_spawn(spec.program, argv, environment, directory, mode, &processID)
                }
                return touchd_spawn(spec.program, argv, environment, nil, mode, &processID)
            }
        }
        // nil: a copy could not be made.
        let error = spawned.flatMap { $0 } ?? ENOMEM
        guard error == 0 else {
            return .failure(
                SpawnFailure(
                    description: "cannot start \(spec.program): \(String(cString: strerror(error)))", errno: error))
        }
        return .success(processID)
    }

    /// Why a spawn failed, as ``Outcome/notStarted(description:errno:)`` carries it.
    struct SpawnFailure: Error {
        var description: String
        var errno: Int32
    }

    /// Reaps `processID` if it has ended: how it ended, or nil while it runs. A child that is not touchd's (ECHILD:
    /// someone else reaped it) is reported as having exited with status 255, since nothing more is known.
    static func reap(_ processID: Int32) -> CommandTermination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(processID, &status, WNOHANG)
            if result == processID { break }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            return .exited(255)
        }
        // The <sys/wait.h> macros, which Swift does not import: the low 7 bits are the terminating signal (0 for an
        // exit), the next 8 the exit status.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    /// A descriptor that becomes readable when `processID` ends (pidfd_open(2), Linux 5.3 and later), or nil when the
    /// kernel has none to give: the caller then polls ``reap(_:)``.
    static func exitDescriptor(_ processID: Int32) -> Int32? {
        let descriptor = touchd_pidfd_open(processID)
        return descriptor >= 0 ? descriptor : nil
    }

    /// Calls `body` with `strings` as a NULL-terminated array of C strings, valid only during the call; nil without
    /// calling it when the memory for the copies cannot be had.
    private static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result? {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        guard !pointers.contains(nil) else { return nil }
        pointers.append(nil)
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
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
