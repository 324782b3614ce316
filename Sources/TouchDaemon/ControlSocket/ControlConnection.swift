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
    /// The start of a line whose newline has not come yet.
    var input: [UInt8] = []
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

    /// Whether to poll for input: not while closing or after the peer's end of input, and not while many answers
    /// are still to come (the peer waits for them before sending more, or is flooding).
    func wantsInput(maxPending: Int) -> Bool {
        !isClosing && !inputEnded && replies.count < maxPending * 2
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
