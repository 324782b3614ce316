import TOML

/// `[targets.NAME]`: the keys of every target, and the kinds of target with their own keys. A target's kind is the
/// key it gives of ``TargetKind/name`` (`socket = …` or `exec = …`).
///
/// Adding a kind of target, in this file: its settings struct, a case of ``Configuration/TargetDefinition/Kind``, its
/// keys (with `kinds: [NAME]`) and its entry in ``Schema/targetKinds``; docs/configuration.md needs a
/// `<!-- keys:targets.NAME -->` block for its table (ConfigurationDocsTests says so). Then its executor (Actions/).
extension Schema {
    /// `[targets]`: one table per target, by name.
    static let targets = Section(TargetsKeys())
    static let target = Section(TargetKeys())

    /// In the order messages name them.
    static let targetKinds: [TargetKind] = [
        TargetKind(name: "socket", article: "a socket", what: "a Unix socket path", decode: decodeSocket),
        TargetKind(name: "exec", article: "an exec", what: "a command's argv", decode: decodeExec),
    ]
}

/// A kind of target: the key that declares it, how messages name it, and how its keys are read.
struct TargetKind: Sendable {
    /// The kind's name, and the key that makes a target of this kind.
    let name: String
    /// `a socket`.
    let article: String
    /// What the key holds: `a Unix socket path`.
    let what: String
    /// Reads the kind's keys; nil after reporting a problem. Warnings go to the log given.
    let decode: @Sendable (_ table: TableReader, _ warnings: WarningLog) -> Configuration.TargetDefinition.Kind?
}

extension Configuration.TargetDefinition {
    enum Kind: Hashable, Sendable {
        case socket(Configuration.SocketTarget)
        case exec(Configuration.ExecTarget)

        /// Its ``TargetKind/name``.
        var name: String {
            switch self {
            case .socket: "socket"
            case .exec: "exec"
            }
        }
    }
}

extension Configuration {
    struct SocketTarget: Hashable, Sendable {
        enum SocketType: String, Hashable, Sendable, CaseIterable {
            case stream, datagram
        }

        var path: String
        var type: SocketType
    }

    struct ExecTarget: Hashable, Sendable {
        enum IfRunning: String, Hashable, Sendable, CaseIterable {
            case ignore, queue, restart
        }

        var argv: [String]
        var shell: Bool
        var environment: [String: String]
        var workingDirectory: String?
        var timeout: UInt64
        var ifRunning: IfRunning
    }
}

struct TargetsKeys: KeyTable {
    let target = AnyNameKey(
        title: "*a target name*", type: "table", allowed: "[id rule](#ids-and-names); at most 256 targets",
        example: "[targets.kiosk]")
}

struct TargetKeys: KeyTable {
    typealias Limits = ConfigurationLoader.Limits

    let respondsTo = Key(
        "responds_to",
        .strings(limit: Limits.respondsTo, allowed: "0–1024 [action names](#ids-and-names)") {
            isValidAction($0) ? nil : "'\($0)' is not a valid action name: \(actionRule)"
        }, required: true, example: "responds_to = [\"pay\", \"cancel\"]")

    // Socket targets.
    let socket = Key(
        "socket",
        Schema.socketPath(
            allowed: "an absolute path, at most 107 bytes, without NUL, not ending in `/`. Relative and abstract names "
                + "are refused"), required: true, kinds: ["socket"], example: "socket = \"/run/kiosk/touch.sock\"")
    let socketType = Setting(
        "socket_type", .choice, default: Configuration.SocketTarget.SocketType.stream, kinds: ["socket"],
        example: "socket_type = \"datagram\"")
    let format = Setting("format", .oneOf(["json"]), default: "json", kinds: ["socket"], example: "format = \"json\"")

    // Exec targets.
    let exec = Key(
        "exec", .strings(limit: Limits.argv), required: true, kinds: ["exec"],
        allowed: "1–64 strings, each at most 4096 bytes. Without `shell`, the first string is the program's absolute "
            + "path",
        example: "exec = [\"/usr/bin/aplay\", \"-q\", \"/usr/share/sounds/click.wav\"]")
    let shell = Setting(
        "shell", .boolean, default: false, kinds: ["exec"],
        doc: "`true` requires `exec` to hold exactly one string, the command line for `/bin/sh -c`",
        example: "shell = true")
    let environment = Key(
        "environment", .table(Schema.environment.schema, type: "table of strings"), absent: "empty", kinds: ["exec"],
        allowed: "at most 64 variables. See the rules below", example: "environment = { LC_ALL = \"C\" }")
    let workingDirectory = Key(
        "working_directory",
        .string(allowed: "an absolute path") { $0.hasPrefix("/") ? nil : "'\($0)' is not an absolute path" },
        absent: "absent (none set)", kinds: ["exec"], example: "working_directory = \"/var/lib/kiosk\"")
    let timeout = Setting(
        "timeout_ms", .milliseconds(1...600_000), default: 10_000_000, kinds: ["exec"], example: "timeout_ms = 2000")
    let ifRunning = Setting(
        "if_running", .choice, default: Configuration.ExecTarget.IfRunning.ignore, kinds: ["exec"],
        example: "if_running = \"queue\"")
}

