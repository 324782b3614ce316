import CLinux
import Glibc
import Logging
import Synchronization

/// What happened to one command target's runs so far. Counts are kept per target name for the life of the runner,
/// so a target that a reload removed still shows what it did.
///
/// Every delivery for a configured target ends up in exactly one of `started`, `spawnErrors`, the `dropped…` counts,
/// or is still `queued`; every started run ends in exactly one of `succeeded`, `failed`, `timedOut`, `terminated`, or
/// is still `running`.
struct CommandTargetStatistics: Hashable, Sendable {
    /// Runs whose program was started.
    var started = 0
    /// Runs that exited with status 0.
    var succeeded = 0
    /// Runs that exited with another status, or that a signal touchd did not send ended.
    var failed = 0
    /// Runs touchd ended because they outlived `timeout_ms`.
    var timedOut = 0
    /// Runs touchd ended for `if_running = "restart"` or because it was stopping.
    var terminated = 0
    /// Runs that could not be started: the program is missing or not executable (ENOENT, EACCES), the working
    /// directory is missing, or the system is out of processes.
    var spawnErrors = 0
    /// Actions dropped because the target's previous run was still going and `if_running = "ignore"`.
    var droppedWhileRunning = 0
    /// Actions dropped because a run was already waiting (`queue`), or replaced by a newer one while the current
    /// run was being stopped (`restart`).
    var droppedQueueFull = 0
    /// Actions over the target's rate limit (``CommandRunner/Limits``).
    var droppedRateLimited = 0
    /// Actions dropped because the runner already had its maximum of children running.
    var droppedOverCapacity = 0
    /// Actions that arrived after `stop`, or that were waiting when a reload removed or changed the target.
    var droppedUnavailable = 0
    /// Whether a run of this target is going now (being started, running, or being stopped).
    var running = false
    /// Whether a run is waiting for the current one to end.
    var queued = false
    /// The process id of the running command, once it runs.
    var processID: Int32?
    /// How the last run that ended ended.
    var lastTermination: CommandTermination?

    /// Every action dropped, whatever the reason.
    var dropped: Int {
        var total = droppedWhileRunning
        for count in [droppedQueueFull, droppedRateLimited, droppedOverCapacity, droppedUnavailable] {
            total.saturatingAdd(count)
        }
        return total
    }
}

/// Runs command targets' programs for deliveries, away from the caller: `submit` only decides (under a lock) and
/// hands the spawn to the `touchd-commands` thread (``CommandSupervisor``), so the input thread never forks, waits or
/// signals.
///
/// Bounds, so a tap storm costs a bounded amount: each target has at most one run going and, with
/// `if_running = "queue"` or `"restart"`, one waiting; each target has a rate limit; the runner has at most
/// `Limits.maximumRunning` children at once. Everything beyond is dropped and counted. A run that outlives its
/// target's `timeout_ms` gets SIGTERM on its whole process group, then SIGKILL after `Limits.killGrace`.
///
/// Children run in a session and process group of their own, with descriptors 0–2 only (stdin `/dev/null`), the
/// environment ``CommandSpec`` builds, and the target's working directory. The supervisor thread waits for each one
/// through a pidfd and reaps it, so none is left a zombie; with no child running it sleeps without a timeout, so
/// commands leave no periodic wake-up behind.
final class CommandRunner: Sendable {
    struct Limits: Sendable {
        /// Children running at once, all targets together.
        var maximumRunning: Int
        /// Each target's rate limit: on average at most one run per `interval` microseconds, with bursts of up to
        /// `burst` runs.
        var burst: Int
        var interval: UInt64
        /// From SIGTERM to SIGKILL when touchd ends a run (timeout, restart).
        var killGrace: UInt64

        /// 16 children; 10 runs per second per target with bursts of 10; 500 ms from SIGTERM to SIGKILL.
        static let standard = Limits(maximumRunning: 16, burst: 10, interval: 100_000, killGrace: 500_000)
    }

    private let core: CommandRunnerCore

    /// - Parameters:
    ///   - output: where children's standard output and error go.
    ///   - clock: monotonic microseconds, for rate limits, durations and log rate limits.
    init(
        logger: Logger, limits: Limits = .standard, output: CommandOutput = .standardError,
        clock: @escaping @Sendable () -> UInt64 = { monotonicMicroseconds() }
    ) {
        precondition(limits.maximumRunning > 0 && limits.burst > 0, "the runner must be able to run something")
        core = CommandRunnerCore(logger: logger, limits: limits, output: output, clock: clock)
    }

