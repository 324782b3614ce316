import Glibc
import Logging
import Synchronization

/// Whether speech can be produced now: the SSIP connection is up and its handshake answered. Explore by touch starts
/// only while it is `available`, and ends when it no longer is (accessibility contract, rule 3).
enum SpeechAvailability: Sendable, Equatable {
    case available
    /// Why not, for the log and `stats`: "connect failed: No such file or directory", "the server closed the
    /// connection", "no answer to SPEAK within 2000 ms".
    case unavailable(reason: String)

    var isAvailable: Bool { self == .available }
}

/// What the SSIP client did with the commands it was given, for `stats` and the log at stop.
struct SpeechStatistics: Sendable, Equatable {
    /// Utterances the server queued (`225`).
    var spoken = 0
    /// `CANCEL self` sent.
    var canceled = 0
    /// Utterances never sent: replaced by a newer `text` one or dropped by a cancel while queued, pushed out of the
    /// full queue, or left when the connection was lost or touchd stopped.
    var dropped = 0
    /// Commands submitted while the server was unavailable (speech mode should not be on then).
    var unavailable = 0
    /// Replies with an error code (3xx, 4xx, 5xx) to anything touchd sent.
    var refused = 0
    /// Connections made and handshaken, and lost (closed, failed, timed out, or dropped for a protocol error).
    var connections = 0
    var losses = 0
    /// Message events the server sent (701 begin, 702 end, 703 canceled, ...).
    var events = 0
}

/// Speaks explore by touch's utterances through speech-dispatcher's SSIP socket, away from the input thread.
///
/// One persistent connection, made at start and made again after it is lost, with a backoff from `Options.backoff` (1 s
/// doubling to 30 s); the backoff starts again once a handshake is answered, so a server that accepts and hangs up at
/// once costs one attempt per backoff step, never a spin. The handshake is `SET SELF CLIENT_NAME` and `SET SELF
/// NOTIFICATION all on`; then the client is available and each command becomes its SSIP exchanges, written without
/// waiting for the replies before them except behind a `SPEAK` (see ``SpeechClientLoop``): `SET SELF PRIORITY` when the
/// utterance's priority differs from the connection's, `SET SELF LANGUAGE` when its language does (nil keeps the
/// language last set: SSIP cannot read or restore the server's default), `SPEAK`, the text, `.`; `CANCEL self`, `PAUSE
/// self`, `RESUME self`. Every sent command waits at most `Options.replyTimeout` for its reply; a server that does not
/// answer, sends what is not SSIP, a line longer than 4 KiB or a reply of more than 64 lines loses the connection
/// (logged with what it sent), and the client reconnects.
///
/// `submit` never blocks: it files the command in a bounded queue (32 by default, the oldest dropped when full) under
/// the worker's lock and wakes the thread. A `text` utterance replaces the `text` utterances still queued (the newest
/// focus is the one to speak); a cancel drops every queued utterance. While the server is unavailable, commands are
/// dropped and counted, not kept for later: speech from a past touch must not start when the server comes back.
///
/// Idle-silent: with the connection up and nothing to send the thread waits in `poll` with no timeout (the server's
/// events wake it when they come); only a reply being awaited or a reconnect being due gives it a deadline.
final class SpeechClient: Worker {
    struct Options: Sendable {
        /// Reconnect delays: `initial` after the first failure, doubling up to `maximum`.
        var backoff = SocketTargetSender.Backoff(initial: 1_000_000, maximum: 30_000_000)
        /// How long a sent command may wait for its reply.
        var replyTimeout: UInt64 = 2_000_000
        /// Commands that may wait for the connection.
        var queueCapacity = 32

        init() {}
    }

    /// What the client tells its owner, on the client's thread (keep the callback short and non-blocking).
    enum Report: Sendable, Equatable {
        /// Availability changed (it starts as unavailable, "not connected yet").
        case availability(SpeechAvailability)
        /// `SPEAK`'s line went out for an utterance, at this monotonic time: for latency figures.
        case speakSent(at: UInt64)
        /// The server queued an utterance (`225`) under this message id.
        case queued(messageID: Int?, at: UInt64)
        /// `CANCEL self` went out.
        case cancelSent(at: UInt64)
        /// A message event (7xx) arrived.
        case event(SSIP.Event, at: UInt64)
        /// The server finished speaking (`702 END`) the utterance that carried this ``Utterance/endMark``.
        case ended(mark: UInt64, at: UInt64)
    }

    let socketPath: String
    private let core: WakeableLoop<SpeechCore.State>
    private let context: SpeechClientLoop.Context

