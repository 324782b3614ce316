import Glibc
import Logging
import Synchronization

/// The SSIP client's thread: one connection to the speech server, its handshake, and the exchanges of each command.
/// See ``SpeechClient`` for the rules; this is how they are kept.
///
/// Commands are pipelined: one is written while earlier ones still await their replies, which come back in order
/// (speech-dispatcher reads its clients one line at a time, `server.c`'s `serve()`). So a touch's `CANCEL` and the
/// next label's `SPEAK` leave touchd together, without a round trip between them. Two exchanges wait for every reply
/// before them: `SPEAK`, after which the server reads the next lines as text once it answered `230` (so nothing may
/// follow it before that answer, and its text only after a `230`), and the handshake and `QUIT`, whose answers
/// decide what comes next.
final class SpeechClientLoop: WorkerLoop {
    final class Context: Sendable {
        let core: WakeableLoop<SpeechCore.State>
        let socketPath: String
        let logger: Logger
        let clock: @Sendable () -> UInt64
        let options: SpeechClient.Options
        let report: @Sendable (SpeechClient.Report) -> Void

        init(
            core: WakeableLoop<SpeechCore.State>, socketPath: String, logger: Logger,
            clock: @escaping @Sendable () -> UInt64, options: SpeechClient.Options,
            report: @escaping @Sendable (SpeechClient.Report) -> Void
        ) {
            self.core = core
            self.socketPath = socketPath
            self.logger = logger
            self.clock = clock
            self.options = options
            self.report = report
        }
    }

    /// How long a connect that reported EINPROGRESS may take.
    static let connectTimeout: UInt64 = 1_000_000
    /// Reads from the socket per wake-up before the loop looks at its other work (a flooding server cannot hold it).
    static let readBudget = 16

    /// What an exchange is for, which says what its reply means.
    enum Purpose: Equatable {
        case clientName, notification
        case priority(Utterance.Priority)
        case language(String)
        /// `SPEAK`: a `230` lets the text follow.
        case speak
        /// The text and its dot line: `225` queues it.
        case text
        case cancel, pause, resume
        /// `SOUND_ICON`: a short sound (the end of the list); `225` queues it.
        case soundIcon
        /// At stop, once everything else was sent: the server answers `231` and ends the session.
        case quit

        /// The command's name in log lines.
        var name: String {
            switch self {
            case .clientName: "SET SELF CLIENT_NAME"
            case .notification: "SET SELF NOTIFICATION"
            case .priority: "SET SELF PRIORITY"
            case .language: "SET SELF LANGUAGE"
            case .speak: "SPEAK"
            case .text: "SPEAK's text"
            case .cancel: "CANCEL"
            case .pause: "PAUSE"
            case .resume: "RESUME"
            case .soundIcon: "SOUND_ICON"
            case .quit: "QUIT"
            }
        }
    }

    /// One command's bytes and what it is for.
    struct Exchange {
        var purpose: Purpose
        var bytes: [UInt8]
        /// A text's ``Utterance/endMark``: its message id is remembered when the server queues it.
        var endMark: UInt64? = nil
    }

    /// An exchange written whole, and when its reply is due.
    struct Awaited {
        var exchange: Exchange
        var deadline: UInt64
    }

    /// The connection and what it has set on the server, which SSIP keeps per connection.
    final class Session {
        let socket: Int32
        var reader = SSIP.Reader()
        /// The exchange being written (a send that would block leaves the rest for POLLOUT).
        var outgoing: Exchange?
        var written = 0
        /// The exchanges written whole, oldest first, awaiting their replies in that order.
        var awaited: [Awaited] = []
        /// The rest of the current command's exchanges (a `SPEAK`'s text after its `230`, ...).
        var plan: [Exchange] = []
        var handshaken = false
        /// At stop: QUIT is planned or sent, and its answer came.
        var quitQueued = false
        var quitAnswered = false
        var priority: Utterance.Priority?
        var language: String?
        /// The end marks of queued utterances, by the server's message id, until their end or cancel event.
        var endMarks: [Int: UInt64] = [:]
        /// The most marks kept: only the latest announcement's end matters, a few cover the ones a touch replaced
        /// whose events are still on their way.
        static let endMarkLimit = 8

        init(socket: Int32) { self.socket = socket }

        var isIdle: Bool { outgoing == nil && awaited.isEmpty && plan.isEmpty }

