import Glibc
import Logging

/// What the supervisor thread tells the command runner; ``CommandRunnerCore`` implements it. Each call is made on
/// the supervisor thread, never under the runner's lock.
protocol CommandSupervisorEvents: AnyObject, Sendable {
    /// `run`'s program runs as `processID`.
    func spawned(_ run: Int, processID: Int32)
    /// `run` outlived its timeout.
    func expired(_ run: Int)
    /// `run` ended and was reaped, or never started.
    func finished(_ run: Int, outcome: CommandProcess.Outcome)
    /// A termination (SIGTERM, then SIGKILL after the grace) is over: the group is gone or got SIGKILL.
    func terminationEnded()
}

/// The thread that starts command targets' children, waits for them and ends them: `touchd-commands`.
///
/// Its ``WakeableLoop`` waits in `poll(2)` on one pidfd per running child, with the nearest deadline (a timeout, a
/// check of a group being stopped) as its timeout, so with no child running it sleeps without a timeout and never
/// wakes: no periodic timer, no thread pool. It starts with the other workers (``WorkerGroup``), or at the first
/// command for a runner used on its own; its `stop` lets the children being ended finish ending
/// (``CommandRunner/stop(graceMicroseconds:)`` asks for that first), then ends the thread.
///
/// Requests come in through ``post(_:events:)`` from any thread; the runner's decisions stay in ``CommandRunnerCore``.
final class CommandSupervisor: Sendable {
    enum Request: Sendable {
        /// Start `run` and end it with SIGTERM (through `expired`) after `timeout` microseconds.
        case start(run: Int, spec: CommandSpec, timeout: UInt64)
        /// SIGTERM to process group `group`, then SIGKILL to what is left of it after `grace` microseconds.
        case terminate(group: Int32, grace: UInt64)
    }

    /// How often a group being stopped is checked for having gone, so a quick exit ends the wait early.
    static let groupPollInterval: UInt64 = 10_000
    /// How often a child is checked for having ended when the kernel gave no pidfd for it (Linux before 5.3).
    static let reapPollInterval: UInt64 = 50_000

    /// What callers and the thread share.
    struct Shared: WorkerState {
        /// Posted, not yet taken by the thread.
        var requests: [Request] = []
        /// Once `stop` has begun, the thread ends when no child is left to end, or at the deadline.
        var phase = WorkerPhase.running
    }

    private let loop: WakeableLoop<Shared>
    private let output: CommandOutput

    init(output: CommandOutput, logger: Logger) {
        self.output = output
        loop = WakeableLoop(Shared(), name: "touchd-commands", title: "command runner", logger: logger)
    }

    /// Starts the thread (``WorkerGroup``'s start, through the runner). Idempotent.
    func start(events: some CommandSupervisorEvents) throws(WorkerStartError) {
        try loop.start { [loop, output] in CommandSupervisorLoop(loop, events: events, output: output) }
    }

    /// Hands `requests` to the thread, starting it first if it is not running (a runner used on its own, in tests). When no thread can be started, each
    /// start fails at once (`finished` with `notStarted`) and each termination signals the group and ends there.
    func post(_ requests: [Request], events: some CommandSupervisorEvents) {
        guard !requests.isEmpty else { return }
        let failure: Int32?
        do throws(WorkerStartError) {
            try start(events: events)
            failure = loop.state.withLock { shared -> Int32? in
                // The thread has ended: nobody would take them.
                if case .stopped = shared.phase { return ECANCELED }
                shared.requests.append(contentsOf: requests)
                return nil
            }
        } catch {
            failure = error.errno
        }
        guard let failure else {
            loop.wake()
            return
        }
        for request in requests {
            switch request {
            case .start(let run, _, _):
                events.finished(
                    run,
                    outcome: .notStarted(description: "cannot start a thread to run commands", errno: failure))
            case .terminate(let group, _):
                CommandProcess.signalGroup(group, SIGKILL)
                events.terminationEnded()
            }
        }
    }

    /// Waits up to `microseconds` for the children being ended to be gone, then ends the thread; children still
    /// running are no longer watched. Never call it on the supervisor thread.
    func stop(withinMicroseconds microseconds: UInt64) {
        loop.stop(withinMicroseconds: microseconds)
    }

    /// The supervisor thread's kernel id (as in `/proc/self/task`), once it runs: for tests that count its wake-ups.
    var threadID: Int32? {
        loop.threadID
    }
}

/// The `touchd-commands` thread's side of ``CommandSupervisor``.
private final class CommandSupervisorLoop<Events: CommandSupervisorEvents>: WorkerLoop {
    private struct Child {
        var run: Int
        var processID: Int32
        /// Its pidfd; nil when the kernel gave none (reaped by polling).
        var exit: Int32?
        /// When it times out; nil once `expired` was called.
        var expiresAt: UInt64?
    }

