import ArgumentParser
import CLinux
import Glibc
import Logging
import TouchModel

/// `touchd run`: the daemon.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the daemon: read the seat's touchscreens and run the configured actions.",
        discussion: """
            Reads every touchscreen on the configured seat through libinput (and picks up touchscreens plugged in \
            later), runs the configured controls and sends their actions to the configured targets. Under systemd \
            it reports readiness, reloads and watchdog pings through sd_notify. SIGHUP reloads the configuration \
            (an invalid file is refused and the running configuration kept); SIGTERM and SIGINT stop it. Exits 78 \
            when the configuration is invalid at start. Warnings about the file (others can change it) and its \
            command programs are logged at every load; --strict-permissions refuses such a file instead.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var permissions: PermissionsOption

    @Option(help: ArgumentHelp("Least severe level logged: trace, debug, info, notice, warning, error, critical."))
    var logLevel: LogLevel = .info

    @Flag(
        name: .customLong("yield-on-send"), inversion: .prefixedNo,
        help: ArgumentHelp(
            """
            Send each touch's messages under SCHED_IDLE, so that the target runs at once on touchd's CPU (used \
            with more than one CPU). Off by default (--no-yield-on-send): a target that works hard right after each \
            message then holds touchd's next frame up, and in filter mode the application's next touch (1.3-13 ms \
            measured in the test guest); turn it on only for targets that do little per message.
            """))
    var yieldOnSend = false

    func run() throws {
        // Before any thread of ours starts, so that every thread inherits the blocked signals.
        guard let signals = SignalChannel() else {
            printError("touchd: error: cannot set up signal handling: \(String(cString: strerror(errno)))")
            throw ExitCode(71)  // EX_OSERR
        }
        let logger = Self.makeLogger(level: logLevel.level)
        let notifier = Notifier.fromEnvironment()
        // Also before any thread starts (it changes the environment); the socket itself is looked at after the lock.
        let activation = ControlListener.takeActivation()
        let configuration: Configuration
        let strictPermissions = permissions.strictPermissions
        switch ConfigurationFile.load(path: options.config, strictPermissions: strictPermissions) {
        case .success(let loaded):
            configuration = loaded
            // The log says the level: `warning: PATH:LINE:COLUMN: KEY: MESSAGE`, not `warning: PATH…: warning: …`.
            for warning in loaded.warnings {
                logger.warning("\(warning.formatted(path: options.config, severity: false))")
            }
        case .failure(let error):
            for line in error.loggedWarningLines { logger.warning("\(line)") }
            for line in error.loggedLines { logger.error("\(line)") }
            logger.critical("the configuration is invalid; not starting", metadata: ["config": "\(options.config)"])
            notifier.notify(["STATUS=configuration invalid: \(error.lines.first ?? options.config)"])
            throw ExitCode(ExitStatus.configuration)
        }
        // Filter mode off: touchd never needs to create an input device, so it gives that up now, before any thread
        // of its own starts (they all inherit it), and a compromised touchd cannot either (UinputGuard).
        if !configuration.filter.enabled, let failure = UinputGuard.forbidForProcess() {
            logger.warning("cannot give up creating input devices (filter mode is off): \(failure)")
        }
        let scene: Scene
        do {
            scene = try configuration.makeScene()
        } catch {
            for problem in error.problems { logger.error("\(options.config): \(problem)") }
            throw ExitCode(ExitStatus.configuration)
        }
        // One instance per seat, taken before anything touches the system: a second touchd creates or removes no
        // socket, opens no device and starts no thread. A lock the system refuses (not one another touchd holds)
        // does not stop touchd: the touchscreen matters more.
        var instanceLock: InstanceLock?
        switch InstanceLock.acquire(seat: configuration.seat) {
        case .success(let lock):
            instanceLock = lock
        case .failure(let failure):
            switch failure {
            case .held: break
            case .untrusted:
                logger.warning("\(failure)", metadata: ["seat": "\(configuration.seat)"])
            case .system:
                logger.warning("running without the one-instance-per-seat lock: \(failure)")
            }
            guard case .held = failure else { break }
            logger.critical("\(failure)", metadata: ["seat": "\(configuration.seat)"])
            notifier.notify(["STATUS=\(failure)"])
            throw ExitCode(ExitStatus.anotherInstance)
        }
        let sockets = SocketTargetSender(logger: logger, clock: monotonicMicroseconds)
        // Children's standard output and error go to touchd's standard error: the journal under systemd.
        let commands = CommandRunner(logger: logger, output: .standardError)
        // Before READY=1 (fault-cases.md O1): the socket listens by the time systemd calls touchd ready.
        let control: ControlServer?
        let controlProblem: String?
        switch Self.startControlSocket(configuration.controlSocket, activation: activation, logger: logger) {
        case .failure(let error):
            // A socket systemd passed but touchd cannot use is a deployment mistake (K11): say so and stop.
            logger.critical("\(error)")
            notifier.notify(["STATUS=control socket unusable: \(error)"])
            throw ExitCode(ExitStatus.configuration)
        case .success(let started):
            control = started.server
            controlProblem = started.problem
        }
        let executors = Executors(sockets: sockets, commands: commands)
        // Explore by touch's speech edge: its client starts when the configuration asks for speech
        // (Daemon.startSpeech); until then it is one idle eventfd.
        let workers = WorkerGroup(control: control, executors: executors, speech: SpeechEdge(logger: logger))
        do {
            try workers.start()
        } catch {
            logger.critical("cannot start touchd's threads: \(error)")
            notifier.notify(["STATUS=cannot start touchd's threads: \(error)"])
            workers.stop()
            throw ExitCode(71)  // EX_OSERR
        }
        let path = options.config
        let lock = instanceLock
        let yieldOnSend = yieldOnSend
        let status = runOnDedicatedThread(name: "touchd-input") {
            Daemon(
                configurationPath: path, configuration: configuration, scene: scene, logger: logger,
                notifier: notifier, executors: executors, control: control, workers: workers,
                controlProblem: controlProblem, strictPermissions: strictPermissions, instanceLock: lock,
                yieldOnSend: yieldOnSend
            ).run(signals: signals)
        }
        // Already done by a clean shutdown (Daemon's, between its last effects and its last log lines); here for the
        // paths that return early. No child outlives touchd.
        workers.stop()
        if status != 0 { throw ExitCode(status) }
    }

    /// The control socket's server, or why there is none (`problem`, for the log and the status), or a socket systemd
    /// passed that cannot be used (the failure).
    ///
    /// A socket systemd passed (`activation`) wins over `[control_socket] socket`. Without one, touchd creates the
    /// socket itself; when it cannot, it runs without a control socket: the touchscreen matters more.
    static func startControlSocket(
        _ settings: Configuration.ControlSocket, activation: ControlListener.Activation, logger: Logger
    ) -> Result<(server: ControlServer?, problem: String?), ControlListenerError> {
        let listener: ControlListener.Socket
        switch ControlListener.activated(activation) {
        case .failure(let error)?:
            return .failure(ControlListenerError(message: "the socket systemd passed cannot be used: \(error)"))
        case .success(let passed)?:
            guard settings.enabled else {
                passed.close()
                logger.warning("systemd passed a control socket but [control_socket] enabled = false; closed it")
                return .success((nil, nil))
            }
            if passed.path != settings.path {
                logger.notice(
                    "using the control socket systemd passed",
                    metadata: ["socket": "\(passed.path)", "configured": "\(settings.path)"])
            }
            listener = passed
        case nil:
            guard settings.enabled else {
                logger.info("no control socket: [control_socket] enabled = false")
                return .success((nil, nil))
            }
            switch ControlListener.create(
                path: settings.path, group: settings.group, warn: { logger.warning("control socket: \($0)") })
            {
            case .failure(let error):
                logger.error(
                    "cannot create the control socket; running without it",
                    metadata: ["socket": "\(settings.path)", "reason": "\(error)"])
                return .success((nil, "no control socket: \(error)"))
            case .success(let created): listener = created
            }
        }
        var serverSettings = ControlServer.Settings(
            serverName: "touchd/\(Touchd.version)", clientGroup: ControlListener.groupID(named: settings.group),
            adminGroup: ControlListener.groupID(named: settings.adminGroup))
        serverSettings.maxClients = settings.maximumClients
        do {
            let server = try ControlServer(listener: listener, settings: serverSettings, generation: 1, logger: logger)
            logger.info(
                "control socket listening",
                metadata: [
                    "socket": "\(listener.path)", "activated": "\(listener.activated)",
                    "max_clients": "\(settings.maximumClients)",
                ])
            return .success((server, nil))
        } catch {
            logger.error("cannot start the control socket; running without it", metadata: ["reason": "\(error)"])
            return .success((nil, "no control socket: \(error)"))
        }
    }

    static func makeLogger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "touchd") { _ in
            JournalLogHandler(logLevel: level, style: JournalLogHandler.detectedStyle)
        }
        logger.logLevel = level
        return logger
    }
}

/// `--log-level`: swift-log's levels, by their names.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}
