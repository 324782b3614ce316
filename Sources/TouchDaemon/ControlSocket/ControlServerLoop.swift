import Glibc
import Logging

/// The control-socket server's thread: the listener and every connection, in one `poll` loop.
///
/// Each pass applies what the input thread posted, expires deadlines, writes what is queued, hands new notes to the
/// input thread, then waits. The wait has no timeout unless a deadline is pending (a hello or idle timeout, a
/// closing connection's grace, the end of an accept pause), so an idle server never wakes.
///
/// Per connection:
///
/// - Reading stops while it is closing, after its end of input, while 2 × `maxPendingRequests` answers are still
///   to come, and while lines it read earlier wait to be handled; a line longer than `maxLineBytes` ends it with
///   `line_too_long` (at most that much and one read's worth is ever buffered).
/// - Each pass handles at most `lineBudget` lines per connection, and stops once `lineByteBudget` bytes of lines are
///   handled; the rest wait, buffered, for the next pass, which then polls without waiting. So a client flooding
///   long lines holds the thread for one bounded share per pass, and every other client is served in between.
/// - Answers go out in request order: the server's own answers wait behind forwarded requests that came before
///   them.
/// - A line that does not fit its queue is dropped; the connection gets the `overflow` marker (beyond the bound, and
///   updated with later drops until it is written), is read no more, and closes when the marker is out or after
///   `overflowGrace`.
/// - A write error or the peer hanging up frees it at once; the input thread hears `disconnected` once, when it
///   ever forwarded a request.
final class ControlServerLoop: WorkerLoop {
    /// What the thread starts with, handed over from `ControlServer.init`.
    final class Context: Sendable {
        let core: WakeableLoop<ControlServer.Shared>
        let notes: WakeDescriptor
        let listener: ControlListener.Socket
        let settings: ControlServer.Settings
        let logger: Logger
        let clock: @Sendable () -> UInt64

        init(
            core: WakeableLoop<ControlServer.Shared>, notes: WakeDescriptor, listener: ControlListener.Socket,
            settings: ControlServer.Settings, logger: Logger, clock: @escaping @Sendable () -> UInt64
        ) {
            self.core = core
            self.notes = notes
            self.listener = listener
            self.settings = settings
            self.logger = logger
            self.clock = clock
        }
    }

    /// Connections accepted per pass, so a connection storm cannot starve the clients.
    static let acceptBudget = 16
    /// Bytes read from one connection per pass.
    static let readBudget = 65_536
    /// Lines handled for one connection per pass.
    static let lineBudget = 32
    /// Bytes of lines after which a pass handles no more lines of that connection (so at most this plus one line).
    static let lineByteBudget = 65_536
    /// Bytes written to one connection per pass.
    static let writeBudget = 262_144

    private let core: WakeableLoop<ControlServer.Shared>
    /// Readable while notes wait for the input thread.
    private let noteSignal: WakeDescriptor
    private let listener: ControlListener.Socket
    private var listenerOpen = true
    private let settings: ControlServer.Settings
    private let logger: Logger
    private let clock: @Sendable () -> UInt64
    private let serverUID = geteuid()

    private var clients: [ControlClientID: ControlConnection] = [:]
    private var nextClient: ControlClientID = 1
    private var notes: [ControlNote] = []
    private var stopping = false
    private var stopDeadline: UInt64 = 0
    /// Accepting pauses until then after EMFILE and the like.
    private var acceptPausedUntil: UInt64?
    private var acceptBackoff: UInt64
    private var acceptTrouble = false
    /// Some connection stopped writing only because its budget ran out: poll without waiting.
    private var writeAgain = false
    /// Likewise for reading.
    private var readAgain = false

    private var scratch = [UInt8](repeating: 0, count: 16_384)
    private var control = [UInt8](repeating: 0, count: 512)
    /// The connections `descriptors(into:)` handed to the wait, in order.
    private var polled: [ControlConnection] = []

    private var overCapacityLog = RateLimit()
    private var descriptorLog = RateLimit()
    private var overflowLog = RateLimit()
    private var timeoutLog = RateLimit()

