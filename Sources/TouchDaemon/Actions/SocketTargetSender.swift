import Glibc
import Logging
import Synchronization
import TouchModel

/// What happened to one socket target's messages so far. Counts are kept per target name for the life of the
/// sender, so a target that was removed still shows what it lost: those of the last
/// ``SocketTargetSender/removedTargetsKept`` removed targets.
struct SocketTargetStatistics: Hashable, Sendable {
    /// Messages written whole to the socket.
    var sent = 0
    /// Messages that will never be sent: pushed out of a full queue (oldest first), queued when the target was
    /// removed or changed, cut off by a connection that died half-way through them, too big for a datagram, or left
    /// over at stop (including deliveries submitted after stop began).
    var dropped = 0
    /// Connect attempts that failed, connections that were lost and send errors.
    var failed = 0
    /// Whether a socket is connected to the target now.
    var connected = false
    /// Messages waiting in the queue; at most the queue's capacity. The one message being written (at most one per
    /// target) is no longer counted here.
    var queued = 0
}

/// Sends deliveries to Unix-socket targets; callers never block.
///
/// The fast path is the caller's own thread: when a target is connected and idle (nothing queued, nothing being
/// written, the socket not full, the connection proven by a message sent since it was made), `submit` writes the
/// message itself with one non-blocking `send` and wakes nobody, so a tap's message leaves touchd in the same loop
/// turn as the input that caused it: the hand-over to the sender thread would cost a thread wake-up per batch. What it
/// buys, measured in the test VM in one boot against `libinput debug-events`: the median ratio of a tap's message went
/// from 1.99 to 1.51 with it (the action-delivery target is 1.5; docs/performance.md has today's figure).
/// Everything else goes through the sender thread: it owns every socket, connects and reconnects them, writes the
/// backlog, and waits in `poll` on them and on a wake-up eventfd; it sleeps without a timeout while nothing is queued
/// and every target is connected or waiting for something to send. Each target has a bounded queue that drops its
/// oldest message when full, so a peer that stops reading costs the rest of the daemon nothing. See
/// `SocketSenderLoop` for connecting, reconnecting and logging, and `SocketSenderCore.Entry.directSocket` for the
/// rules that keep a direct send from overtaking a queued message or writing to a closed descriptor.
final class SocketTargetSender: Sendable {
    /// How long to wait before reconnecting: `initial` after the first failure, doubling up to `maximum`, back to
    /// `initial` once a message goes through.
    struct Backoff: Sendable {
        var initial: UInt64
        var maximum: UInt64

        /// 50 ms doubling to 5 s.
        static let standard = Backoff(initial: 50_000, maximum: 5_000_000)
    }

    private let core: WakeableLoop<SocketSenderCore.State>
    private let queueCapacity: Int
    private let context: SocketSenderLoop.Context

    /// Makes the sender; ``start()`` (the ``WorkerGroup``'s) starts its thread.
    ///
    /// - Parameters:
    ///   - queueCapacity: messages each target may have waiting; more push the oldest out.
    ///   - clock: monotonic microseconds, for backoff deadlines, log rate limits and the flush timeout at stop.
    ///   - backoff: the reconnect delays.
    init(
        logger: Logger, queueCapacity: Int = 256,
        clock: @escaping @Sendable () -> UInt64 = { monotonicMicroseconds() },
        backoff: Backoff = .standard
    ) {
        precondition(queueCapacity > 0, "a socket target's queue needs room for at least one message")
        precondition(backoff.initial > 0 && backoff.initial <= backoff.maximum, "the backoff must grow from above 0")
        core = WakeableLoop(
            SocketSenderCore.State(), name: "touchd-sender", title: "socket target sender", logger: logger,
            clock: clock)
        self.queueCapacity = queueCapacity
        context = SocketSenderLoop.Context(core: core, logger: logger, clock: clock, backoff: backoff)
    }

    /// Starts the sender thread; see ``Worker/start()``.
    func start() throws(WorkerStartError) {
        let context = context
        try core.start { SocketSenderLoop(context) }
    }

    deinit {
        stop(flushTimeoutMicroseconds: 0)
    }

    /// How many removed targets' counters are kept, the most recently added first to go last: a configuration that
    /// renames its targets on every reload must not grow the counters (and the search through them on every
    /// message) without bound.
    static let removedTargetsKept = 64