    deinit {
        stop(graceMicroseconds: core.limits.killGrace)
    }

    /// Sets the command targets, at start and after each reload.
    ///
    /// Running children are never stopped by a reload: a run of a removed or changed target goes on until it ends
    /// (or times out), and counts towards the runner's maximum meanwhile. A changed target's next run uses the new
    /// definition; a run that was waiting for a removed or changed target is dropped and counted. Targets with
    /// `shell = true` are logged (info) once per call. Ignored once `stop` has begun.
    func configure(_ targets: [String: Configuration.ExecTarget]) {
        core.configure(targets)
    }

    /// Decides what to do with one delivery and returns at once; see ``submit(_:)-([ActionDelivery])``.
    func submit(_ delivery: ActionDelivery) {
        submit([delivery])
    }

    /// Decides, under one lock, what happens to each delivery, and returns at once: starts a run (on a task of its
    /// own), queues it, marks the running one for restart, or drops it (counted). A delivery for a target that is not
    /// configured is counted in `unknownTargetDeliveries`.
    func submit(_ deliveries: [ActionDelivery]) {
        core.submit(deliveries)
    }

    /// Stops the runner: drops waiting runs, sends SIGTERM to every running child's process group, SIGKILL to what
    /// is left of each group after `graceMicroseconds`, waits until every child (each command's own process) has
    /// been reaped, and ends the supervisor thread. Processes a command started in its group get the same signals
    /// but belong to init once the command is gone; they are not waited for. Deliveries submitted from now on are
    /// dropped and counted. Idempotent; a second caller waits like the first.
    ///
    /// Blocks the calling thread: call it from a thread of touchd's own (the input thread at shutdown).
    func stop(graceMicroseconds: UInt64) {
        let begun = core.stop(grace: graceMicroseconds)
        // Children that survive SIGKILL (uninterruptible sleep) must not hang touchd's exit for ever.
        core.supervisor.stop(withinMicroseconds: graceMicroseconds.saturatingSum(CommandRunnerCore.reapAllowance))
        if begun, !core.isIdle { core.reportUnreaped() }
    }

    /// Per target name (including targets since removed).
    var statistics: [String: CommandTargetStatistics] {
        core.statistics
    }

    /// Deliveries ignored because their target was not configured.
    var unknownTargetDeliveries: Int {
        core.state.withLock { $0.unknownTargetDeliveries }
    }

    /// Starts the `touchd-commands` thread (``WorkerGroup``); a runner used on its own starts it at its first command.
    func start() throws(WorkerStartError) {
        try core.supervisor.start(events: core)
    }

    /// The `touchd-commands` thread's kernel id, once it started.
    var supervisorThreadID: Int32? {
        core.supervisor.threadID
    }

    /// Runs going now, all targets together (at most `Limits.maximumRunning`).
    var runningCount: Int {
        core.state.withLock { $0.runs.count }
    }
}

/// The runner's state and the code its tasks run. Everything mutable is behind one lock; side effects (starting
/// tasks, logging, signals) happen after the lock is released.
final class CommandRunnerCore: CommandSupervisorEvents {
    /// How long `stop` waits, beyond the grace, for children to be reaped after SIGKILL.
    static let reapAllowance: UInt64 = 5_000_000

    /// Why touchd is ending a run.
    enum StopReason: String, Sendable {
        case timeout, restart, stop
    }

    struct Entry: Sendable {
        var target: Configuration.ExecTarget
        var bucket: TokenBucket
        /// The target's run going now.
        var run: Int?
        /// The run to start when the current one ends (`queue`, `restart`).
        var waiting: ActionDelivery?
    }

    struct Run: Sendable {
        var target: String
        var delivery: ActionDelivery
        var started: UInt64
        /// Known once the program runs; also its process group id.
        var processID: Int32?
        /// Set when touchd decided to end it.
        var stopping: StopReason?
    }

    enum Phase: Sendable {
        case running
        /// `stop` was called; `grace` is its SIGTERM-to-SIGKILL time.
        case stopping(grace: UInt64)
    }

