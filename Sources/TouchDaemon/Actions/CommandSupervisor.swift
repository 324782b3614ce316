import CLinux
import Glibc
import Synchronization

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
/// It waits in `poll(2)` on a wake eventfd and one pidfd per running child, with the nearest deadline (a timeout, a
/// check of a group being stopped) as its timeout, so with no child running it sleeps without a timeout and never
/// wakes: no periodic timer, no thread pool. It starts at the first command and ends when its runner goes away.
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

    private struct Shared {
        var requests: [Request] = []
        var thread: WorkerThread?
        /// The thread could not be started (its errno); requests fail at once from then on.
        var startError: Int32?
        var exiting = false
        /// The thread's kernel id once it runs.
        var threadID: Int32?
    }

    private let shared = Mutex(Shared())
    /// Readable while requests wait or the thread must end.
    private let wake: Int32
    private let output: CommandOutput

    init(output: CommandOutput) {
        self.output = output
        // Without an eventfd (out of descriptors) the thread polls for requests; see `loop`.
        wake = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
    }

    deinit {
        if wake >= 0 { close(wake) }
    }

    /// Hands `requests` to the thread, starting it first if it is not running. When no thread can be started, each
    /// start fails at once (`finished` with `notStarted`) and each termination signals the group and ends there.
    func post(_ requests: [Request], events: some CommandSupervisorEvents) {
        guard !requests.isEmpty else { return }
        let failure = shared.withLock { shared -> Int32? in
            if shared.thread == nil, shared.startError == nil, !shared.exiting {
                do throws(ThreadStartError) {
                    shared.thread = try startThread(named: "touchd-commands") { [self] in loop(events: events) }
                } catch {
                    shared.startError = error.errno
                }
            }
            guard shared.thread != nil else { return shared.startError ?? EAGAIN }
            shared.requests.append(contentsOf: requests)
            return nil
        }
        guard let failure else {
            signalWake()
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

    /// Ends the thread and waits for it; children still running are no longer watched (``CommandRunner/stop`` ends
    /// them first). Never call it on the supervisor thread.
    func end() {
        let thread = shared.withLock { shared -> WorkerThread? in
            shared.exiting = true
            return shared.thread
        }
        signalWake()
        thread?.join()
    }

    /// The supervisor thread's kernel id (as in `/proc/self/task`), once it runs: for tests that count its wake-ups.
    var threadID: Int32? {
        shared.withLock { $0.threadID }
    }

    private func signalWake() {
        guard wake >= 0 else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, MemoryLayout<UInt64>.size)
    }

    // MARK: - The thread

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

    private func loop(events: some CommandSupervisorEvents) {
        // Every signal blocked, as on the sender thread: touchd's go to its signalfd, never here (whoever started this
        // thread may not block them). Children start with an empty mask (CProcess).
        var mask = sigset_t()
        sigfillset(&mask)
        pthread_sigmask(SIG_SETMASK, &mask, nil)
        shared.withLock { $0.threadID = touchd_gettid() }
        // Before the first child: no command may create an input device (UinputGuard). If that cannot be made
        // sure, no command starts.
        let guardFailure = UinputGuard.forbidOnCallingThread()

        var children: [Child] = []
        var terminations: [Termination] = []
        var descriptors: [pollfd] = []
        defer { for child in children { if let exit = child.exit { close(exit) } } }
        while true {
            let (requests, exiting) = shared.withLock { shared in
                defer { shared.requests.removeAll() }
                return (shared.requests, shared.exiting)
            }
            if exiting { return }
            var now = monotonicMicroseconds()
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
                        events.finished(
                            run, outcome: .notStarted(description: failure.description, errno: failure.errno))
                    }
                case .terminate(let group, let grace):
                    if CommandProcess.signalGroup(group, SIGTERM) {
                        terminations.append(
                            Termination(
                                group: group, killAt: now.saturatingSum(grace),
                                checkAt: now.saturatingSum(min(grace, Self.groupPollInterval))))
                    } else {
                        events.terminationEnded()
                    }
                }
            }

            // Wait for a request, a child's exit or the nearest deadline.
            var deadline: UInt64?
            func consider(_ time: UInt64) { deadline = min(deadline ?? time, time) }
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
            for child in children {
                if let expiresAt = child.expiresAt { consider(expiresAt) }
                if let exit = child.exit {
                    descriptors.append(pollfd(fd: exit, events: Int16(POLLIN), revents: 0))
                } else {
                    consider(now.saturatingSum(Self.reapPollInterval))
                }
            }
            for termination in terminations { consider(termination.checkAt) }
            if wake < 0 { consider(now.saturatingSum(Self.reapPollInterval)) }
            let timeout = pollTimeout(until: deadline, now: now)
            if poll(&descriptors, nfds_t(descriptors.count), timeout) < 0, errno != EINTR {
                // Out of memory for the poll set, or worse: never spin on an error that repeats.
                usleep(100_000)
            }
            if descriptors[0].revents != 0 {
                var counter: UInt64 = 0
                _ = read(wake, &counter, MemoryLayout<UInt64>.size)
            }
            now = monotonicMicroseconds()

            // Children that ended: every one is asked, a pidfd only says when to ask.
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
                    now.saturatingSum(Self.groupPollInterval), terminations[index].killAt)
            }
        }
    }
}
