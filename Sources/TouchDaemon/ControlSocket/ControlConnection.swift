import Glibc
import Logging

/// One accepted connection as the server thread sees it. Only that thread touches it.
final class ControlConnection {
    enum Phase: Equatable {
        /// Waiting for the hello.
        case greeting
        case ready
        /// Writing its last lines (an error that ends it, the overflow marker, the shutdown line); closed when they
        /// are out or at `deadline`. Nothing more is read.
        case closing(deadline: UInt64, reason: String)
    }

    /// A reply in request order: the server's own answers wait behind requests forwarded before them.
    enum Reply {
        /// A forwarded request whose answer the input thread has not posted yet.
        case awaiting
        case plain([UInt8])
        case sequenced(ControlProtocol.SequencedLine)
    }

    let id: ControlClientID
    let socket: Int32
    let role: ControlRole
    let metadata: Logger.Metadata
    let acceptedAt: UInt64

    var phase = Phase.greeting
    /// Bytes read and not handled yet: complete lines waiting for their turn (each pass handles a bounded share of
    /// them, see `ControlServerLoop.lineBudget`), then the start of a line whose newline has not come yet. Reading
    /// waits while a complete line is here, so it holds at most one line and one read's worth.
    private(set) var input: [UInt8] = []
    /// Where the next line starts in `input`; the bytes before it are handled and dropped at the next read.
    private(set) var inputStart = 0
    /// How far `input` was searched for a newline, so that no byte is searched twice (a line that comes a byte at a
    /// time costs its length, not its length squared).
    private var inputScanned = 0
    /// The next line's newline in `input`, once found.
    private var newline: Int?
    var outbox: ControlOutbox
    var replies: [Reply] = []
    /// Entries of `replies` that are `.awaiting`.
    var awaiting = 0
    var subscribed = false
    /// Whether a request was ever forwarded, so the input thread gets a `disconnected` note at the end.
    var forwardedAny = false
    /// The last write found the socket full: wait for POLLOUT.
    var writeBlocked = false
    /// The peer shut down its sending side: close once every answer is written.
    var inputEnded = false
    /// Lines dropped since the overflow marker was queued (the marker says how many).
    var dropped = 0
    var lastRequest: UInt64
    /// Request tokens in millionths: `burst` requests when full.
    var tokens: UInt64
    var tokensUpdated: UInt64

    init(
        id: ControlClientID, socket: Int32, role: ControlRole, metadata: Logger.Metadata, now: UInt64,
        settings: ControlServer.Settings
    ) {
        self.id = id
        self.socket = socket
        self.role = role
        self.metadata = metadata
        acceptedAt = now
        lastRequest = now
        outbox = ControlOutbox(maxLines: settings.maxQueuedLines, maxBytes: settings.maxQueuedBytes)
        tokens = UInt64(settings.requestBurst) * 1_000_000
        tokensUpdated = now
    }

    var isClosing: Bool {
        if case .closing = phase { return true }
        return false
    }

    /// Whether to poll for input: not while closing or after the peer's end of input, not while many answers are
    /// still to come (the peer waits for them before sending more, or is flooding), and not while lines read earlier
    /// wait to be handled (so what one connection holds stays bounded).
    func wantsInput(maxPending: Int, maxLineBytes: Int) -> Bool {
        !isClosing && !inputEnded && replies.count < maxPending * 2 && !hasPendingInput(maxLineBytes: maxLineBytes)
    }

    /// Whether `input` holds something to handle now: a complete line, or the start of one already too long.
    func hasPendingInput(maxLineBytes: Int) -> Bool {
        !isClosing && (findNewline() != nil || input.count - inputStart >= maxLineBytes)
    }

    /// Adds bytes just read, first dropping the lines already handled (at most one line's worth is left to move).
    func appendInput(_ bytes: ArraySlice<UInt8>) {
        if inputStart > 0 {
            input.removeFirst(inputStart)
            inputScanned -= inputStart
            newline = newline.map { $0 - inputStart }
            inputStart = 0
        }
        input.append(contentsOf: bytes)
    }

    /// The next complete line, without its newline, when it is shorter than `maxLineBytes` (newline excluded);
    /// `.tooLong` when it or the incomplete line is not; `.none` when its newline has not come yet. A returned line
    /// is consumed; the slice shares `input`'s storage, so use it before the next `appendInput`.
    func nextLine(maxLineBytes: Int) -> NextLine {
        guard let end = findNewline() else {
            return input.count - inputStart >= maxLineBytes ? .tooLong : .none
        }
        guard end - inputStart < maxLineBytes else { return .tooLong }
        let line = input[inputStart..<end]
        inputStart = end + 1
        inputScanned = inputStart
        newline = nil
        return .line(line)
    }

    /// What `nextLine` found.
    enum NextLine {
        case line(ArraySlice<UInt8>)
        case tooLong
        case none
    }

    /// Forgets what was read (a connection that is closing reads no more).
    func discardInput() {
        input = []
        inputStart = 0
        inputScanned = 0
        newline = nil
    }

    /// The peer's end of input: the complete lines still wait for their turn; an incomplete last line is dropped
    /// (a request without its newline is not a request).
    func discardIncompleteLine() {
        guard let last = input[inputStart...].lastIndex(of: UInt8(ascii: "\n")) else {
            discardInput()
            return
        }
        input.removeSubrange((last + 1)...)
        inputScanned = min(inputScanned, input.count)
    }

    /// Searches the bytes not searched yet for the next line's newline.
    private func findNewline() -> Int? {
        if let newline { return newline }
        newline = input[max(inputScanned, inputStart)...].firstIndex(of: UInt8(ascii: "\n"))
        inputScanned = newline ?? input.count
        return newline
    }

    /// Takes one request token, refilling `requestsPerSecond` per second up to `burst`; false when none is left.
    func takeToken(now: UInt64, settings: ControlServer.Settings) -> Bool {
        let capacity = UInt64(settings.requestBurst) * 1_000_000
        if now > tokensUpdated {
            let (refill, overflow) = (now - tokensUpdated).multipliedReportingOverflow(
                by: UInt64(settings.requestsPerSecond))
            tokens = overflow ? capacity : min(capacity, tokens.saturatingSum(refill))
            tokensUpdated = now
        }
        guard tokens >= 1_000_000 else { return false }
        tokens -= 1_000_000
        return true
    }
}