    /// Sets the socket targets, at start and after each reload.
    ///
    /// Targets whose path and type are unchanged keep their connection and queue. Removed and changed targets are
    /// closed and their queued messages dropped (and counted); new and changed ones start connecting at once, so
    /// the peer sees touchd before the first action. Ignored once `stop` has begun.
    func configure(_ targets: [String: Configuration.SocketTarget]) {
        let accepted = core.state.withLock { state -> Bool in
            guard case .running = state.phase else { return false }
            for (name, entry) in state.entries where targets[name] != entry.target {
                state.statistics[name, default: SocketTargetStatistics()].dropped.saturatingAdd(
                    entry.queue.count + (entry.remainder == nil ? 0 : 1))
                state.entries[name] = nil
            }
            for (name, target) in targets where state.entries[name] == nil {
                state.nextSerial += 1
                state.entries[name] = SocketSenderCore.Entry(
                    target: target, serial: state.nextSerial, queue: BoundedQueue(capacity: queueCapacity))
                if state.statistics[name] == nil { state.statistics[name] = SocketTargetStatistics() }
            }
            // The counters are in the order their targets first appeared: the oldest removed ones go first.
            var removed = state.statistics.count - state.entries.count
            if removed > Self.removedTargetsKept {
                let configured = state.entries.keys
                state.statistics.removeAll { name, _ in
                    guard removed > Self.removedTargetsKept, !configured.contains(name) else { return false }
                    removed -= 1
                    return true
                }
            }
            state.version += 1
            return true
        }
        if accepted { core.wake() }
    }

    /// Queues one delivery for its target and returns at once.
    ///
    /// A delivery for a target that is not configured (say, one a reload just removed) is ignored and counted in
    /// `unknownTargetDeliveries`. When the target's queue is full, its oldest message is dropped and counted. After
    /// `stop` has begun, deliveries are dropped and counted. Wakes the sender thread only when the queue was empty:
    /// otherwise it already knows there is work.
    func submit(_ delivery: ActionDelivery) {
        submit([delivery])
    }

    /// Sends or queues several deliveries under one lock and wakes the sender thread at most once, and only when
    /// something was queued: the input loop hands over everything one batch of input produced together.
    ///
    /// A delivery for a target whose socket is open to direct sends (``SocketSenderCore/Entry/directSocket``) is
    /// written here with one non-blocking `send`. If the socket takes it whole, that is all; if it takes part of it
    /// (a stream), the rest goes to the sender thread, which writes it before anything else; if it would block or
    /// fails, the message is queued as if it had never been tried, and the sender thread meets the same condition
    /// and handles it as it does for its own writes (waiting for room, reconnecting, dropping an oversized
    /// datagram). Either way direct sends to that target stop until the sender thread opens them again.
    ///
    /// Each delivery looks its target up once in the entries and once in the counters: this runs on the input
    /// thread between a touch and its message.
    func submit(_ deliveries: [ActionDelivery]) {
        let wake = core.state.withLock { state -> Bool in
            var wake = false
            for delivery in deliveries {
                guard case .running = state.phase else {
                    if let counters = state.statistics.index(forKey: delivery.target) {
                        state.statistics[valueAt: counters].dropped.saturatingAdd(1)
                    } else {
                        state.unknownTargetDeliveries.saturatingAdd(1)
                    }
                    continue
                }
                guard let entry = state.entries.index(forKey: delivery.target) else {
                    state.unknownTargetDeliveries.saturatingAdd(1)
                    continue
                }
                switch state.entries[valueAt: entry].accept(delivery) {
                case .sent:
                    state.count(delivery.target) { $0.sent.saturatingAdd(1) }
                case .handedOver:
                    wake = true
                case .queued(let first, let pushedOut):
                    if first { wake = true }
                    if pushedOut { state.count(delivery.target) { $0.dropped.saturatingAdd(1) } }
                }
            }
            return wake
        }
        if wake { core.wake() }
    }

    /// Sends what is queued for at most `flushTimeoutMicroseconds` (counting what cannot be sent in time as
    /// dropped), closes every socket and joins the thread. Idempotent; a second caller waits for the first.
    func stop(flushTimeoutMicroseconds: UInt64) {
        core.stop(withinMicroseconds: flushTimeoutMicroseconds)
    }

    /// Per target name (including targets since removed): sent, dropped, failed, connected, queued.
    var statistics: [String: SocketTargetStatistics] {
        core.state.withLock { state in
            var result = Dictionary(uniqueKeysWithValues: state.statistics.lazy.map { ($0.key, $0.value) })
            for (name, entry) in state.entries { result[name]?.queued = entry.queue.count }
            return result
        }
    }

    /// Deliveries ignored because their target was not configured.
    var unknownTargetDeliveries: Int {
        core.state.withLock { $0.unknownTargetDeliveries }
    }

    /// Passes the sender thread has made through its `poll` loop, for tests and diagnostics: it grows with work and
    /// reconnect attempts, never while the sender is idle.
    var loopPasses: Int {
        core.passes.load(ordering: .relaxed)
    }
}