    init(_ context: Context) {
        core = context.core
        noteSignal = context.notes
        listener = context.listener
        settings = context.settings
        logger = context.logger
        clock = context.clock
        acceptBackoff = context.settings.acceptBackoffInitial
    }

    func pass(now: UInt64, phase: WorkerPhase) -> WorkerWait {
        let messages = core.state.withLock { state in
            defer { state.inbox = [] }
            return state.inbox
        }
        if case .stopping(let deadline) = phase, !stopping { beginShutdown(now: now, deadline: deadline) }
        apply(messages, now: now)
        expire(now: now)
        for connection in Array(clients.values)
        where connection.hasPendingInput(maxLineBytes: settings.maxLineBytes) {
            handleInput(connection, now: now)
        }
        writeAgain = false
        for connection in Array(clients.values) { flush(connection, now: now) }
        publishNotes()
        if stopping && (clients.isEmpty || now >= stopDeadline) { return .end }
        // Lines left for the next pass are work to do now, not a reason to wait.
        let inputWaits = clients.values.contains { $0.hasPendingInput(maxLineBytes: settings.maxLineBytes) }
        let again = writeAgain || readAgain || inputWaits
        readAgain = false
        return again ? .again : .until(nextDeadline())
    }

    // MARK: - Messages from the input thread

    private func apply(_ messages: [ControlMessage], now: UInt64) {
        for message in messages {
            switch message {
            case .response(let client, let id, let result):
                answer(client, .plain(line(ControlProtocol.response(id: id, result: result))), now: now)
            case .failure(let client, let id, let error):
                answer(client, .plain(line(ControlProtocol.failure(id: id, error: error))), now: now)
            case .subscribed(let client, let id, let snapshot):
                answer(client, .sequenced(ControlProtocol.subscribed(id: id, snapshot: snapshot)), now: now)
                if let connection = clients[client], !connection.isClosing { connection.subscribed = true }
            case .unsubscribed(let client, let id):
                clients[client]?.subscribed = false
                answer(client, .plain(line(ControlProtocol.response(id: id, result: "{}"))), now: now)
            case .event(let event):
                var encoded: ControlProtocol.SequencedLine?
                for client in event.recipients {
                    guard let connection = clients[client], connection.subscribed, !connection.isClosing else {
                        continue
                    }
                    if encoded == nil { encoded = ControlProtocol.event(members: event.members) }
                    enqueue(connection, .sequenced(encoded!), coalescingKey: event.coalescingKey, now: now)
                }
            }
        }
    }

    /// The input thread's answer to the oldest forwarded request of `client`.
    private func answer(_ client: ControlClientID, _ reply: ControlConnection.Reply, now: UInt64) {
        guard let connection = clients[client] else { return }
        if let index = connection.replies.firstIndex(where: { if case .awaiting = $0 { true } else { false } }) {
            connection.replies[index] = reply
            connection.awaiting -= 1
            releaseReplies(connection, now: now)
        } else {
            // Not an answer to anything we forwarded: still the input thread's to say; write it.
            enqueue(connection, reply, now: now)
        }
    }

    /// Queues the answers at the front of `replies` that no forwarded request holds up any more.
    private func releaseReplies(_ connection: ControlConnection, now: UInt64) {
        var released = 0
        for reply in connection.replies {
            if case .awaiting = reply { break }
            released += 1
            enqueue(connection, reply, now: now)
        }
        connection.replies.removeFirst(released)
    }

    // MARK: - Queueing

    /// Queues an answer of the server's own: behind forwarded requests still unanswered, else at once.
    private func reply(_ connection: ControlConnection, _ reply: ControlConnection.Reply, now: UInt64) {
        if connection.replies.isEmpty {
            enqueue(connection, reply, now: now)
        } else {
            connection.replies.append(reply)
        }
    }

    private func refuse(_ connection: ControlConnection, id: ControlRequestID?, _ error: ControlError, now: UInt64) {
        reply(connection, .plain(line(ControlProtocol.failure(id: id, error: error))), now: now)
    }