    /// Makes the client; ``start()`` starts its thread (`touchd-speech`), which connects at once.
    ///
    /// - Parameters:
    ///   - socketPath: the server's Unix socket, e.g. `/run/speech-dispatcher/speechd.sock`.
    ///   - clock: monotonic microseconds.
    ///   - report: availability changes, sends and events, called on the client's thread.
    init(
        socketPath: String, logger: Logger, options: Options = Options(),
        clock: @escaping @Sendable () -> UInt64 = { monotonicMicroseconds() },
        report: @escaping @Sendable (Report) -> Void = { _ in }
    ) {
        precondition(options.queueCapacity > 0, "the speech queue needs room for at least one command")
        precondition(
            options.backoff.initial > 0 && options.backoff.initial <= options.backoff.maximum,
            "the backoff must grow from above 0")
        self.socketPath = socketPath
        var logger = logger
        logger[metadataKey: "speech_socket"] = "\(socketPath)"
        core = WakeableLoop(
            SpeechCore.State(capacity: options.queueCapacity), name: "touchd-speech", title: "speech client",
            logger: logger, clock: clock)
        context = SpeechClientLoop.Context(
            core: core, socketPath: socketPath, logger: logger, clock: clock, options: options, report: report)
    }

    /// Starts the client's thread; see ``Worker/start()``.
    func start() throws(WorkerStartError) {
        let context = context
        try core.start { SpeechClientLoop(context) }
    }

    deinit {
        core.stop(withinMicroseconds: 0)
    }

    /// Hands one command to the client's thread; returns at once.
    func submit(_ command: SpeechCommand) {
        submit(CollectionOfOne(command))
    }

    /// Hands several commands over under one lock and wakes the thread at most once.
    func submit(_ commands: some Collection<SpeechCommand>) {
        guard !commands.isEmpty else { return }
        let wake = core.state.withLock { state -> Bool in
            var wake = false
            for command in commands where state.accept(command) { wake = true }
            return wake
        }
        if wake { core.wake() }
    }

    /// Whether the server can speak now.
    var availability: SpeechAvailability {
        core.state.withLock { $0.availability }
    }

    var statistics: SpeechStatistics {
        core.state.withLock { $0.statistics }
    }

    /// Passes the client's thread has made through its loop: it grows with work, replies, events and reconnect
    /// attempts, never while the client is idle.
    var loopPasses: Int {
        core.passes.load(ordering: .relaxed)
    }

    /// Sends what is queued for at most `microseconds` (what is left is dropped and counted), says `QUIT`, closes the
    /// connection and joins the thread. Idempotent.
    func stop(withinMicroseconds microseconds: UInt64) {
        core.stop(withinMicroseconds: microseconds)
    }
}

/// What `submit` and the client's thread share, behind the worker's lock.
enum SpeechCore {
    struct State: WorkerState {
        var phase = WorkerPhase.running
        let capacity: Int
        /// Commands waiting for the thread, oldest first; at most `capacity`.
        var queue: [SpeechCommand] = []
        /// Set by the thread; `accept` drops commands while it is not `available`.
        var availability = SpeechAvailability.unavailable(reason: "not connected yet")
        var statistics = SpeechStatistics()

        init(capacity: Int) {
            self.capacity = capacity
            queue.reserveCapacity(capacity)
        }

        /// Files `command`; returns whether the thread must be woken (the queue was empty and now is not).
        mutating func accept(_ command: SpeechCommand) -> Bool {
            guard case .running = phase, availability.isAvailable else {
                statistics.unavailable.saturatingAdd(1)
                return false
            }
            let wasEmpty = queue.isEmpty
            switch command {
            case .speak(let utterance):
                if utterance.priority == .text {
                    let before = queue.count
                    queue.removeAll {
                        if case .speak(let queued) = $0 { return queued.priority == .text }
                        return false
                    }
                    statistics.dropped.saturatingAdd(before - queue.count)
                }
            case .cancel:
                let before = queue.count
                queue.removeAll {
                    switch $0 {
                    case .speak, .soundIcon: true
                    default: false
                    }
                }
                statistics.dropped.saturatingAdd(before - queue.count)
                // Two cancels in a row are one.
                if queue.last == .cancel { return false }
            case .pause, .resume, .soundIcon:
                break
            }
            if queue.count >= capacity {
                let oldest = queue.removeFirst()
                if case .speak = oldest { statistics.dropped.saturatingAdd(1) }
            }
            queue.append(command)
            return wasEmpty
        }

        /// Empties the queue, counting the utterances in it as dropped.
        mutating func dropQueued() {
            for command in queue {
                if case .speak = command { statistics.dropped.saturatingAdd(1) }
            }
            queue.removeAll(keepingCapacity: true)
        }
    }
}
