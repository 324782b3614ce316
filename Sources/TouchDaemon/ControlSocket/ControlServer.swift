import CLinux
import Glibc
import Logging
import Synchronization

/// What the control-socket server has done so far.
struct ControlServerStatistics: Hashable, Sendable {
    /// Connections open now (refused ones never count).
    var clients = 0
    /// Connections accepted with a role.
    var accepted = 0
    /// Connections refused: over `maxClients`, or a peer with no role.
    var refused = 0
    /// Connections closed because their queued output overflowed.
    var overflowed = 0
    /// Lines answered with `bad_request`.
    var badRequests = 0
    /// Requests answered with `rate_limited`.
    var rateLimited = 0
    /// `accept` failures (running out of descriptors or memory, and anything else that is not a harmless retry).
    var acceptErrors = 0
    /// File descriptors received over SCM_RIGHTS, all closed unread.
    var receivedDescriptors = 0
    /// Passes of the server thread through its `poll` loop (``WakeableLoop/passes``): it grows with work, never while
    /// the server is idle.
    var wakeups = 0
}

/// The control socket's server (docs/control-socket.md): owns the listening socket and every connection, on its own
/// thread (`touchd-control`), in one `poll` loop.
///
/// The server handles everything that does not need the scene: framing, limits, credentials and roles, the hello,
/// timeouts, rate limits, per-client queues. It hands every other valid request to the input thread as a
/// `ControlNote` (in the order received) and writes what the input thread `post`s back. Neither side ever blocks the
/// other: notes wait behind a lock until the input thread takes them (its `poll` watches `noteFileDescriptor`), and
/// `post` only appends to an array and wakes the server thread. A client that stops reading costs its own queue
/// (bounded; it is dropped with an `overflow` line) and nothing else.
///
/// See `ControlServerLoop` for the per-connection rules.
final class ControlServer: Sendable {
    struct Settings: Sendable {
        /// The hello reply's `server`, e.g. `touchd/0.1.0`.
        var serverName: String
        var maxClients = 32
        /// The longest request line, newline included.
        var maxLineBytes = 65_536
        var limits = JSONValue.Limits.standard
        var maxQueuedLines = 256
        var maxQueuedBytes = 262_144
        /// Microseconds a connection has to send its hello.
        var handshakeTimeout: UInt64 = 5_000_000
        /// Microseconds a connection without a subscription may stay without a request.
        var idleTimeout: UInt64 = 60_000_000
        var requestsPerSecond = 50
        var requestBurst = 50
        /// Requests forwarded to the input thread and not yet answered, per connection; more get `busy`.
        var maxPendingRequests = 8
        /// Microseconds a closing connection (overflow, timeout, a fatal error) has to take its last line.
        var overflowGrace: UInt64 = 1_000_000
        /// Microseconds accepting pauses after `accept` ran out of descriptors or memory, doubling up to the maximum
        /// while it lasts.
        var acceptBackoffInitial: UInt64 = 1_000_000
        var acceptBackoffMaximum: UInt64 = 30_000_000
        /// Members of this group (primary or supplementary) are observers.
        var clientGroup: gid_t?
        /// Members of this group are controllers.
        var adminGroup: gid_t?

        init(serverName: String, clientGroup: gid_t? = nil, adminGroup: gid_t? = nil) {
            self.serverName = serverName
            self.clientGroup = clientGroup
            self.adminGroup = adminGroup
        }
    }

    /// A resource the server could not get at start.
    struct StartError: Error, CustomStringConvertible {
        var operation: String
        var errno: Int32
        var description: String { "\(operation): \(UnixSocket.describe(errno))" }
    }

    /// What callers and the server thread share.
    struct Shared: WorkerState {
        /// From the input thread, not yet applied.
        var inbox: [ControlMessage] = []
        /// For the input thread, not yet taken.
        var notes: [ControlNote] = []
        /// Once `stop` has begun, `post` is ignored; the thread says goodbye, flushes until the deadline, then ends.
        var phase = WorkerPhase.running
        var statistics = ControlServerStatistics()
        /// The hello reply's `generation`.
        var generation: Int
    }

    private let core: WakeableLoop<Shared>
    /// Readable while notes wait for the input thread.
    private let notes: WakeDescriptor
    private let listener: ControlListener.Socket
    private let context: ControlServerLoop.Context
    /// Until `stop` has made sure the listener is closed.
    private let listenerOwned = Mutex(true)