    struct State: Sendable {
        var phase = Phase.running
        var entries: [String: Entry] = [:]
        var statistics: [String: CommandTargetStatistics] = [:]
        var runs: [Int: Run] = [:]
        var nextRun = 0
        var unknownTargetDeliveries = 0
        /// Runs and terminations handed to the supervisor and not yet over.
        var tasks = 0
        var logLimits: [String: RateLimit] = [:]
    }

    /// A side effect decided under the lock, carried out after it.
    enum Effect: Sendable {
        case start(run: Int, spec: CommandSpec, timeout: UInt64)
        case terminate(group: Int32, grace: UInt64)
    }

    let state = Mutex(State())
    let logger: Logger
    let limits: CommandRunner.Limits
    let output: CommandOutput
    let clock: @Sendable () -> UInt64
    /// Starts, watches and ends the children, on its own thread.
    let supervisor: CommandSupervisor

    init(logger: Logger, limits: CommandRunner.Limits, output: CommandOutput, clock: @escaping @Sendable () -> UInt64) {
        self.logger = logger
        self.limits = limits
        self.output = output
        self.clock = clock
        supervisor = CommandSupervisor(output: output, logger: logger)
    }

    // MARK: - Callers

    func configure(_ targets: [String: Configuration.ExecTarget]) {
        let accepted = state.withLock { state -> Bool in
            guard case .running = state.phase else { return false }
            for (name, entry) in state.entries where targets[name] != entry.target {
                if entry.waiting != nil {
                    state.statistics[name, default: .init()].droppedUnavailable.saturatingAdd(1)
                }
                if let target = targets[name] {
                    // Changed: the run going on stays this target's run, so `if_running` still applies to it.
                    state.entries[name]!.target = target
                    state.entries[name]!.waiting = nil
                } else {
                    state.entries[name] = nil
                }
            }
            for (name, target) in targets where state.entries[name] == nil {
                state.entries[name] = Entry(
                    target: target, bucket: TokenBucket(burst: limits.burst, interval: limits.interval))
                if state.statistics[name] == nil { state.statistics[name] = CommandTargetStatistics() }
            }
            return true
        }
        guard accepted else { return }
        for name in targets.keys.sorted() where targets[name]!.shell {
            logger.info(
                "command target runs its command line through /bin/sh -c",
                metadata: ["target": "\(name)", "command": "\(targets[name]!.argv.first ?? "")"])
        }
    }

    func submit(_ deliveries: [ActionDelivery]) {
        let now = clock()
        let effects = state.withLock { state -> [Effect] in
            var effects: [Effect] = []
            for delivery in deliveries {
                accept(delivery, now: now, state: &state, effects: &effects)
            }
            return effects
        }
        perform(effects)
    }

    /// The decision for one delivery.
    private func accept(_ delivery: ActionDelivery, now: UInt64, state: inout State, effects: inout [Effect]) {
        let name = delivery.target
        guard case .running = state.phase else {
            if state.statistics[name] != nil {
                state.statistics[name]!.droppedUnavailable.saturatingAdd(1)
            } else {
                state.unknownTargetDeliveries.saturatingAdd(1)
            }
            return
        }
        guard var entry = state.entries[name] else {
            state.unknownTargetDeliveries.saturatingAdd(1)
            return
        }
        defer { state.entries[name] = entry }
        guard let current = entry.run else {
            // Idle: start now, if the runner has room and the target has a token.
            guard state.runs.count < limits.maximumRunning else {
                state.statistics[name]!.droppedOverCapacity.saturatingAdd(1)
                return
            }
            guard entry.bucket.take(now: now) else {
                state.statistics[name]!.droppedRateLimited.saturatingAdd(1)
                return
            }
            entry.run = begin(delivery, target: entry.target, now: now, state: &state, effects: &effects)
            return
        }
        switch entry.target.ifRunning {
        case .ignore:
            state.statistics[name]!.droppedWhileRunning.saturatingAdd(1)
        case .queue:
            guard entry.waiting == nil else {
                state.statistics[name]!.droppedQueueFull.saturatingAdd(1)
                return
            }
            guard entry.bucket.take(now: now) else {
                state.statistics[name]!.droppedRateLimited.saturatingAdd(1)
                return
            }
            entry.waiting = delivery
        case .restart:
            guard entry.bucket.take(now: now) else {
                state.statistics[name]!.droppedRateLimited.saturatingAdd(1)
                return
            }
            // The newest tap wins: one that was waiting for the current run to go is replaced.
            if entry.waiting != nil { state.statistics[name]!.droppedQueueFull.saturatingAdd(1) }
            entry.waiting = delivery
            requestStop(current, reason: .restart, grace: limits.killGrace, state: &state, effects: &effects)
        }
    }