/// Names systemd and the daemon own; a command target may never set them.
let reservedEnvironment: Set<String> = [
    "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
]

@Sendable private func decodeSocket(_ target: TableReader, warnings: WarningLog) -> Configuration.TargetDefinition.Kind?
{
    let keys = Schema.target
    let type = target[keys.socketType]
    _ = target.read(keys.format)
    guard let path = target.read(keys.socket) else { return nil }
    // A warning only: the directory may be fixed (or made) after the file is written, as for exec programs.
    if let warning = SocketPath.sharedDirectoryWarning(path) {
        warnings.report(target.keyPath(keys.socket.name), warning)
    }
    return .socket(Configuration.SocketTarget(path: path, type: type))
}

@Sendable private func decodeExec(_ target: TableReader, warnings: WarningLog) -> Configuration.TargetDefinition.Kind? {
    typealias Limits = ConfigurationLoader.Limits
    let keys = Schema.target
    let log = target.log
    let shell = target[keys.shell]
    let timeout = target[keys.timeout]
    let ifRunning = target[keys.ifRunning]
    var environment: [String: String] = [:]
    if let table = target.read(keys.environment) {
        let names = table.table.keys.sorted()
        if names.count > Limits.environment {
            table.reportTable("\(names.count) variables; at most \(Limits.environment) are allowed")
        }
        for name in names.prefix(Limits.environment) {
            guard let value = table.string(name) else { continue }
            if !isValidEnvironmentName(name) {
                table.report(name, "'\(name)' is not a valid environment variable name")
            } else if reservedEnvironment.contains(name) || name.hasPrefix("TOUCHD_") {
                table.report(name, "\(name) is set by touchd or systemd and cannot be configured")
            } else if value.utf8.count > Limits.argumentBytes || value.utf8.contains(0) {
                table.report(name, "the value must be at most \(Limits.argumentBytes) bytes, without NUL")
            } else {
                environment[name] = value
            }
        }
    }
    let workingDirectory = target.read(keys.workingDirectory)
    let execPath = target.keyPath(keys.exec.name)
    guard let argv = target.read(keys.exec) else { return nil }
    guard let program = argv.first else {
        target.report(keys.exec.name, "the argv is empty; give the absolute path of the program first")
        return nil
    }
    guard !program.isEmpty else {
        log.report("\(execPath)[0]", "the program is an empty string; give its absolute path")
        return nil
    }
    for (index, argument) in argv.enumerated() where argument.utf8.count > Limits.argumentBytes {
        log.report("\(execPath)[\(index)]", "argument longer than \(Limits.argumentBytes) bytes")
    }
    if shell {
        if argv.count != 1 {
            target.report(
                keys.exec.name, "with shell = true, exec holds exactly one string: the command line for /bin/sh -c")
        }
    } else if program.hasPrefix("/"), program.contains(" "), !ExecutableProgram.exists(program) {
        // exec runs no shell: the first element is one file name, spaces and all.
        let words = program.split(separator: " ").map(String.init) + argv.dropFirst()
        var split = ""
        for (index, word) in words.enumerated() {
            if index > 0 { split += ", " }
            JSONLine.appendString(word, to: &split)
        }
        warnings.report(
            "\(execPath)[0]",
            "'\(program)' holds a space, but exec runs no shell: this names one program whose file name has a "
                + "space in it, which does not exist; split the command into separate elements: exec = [\(split)]")
    } else if !program.hasPrefix("/") {
        // Only a program that exists is suggested, never the name glued onto a directory (/usr/bin/bin/true).
        let hint = ExecutableProgram.suggestion(for: program).map { "did you mean '\($0)'?" }
        log.report(
            "\(execPath)[0]",
            "'\(program)' is not an absolute path; touchd does not search PATH ("
                + (hint ?? "give the program's absolute path") + ")")
    } else {
        // Warnings only: the program may be installed, or its directory fixed, after the file is written (C13).
        for message in ExecutableProgram.warnings(for: program) {
            warnings.report("\(execPath)[0]", message)
        }
    }
    return .exec(
        Configuration.ExecTarget(
            argv: argv, shell: shell, environment: environment, workingDirectory: workingDirectory, timeout: timeout,
            ifRunning: ifRunning))
}
