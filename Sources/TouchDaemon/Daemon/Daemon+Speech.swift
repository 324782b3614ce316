import Logging

/// `touchd run`'s side of explore by touch's speech: starting the SSIP client, performing the engine's speech
/// commands, and taking the server's availability back to the engine. The engine decides what to say (no I/O); the
/// ``SpeechEdge`` in the worker group owns the client and its thread; this file only connects them.
///
/// The seam, for `[accessibility]`: at start and after each reload taken, `startSpeech(socketPath:)` when the
/// configuration enables speech (with its socket) and `stopSpeech()` when it does not; the effect that carries a
/// ``SpeechCommand`` is performed by `performSpeech(_:)`; availability changes arrive in
/// `speechAvailabilityChanged(_:)` on the input thread, in the loop turn after the client reported them.
extension Daemon {
    /// Starts the SSIP client on `socketPath` (speech-dispatcher's socket), or moves it there from another path.
    /// Returns false, with the reason logged, when it cannot start (no descriptor or thread to spare, or touchd is
    /// stopping); the daemon goes on without speech, and speech mode never starts. Speech is unavailable until the
    /// server answers the handshake: `speechAvailabilityChanged(_:)` says when.
    @discardableResult
    func startSpeech(socketPath: String) -> Bool {
        guard let speech = workers.speech else { return false }
        if let problem = speech.start(socketPath: socketPath) {
            var metadata = MessageID.speechUnavailable.metadata
            metadata["speech_socket"] = "\(socketPath)"
            logger.error("cannot start the speech client: \(problem)", metadata: metadata)
            return false
        }
        return true
    }

    /// Stops the SSIP client, for a configuration that no longer enables speech.
    func stopSpeech() {
        workers.speech?.stopClient()
    }

    /// Performs one of the engine's speech commands: hands it to the client's thread and returns at once (never
    /// blocks the input thread). Without a client, or while the server is unavailable, it is dropped and counted.
    func performSpeech(_ command: SpeechCommand) {
        workers.speech?.submit(command)
    }

    /// The speech edge's descriptor was readable: takes the availability change waiting there.
    func handleSpeechAvailability() {
        guard let change = workers.speech?.takeAvailabilityChange() else { return }
        speechAvailabilityChanged(change)
    }

    /// The speech server became available or unavailable. The engine's input for it (speech mode may start only while
    /// available, and ends when it is not: the contract's rule 3) is called here once the engine has it; the client
    /// has already logged the change itself, with the reason.
    func speechAvailabilityChanged(_ availability: SpeechAvailability) {
        switch availability {
        case .available:
            logger.debug("speech available to the engine")
        case .unavailable(let reason):
            logger.debug("speech unavailable to the engine", metadata: ["reason": "\(reason)"])
        }
    }
}