        /// When the oldest reply is due.
        var replyDeadline: UInt64? { awaited.first?.deadline }
    }

    enum Connection {
        case disconnected(retryAt: UInt64)
        case connecting(socket: Int32, deadline: UInt64)
        case connected(Session)
    }

    private let core: WakeableLoop<SpeechCore.State>
    private let socketPath: String
    private let logger: Logger
    private let clock: @Sendable () -> UInt64
    private let options: SpeechClient.Options
    private let report: @Sendable (SpeechClient.Report) -> Void

    private var connection = Connection.disconnected(retryAt: 0)
    private var backoff: UInt64
    private var failureLog = RateLimit()
    private var protocolLog = RateLimit()
    /// Failures since the connection was last up: the first is logged as the server becoming unavailable.
    private var failureStreak = 0
    private var available = false
    private var scratch = [UInt8](repeating: 0, count: 4096)
    private var replies: [SSIP.Reply] = []

    init(_ context: Context) {
        core = context.core
        socketPath = context.socketPath
        logger = context.logger
        clock = context.clock
        options = context.options
        report = context.report
        backoff = context.options.backoff.initial
    }

    // MARK: - A pass

    func pass(now: UInt64, phase: WorkerPhase) -> WorkerWait {
        var stoppingBy: UInt64?
        if case .stopping(let deadline) = phase {
            // Ends once everything was said and QUIT answered, the deadline has passed, or there is no server.
            guard now < deadline, case .connected(let session) = connection, session.handshaken, !session.quitAnswered
            else { return .end }
            if session.isIdle, !session.quitQueued, core.state.withLock({ $0.queue.isEmpty }) {
                session.quitQueued = true
                session.plan.append(Exchange(purpose: .quit, bytes: SSIP.line("QUIT")))
            }
            stoppingBy = deadline
        }
        switch connection {
        case .disconnected(let retryAt):
            if now >= retryAt, stoppingBy == nil { connect(now: now) }
        case .connecting(_, let deadline):
            if now >= deadline { lose(now: now, reason: "connect failed: \(UnixSocket.describe(ETIMEDOUT))") }
        case .connected(let session):
            if let oldest = session.awaited.first, now >= oldest.deadline {
                lose(
                    now: now,
                    reason: "no answer to \(oldest.exchange.purpose.name) within \(options.replyTimeout / 1000) ms")
            } else {
                advance(session, now: now)
            }
        }
        var wakeAt: UInt64?
        switch connection {
        case .disconnected(let retryAt): wakeAt = stoppingBy == nil ? retryAt : nil
        case .connecting(_, let deadline): wakeAt = deadline
        case .connected(let session): wakeAt = session.replyDeadline
        }
        if let stoppingBy { wakeAt = min(wakeAt ?? stoppingBy, stoppingBy) }
        return .until(wakeAt)
    }

    // MARK: - Connecting

    private func connect(now: UInt64) {
        switch UnixSocket.connect(to: socketPath, type: .stream) {
        case .connected(let socket):
            connected(socket, now: now)
        case .inProgress(let socket):
            connection = .connecting(socket: socket, deadline: now.saturatingSum(Self.connectTimeout))
        case .failed(let error):
            failed(now: now, reason: "connect failed: \(UnixSocket.describe(error))", errno: error)
        }
    }

    private func connected(_ socket: Int32, now: UInt64) {
        let session = Session(socket: socket)
        session.plan = [
            Exchange(purpose: .clientName, bytes: SSIP.line("SET SELF CLIENT_NAME \(SSIP.clientName)")),
            Exchange(purpose: .notification, bytes: SSIP.line("SET SELF NOTIFICATION all on")),
        ]
        connection = .connected(session)
        advance(session, now: now)
    }

    /// The handshake was answered: the server can speak.
    private func handshaken(_ session: Session, now: UInt64) {
        session.handshaken = true
        backoff = options.backoff.initial
        var metadata: Logger.Metadata = ["client_name": "\(SSIP.clientName)"]
        if failureStreak > 1 { metadata["failed_attempts"] = "\(failureStreak)" }
        failureStreak = 0
        available = true
        core.state.withLock { state in
            state.availability = .available
            state.statistics.connections.saturatingAdd(1)
        }
        logger.info("speech server connected", metadata: metadata)
        report(.availability(.available))
    }

    // MARK: - Exchanges