    /// Records a new run and returns its number; the caller stores it in the target's entry.
    private func begin(
        _ delivery: ActionDelivery, target: Configuration.ExecTarget, now: UInt64, state: inout State,
        effects: inout [Effect]
    ) -> Int {
        state.nextRun &+= 1
        let run = state.nextRun
        state.runs[run] = Run(target: delivery.target, delivery: delivery, started: now)
        state.tasks += 1
        effects.append(.start(run: run, spec: CommandSpec(target: target, delivery: delivery), timeout: target.timeout))
        return run
    }

    /// Marks `run` as being ended by touchd and, once its process id is known, signals its group. The first reason
    /// given is the one counted.
    private func requestStop(
        _ run: Int, reason: StopReason, grace: UInt64, state: inout State, effects: inout [Effect]
    ) {
        guard state.runs[run] != nil, state.runs[run]!.stopping == nil else { return }
        state.runs[run]!.stopping = reason
        if let group = state.runs[run]!.processID {
            state.tasks += 1
            effects.append(.terminate(group: group, grace: grace))
        }
        // Otherwise `spawned` sees the reason and terminates the child as soon as it runs.
    }

    /// Begins stopping, once: drops the waiting runs and asks the supervisor to end every running one. Returns
    /// whether this call began it.
    func stop(grace: UInt64) -> Bool {
        let (effects, begun, waiting) = state.withLock { state -> ([Effect], Bool, Bool) in
            guard case .running = state.phase else { return ([], false, false) }
            var effects: [Effect] = []
            state.phase = .stopping(grace: grace)
            for (name, entry) in state.entries where entry.waiting != nil {
                state.entries[name]!.waiting = nil
                state.statistics[name]!.droppedUnavailable.saturatingAdd(1)
            }
            for run in state.runs.keys.sorted() {
                requestStop(run, reason: .stop, grace: grace, state: &state, effects: &effects)
            }
            return (effects, true, state.tasks > 0)
        }
        if waiting { logger.info("stopping running commands", metadata: ["grace_ms": "\(grace / 1000)"]) }
        perform(effects)
        return begun
    }

    /// No run or termination is in flight.
    var isIdle: Bool {
        state.withLock { $0.tasks == 0 }
    }

    func reportUnreaped() {
        let runs = state.withLock { state in state.runs.values.map { "\($0.target):\($0.processID ?? 0)" } }
        logger.error(
            "commands still running after SIGKILL; not waiting for them any longer",
            metadata: ["runs": "\(runs.sorted().joined(separator: ","))"])
    }

    var statistics: [String: CommandTargetStatistics] {
        state.withLock { state in
            var result = state.statistics
            for (name, entry) in state.entries where entry.waiting != nil { result[name]?.queued = true }
            for run in state.runs.values {
                result[run.target]?.running = true
                if let pid = run.processID { result[run.target]?.processID = pid }
            }
            return result
        }
    }

    // MARK: - The supervisor's side

    private func perform(_ effects: [Effect]) {
        supervisor.post(
            effects.map { effect in
                switch effect {
                case .start(let run, let spec, let timeout): .start(run: run, spec: spec, timeout: timeout)
                case .terminate(let group, let grace): .terminate(group: group, grace: grace)
                }
            }, events: self)
    }

    /// The program of `run` runs as `processID`.
    func spawned(_ run: Int, processID: Int32) {
        let (effects, record) = state.withLock { state -> ([Effect], Run?) in
            guard state.runs[run] != nil else { return ([], nil) }
            state.runs[run]!.processID = processID
            let record = state.runs[run]!
            state.statistics[record.target, default: .init()].started.saturatingAdd(1)
            guard let reason = record.stopping else { return ([], record) }
            // Stopped before it ran (restart, stop): end it now.
            let grace: UInt64
            switch (reason, state.phase) {
            case (.stop, .stopping(let stopGrace)): grace = stopGrace
            default: grace = limits.killGrace
            }
            state.tasks += 1
            return ([.terminate(group: processID, grace: grace)], record)
        }
        if let record {
            logger.debug("command started", metadata: metadata(record, processID: processID))
        }
        perform(effects)
    }

