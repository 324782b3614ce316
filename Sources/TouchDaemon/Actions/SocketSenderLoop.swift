import Glibc
import Logging
import Synchronization
import TouchModel

/// The socket-target sender's thread: every target's socket, in one `poll` loop.
///
/// Each target is disconnected, connecting or connected:
///
/// - disconnected → connecting/connected: when it has a message to send, or eagerly once after `configure` and once
///   after a lost connection; never before its retry time. Unix sockets connect at once or fail at once; a connect
///   that reports EINPROGRESS is given `connectTimeout`.
/// - connected → disconnected: a send error, POLLERR, or the peer closing (noticed while idle, since a stream is
///   polled for input). The retry waits the backoff delay, which doubles per failure and goes back to its start only
///   when a message goes through, so a peer that accepts and closes at once cannot make the loop spin.
///
/// A message that was partly written when its connection died is dropped, never resent into a new connection (the
/// peer would see half a line); one that had not started is sent on the next connection. A failure streak is logged
/// (rate limited, with the suppressed count) and the recovery says how many messages were dropped meanwhile.
final class SocketSenderLoop: WorkerLoop {
    /// What the thread starts with, handed over from `SocketTargetSender.start()`.
    final class Context: Sendable {
        let core: WakeableLoop<SocketSenderCore.State>
        let logger: Logger
        let clock: @Sendable () -> UInt64
        let backoff: SocketTargetSender.Backoff

        init(
            core: WakeableLoop<SocketSenderCore.State>, logger: Logger, clock: @escaping @Sendable () -> UInt64,
            backoff: SocketTargetSender.Backoff
        ) {
            self.core = core
            self.logger = logger
            self.clock = clock
            self.backoff = backoff
        }
    }

    /// How long a connect that reported EINPROGRESS may take (fault case A12's connect timeout).
    static let connectTimeout: UInt64 = 250_000
    /// Messages written to one target before the loop turns to the others.
    static let writeBudget = 64

    private let core: WakeableLoop<SocketSenderCore.State>
    private let logger: Logger
    private let clock: @Sendable () -> UInt64
    private let backoff: SocketTargetSender.Backoff
    private var connections: [String: TargetConnection] = [:]
    private var seenVersion = -1
    private var scratch = [UInt8](repeating: 0, count: 4096)
    /// The connections `descriptors(into:)` handed to the wait, in order.
    private var polled: [TargetConnection] = []

    init(_ context: Context) {
        core = context.core
        logger = context.logger
        clock = context.clock
        backoff = context.backoff
    }

    func pass(now: UInt64, phase: WorkerPhase) -> WorkerWait {
        if core.state.withLock({ $0.version }) != seenVersion { reconcile() }

        var wakeAt: UInt64?
        var writeAgain = false
        for connection in connections.values {
            let next = service(connection, now: now)
            if let deadline = next.wakeAt { wakeAt = min(wakeAt ?? deadline, deadline) }
            writeAgain = writeAgain || next.writeAgain
        }
        if case .stopping(let deadline) = phase {
            if now >= deadline || isFlushed { return .end }
            wakeAt = min(wakeAt ?? deadline, deadline)
        }
        return writeAgain ? .again : .until(wakeAt)
    }

    // MARK: - Configuration

    /// Closes the connections of removed and changed targets and creates those of new ones.
    private func reconcile() {
        let (version, targets) = core.state.withLock { state in
            (
                state.version,
                Dictionary(
                    uniqueKeysWithValues: state.entries.lazy.map {
                        ($0.key, (target: $0.value.target, serial: $0.value.serial))
                    })
            )
        }
        seenVersion = version
        for (name, connection) in connections where targets[name]?.serial != connection.serial {
            retire(connection)
            connections[name] = nil
        }
        for (name, entry) in targets where connections[name] == nil {
            connections[name] = TargetConnection(
                name: name, target: entry.target, serial: entry.serial, backoff: backoff.initial)
        }
    }