    private func enqueue(
        _ connection: ControlConnection, _ reply: ControlConnection.Reply, coalescingKey: String? = nil, now: UInt64
    ) {
        guard !connection.isClosing else {
            if connection.dropped > 0 { dropAfterOverflow(connection) }
            return
        }
        let outcome: ControlOutbox.Outcome
        switch reply {
        case .awaiting: return
        case .plain(let bytes): outcome = connection.outbox.append(plain: bytes)
        case .sequenced(let line): outcome = connection.outbox.append(line, coalescingKey: coalescingKey)
        }
        if outcome == .full { overflow(connection, now: now) }
    }

    /// The connection's queue is full: drop the line, queue the marker, stop reading, close soon.
    private func overflow(_ connection: ControlConnection, now: UInt64) {
        connection.dropped = 1
        _ = connection.outbox.append(ControlProtocol.overflow(dropped: 1), force: true)
        connection.phase = .closing(deadline: now.saturatingSum(settings.overflowGrace), reason: "overflow")
        count { $0.overflowed.saturatingAdd(1) }
        guard case .pass(let suppressed) = overflowLog.check(now: now) else { return }
        var metadata = connection.metadata
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        metadata[MessageID.metadataKey] = "\(MessageID.clientOverflowed)"
        logger.warning("control client is not reading: its queue is full; dropping it", metadata: metadata)
    }

    /// Another line for a connection that overflowed: counted in its marker while the marker is not written yet.
    private func dropAfterOverflow(_ connection: ControlConnection) {
        connection.dropped.saturatingAdd(1)
        _ = connection.outbox.rewriteLast(ControlProtocol.overflow(dropped: connection.dropped))
    }

    /// Queues a last line (an error that ends the connection) and starts closing.
    private func finish(_ connection: ControlConnection, _ text: String, reason: String, now: UInt64) {
        guard !connection.isClosing else { return }
        _ = connection.outbox.append(plain: line(text), force: true)
        connection.replies = []
        connection.awaiting = 0
        connection.phase = .closing(deadline: now.saturatingSum(settings.overflowGrace), reason: reason)
    }

    // MARK: - Deadlines

    private func expire(now: UInt64) {
        for connection in Array(clients.values) {
            switch connection.phase {
            case .greeting where now >= connection.acceptedAt.saturatingSum(settings.handshakeTimeout):
                timeOut(connection, "no hello within \(settings.handshakeTimeout / 1000) ms", now: now)
            case .ready where isIdle(connection) && now >= connection.lastRequest.saturatingSum(settings.idleTimeout):
                timeOut(connection, "no request for \(settings.idleTimeout / 1000) ms", now: now)
            case .closing(let deadline, let reason) where now >= deadline:
                close(connection, reason: reason + " (its last line was not read in time)")
            default:
                break
            }
        }
        if let until = acceptPausedUntil, now >= until { acceptPausedUntil = nil }
    }

    private func isIdle(_ connection: ControlConnection) -> Bool {
        !connection.subscribed && connection.replies.isEmpty
    }

    private func timeOut(_ connection: ControlConnection, _ message: String, now: UInt64) {
        if case .pass(let suppressed) = timeoutLog.check(now: now) {
            var metadata = connection.metadata
            if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
            logger.info("control client timed out: \(message)", metadata: metadata)
        }
        finish(
            connection, ControlProtocol.failure(id: nil, error: ControlError(code: .timeout, message: message)),
            reason: "timeout", now: now)
    }

    /// The nearest deadline, nil when none.
    private func nextDeadline() -> UInt64? {
        var next: UInt64?
        func consider(_ deadline: UInt64) { next = min(next ?? deadline, deadline) }
        for connection in clients.values {
            switch connection.phase {
            case .greeting: consider(connection.acceptedAt.saturatingSum(settings.handshakeTimeout))
            case .ready where isIdle(connection): consider(connection.lastRequest.saturatingSum(settings.idleTimeout))
            case .closing(let deadline, _): consider(deadline)
            default: break
            }
        }
        if let until = acceptPausedUntil { consider(until) }
        if stopping { consider(stopDeadline) }
        return next
    }