    /// Writes what is due: the rest of the exchange being written, then the next ones of the plan and of the queued
    /// commands, as long as none of them has to wait for the replies before it (see the type's comment).
    private func advance(_ session: Session, now: UInt64) {
        while true {
            if session.outgoing == nil {
                guard mayWriteNext(session), let next = nextExchange(session) else { return }
                session.outgoing = next
                session.written = 0
            }
            guard let outgoing = session.outgoing else { return }
            // The time a SPEAK or CANCEL leaves touchd: taken before the send, so the server receives it after.
            let sendingAt = outgoing.purpose == .speak || outgoing.purpose == .cancel ? clock() : now
            switch UnixSocket.send(session.socket, outgoing.bytes, from: session.written) {
            case .sent(let count):
                session.written += count
                guard session.written == outgoing.bytes.count else { continue }
                session.outgoing = nil
                session.written = 0
                session.awaited.append(Awaited(exchange: outgoing, deadline: now.saturatingSum(options.replyTimeout)))
                switch outgoing.purpose {
                case .speak: report(.speakSent(at: sendingAt))
                case .cancel:
                    core.state.withLock { $0.statistics.canceled.saturatingAdd(1) }
                    report(.cancelSent(at: sendingAt))
                default: break
                }
            case .wouldBlock:
                return  // POLLOUT resumes it
            case .failed(let error):
                lose(now: now, reason: "send failed: \(UnixSocket.describe(error))", errno: error)
                return
            }
        }
    }

    /// Whether the next exchange may be written while earlier ones await their replies: never behind a `SPEAK` (the
    /// server reads what follows it as text), and the text, the handshake and `QUIT` only once every reply is in.
    private func mayWriteNext(_ session: Session) -> Bool {
        if session.awaited.isEmpty { return true }
        if session.awaited.contains(where: { $0.exchange.purpose == .speak }) { return false }
        guard let next = session.plan.first else {
            // A queued command's first exchange: a priority, a language, SPEAK, CANCEL, PAUSE, RESUME or SOUND_ICON.
            return session.handshaken
        }
        switch next.purpose {
        case .text, .clientName, .notification, .quit: return false
        case .priority, .language, .speak, .cancel, .pause, .resume, .soundIcon: return true
        }
    }

    /// The plan's next exchange, or the first of the next queued command's. An utterance whose `SPEAK` has not gone
    /// out yet is dropped when a cancel is waiting behind it: the customer has touched something else.
    private func nextExchange(_ session: Session) -> Exchange? {
        if !session.plan.isEmpty {
            if session.handshaken, session.plan.contains(where: { $0.purpose == .speak }),
                core.state.withLock({ $0.queue.contains(.cancel) })
            {
                session.plan.removeAll()
                core.state.withLock { $0.statistics.dropped.saturatingAdd(1) }
            } else {
                return session.plan.removeFirst()
            }
        }
        guard session.handshaken,
            let command = core.state.withLock({ state -> SpeechCommand? in
                state.queue.isEmpty ? nil : state.queue.removeFirst()
            })
        else { return nil }
        session.plan = exchanges(for: command, session: session)
        return session.plan.isEmpty ? nil : session.plan.removeFirst()
    }

    private func exchanges(for command: SpeechCommand, session: Session) -> [Exchange] {
        switch command {
        case .cancel: return [Exchange(purpose: .cancel, bytes: SSIP.line("CANCEL self"))]
        case .pause: return [Exchange(purpose: .pause, bytes: SSIP.line("PAUSE self"))]
        case .resume: return [Exchange(purpose: .resume, bytes: SSIP.line("RESUME self"))]
        case .soundIcon(let name):
            // The engine's icon names are its own constants; anything but a plain name would break the line.
            guard SSIP.isIconName(name) else { return [] }
            return [Exchange(purpose: .soundIcon, bytes: SSIP.line("SOUND_ICON \(name)"))]
        case .speak(let utterance):
            var plan: [Exchange] = []
            if session.priority != utterance.priority {
                plan.append(
                    Exchange(
                        purpose: .priority(utterance.priority),
                        bytes: SSIP.line("SET SELF PRIORITY \(utterance.priority.rawValue)")))
            }
            if let language = utterance.language, language != session.language {
                if SSIP.isValidLanguage(language) {
                    plan.append(
                        Exchange(purpose: .language(language), bytes: SSIP.line("SET SELF LANGUAGE \(language)")))
                } else if case .pass = protocolLog.check(now: clock()) {
                    logger.warning(
                        "speech: language is not a language tag; speaking in the current one",
                        metadata: ["language": "\(TerminalText.escaped(language))"])
                }
            }
            let (text, truncated) = SSIP.speakData(utterance.text)
            if truncated {
                logger.notice(
                    "speech: an utterance longer than \(SSIP.maximumTextBytes) bytes was cut",
                    metadata: ["bytes": "\(utterance.text.utf8.count)"])
            }
            plan.append(Exchange(purpose: .speak, bytes: SSIP.line("SPEAK")))
            plan.append(Exchange(purpose: .text, bytes: text, endMark: utterance.endMark))
            return plan
        }
    }