    /// Closes a connection whose target was removed or changed. Its queue was counted as dropped by `configure`.
    private func retire(_ connection: TargetConnection) {
        if connection.message != nil {
            connection.message = nil
            count(connection) { $0.dropped.saturatingAdd(1) }
        }
        if case .connected = connection.phase {
            logger.info("socket target closed: removed or changed by the configuration", metadata: connection.metadata)
        }
        closeSocket(connection)
    }

    // MARK: - One pass over a target

    /// Connects or writes as far as the target allows now; returns when the loop must look at it again (nil: when
    /// woken) and whether it stopped writing only because its budget ran out.
    private func service(_ connection: TargetConnection, now: UInt64) -> (wakeAt: UInt64?, writeAgain: Bool) {
        let (queued, overflowed) = core.state.withLock { state -> (Int, Int) in
            guard let entry = state.entries[connection.name], entry.serial == connection.serial else { return (0, 0) }
            state.entries[connection.name]!.overflowed = 0
            return (entry.queue.count + (entry.remainder == nil ? 0 : 1), entry.overflowed)
        }
        if overflowed > 0 {
            connection.unreportedOverflow.saturatingAdd(overflowed)
            reportOverflow(connection, now: now)
        }
        let hasWork = queued > 0 || connection.message != nil

        if case .connecting(let deadline) = connection.phase, now >= deadline {
            connectFailed(connection, now: now, error: ETIMEDOUT)
        }
        if case .disconnected = connection.phase, hasWork || connection.connectEagerly, now >= connection.retryAt {
            connect(connection, now: now)
        }
        var writeAgain = false
        if case .connected = connection.phase, !connection.writeBlocked, hasWork {
            writeAgain = !write(connection, now: now)
        }

        switch connection.phase {
        case .disconnected:
            // After a lost connection `connectEagerly` is set, so work that was just taken out still gets its retry.
            return (hasWork || connection.connectEagerly ? connection.retryAt : nil, false)
        case .connecting(let deadline):
            return (deadline, false)
        case .connected:
            if !writeAgain { openDirectPath(connection) }
            return (nil, writeAgain)
        }
    }

    /// Lets `submit` write to this target itself while the thread has nothing to do for it: see
    /// `SocketSenderCore.Entry.directSocket` for when that holds. Done under the lock that `submit` queues under, so
    /// a message queued since the thread last looked keeps the path closed (and has woken the thread).
    private func openDirectPath(_ connection: TargetConnection) {
        guard case .connected = connection.phase, !connection.writeBlocked, connection.message == nil,
            connection.backoff == backoff.initial, connection.socket >= 0
        else { return }
        core.state.withLock { state in
            guard let entry = state.entries[connection.name], entry.serial == connection.serial,
                entry.directSocket < 0, entry.queue.isEmpty, entry.remainder == nil,
                case .running = state.phase
            else { return }
            state.entries[connection.name]!.directSocket = connection.socket
        }
    }

    private func connect(_ connection: TargetConnection, now: UInt64) {
        connection.connectEagerly = false
        switch UnixSocket.connect(to: connection.target.path, type: connection.target.type) {
        case .connected(let socket):
            connection.socket = socket
            becameConnected(connection, now: now)
        case .inProgress(let socket):
            connection.socket = socket
            connection.phase = .connecting(deadline: now.saturatingSum(Self.connectTimeout))
        case .failed(let error):
            connectFailed(connection, now: now, error: error)
        }
    }

    /// Writes queued messages until the queue is empty, the socket is full or the connection fails (true), or the
    /// budget runs out (false).
    private func write(_ connection: TargetConnection, now: UInt64) -> Bool {
        for _ in 0..<Self.writeBudget {
            if connection.message == nil {
                guard let next = pop(connection) else { return true }
                connection.message = next.bytes
                connection.written = next.written
            }
            switch UnixSocket.send(connection.socket, connection.message!, from: connection.written) {
            case .sent(let count):
                connection.written += count
                if connection.written == connection.message!.count {
                    connection.message = nil
                    connection.written = 0
                    connection.backoff = backoff.initial
                    self.count(connection) { $0.sent.saturatingAdd(1) }
                }
            case .wouldBlock:
                connection.writeBlocked = true
                return true
            case .failed(EMSGSIZE) where connection.written == 0:
                dropOversized(connection, now: now)
            case .failed(let error):
                connectionLost(
                    connection, now: now, error: error, what: "send failed",
                    keepUnstarted: Self.isConnectionError(error))
                return true
            }
        }
        return false
    }