    // MARK: - Waiting

    func descriptors(into set: inout [pollfd]) {
        polled.removeAll(keepingCapacity: true)
        let pollListener = listenerOpen && acceptPausedUntil == nil
        set.append(pollfd(fd: pollListener ? listener.fileDescriptor : -1, events: Int16(POLLIN), revents: 0))
        for connection in clients.values {
            var events: Int32 = 0
            if connection.wantsInput(maxPending: settings.maxPendingRequests, maxLineBytes: settings.maxLineBytes) {
                events |= Int32(POLLIN)
            }
            if connection.writeBlocked { events |= Int32(POLLOUT) }
            // Polled even with no events: POLLHUP and POLLERR always report a peer that is gone.
            set.append(pollfd(fd: connection.socket, events: Int16(events), revents: 0))
            polled.append(connection)
        }
    }

    func handle(_ ready: ArraySlice<pollfd>, now: UInt64) {
        if ready.first!.revents != 0 { accept(now: now) }
        for (connection, descriptor) in zip(polled, ready.dropFirst()) {
            let events = Int32(descriptor.revents)
            guard events != 0, clients[connection.id] === connection else { continue }
            handle(connection, events: events, now: now)
        }
    }

    private func handle(_ connection: ControlConnection, events: Int32, now: UInt64) {
        if events & Int32(POLLNVAL) != 0 {
            close(connection, reason: "invalid descriptor")
            return
        }
        if events & Int32(POLLOUT) != 0 { connection.writeBlocked = false }
        if events & Int32(POLLIN) != 0 {
            read(connection, now: now)
            guard clients[connection.id] === connection else { return }
        }
        if events & Int32(POLLERR) != 0 {
            let error = UnixSocket.pendingError(connection.socket)
            close(
                connection,
                reason: error == 0 ? "connection failed" : "connection failed: \(UnixSocket.describe(error))")
        } else if events & Int32(POLLHUP) != 0 && events & Int32(POLLIN) == 0
            && !connection.hasPendingInput(maxLineBytes: settings.maxLineBytes)
        {
            // Gone, and nothing left to read (with POLLIN, reading finds the end of input first; lines read but not
            // handled yet are handled first, and then reading finds it).
            close(connection, reason: "the peer closed the connection")
        }
    }

    // MARK: - Accepting

    private func accept(now: UInt64) {
        for _ in 0..<Self.acceptBudget {
            let descriptor = Self.acceptConnection(listener.fileDescriptor)
            if descriptor < 0 {
                let error = errno
                switch error {
                case EAGAIN: return
                case EINTR, ECONNABORTED, EPROTO, EPERM: continue
                default:
                    pauseAccepting(error: error, now: now)
                    return
                }
            }
            if acceptTrouble {
                acceptTrouble = false
                acceptBackoff = settings.acceptBackoffInitial
                logger.info("control socket: accepting connections again")
            }
            admit(descriptor, now: now)
        }
    }

    /// Out of descriptors or memory (or any error that would repeat at once): stop polling the listener for a
    /// while, doubling the pause while it lasts. Logged once per episode.
    private func pauseAccepting(error: Int32, now: UInt64) {
        count { $0.acceptErrors.saturatingAdd(1) }
        acceptPausedUntil = now.saturatingSum(acceptBackoff)
        if !acceptTrouble {
            acceptTrouble = true
            logger.error(
                "control socket: accept failed: \(UnixSocket.describe(error)); pausing new connections",
                metadata: ["errno": "\(error)", "pause_us": "\(acceptBackoff)"])
        }
        acceptBackoff =
            acceptBackoff > settings.acceptBackoffMaximum / 2
            ? settings.acceptBackoffMaximum : min(settings.acceptBackoffMaximum, acceptBackoff * 2)
    }

