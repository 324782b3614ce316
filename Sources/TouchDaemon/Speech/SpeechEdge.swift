import Glibc
import Logging
import Synchronization

/// Explore by touch's speech as `touchd run` holds it: the SSIP client (started when the configuration asks for speech,
/// on the socket it names), and the way the client's availability reaches the input thread, which owns the engine.
///
/// The client runs on its own thread and reports there; the edge keeps the latest availability change in a mailbox
/// and makes its eventfd readable, which the input loop waits on beside its other descriptors. The input thread then
/// takes the change (``takeReports()``) and hands it to the engine as an input, as it does the ends of marked
/// utterances (a hint waits for its announcement's end). Only these wake it: an idle or absent speech server costs the
/// input thread nothing.
///
/// A ``Worker`` of the daemon's ``WorkerGroup``: it stops after the socket targets (what speech mode said last, such as
/// "speech mode off", is flushed within ``WorkerGroup/speechFlush``) and logs the client's counters.
final class SpeechEdge: Worker, Sendable {
    private struct Slot: Sendable {
        var client: SpeechClient?
        /// The latest availability the client reported that the input thread has not taken yet.
        var change: SpeechAvailability?
        /// Utterances the server finished speaking (their end marks and times) that the input thread has not taken
        /// yet; the newest ``SpeechEdge/endLimit`` only.
        var ends: [(mark: UInt64, at: UInt64)] = []
        var stopped = false
    }

    private let slot = Mutex(Slot())
    /// Only the latest announcement's end times a hint; a few more cover an input thread that fell behind.
    static let endLimit = 8
    private let logger: Logger
    private let options: SpeechClient.Options
    /// Readable when a change waits; nil when the process had no descriptor to spare (then speech cannot start).
    private let wakeDescriptor: WakeDescriptor?
    private let wakeError: Int32

    init(logger: Logger, options: SpeechClient.Options = SpeechClient.Options()) {
        self.logger = logger
        self.options = options
        wakeDescriptor = WakeDescriptor()
        wakeError = wakeDescriptor == nil ? errno : 0
    }

    /// The edge's own part of the group's start: its wake descriptor, without which no change could reach the input
    /// thread. The client's thread starts when a configuration asks for speech (``start(socketPath:)``).
    func start() throws(WorkerStartError) {
        guard wakeDescriptor != nil else { throw WorkerStartError(operation: "eventfd", errno: wakeError) }
    }

    /// The descriptor the input loop waits on for availability changes.
    var fileDescriptor: Int32? { wakeDescriptor?.fileDescriptor }

    /// Starts the client on `socketPath`, replacing one on another path (which is stopped first, its queue dropped).
    /// Does nothing when a client already runs on that path. Returns why it could not start, or nil. The new client
    /// is unavailable until its handshake is answered; the change is reported then.
    func start(socketPath: String) -> String? {
        guard let wakeDescriptor else { return "no file descriptor for the speech client's wake-ups" }
        let previous = slot.withLock { slot -> SpeechClient? in
            guard let client = slot.client, client.socketPath != socketPath else { return nil }
            slot.client = nil
            return client
        }
        if let previous {
            previous.stop(withinMicroseconds: 0)
            log(previous)
        }
        return slot.withLock { slot -> String? in
            guard !slot.stopped else { return "touchd is stopping" }
            guard slot.client == nil else { return nil }
            do {
                let client = SpeechClient(
                    socketPath: socketPath, logger: logger, options: options,
                    report: { [weak self] report in
                        guard let self else { return }
                        switch report {
                        case .availability(let availability):
                            self.slot.withLock { $0.change = availability }
                        case .ended(let mark, let at):
                            self.slot.withLock { slot in
                                if slot.ends.count >= Self.endLimit { slot.ends.removeFirst() }
                                slot.ends.append((mark, at))
                            }
                        case .speakSent, .queued, .cancelSent, .event:
                            return
                        }
                        wakeDescriptor.wake()
                    })
                try client.start()
                slot.client = client
                if previous != nil {
                    // The old client's availability is void: the engine hears "unavailable" until the new one is up.
                    slot.change = .unavailable(reason: "the speech socket changed to \(socketPath)")
                    wakeDescriptor.wake()
                }
                return nil
            } catch {
                return "\(error)"
            }
        }
    }

    /// Stops the client (its queue dropped) and reports speech unavailable; for a configuration that turns speech
    /// off. Does nothing when none runs.
    func stopClient() {
        let client = slot.withLock { slot -> SpeechClient? in
            defer { slot.client = nil }
            return slot.client
        }
        guard let client else { return }
        client.stop(withinMicroseconds: 0)
        log(client)
        slot.withLock { $0.change = .unavailable(reason: "speech is turned off") }
        wakeDescriptor?.wake()
    }

    /// Hands a command to the client; returns at once. Without a client it is dropped (speech mode cannot be on
    /// then, since it never became available).
    func submit(_ command: SpeechCommand) {
        slot.withLock { $0.client }?.submit(command)
    }

    /// The availability change and the utterance ends waiting for the input thread, if any; clears the wake-up.
    func takeReports() -> (change: SpeechAvailability?, ends: [(mark: UInt64, at: UInt64)]) {
        wakeDescriptor?.clear()
        return slot.withLock { slot in
            defer {
                slot.change = nil
                slot.ends.removeAll()
            }
            return (slot.change, slot.ends)
        }
    }

    /// Whether the client can speak now (false without a client).
    var availability: SpeechAvailability {
        slot.withLock { $0.client }?.availability ?? .unavailable(reason: "speech is not configured")
    }

    /// The client's counters, nil without a client.
    var statistics: SpeechStatistics? {
        slot.withLock { $0.client }?.statistics
    }

    /// Idempotent: the client is taken out, so a second stop (touchd run stops its workers once more on the way
    /// out) neither waits nor logs the counters again.
    func stop(withinMicroseconds microseconds: UInt64) {
        let client = slot.withLock { slot -> SpeechClient? in
            slot.stopped = true
            defer { slot.client = nil }
            return slot.client
        }
        guard let client else { return }
        client.stop(withinMicroseconds: microseconds)
        log(client)
    }

    private func log(_ client: SpeechClient) {
        let counts = client.statistics
        logger.info(
            "speech statistics",
            metadata: [
                "socket": "\(client.socketPath)", "spoken": "\(counts.spoken)", "canceled": "\(counts.canceled)",
                "dropped": "\(counts.dropped)", "unavailable": "\(counts.unavailable)",
                "refused": "\(counts.refused)", "connections": "\(counts.connections)", "losses": "\(counts.losses)",
            ])
    }
}