    /// Errors that say the peer is gone or not there, rather than something wrong with the message. A message that
    /// failed with any other error is dropped, so one message can never block its target for good.
    private static func isConnectionError(_ error: Int32) -> Bool {
        [EPIPE, ECONNRESET, ECONNREFUSED, ENOENT, ENOTCONN, ECONNABORTED, EDESTADDRREQ].contains(error)
    }

    // MARK: - Waiting

    func descriptors(into set: inout [pollfd]) {
        polled.removeAll(keepingCapacity: true)
        for connection in connections.values where connection.socket >= 0 {
            var events: Int32 = 0
            switch connection.phase {
            case .connecting:
                events = Int32(POLLOUT)
            case .connected:
                // A stream is read while idle to notice the peer closing; a datagram socket only reports errors.
                if connection.target.type == .stream { events |= Int32(POLLIN) }
                if connection.writeBlocked { events |= Int32(POLLOUT) }
            case .disconnected:
                continue
            }
            set.append(pollfd(fd: connection.socket, events: Int16(events), revents: 0))
            polled.append(connection)
        }
    }

    func handle(_ ready: ArraySlice<pollfd>, now: UInt64) {
        for (connection, descriptor) in zip(polled, ready) {
            handle(connection, events: Int32(descriptor.revents), now: now)
        }
    }

    private func handle(_ connection: TargetConnection, events: Int32, now: UInt64) {
        guard events != 0 else { return }
        switch connection.phase {
        case .connecting:
            let error = UnixSocket.pendingError(connection.socket)
            if error != 0 {
                connectFailed(connection, now: now, error: error)
            } else if events & Int32(POLLHUP | POLLNVAL) != 0 {
                connectFailed(connection, now: now, error: ECONNRESET)
            } else {
                becameConnected(connection, now: now)
            }
        case .connected:
            if events & Int32(POLLERR | POLLNVAL) != 0 {
                let error = UnixSocket.pendingError(connection.socket)
                connectionLost(
                    connection, now: now, error: error == 0 ? nil : error, what: "connection failed",
                    keepUnstarted: true)
                return
            }
            if events & Int32(POLLIN | POLLHUP) != 0 {
                switch UnixSocket.discardInput(connection.socket, scratch: &scratch) {
                case .open where events & Int32(POLLHUP) == 0:
                    break
                case .open, .closed:
                    connectionLost(connection, now: now, error: nil, what: "closed the connection", keepUnstarted: true)
                    return
                case .failed(let error):
                    connectionLost(connection, now: now, error: error, what: "connection failed", keepUnstarted: true)
                    return
                }
            }
            if events & Int32(POLLOUT) != 0 { connection.writeBlocked = false }
        case .disconnected:
            break
        }
    }

    // MARK: - Transitions

    private func becameConnected(_ connection: TargetConnection, now: UInt64) {
        connection.phase = .connected
        connection.writeBlocked = false
        let dropped = core.state.withLock { state -> Int in
            state.statistics[connection.name]?.connected = true
            return state.statistics[connection.name]?.dropped ?? 0
        }
        var metadata = connection.metadata
        if connection.failureStreak > 0 {
            metadata["failures"] = "\(connection.failureStreak)"
            metadata["dropped"] = "\(max(0, dropped &- connection.droppedBeforeStreak))"
        }
        connection.failureStreak = 0
        guard case .pass(let suppressed) = connection.connectLog.check(now: now) else { return }
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.info("socket target connected", metadata: metadata)
    }