    private func admit(_ descriptor: Int32, now: UInt64) {
        let id = nextClient
        nextClient += 1
        let peer = Self.credentials(descriptor)
        var metadata: Logger.Metadata = [
            "client": "\(id)", "client.uid": "\(peer.uid)", "client.gid": "\(peer.gid)", "client.pid": "\(peer.pid)",
        ]
        guard clients.count < settings.maxClients else {
            // Counted and logged before the peer can see the end of the connection: whoever it tells finds both.
            count { $0.refused.saturatingAdd(1) }
            if case .pass(let suppressed) = overCapacityLog.check(now: now) {
                if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
                metadata[MessageID.metadataKey] = "\(MessageID.clientRejected)"
                logger.info("control client refused: too many clients", metadata: metadata)
            }
            sendOnce(
                descriptor,
                ControlProtocol.failure(
                    id: nil,
                    error: ControlError(
                        code: .tooManyClients, message: "\(settings.maxClients) connections are open already")))
            Glibc.close(descriptor)
            return
        }
        guard
            let role = ControlServer.role(
                uid: peer.uid, gid: peer.gid, groups: peer.groups, serverUID: serverUID,
                clientGroup: settings.clientGroup, adminGroup: settings.adminGroup)
        else {
            count { $0.refused.saturatingAdd(1) }
            metadata["role"] = "none"
            metadata[MessageID.metadataKey] = "\(MessageID.clientRejected)"
            logger.info("control client refused: unauthorized", metadata: metadata)
            sendOnce(
                descriptor,
                ControlProtocol.failure(
                    id: nil,
                    error: ControlError(code: .unauthorized, message: "uid \(peer.uid) may not use this socket")))
            Glibc.close(descriptor)
            return
        }
        metadata["role"] = "\(role.rawValue)"
        clients[id] = ControlConnection(
            id: id, socket: descriptor, role: role, metadata: metadata, now: now, settings: settings)
        count {
            $0.accepted.saturatingAdd(1)
            $0.clients = clients.count
        }
        logger.info("control client connected", metadata: metadata)
    }

    /// Writes one line to a connection about to be closed, if the socket takes it now.
    private func sendOnce(_ descriptor: Int32, _ text: String) {
        _ = UnixSocket.send(descriptor, line(text), from: 0)
    }