    /// The reply to the oldest exchange awaiting one.
    private func answer(_ reply: SSIP.Reply, session: Session, now: UInt64) {
        guard !session.awaited.isEmpty else {
            noteProtocol(now: now, "speech server sent a reply nobody asked for: \(safe(reply.summary))")
            return
        }
        let current = session.awaited.removeFirst().exchange
        let ok = reply.kind == .success
        if !ok {
            core.state.withLock { $0.statistics.refused.saturatingAdd(1) }
            noteProtocol(now: now, "speech server refused \(current.purpose.name): \(safe(reply.summary))")
        }
        switch current.purpose {
        case .clientName:
            break
        case .notification:
            handshaken(session, now: now)
        case .priority(let priority):
            session.priority = ok ? priority : nil
        case .language(let language):
            // Refused: the server's language is unknown now, so the next utterance with a language sets it again.
            session.language = ok ? language : nil
        case .speak:
            // Anything but 230 means the server will not read a text: send none.
            if reply.code != 230 {
                if ok { noteProtocol(now: now, "speech server answered SPEAK with \(safe(reply.summary))") }
                session.plan.removeAll { $0.purpose == .text }
            }
        case .text:
            if ok {
                let id = reply.lines.count >= 2 ? SSIP.decimal(reply.lines[0]) : nil
                core.state.withLock { $0.statistics.spoken.saturatingAdd(1) }
                report(.queued(messageID: id, at: now))
                if let mark = current.endMark, let id {
                    if session.endMarks.count >= Session.endMarkLimit, let oldest = session.endMarks.keys.min() {
                        session.endMarks[oldest] = nil
                    }
                    session.endMarks[id] = mark
                }
            }
        case .cancel, .pause, .resume, .soundIcon:
            break
        case .quit:
            session.quitAnswered = true
        }
    }

    // MARK: - Waiting

    func descriptors(into set: inout [pollfd]) {
        switch connection {
        case .disconnected:
            break
        case .connecting(let socket, _):
            set.append(pollfd(fd: socket, events: Int16(POLLOUT), revents: 0))
        case .connected(let session):
            var events = Int32(POLLIN)
            if session.outgoing != nil { events |= Int32(POLLOUT) }
            set.append(pollfd(fd: session.socket, events: Int16(events), revents: 0))
        }
    }

    func handle(_ ready: ArraySlice<pollfd>, now: UInt64) {
        guard let descriptor = ready.first, descriptor.revents != 0 else { return }
        let events = Int32(descriptor.revents)
        switch connection {
        case .disconnected:
            break
        case .connecting(let socket, _):
            let error = UnixSocket.pendingError(socket)
            if error != 0 {
                lose(now: now, reason: "connect failed: \(UnixSocket.describe(error))", errno: error)
            } else if events & Int32(POLLHUP | POLLNVAL) != 0 {
                lose(now: now, reason: "connect failed: \(UnixSocket.describe(ECONNRESET))", errno: ECONNRESET)
            } else {
                connected(socket, now: now)
            }
        case .connected(let session):
            if events & Int32(POLLIN | POLLHUP | POLLERR) != 0 {
                guard read(session, now: now) else { return }
            }
            if case .connected(let still) = connection, still === session { advance(session, now: now) }
        }
    }