    private func connectFailed(_ connection: TargetConnection, now: UInt64, error: Int32) {
        closeSocket(connection)
        count(connection) { $0.failed.saturatingAdd(1) }
        scheduleRetry(connection, now: now)
        noteFailure(connection, now: now, what: "connect failed", error: error)
    }

    /// An established connection failed (`error` is nil when the peer simply closed it). The message being written
    /// is dropped when part of it went out, or when `keepUnstarted` is false (the error was about the message).
    private func connectionLost(
        _ connection: TargetConnection, now: UInt64, error: Int32?, what: String, keepUnstarted: Bool
    ) {
        if connection.message != nil, connection.written > 0 || !keepUnstarted {
            connection.message = nil
            count(connection) { $0.dropped.saturatingAdd(1) }
        }
        connection.written = 0
        closeSocket(connection)
        count(connection) { $0.failed.saturatingAdd(1) }
        connection.connectEagerly = true
        scheduleRetry(connection, now: now)
        noteFailure(connection, now: now, what: what, error: error)
    }

    private func scheduleRetry(_ connection: TargetConnection, now: UInt64) {
        connection.retryAt = now.saturatingSum(connection.backoff)
        connection.backoff =
            connection.backoff > backoff.maximum / 2 ? backoff.maximum : min(backoff.maximum, connection.backoff * 2)
    }

    /// Closes the target's socket, closing the direct path first (under the lock, which a direct send holds), so
    /// no `submit` can write to the descriptor once it is closed and perhaps reused.
    private func closeSocket(_ connection: TargetConnection) {
        core.state.withLock { state in
            if state.entries[connection.name]?.serial == connection.serial {
                state.entries[connection.name]!.directSocket = -1
            }
            state.statistics[connection.name]?.connected = false
        }
        if connection.socket >= 0 { close(connection.socket) }
        connection.socket = -1
        connection.phase = .disconnected
        connection.writeBlocked = false
    }

    /// Drops a datagram the kernel refuses as too big (EMSGSIZE), counting it as dropped and failed. Logged once
    /// per target: the same configuration would produce the same message again.
    private func dropOversized(_ connection: TargetConnection, now: UInt64) {
        let size = connection.message?.count ?? 0
        connection.message = nil
        connection.written = 0
        count(connection) {
            $0.dropped.saturatingAdd(1)
            $0.failed.saturatingAdd(1)
        }
        guard !connection.reportedOversize else { return }
        connection.reportedOversize = true
        var metadata = connection.metadata
        metadata["errno"] = "\(EMSGSIZE)"
        metadata["bytes"] = "\(size)"
        metadata[MessageID.metadataKey] = "\(MessageID.actionFailed)"
        logger.warning(
            "socket target message too big for a datagram: \(UnixSocket.describe(EMSGSIZE)); dropped",
            metadata: metadata)
    }

    // MARK: - Logging

    /// Counts a failure into the streak and logs it, at most 5 per 30 s per target.
    private func noteFailure(_ connection: TargetConnection, now: UInt64, what: String, error: Int32?) {
        if connection.failureStreak == 0 {
            connection.droppedBeforeStreak = core.state.withLock { $0.statistics[connection.name]?.dropped ?? 0 }
        }
        connection.failureStreak.saturatingAdd(1)
        guard case .pass(let suppressed) = connection.failureLog.check(now: now) else { return }
        var metadata = connection.metadata
        var message = "socket target \(what)"
        if let error {
            message += ": \(UnixSocket.describe(error))"
            metadata["errno"] = "\(error)"
        }
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        metadata[MessageID.metadataKey] = "\(MessageID.actionFailed)"
        logger.warning("\(message)", metadata: metadata)
    }

    /// Reports messages pushed out of a full queue, sharing the target's failure rate limit; what the limit holds
    /// back is reported with the next line that gets through.
    private func reportOverflow(_ connection: TargetConnection, now: UInt64) {
        guard case .pass(let suppressed) = connection.failureLog.check(now: now) else { return }
        var metadata = connection.metadata
        metadata["dropped"] = "\(connection.unreportedOverflow)"
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        connection.unreportedOverflow = 0
        metadata[MessageID.metadataKey] = "\(MessageID.actionSuppressed)"
        logger.warning(
            "socket target is not keeping up: its queue is full, dropping the oldest messages", metadata: metadata)
    }