    /// `struct ucred` of SO_PEERCRED, which Swift's Glibc module leaves out (it needs `_GNU_SOURCE`); the
    /// layout is the kernel's ABI.
    private struct PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = .max
        var gid: gid_t = .max
    }

    /// accept4(2), which Swift's Glibc module leaves out (it needs `_GNU_SOURCE`): looked up once in the C
    /// library, so an accepted socket is non-blocking and close-on-exec from the start.
    private static let accept4:
        (@convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32)? = {
            guard let symbol = dlsym(nil, "accept4") else { return nil }
            return unsafeBitCast(
                symbol,
                to: (@convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) ->
                    Int32).self)
        }()

    /// Accepts one connection as a non-blocking, close-on-exec socket; -1 with errno on failure.
    private static func acceptConnection(_ listener: Int32) -> Int32 {
        if let accept4 {
            return accept4(listener, nil, nil, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
        }
        // Not reached with glibc, which has had accept4 since 2.10.
        let descriptor = Glibc.accept(listener, nil, nil)
        guard descriptor >= 0 else { return descriptor }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        return descriptor
    }

    /// The peer's uid, gid and pid (SO_PEERCRED) and supplementary groups (SO_PEERGROUPS), read once.
    static func credentials(_ descriptor: Int32) -> (uid: uid_t, gid: gid_t, pid: pid_t, groups: [gid_t]) {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        if getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 {
            // No credentials: nobody, which no group admits unless configured so.
            credentials = PeerCredentials()
        }
        var groups = [gid_t](repeating: 0, count: 64)
        while true {
            var size = socklen_t(groups.count * MemoryLayout<gid_t>.size)
            if getsockopt(descriptor, SOL_SOCKET, SO_PEERGROUPS, &groups, &size) == 0 {
                groups.removeLast(groups.count - Int(size) / MemoryLayout<gid_t>.size)
                break
            }
            // ERANGE says how big the list is; NGROUPS_MAX is 65536, so this ends.
            let needed = Int(size) / MemoryLayout<gid_t>.size
            guard errno == ERANGE, needed > groups.count, needed <= 65_536 else {
                groups = []
                break
            }
            groups = [gid_t](repeating: 0, count: needed)
        }
        return (credentials.uid, credentials.gid, credentials.pid, groups)
    }

    // MARK: - Reading

    /// Reads until a complete line is buffered (the next pass handles it), the budget is spent or the socket is
    /// empty. Lines are not handled here: `handleInput` does, within its budget.
    private func read(_ connection: ControlConnection, now: UInt64) {
        var total = 0
        while total < Self.readBudget,
            connection.wantsInput(maxPending: settings.maxPendingRequests, maxLineBytes: settings.maxLineBytes)
        {
            let received = receive(connection, now: now)
            if received > 0 {
                total += received
                connection.appendInput(scratch[..<received])
                continue
            }
            if received == 0 {
                endOfInput(connection)
                return
            }
            let error = errno
            if error == EINTR { continue }
            if error != EAGAIN {
                close(connection, reason: "read failed: \(UnixSocket.describe(error))")
            }
            return
        }
        if total >= Self.readBudget { readAgain = true }
    }

    /// One `recvmsg` into `scratch`, closing any descriptors that came along. The corresponding C function's
    /// result: bytes, 0 at the end of input, -1 with errno.
    private func receive(_ connection: ControlConnection, now: UInt64) -> Int {
        let (received, controlLength, flags) = scratch.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { control in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vector in
                    var message = msghdr(
                        msg_name: nil, msg_namelen: 0, msg_iov: vector, msg_iovlen: 1, msg_control: control.baseAddress,
                        msg_controllen: control.count, msg_flags: 0)
                    let received = recvmsg(
                        connection.socket, &message, Int32(MSG_DONTWAIT) | Int32(MSG_CMSG_CLOEXEC))
                    return (received, message.msg_controllen, message.msg_flags)
                }
            }
        }
        if received >= 0 && controlLength > 0 {
            let saved = errno
            closeReceivedDescriptors(
                connection, length: controlLength, truncated: flags & Int32(MSG_CTRUNC) != 0, now: now)
            errno = saved
        }
        return received
    }

    /// Closes every descriptor of SCM_RIGHTS messages in `control[..<length]` and logs it (rate limited).
    private func closeReceivedDescriptors(_ connection: ControlConnection, length: Int, truncated: Bool, now: UInt64) {
        let headerSize = MemoryLayout<cmsghdr>.size
        let alignment = MemoryLayout<Int>.size
        func aligned(_ value: Int) -> Int { (value + alignment - 1) & ~(alignment - 1) }
        var closed = 0
        control.withUnsafeBytes { buffer in
            var offset = 0
            let end = min(length, buffer.count)
            while offset + headerSize <= end {
                let header = buffer.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
                let messageLength = Int(header.cmsg_len)
                guard messageLength >= headerSize, offset + messageLength <= end else { break }
                if header.cmsg_level == SOL_SOCKET && header.cmsg_type == Int32(SCM_RIGHTS) {
                    let dataStart = offset + aligned(headerSize)
                    var position = dataStart
                    while position + MemoryLayout<Int32>.size <= offset + messageLength {
                        let descriptor = buffer.loadUnaligned(fromByteOffset: position, as: Int32.self)
                        if descriptor >= 0 {
                            Glibc.close(descriptor)
                            closed += 1
                        }
                        position += MemoryLayout<Int32>.size
                    }
                }
                offset += aligned(messageLength)
            }
        }
        if closed > 0 { count { $0.receivedDescriptors.saturatingAdd(closed) } }
        guard closed > 0 || truncated, case .pass(let suppressed) = descriptorLog.check(now: now) else { return }
        var metadata = connection.metadata
        metadata["descriptors"] = "\(closed)"
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.warning("control client sent file descriptors; closed them unread", metadata: metadata)
    }

    /// Handles the connection's buffered lines, up to `lineBudget` lines or until `lineByteBudget` bytes are handled;
    /// the rest wait for the next pass.
    private func handleInput(_ connection: ControlConnection, now: UInt64) {
        var lines = 0
        var bytes = 0
        while lines < Self.lineBudget, !connection.isClosing {
            switch connection.nextLine(maxLineBytes: settings.maxLineBytes) {
            case .none:
                return
            case .tooLong:
                lineTooLong(connection, now: now)
                return
            case .line(let line):
                handleLine(connection, line, now: now)
                lines += 1
                bytes += line.count + 1
            }
            guard bytes < Self.lineByteBudget else { return }
        }
    }

    private func lineTooLong(_ connection: ControlConnection, now: UInt64) {
        connection.discardInput()
        count { $0.badRequests.saturatingAdd(1) }
        finish(
            connection,
            ControlProtocol.failure(
                id: nil,
                error: ControlError(
                    code: .lineTooLong, message: "a line is longer than \(settings.maxLineBytes) bytes")),
            reason: "line too long", now: now)
    }

    private func endOfInput(_ connection: ControlConnection) {
        connection.inputEnded = true
        connection.discardIncompleteLine()
    }

    // MARK: - Requests

    private func handleLine(_ connection: ControlConnection, _ bytes: ArraySlice<UInt8>, now: UInt64) {
        var line = bytes
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return }
        connection.lastRequest = now

        let decoded = ControlProtocol.decode(line, limits: settings.limits)
        guard connection.takeToken(now: now, settings: settings) else {
            count { $0.rateLimited.saturatingAdd(1) }
            let id: ControlRequestID?
            switch decoded {
            case .success(.hello(let helloID, _)), .success(.request(let helloID, _)): id = helloID
            case .failure(let refusal): id = refusal.id
            }
            refuse(
                connection, id: id,
                ControlError(
                    code: .rateLimited, message: "more than \(settings.requestsPerSecond) requests a second"),
                now: now)
            return
        }

        switch decoded {
        case .failure(let refusal):
            if refusal.error.code == .badRequest { count { $0.badRequests.saturatingAdd(1) } }
            refuse(connection, id: refusal.id, refusal.error, now: now)
        case .success(.hello(let id, let version)):
            guard connection.phase == .greeting else {
                count { $0.badRequests.saturatingAdd(1) }
                refuse(connection, id: id, .badRequest("hello was already received"), now: now)
                return
            }
            guard version == ControlProtocol.version else {
                finish(
                    connection,
                    ControlProtocol.failure(
                        id: id,
                        error: ControlError(
                            code: .unsupportedVersion,
                            message: "this server speaks version \(ControlProtocol.version), not \(version)")),
                    reason: "unsupported version", now: now)
                return
            }
            connection.phase = .ready
            let hello = ControlProtocol.hello(
                id: id, server: settings.serverName, generation: core.state.withLock { $0.generation },
                role: connection.role, client: connection.id)
            reply(connection, .plain(self.line(hello)), now: now)
        case .success(.request(let id, let command)):
            guard connection.phase == .ready else {
                refuse(
                    connection, id: id, ControlError(code: .helloRequired, message: "send hello first"), now: now)
                return
            }
            if let reason = ControlProtocol.controllerReason(command) {
                guard connection.role == .controller else {
                    refuse(connection, id: id, ControlError(code: .unauthorized, message: reason), now: now)
                    return
                }
                if case .subscribe(let filter) = command, ControlProtocol.watchesContacts(filter) {
                    // Who watches live contacts is always logged with the peer's credentials (docs/control-socket.md).
                    logger.notice("control client asks to watch live contacts", metadata: connection.metadata)
                }
            }
            guard connection.awaiting < settings.maxPendingRequests else {
                refuse(
                    connection, id: id,
                    ControlError(
                        code: .busy, message: "\(settings.maxPendingRequests) requests are waiting for an answer"),
                    now: now)
                return
            }
            notes.append(
                .request(ControlRequest(client: connection.id, id: id, role: connection.role, command: command)))
            connection.replies.append(.awaiting)
            connection.awaiting += 1
            connection.forwardedAny = true
        }
    }

    // MARK: - Writing

    private func flush(_ connection: ControlConnection, now: UInt64) {
        var total = 0
        while !connection.writeBlocked, let (line, written) = connection.outbox.first {
            if total >= Self.writeBudget {
                writeAgain = true
                return
            }
            switch Self.send(connection.socket, line.head, line.body, from: written) {
            case .sent(let sent):
                total += sent
                connection.outbox.didWrite(sent)
            case .wouldBlock:
                connection.writeBlocked = true
            case .failed(let error):
                close(connection, reason: "write failed: \(UnixSocket.describe(error))")
                return
            }
        }
        guard connection.outbox.isEmpty else { return }
        if case .closing(_, let reason) = connection.phase {
            close(connection, reason: reason)
        } else if connection.inputEnded && connection.replies.isEmpty
            && !connection.hasPendingInput(maxLineBytes: settings.maxLineBytes)
        {
            close(connection, reason: "the peer ended its input")
        }
    }

    /// Sends `head + body` from `offset` with one `sendmsg` (two vectors, so a shared body is never copied).
    static func send(_ descriptor: Int32, _ head: [UInt8], _ body: [UInt8], from offset: Int) -> UnixSocket.SendResult {
        head.withUnsafeBytes { head in
            body.withUnsafeBytes { body in
                var vectors: [iovec] = []
                if offset < head.count {
                    vectors.append(
                        iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + offset),
                            iov_len: head.count - offset))
                    if body.count > 0 {
                        vectors.append(
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress!), iov_len: body.count))
                    }
                } else {
                    let start = offset - head.count
                    vectors.append(
                        iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + start),
                            iov_len: body.count - start))
                }
                return vectors.withUnsafeMutableBufferPointer { vectors in
                    var message = msghdr(
                        msg_name: nil, msg_namelen: 0, msg_iov: vectors.baseAddress, msg_iovlen: vectors.count,
                        msg_control: nil, msg_controllen: 0, msg_flags: 0)
                    do throws(SystemCallError) {
                        return .sent(
                            try systemCall("sendmsg") {
                                sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                            })
                    } catch {
                        return error.errno == EAGAIN ? .wouldBlock : .failed(error.errno)
                    }
                }
            }
        }
    }

    // MARK: - Closing

    private func close(_ connection: ControlConnection, reason: String) {
        guard clients[connection.id] === connection else { return }
        Glibc.close(connection.socket)
        clients[connection.id] = nil
        count { $0.clients = clients.count }
        if connection.forwardedAny { notes.append(.disconnected(connection.id)) }
        logger.info("control client disconnected: \(reason)", metadata: connection.metadata)
    }

    /// `stop` began: no more connections, a shutdown line to everyone who is not leaving anyway.
    private func beginShutdown(now: UInt64, deadline: UInt64) {
        stopping = true
        stopDeadline = deadline
        if listenerOpen {
            listener.close()
            listenerOpen = false
        }
        for connection in clients.values where !connection.isClosing {
            _ = connection.outbox.append(ControlProtocol.shutdown(), force: true)
            connection.replies = []
            connection.awaiting = 0
            connection.phase = .closing(deadline: deadline, reason: "touchd is stopping")
        }
    }

    /// The thread ends: whatever is left is closed; the input thread hears about every connection it knew.
    func finish() {
        for connection in Array(clients.values) { close(connection, reason: "touchd is stopping") }
        if listenerOpen {
            listener.close()
            listenerOpen = false
        }
        publishNotes()
        core.state.withLock { $0.inbox = [] }
    }

    /// Hands the pass's notes to the input thread and makes its descriptor readable.
    private func publishNotes() {
        guard !notes.isEmpty else { return }
        core.state.withLock { $0.notes.append(contentsOf: notes) }
        noteSignal.wake()
        notes = []
    }

    // MARK: - Helpers

    private func line(_ text: String) -> [UInt8] {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private func count(_ update: (inout ControlServerStatistics) -> Void) {
        core.state.withLock { update(&$0.statistics) }
    }
}