    /// Makes the server for `listener`, which it owns from here on (closed, and unlinked when standalone, by `stop`);
    /// ``start()`` (the ``WorkerGroup``'s) starts its thread.
    ///
    /// - Parameters:
    ///   - generation: the configuration generation for hello replies (see `setGeneration`).
    ///   - clock: monotonic microseconds, for timeouts, rate limits and backoff.
    /// - Throws: `StartError` when the process is out of descriptors; the listener is closed then.
    init(
        listener: ControlListener.Socket, settings: Settings, generation: Int, logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = { monotonicMicroseconds() }
    ) throws {
        precondition(settings.maxClients > 0 && settings.maxLineBytes > 1, "the server needs room for a client")
        precondition(settings.maxQueuedLines > 0 && settings.maxQueuedBytes > 0, "the queues need room")
        precondition(settings.requestBurst > 0 && settings.requestsPerSecond > 0, "requests must be allowed")
        precondition(settings.acceptBackoffInitial > 0, "the accept backoff must be above 0")
        guard let notes = WakeDescriptor() else {
            let error = errno
            listener.close()
            throw StartError(operation: "eventfd", errno: error)
        }
        self.notes = notes
        core = WakeableLoop(
            Shared(generation: generation), name: "touchd-control", title: "control socket", logger: logger,
            clock: clock)
        self.listener = listener
        context = ControlServerLoop.Context(
            core: core, notes: notes, listener: listener, settings: settings, logger: logger, clock: clock)
    }

    /// Starts the server thread; see ``Worker/start()``.
    func start() throws(WorkerStartError) {
        let context = context
        try core.start { ControlServerLoop(context) }
    }

    deinit {
        stop(flushTimeoutMicroseconds: 0)
    }

    /// An eventfd that becomes readable when notes are waiting; the input thread polls it. Open as long as the
    /// server exists (after `stop` too): stop polling it before releasing the server.
    var noteFileDescriptor: Int32 { notes.fileDescriptor }

    /// Takes every waiting note (and clears the readable state). Called on the input thread; never blocks.
    func takeNotes() -> [ControlNote] {
        // Clear first: a note added after this read makes the descriptor readable again, so none waits unseen.
        notes.clear()
        return core.state.withLock { state in
            defer { state.notes = [] }
            return state.notes
        }
    }

    /// From the input thread: applies the messages in order; never blocks, never does socket I/O on the caller's
    /// thread; wakes the server thread once (and only when it was not already due to look). Ignored after `stop`.
    func post(_ messages: [ControlMessage]) {
        guard !messages.isEmpty else { return }
        let wake = core.state.withLock { state -> Bool in
            guard case .running = state.phase else { return false }
            let wasEmpty = state.inbox.isEmpty
            state.inbox.append(contentsOf: messages)
            return wasEmpty
        }
        if wake { core.wake() }
    }

    /// The hello reply's `generation`; the input thread calls it after each successful reload.
    func setGeneration(_ generation: Int) {
        core.state.withLock { $0.generation = generation }
    }

    /// Sends `{"type":"shutdown","seq":N}` to every client, flushes for at most `flushTimeoutMicroseconds`, closes
    /// everything (listener included; unlinks a standalone socket), joins the thread. Idempotent; a second caller
    /// waits for the first.
    func stop(flushTimeoutMicroseconds: UInt64) {
        core.stop(withinMicroseconds: flushTimeoutMicroseconds)
        // The thread closes the listener at its end; a server that never started has none to do it.
        let unclosed = listenerOwned.withLock { owned in
            defer { owned = false }
            return owned && !core.threadStarted
        }
        if unclosed { listener.close() }
    }

    var statistics: ControlServerStatistics {
        var statistics = core.state.withLock { $0.statistics }
        statistics.wakeups = core.passes.load(ordering: .relaxed)
        return statistics
    }

    /// The role a peer gets from its credentials (docs/control-socket.md, "Who may connect"); nil: refused.
    ///
    /// - Parameters:
    ///   - uid, gid, groups: the peer's (SO_PEERCRED, SO_PEERGROUPS).
    ///   - serverUID: touchd's effective uid.
    static func role(
        uid: uid_t, gid: gid_t, groups: [gid_t], serverUID: uid_t, clientGroup: gid_t?, adminGroup: gid_t?
    ) -> ControlRole? {
        if uid == 0 || uid == serverUID { return .controller }
        func member(_ group: gid_t?) -> Bool {
            guard let group else { return false }
            return gid == group || groups.contains(group)
        }
        if member(adminGroup) { return .controller }
        if member(clientGroup) { return .observer }
        return nil
    }

}

extension ControlServer: ControlChannel, Worker {
    func stop(withinMicroseconds microseconds: UInt64) { stop(flushTimeoutMicroseconds: microseconds) }

    var counters: [(name: String, value: Int)] {
        let statistics = self.statistics
        return [
            ("clients", statistics.clients), ("accepted", statistics.accepted), ("refused", statistics.refused),
            ("overflowed", statistics.overflowed), ("bad_requests", statistics.badRequests),
            ("rate_limited", statistics.rateLimited), ("accept_errors", statistics.acceptErrors),
            ("received_descriptors", statistics.receivedDescriptors),
        ]
    }
}