    private struct Termination {
        var group: Int32
        var killAt: UInt64
        var checkAt: UInt64
    }

    private let loop: WakeableLoop<CommandSupervisor.Shared>
    private let events: Events
    private let output: CommandOutput
    /// Why no command may start: touchd could not keep commands from creating input devices.
    private let guardFailure: SystemCallError?
    private var children: [Child] = []
    private var terminations: [Termination] = []

    /// Made on the thread, before the first child: no command may create an input device (UinputGuard). If that
    /// cannot be made sure, no command starts.
    init(_ loop: WakeableLoop<CommandSupervisor.Shared>, events: Events, output: CommandOutput) {
        self.loop = loop
        self.events = events
        self.output = output
        guardFailure = UinputGuard.forbidOnCallingThread()
    }

    func pass(now: UInt64, phase: WorkerPhase) -> WorkerWait {
        reapAndExpire(now: now)
        let requests = loop.state.withLock { shared in
            defer { shared.requests.removeAll() }
            return shared.requests
        }
        for request in requests {
            switch request {
            case .start(let run, let spec, let timeout):
                if let guardFailure {
                    events.finished(
                        run,
                        outcome: .notStarted(
                            description: "not started: touchd cannot keep commands from creating input devices "
                                + "(\(guardFailure))", errno: guardFailure.errno))
                    continue
                }
                switch CommandProcess.spawn(spec, output: output) {
                case .success(let processID):
                    events.spawned(run, processID: processID)
                    children.append(
                        Child(
                            run: run, processID: processID, exit: CommandProcess.exitDescriptor(processID),
                            expiresAt: now.saturatingSum(timeout)))
                case .failure(let failure):
                    events.finished(run, outcome: .notStarted(description: failure.description, errno: failure.errno))
                }
            case .terminate(let group, let grace):
                if CommandProcess.signalGroup(group, SIGTERM) {
                    terminations.append(
                        Termination(
                            group: group, killAt: now.saturatingSum(grace),
                            checkAt: now.saturatingSum(min(grace, CommandSupervisor.groupPollInterval))))
                } else {
                    events.terminationEnded()
                }
            }
        }

        // Wait for a request, a child's exit or the nearest deadline.
        var deadline: UInt64?
        func consider(_ time: UInt64) { deadline = min(deadline ?? time, time) }
        for child in children {
            if let expiresAt = child.expiresAt { consider(expiresAt) }
            if child.exit == nil { consider(now.saturatingSum(CommandSupervisor.reapPollInterval)) }
        }
        for termination in terminations { consider(termination.checkAt) }
        if case .stopping(let stopDeadline) = phase {
            // The runner asked every run to end before this stop: done when they all have (requests posted meanwhile,
            // such as the end of a run that was just spawned, have woken the thread already).
            let pending = loop.state.withLock { !$0.requests.isEmpty }
            if (children.isEmpty && terminations.isEmpty && !pending) || now >= stopDeadline { return .end }
            consider(stopDeadline)
        }
        return .until(deadline)
    }

    func descriptors(into set: inout [pollfd]) {
        for child in children {
            if let exit = child.exit { set.append(pollfd(fd: exit, events: Int16(POLLIN), revents: 0)) }
        }
    }

    /// A pidfd only says when to ask: the next pass asks every child.
    func handle(_ ready: ArraySlice<pollfd>, now: UInt64) {}

    /// Children still running are no longer watched.
    func finish() {
        for child in children { if let exit = child.exit { close(exit) } }
        children = []
    }

    /// Children that ended (every one is asked), children that outlived their timeout, and groups being stopped that
    /// are gone or due for SIGKILL.
    private func reapAndExpire(now: UInt64) {
        var index = 0
        while index < children.count {
            let child = children[index]
            guard let termination = CommandProcess.reap(child.processID) else {
                index += 1
                continue
            }
            if let exit = child.exit { close(exit) }
            children.remove(at: index)
            events.finished(child.run, outcome: .ended(termination))
        }
        for index in children.indices {
            guard let expiresAt = children[index].expiresAt, expiresAt <= now else { continue }
            children[index].expiresAt = nil
            events.expired(children[index].run)
        }
        terminations.removeAll { termination in
            guard termination.checkAt <= now else { return false }
            if CommandProcess.groupExists(termination.group) {
                guard now >= termination.killAt else { return false }
                CommandProcess.signalGroup(termination.group, SIGKILL)
            }
            events.terminationEnded()
            return true
        }
        for index in terminations.indices where terminations[index].checkAt <= now {
            terminations[index].checkAt = min(
                now.saturatingSum(CommandSupervisor.groupPollInterval), terminations[index].killAt)
        }
    }
}
