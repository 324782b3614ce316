import ArgumentParser
import Foundation
import Logging
import TouchModel

/// `touchd simulate`: the whole model on scripted or recorded touches, as JSON Lines.
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a configuration on scripted or recorded touches and print what the controls did.",
        discussion: """
            INPUT is a touch script (one sample per line: TIME_MS down|move|up|cancel CONTACT [X Y], in output \
            pixels, or TIME_MS screen ID to switch the active screen) or a YAML file written by `libinput record`, \
            whose device axes are mapped onto the configured output; `-` reads standard input. A script's problems \
            are all printed at once as INPUT:LINE:COLUMN: error: MESSAGE (exit 65), and a touch outside the output \
            as a warning. Prints one JSON object per line: control events, resolved actions, screen switches, the \
            touches that wake an idle kiosk (which reach nobody) and diagnostics, in the order they happen. Nothing is executed unless --execute is given: then each action also goes to its \
            target as under `touchd run` (socket messages sent, commands run), with the input's timing kept (a \
            script of 10 s takes 10 s).
            """
    )

    @OptionGroup var options: ConfigOption

    @Argument(
        help: ArgumentHelp(
            "A touch script or a `libinput record` YAML file; `-` for standard input.", valueName: "input"))
    var input: String

    @Flag(help: "Also hand each action to its target (send its message, run its command), in real time.")
    var execute = false

    func run() throws {
        let configuration = try options.load()
        let played = try readInput(configuration)
        var simulation: Simulation
        do {
            simulation = try Simulation(configuration: configuration)
        } catch {
            for problem in error.problems { printError("\(options.config): error: \(problem)") }
            throw ExitCode(ExitStatus.configuration)
        }
        guard execute else {
            // Printed as they happen rather than gathered first: a long input's output would otherwise all be held
            // in memory at once.
            let printScreen = { (screen: String, time: Instant) in print(Simulation.render(screen: screen, at: time)) }
            simulation.run(played, screen: printScreen) { effects in
                for effect in effects {
                    switch effect {
                    case .output(let output, let time):
                        for line in Simulation.render(output, at: time, configuration: configuration) { print(line) }
                    case .idle(let transition):
                        for line in Simulation.render(transition) { print(line) }
                    case .wakeTouch(let touch):
                        print(Simulation.render(touch))
                    case .speech(let command, let time):
                        if let line = Simulation.render(command, at: time) { print(line) }
                    case .speechMode(let on, let time):
                        print(Simulation.render(speechMode: on, at: time))
                    case .log(_, let message, let metadata):
                        note(message, metadata)
                    case .deliver, .control, .notify, .configureExecutors, .filterDevices, .forward,
                        .reloadConfiguration:
                        break
                    }
                }
            }
            return
        }
        try runExecuting(&simulation, input: played, configuration: configuration)
    }

    /// Prints the lines as they happen and hands each handled action to its target, sleeping between outputs so
    /// that they keep the input's spacing. Ends by flushing the targets and summarising what they got on stderr.
    /// What the engine says about the recording's devices (added, ignored and why) goes to standard error as a note;
    /// its other lines (diagnostics) are already among the JSON lines.
    private func note(_ message: String, _ metadata: Logger.Metadata) {
        guard let device = metadata["device.sysname"] else { return }
        // A recording's device name is the file's text: cut it as the recording's own messages are.
        let name = metadata["device.name"].map { LibinputRecording.quoted("\($0)") } ?? ""
        let reason = metadata["reason"].map { ": \($0)" } ?? ""
        printError("\(inputName): note: \(message): \(name) (\(device))\(reason)")
    }

    private func runExecuting(
        _ simulation: inout Simulation, input played: Simulation.Input, configuration: Configuration
    )
        throws
    {
        let logger = Run.makeLogger(level: .info)
        // Children's standard output and error go to simulate's standard error, apart from the JSON lines.
        let executors = Executors(
            sockets: SocketTargetSender(logger: logger), commands: CommandRunner(logger: logger, output: .standardError)
        )
        do {
            try WorkerGroup(control: nil, executors: executors).start()
        } catch {
            printError("touchd: error: cannot start the executors' threads: \(error)")
            executors.stop()
            throw ExitCode(71)  // EX_OSERR
        }
        executors.configure(configuration)
        let started = monotonicMicroseconds()
        var origin: UInt64?
        /// Keeps the input's spacing: sleeps until `time`, measured from the first output's.
        func wait(until time: Instant) {
            let first = origin ?? time.microseconds
            origin = first
            let due = started &+ time.microseconds.saturatingSubtract(first)
            let now = monotonicMicroseconds()
            if due > now { usleep(UInt32(clamping: due - now)) }
        }
        let printScreen = { (screen: String, time: Instant) in
            wait(until: time)
            print(Simulation.render(screen: screen, at: time))
            fflush(nil)
        }
        simulation.run(played, screen: printScreen) { effects in
            // The engine's deliveries, exactly as touchd run hands them to its executors.
            var deliveries = Executors.Batch()
            for effect in effects {
                switch effect {
                case .output(let output, let time):
                    wait(until: time)
                    for line in Simulation.render(output, at: time, configuration: configuration) { print(line) }
                    fflush(nil)  // all streams: Swift 6 refuses a reference to the global `stdout`
                case .idle(let transition):
                    wait(until: transition.time)
                    for line in Simulation.render(transition) { print(line) }
                    fflush(nil)
                case .wakeTouch(let touch):
                    wait(until: touch.time)
                    print(Simulation.render(touch))
                    fflush(nil)
                case .speech(let command, let time):
                    wait(until: time)
                    if let line = Simulation.render(command, at: time) { print(line) }
                    fflush(nil)
                case .speechMode(let on, let time):
                    wait(until: time)
                    print(Simulation.render(speechMode: on, at: time))
                    fflush(nil)
                case .deliver(let delivery, let executor, _): deliveries.append(delivery, for: executor)
                case .log(_, let message, let metadata): note(message, metadata)
                case .control, .notify, .configureExecutors, .filterDevices, .forward, .reloadConfiguration: break
                }
            }
            executors.submit(deliveries)
        }
        // The commands still running get their timeouts' worth of time, as under touchd run, then the usual
        // SIGTERM-then-SIGKILL of their process groups.
        executors.stop(commandsMayFinishWithin: configuration.execTargets.values.map(\.timeout).max() ?? 0)
        for report in executors.targetReports { logger.info("target statistics", metadata: report.metadata) }
    }

    /// How the input is named in messages: its path, or `<stdin>` for `-`.
    private var inputName: String { input == "-" ? "<stdin>" : input }

    private func readInput(_ configuration: Configuration) throws -> Simulation.Input {
        let limit = 64 << 20
        let read =
            input == "-"
            ? ConfigurationSource.read(descriptor: STDIN_FILENO, limit: limit)
            : ConfigurationSource.read(path: input, limit: limit)
        let text: String
        switch read {
        case .success(let contents): text = contents
        case .failure(let problem):
            printError(problem.formatted(path: inputName))
            throw ExitCode(ExitStatus.data)
        }
        if LibinputRecording.looksLikeRecording(text) {
            let recording = LibinputRecording.input(from: text, noted: { printError("\(inputName): note: \($0)") })
            switch recording {
            case .success(let decoded): return .recording(decoded)
            case .failure(let problem):
                printError("\(inputName): error: \(problem.message)")
                throw ExitCode(ExitStatus.data)
            }
        }
        // Checked whole first, so that every bad line is reported at once and before any output; then played as it
        // is read.
        let report = TouchScript.check(text, context: TouchScript.Context(configuration))
        for warning in report.warnings { printError(warning.formatted(input: inputName, severity: .warning)) }
        guard report.problems.isEmpty else {
            for problem in report.problems { printError(problem.formatted(input: inputName)) }
            if report.problemsNotShown > 0 {
                printError("\(inputName): error: \(report.problemsNotShown) more problems not shown")
            }
            throw ExitCode(ExitStatus.data)
        }
        return .scriptText(text)
    }
}