/// What the callers and the sender thread share: the queues and counters, behind the sender's loop's lock.
enum SocketSenderCore {
    /// One configured target's queue. `serial` tells a target apart from an earlier one of the same name.
    struct Entry: Sendable {
        var target: Configuration.SocketTarget
        var serial: Int
        var queue: BoundedQueue<ActionDelivery>
        /// Messages pushed out of the full queue since the thread last looked, for its log.
        var overflowed = 0
        /// The connected socket `submit` may write to itself, or -1.
        ///
        /// Only the sender thread opens it (sets it), under the lock, and only while the target is connected, its
        /// socket not full, the thread writing nothing to it, this queue empty, no `remainder` waiting, and the
        /// connection proven (its backoff back at its start, which only a message sent by the thread does after a
        /// reconnect, so a peer that accepts and closes at once still cannot make the thread spin). The thread
        /// closes it, under the lock, before it takes a message from the queue and before it closes the socket; a
        /// `submit` that cannot write a whole message closes it too. So a direct send never overtakes a queued or
        /// half-written message, and since it happens under the lock, the descriptor cannot be closed and reused
        /// while it is being written to.
        var directSocket: Int32 = -1
        /// What is left of a stream message a direct send wrote only part of: the sender thread writes it first.
        var remainder: Remainder?

        /// What ``accept(_:)`` did with a delivery.
        enum Accepted {
            /// Written whole on the direct socket.
            case sent
            /// Partly written on the direct socket: the rest is `remainder`, for the sender thread.
            case handedOver
            /// Queued for the sender thread; `first`: the queue was empty (the thread must be woken); `pushedOut`:
            /// the queue was full and dropped its oldest message.
            case queued(first: Bool, pushedOut: Bool)
        }

        /// Sends `delivery` directly when the direct path is open, else queues it. Called under the lock. Anything
        /// but a whole message closes the direct path, which only the sender thread opens again.
        mutating func accept(_ delivery: ActionDelivery) -> Accepted {
            if directSocket >= 0 {
                let message = SocketSenderCore.message(delivery, for: target)
                let socket = directSocket
                let result = message.withUnsafeBytes { UnixSocket.send(socket, $0, from: 0) }
                let length = message.count
                if case .sent(let count) = result, count == length { return .sent }
                directSocket = -1
                if case .sent(let count) = result, count > 0 {
                    remainder = Remainder(bytes: message, written: count)
                    return .handedOver
                }
            }
            let first = queue.isEmpty
            let pushedOut = queue.append(delivery) != nil
            if pushedOut { overflowed.saturatingAdd(1) }
            return .queued(first: first, pushedOut: pushedOut)
        }
    }

    /// A message with how much of it went out.
    struct Remainder: Sendable {
        var bytes: [UInt8]
        var written: Int
    }

    /// The bytes of `delivery` on the wire: its JSON line, with a newline on a stream.
    static func message(_ delivery: ActionDelivery, for target: Configuration.SocketTarget) -> [UInt8] {
        delivery.jsonBytes(terminator: target.type == .stream ? UInt8(ascii: "\n") : nil)
    }

    struct State: WorkerState {
        /// Per configured target. Searched by name on the input thread for every message: no hashing there.
        var entries: SmallMap<String, Entry> = [:]
        /// Per target name, including targets since removed.
        var statistics: SmallMap<String, SocketTargetStatistics> = [:]
        /// Counts `configure` calls, so the thread rereads the entries only when they changed.
        var version = 0
        var nextSerial = 0
        var unknownTargetDeliveries = 0
        /// Once `stop` has begun: no new deliveries; the thread flushes until the deadline, then ends.
        var phase = WorkerPhase.running

        /// Changes the counters of `target`, adding them when it has none yet (`configure` adds them for every
        /// target). Found by position rather than through a subscript with a default, which is one more closure.
        mutating func count(_ target: String, _ change: (inout SocketTargetStatistics) -> Void) {
            if let index = statistics.index(forKey: target) {
                change(&statistics[valueAt: index])
            } else {
                var counters = SocketTargetStatistics()
                change(&counters)
                statistics[target] = counters
            }
        }
    }
}

extension Configuration {
    /// The socket targets by name, as `SocketTargetSender.configure` takes them.
    var socketTargets: [String: SocketTarget] {
        var result: [String: SocketTarget] = [:]
        for definition in targets {
            if case .socket(let target) = definition.kind { result[definition.name] = target }
        }
        return result
    }
}

extension Int {
    /// Adds, sticking at `Int.max` instead of trapping: counters must never crash the daemon.
    mutating func saturatingAdd(_ other: Int) {
        let (sum, overflow) = addingReportingOverflow(other)
        self = overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` when that does not fit: a deadline far enough away is "never".
    func saturatingSum(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
