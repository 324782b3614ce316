import CLinux
import Glibc
import Logging
import Synchronization

/// Where a worker is in its life. Callers read it under the worker's lock: only a running worker takes new work.
enum WorkerPhase: Sendable {
    case running
    /// `stop` was called: the thread finishes what is in flight until `deadline` (monotonic microseconds), then ends.
    case stopping(deadline: UInt64)
    /// The thread has ended, or `stop` came before it ever started.
    case stopped
}

/// What a worker's callers and its thread share, behind the loop's lock; the phase is part of it, so a caller checks
/// it and hands over work in one critical section.
protocol WorkerState: Sendable {
    var phase: WorkerPhase { get set }
}

/// How a worker's thread goes on after a pass.
enum WorkerWait {
    /// Waits for one of its descriptors or the wake descriptor, until `deadline` at the latest (nil: no timeout, so an
    /// idle worker never wakes).
    case until(UInt64?)
    /// Polls without waiting: the pass left work for the next one (a budget ran out).
    case again
    /// Ends the thread.
    case end
}

/// The thread's side of a worker, which ``WakeableLoop`` drives: a pass over what is due, then one `poll` on the
/// worker's descriptors and the wake descriptor, then what the poll found, and so on until a pass says `.end`.
/// Made on the thread and used only there.
protocol WorkerLoop: AnyObject {
    /// Takes what callers left in the shared state and does what is due. While `phase` is `stopping`, it ends the
    /// thread once what is in flight is done or the phase's deadline has passed.
    func pass(now: UInt64, phase: WorkerPhase) -> WorkerWait
    /// Appends the descriptors to wait on, besides the wake descriptor.
    func descriptors(into set: inout [pollfd])
    /// What the wait found: the descriptors `descriptors(into:)` appended, in order, with their `revents`. Called
    /// only when something is ready.
    func handle(_ ready: ArraySlice<pollfd>, now: UInt64)
    /// The thread ends: lets everything go.
    func finish()
}

/// A worker's thread and how its callers reach it: the shared state behind one lock (the phase included), one
/// eventfd that wakes the thread, and the stop that ends it. The socket sender, the control server and the command
/// runner each have one.
///
/// The thread waits in `poll` on the worker's descriptors and the wake descriptor, with the worker's nearest
/// deadline as its only timeout: no timer, no periodic wake-up. A caller that hands over work wakes it (only when the
/// thread is not already due to look: that is the worker's to decide).
final class WakeableLoop<State: WorkerState>: Sendable {
    /// A start that failed: the call and its errno.
    private enum ThreadSlot: Sendable {
        case notStarted
        case started(WorkerThread)
        case failed(WorkerStartError)
    }

    let state: Mutex<State>
    /// Passes the thread has made through its loop: it grows with work, never while the worker is idle.
    let passes = Atomic<Int>(0)
    /// The thread's name, as `top -H` shows it.
    let name: String
    /// What its logged `poll` failures call it.
    private let title: String
    private let logger: Logger
    private let clock: @Sendable () -> UInt64
    /// Nil when there was none to be had; then `start` fails with `wakeError`.
    private let wakeDescriptor: WakeDescriptor?
    private let wakeError: Int32
    private let thread = Mutex(ThreadSlot.notStarted)
    /// The thread's kernel id once it runs, else 0.
    private let kernelID = Atomic<Int32>(0)

    /// Makes the loop and its wake descriptor; `start` starts the thread.
    ///
    /// - Parameters:
    ///   - name: the thread's name.
    ///   - title: what logged `poll` failures call the worker, e.g. "socket target sender".
    ///   - clock: monotonic microseconds, for the passes' `now` and the stop's deadline.
    init(
        _ state: State, name: String, title: String, logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = { monotonicMicroseconds() }
    ) {
        self.state = Mutex(state)
        self.name = name
        self.title = title
        self.logger = logger
        self.clock = clock
        wakeDescriptor = WakeDescriptor()
        wakeError = wakeDescriptor == nil ? errno : 0
    }