    /// Reads what the server sent and acts on each complete reply; false when the connection was lost.
    private func read(_ session: Session, now: UInt64) -> Bool {
        for _ in 0..<Self.readBudget {
            // QUIT answered: the server closes its end next, which is the end of the session, not a loss.
            if session.quitAnswered { return true }
            let received = scratch.withUnsafeMutableBytes { buffer in
                recv(session.socket, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            }
            if received == 0 {
                lose(now: now, reason: "the server closed the connection")
                return false
            }
            if received < 0 {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN { return true }
                lose(now: now, reason: "receive failed: \(UnixSocket.describe(error))", errno: error)
                return false
            }
            replies.removeAll(keepingCapacity: true)
            let failure = scratch.withUnsafeBytes { bytes -> SSIP.ReadError? in
                do throws(SSIP.ReadError) {
                    try session.reader.feed(UnsafeRawBufferPointer(rebasing: bytes[..<received]), into: &replies)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure {
                lose(now: now, reason: "the server sent \(failure)")
                return false
            }
            for reply in replies {
                guard case .connected(let still) = connection, still === session else { return false }
                switch reply.kind {
                case .event:
                    core.state.withLock { $0.statistics.events.saturatingAdd(1) }
                    if let event = SSIP.Event(reply) {
                        report(.event(event, at: now))
                        if event.kind == .end || event.kind == .canceled, let id = event.messageID,
                            let mark = session.endMarks.removeValue(forKey: id), event.kind == .end
                        {
                            report(.ended(mark: mark, at: now))
                        }
                    } else {
                        noteProtocol(now: now, "speech server sent an unknown event: \(safe(reply.summary))")
                    }
                case .unknown:
                    lose(now: now, reason: "the server sent a code SSIP does not have: \(safe(reply.summary))")
                    return false
                case .success, .serverError, .clientError:
                    answer(reply, session: session, now: now)
                }
            }
        }
        return true
    }

    // MARK: - Losing the connection

    /// A connect that failed: the server is not there (yet).
    private func failed(now: UInt64, reason: String, errno: Int32? = nil) {
        connection = .disconnected(retryAt: now.saturatingSum(backoff))
        noteFailure(now: now, reason: reason, errno: errno, retryIn: backoff)
        backoff = backoff > options.backoff.maximum / 2 ? options.backoff.maximum : backoff * 2
    }

    /// Closes the connection (or the connect in progress) and schedules the next attempt; queued commands are dropped.
    private func lose(now: UInt64, reason: String, errno: Int32? = nil) {
        switch connection {
        case .connecting(let socket, _): close(socket)
        case .connected(let session):
            close(session.socket)
            let unqueued =
                session.plan.contains { $0.purpose == .text } || session.outgoing?.purpose == .text
                || session.awaited.contains { $0.exchange.purpose == .text }
            if unqueued { core.state.withLock { $0.statistics.dropped.saturatingAdd(1) } }
        case .disconnected: break
        }
        failed(now: now, reason: reason, errno: errno)
    }

    private func noteFailure(now: UInt64, reason: String, errno: Int32?, retryIn: UInt64) {
        let wasAvailable = available
        available = false
        failureStreak.saturatingAdd(1)
        core.state.withLock { state in
            state.dropQueued()
            state.availability = .unavailable(reason: reason)
            if wasAvailable { state.statistics.losses.saturatingAdd(1) }
        }
        if wasAvailable { report(.availability(.unavailable(reason: reason))) }
        guard case .pass(let suppressed) = failureLog.check(now: now) else { return }
        var metadata = MessageID.speechServerUnavailable.metadata
        metadata["retry_ms"] = "\(retryIn / 1000)"
        if let errno { metadata["errno"] = "\(errno)" }
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        if failureStreak > 1 { metadata["failed_attempts"] = "\(failureStreak)" }
        logger.warning("speech server unavailable: \(reason)", metadata: metadata)
    }

    private func noteProtocol(now: UInt64, _ message: String) {
        guard case .pass(let suppressed) = protocolLog.check(now: now) else { return }
        var metadata: Logger.Metadata = [:]
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.warning("\(message)", metadata: metadata)
    }

    private func safe(_ text: String) -> String {
        TerminalText.escaped(String(text.prefix(120)))
    }

    // MARK: - The end

    func finish() {
        if case .connected(let session) = connection {
            // QUIT was answered, or the stop's deadline passed first: the server ends the session when the socket
            // closes either way.
            close(session.socket)
        } else if case .connecting(let socket, _) = connection {
            close(socket)
        }
        connection = .disconnected(retryAt: .max)
        core.state.withLock { state in
            state.dropQueued()
            state.availability = .unavailable(reason: "touchd is stopping")
        }
    }
}