    func expired(_ run: Int) {
        let effects = state.withLock { state -> [Effect] in
            var effects: [Effect] = []
            requestStop(run, reason: .timeout, grace: limits.killGrace, state: &state, effects: &effects)
            return effects
        }
        perform(effects)
    }

    func terminationEnded() {
        state.withLock { $0.tasks -= 1 }
    }

    /// `run` ended (or never started); counts it, logs it and starts the run waiting for its target, if any.
    func finished(_ run: Int, outcome: CommandProcess.Outcome) {
        let now = clock()
        let (effects, record, logLevel, suppressed) = state.withLock {
            state -> ([Effect], Run?, Logger.Level, Int?) in
            defer { state.tasks -= 1 }
            guard let record = state.runs.removeValue(forKey: run) else { return ([], nil, .debug, 0) }
            let name = record.target
            var level = Logger.Level.debug
            switch outcome {
            case .notStarted:
                state.statistics[name, default: .init()].spawnErrors.saturatingAdd(1)
                level = .error
            case .ended(let termination):
                state.statistics[name, default: .init()].lastTermination = termination
                switch (record.stopping, termination) {
                case (.timeout, _):
                    state.statistics[name]!.timedOut.saturatingAdd(1)
                    level = .warning
                case (.restart, _), (.stop, _):
                    state.statistics[name]!.terminated.saturatingAdd(1)
                case (nil, .exited(0)):
                    state.statistics[name]!.succeeded.saturatingAdd(1)
                case (nil, _):
                    state.statistics[name]!.failed.saturatingAdd(1)
                    level = .warning
                }
            }
            // Warnings and errors are rate limited per target; debug lines are not (they are off by default).
            var suppressed: Int? = 0
            if level > .debug {
                switch state.logLimits[name, default: RateLimit()].check(now: now) {
                case .suppress: suppressed = nil
                case .pass(let count): suppressed = count
                }
            }
            var effects: [Effect] = []
            if var entry = state.entries[name], entry.run == run {
                entry.run = nil
                if let next = entry.waiting, case .running = state.phase {
                    entry.waiting = nil
                    if state.runs.count < limits.maximumRunning {
                        entry.run = begin(next, target: entry.target, now: now, state: &state, effects: &effects)
                    } else {
                        state.statistics[name]!.droppedOverCapacity.saturatingAdd(1)
                    }
                }
                state.entries[name] = entry
            }
            return (effects, record, level, suppressed)
        }
        perform(effects)
        guard let record, let suppressed else { return }
        var metadata = metadata(record, processID: record.processID)
        metadata["duration_ms"] = "\(now.saturatingSubtract(record.started) / 1000)"
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        switch outcome {
        case .notStarted(let description, let code):
            if let code { metadata["errno"] = "\(code)" }
            metadata["error"] = "\(description)"
            metadata[MessageID.metadataKey] = "\(MessageID.actionFailed)"
            logger.log(level: logLevel, "command could not be started", metadata: metadata)
        case .ended(let termination):
            switch termination {
            case .exited(let status): metadata["status"] = "\(status)"
            case .signalled(let signal): metadata["signal"] = "\(CommandTermination.signalName(signal))"
            }
            let message: String
            switch record.stopping {
            case .timeout: message = "command timed out and was stopped"
            case .restart: message = "command stopped for a restart"
            case .stop: message = "command stopped because touchd is stopping"
            case nil: message = termination == .exited(0) ? "command finished" : "command failed"
            }
            switch record.stopping {
            case .timeout: metadata[MessageID.metadataKey] = "\(MessageID.actionTimedOut)"
            case nil where termination != .exited(0): metadata[MessageID.metadataKey] = "\(MessageID.actionFailed)"
            case nil, .restart, .stop: break
            }
            logger.log(level: logLevel, "\(message)", metadata: metadata)
        }
    }

    private func metadata(_ run: Run, processID: Int32?) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "target": "\(run.target)", "action": "\(run.delivery.action)", "control.id": "\(run.delivery.control)",
        ]
        if let processID { metadata["pid"] = "\(processID)" }
        return metadata
    }
}

extension Configuration {
    /// The command targets by name, as `CommandRunner.configure` takes them.
    var execTargets: [String: ExecTarget] {
        var result: [String: ExecTarget] = [:]
        for definition in targets {
            if case .exec(let target) = definition.kind { result[definition.name] = target }
        }
        return result
    }
}