    // MARK: - Shared state

    /// The next message to write: the rest of one a direct send began, else the oldest queued one. Closes the direct
    /// path in the same critical section, so `submit` cannot send anything before this message is written.
    private func pop(_ connection: TargetConnection) -> SocketSenderCore.Remainder? {
        core.state.withLock { state in
            guard state.entries[connection.name]?.serial == connection.serial else { return nil }
            state.entries[connection.name]!.directSocket = -1
            if let remainder = state.entries[connection.name]!.remainder {
                state.entries[connection.name]!.remainder = nil
                return remainder
            }
            return state.entries[connection.name]!.queue.popFirst().map {
                SocketSenderCore.Remainder(bytes: SocketSenderCore.message($0, for: connection.target), written: 0)
            }
        }
    }

    private func count(_ connection: TargetConnection, _ update: (inout SocketTargetStatistics) -> Void) {
        core.state.withLock { state in
            if state.statistics[connection.name] != nil { update(&state.statistics[connection.name]!) }
        }
    }

    private var isFlushed: Bool {
        connections.values.allSatisfy { $0.message == nil }
            && core.state.withLock { $0.entries.values.allSatisfy { $0.queue.isEmpty && $0.remainder == nil } }
    }

    /// Ends the sender: what is still queued or half-written is dropped and counted, and every socket is closed. (No
    /// delivery is accepted since the stop began.)
    func finish() {
        let leftovers = core.state.withLock { state -> [String: Int] in
            var leftovers: [String: Int] = [:]
            for name in state.entries.keys {
                state.entries[name]!.directSocket = -1
                var removed = state.entries[name]!.queue.removeAll()
                if state.entries[name]!.remainder != nil {
                    state.entries[name]!.remainder = nil
                    removed += 1
                }
                leftovers[name] = removed
                state.statistics[name]?.dropped.saturatingAdd(removed)
            }
            return leftovers
        }
        for connection in connections.values {
            var dropped = leftovers[connection.name] ?? 0
            if connection.message != nil {
                connection.message = nil
                dropped += 1
                count(connection) { $0.dropped.saturatingAdd(1) }
            }
            closeSocket(connection)
            if dropped > 0 {
                var metadata = connection.metadata
                metadata["dropped"] = "\(dropped)"
                metadata[MessageID.metadataKey] = "\(MessageID.actionSuppressed)"
                logger.warning("socket target: messages not sent before stop were dropped", metadata: metadata)
            }
        }
        connections = [:]
    }
}

/// One socket target as the sender thread sees it. Only that thread touches it.
final class TargetConnection {
    enum Phase {
        case disconnected
        case connecting(deadline: UInt64)
        case connected
    }

    let name: String
    let target: Configuration.SocketTarget
    /// Tells this target apart from a later one of the same name (after a reload changed it).
    let serial: Int
    let metadata: Logger.Metadata

    var socket: Int32 = -1
    var phase = Phase.disconnected
    /// Connect without waiting for a message: after `configure`, and after a lost connection.
    var connectEagerly = true
    var retryAt: UInt64 = 0
    var backoff: UInt64
    /// The last send found the socket full; wait for POLLOUT.
    var writeBlocked = false
    /// The message being written (a stream's with its newline) and how much of it went out.
    var message: [UInt8]?
    var written = 0

    var failureLog = RateLimit()
    var connectLog = RateLimit()
    var failureStreak = 0
    /// The target's dropped count when the current failure streak began.
    var droppedBeforeStreak = 0
    var unreportedOverflow = 0
    var reportedOversize = false

    init(name: String, target: Configuration.SocketTarget, serial: Int, backoff: UInt64) {
        self.name = name
        self.target = target
        self.serial = serial
        self.backoff = backoff
        metadata = ["target": "\(name)", "path": "\(target.path)"]
    }
}