    /// Starts the thread, with every signal blocked, running the loop `makeLoop` makes on it; does nothing when it was
    /// started before. Throws why it cannot start (also on every later call once it failed), or ECANCELED when `stop`
    /// came first.
    func start(_ makeLoop: @escaping @Sendable () -> any WorkerLoop) throws(WorkerStartError) {
        try thread.withLock { slot throws(WorkerStartError) in
            switch slot {
            case .started: return
            case .failed(let error): throw error
            case .notStarted: break
            }
            // Under the thread's lock: a `stop` that began before this finds no thread to wait for, one that begins
            // after finds this one.
            guard case .running = state.withLock({ $0.phase }) else {
                throw WorkerStartError(operation: "start", errno: ECANCELED)
            }
            guard let wakeDescriptor else {
                let error = WorkerStartError(operation: "eventfd", errno: wakeError)
                slot = .failed(error)
                throw error
            }
            do throws(ThreadStartError) {
                slot = .started(
                    try startThread(named: name, blockingSignals: true) { [self] in
                        kernelID.store(touchd_gettid(), ordering: .relaxed)
                        run(makeLoop(), wakeDescriptor: wakeDescriptor)
                    })
            } catch {
                let error = WorkerStartError(operation: "pthread_create", errno: error.errno)
                slot = .failed(error)
                throw error
            }
        }
    }

    /// Makes the thread's next `poll` return (at once if it is waiting). Never blocks.
    func wake() {
        wakeDescriptor?.wake()
    }

    /// Begins stopping when the worker is running: its thread gets `microseconds` to finish what is in flight. Then
    /// waits for the thread to end. Returns whether this call began the stop. Idempotent; a second caller waits for
    /// the first. Never call it on the thread itself.
    @discardableResult
    func stop(withinMicroseconds microseconds: UInt64) -> Bool {
        let deadline = clock().saturatingSum(microseconds)
        let begun = state.withLock { state -> Bool in
            guard case .running = state.phase else { return false }
            state.phase = .stopping(deadline: deadline)
            return true
        }
        if begun { wake() }
        let started = thread.withLock { slot -> WorkerThread? in
            if case .started(let started) = slot { return started }
            return nil
        }
        if let started {
            started.join()
        } else {
            state.withLock { $0.phase = .stopped }
        }
        return begun
    }

    /// Whether `start` made the thread: when it never did, `stop` has run no loop, so nothing the loop would have
    /// closed at its end was closed.
    var threadStarted: Bool {
        thread.withLock { slot in
            if case .started = slot { true } else { false }
        }
    }

    /// The thread's kernel id (as in `/proc/self/task`) once it runs: for tests that count its wake-ups.
    var threadID: Int32? {
        let id = kernelID.load(ordering: .relaxed)
        return id == 0 ? nil : id
    }

    // MARK: - The thread

    private func run(_ loop: any WorkerLoop, wakeDescriptor: WakeDescriptor) {
        var set: [pollfd] = []
        var failures = RateLimit()
        while true {
            passes.wrappingAdd(1, ordering: .relaxed)
            let now = clock()
            let timeout: Int32
            switch loop.pass(now: now, phase: state.withLock { $0.phase }) {
            case .end:
                loop.finish()
                state.withLock { $0.phase = .stopped }
                return
            case .again:
                timeout = 0
            case .until(let deadline):
                timeout = pollTimeout(until: deadline, now: now)
            }
            set.removeAll(keepingCapacity: true)
            set.append(pollfd(fd: wakeDescriptor.fileDescriptor, events: Int16(POLLIN), revents: 0))
            loop.descriptors(into: &set)
            let ready = pollOnce(&set, timeout: timeout, now: now, failures: &failures, logger: logger, what: title)
            guard ready > 0 else { continue }
            if set[0].revents != 0 { wakeDescriptor.clear() }
            loop.handle(set[1...], now: clock())
        }
    }
}

/// An eventfd that one thread makes readable to wake another, which polls it: a worker's thread (``WakeableLoop``),
/// or the input thread (the control server's notes).
final class WakeDescriptor: Sendable {
    let fileDescriptor: Int32

    /// Returns nil, with errno set, when the process is out of descriptors.
    init?() {
        let descriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        fileDescriptor = descriptor
    }

    deinit { close(fileDescriptor) }

    /// Makes the descriptor readable (it stays so until `clear`). Never blocks.
    func wake() {
        var one: UInt64 = 1
        _ = write(fileDescriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Makes it unreadable again. Never blocks.
    func clear() {
        var counter: UInt64 = 0
        _ = read(fileDescriptor, &counter, MemoryLayout<UInt64>.size)
    }
}
