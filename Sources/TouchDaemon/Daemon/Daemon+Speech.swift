import Glibc
import Logging

/// `touchd run`'s side of explore by touch's speech: starting the SSIP client, performing the engine's speech
/// commands, and taking the server's availability back to the engine. The engine decides what to say (no I/O); the
/// ``SpeechEdge`` in the worker group owns the client and its thread; this file only connects them.
///
/// The seam, for `[accessibility]`: at start and after each reload taken, `applySpeech(_:)` starts the client on the
/// configuration's socket or stops it; the effect that carries a ``SpeechCommand`` is performed by
/// `performSpeech(_:)`; availability changes reach the engine through `Daemon.speechAvailabilityChanged(_:)` (in
/// Daemon.swift, which owns the engine), on the input thread, in the loop turn after the client reported them.
extension Daemon {
    /// Starts the SSIP client on `socketPath` (speech-dispatcher's socket), or moves it there from another path.
    /// Returns false, with the reason logged, when it cannot start (no descriptor or thread to spare, or touchd is
    /// stopping); the daemon goes on without speech, and speech mode never starts. Speech is unavailable until the
    /// server answers the handshake: `speechAvailabilityChanged(_:)` says when.
    @discardableResult
    func startSpeech(socketPath: String) -> Bool {
        guard let speech = workers.speech else { return false }
        if let problem = speech.start(socketPath: socketPath) {
            var metadata = MessageID.speechServerUnavailable.metadata
            metadata["speech_socket"] = "\(socketPath)"
            logger.error("cannot start the speech client: \(problem)", metadata: metadata)
            return false
        }
        return true
    }

    /// At start and after each reload taken: the SSIP client on the configuration's speech socket when `[accessibility]`
    /// is enabled, none otherwise. Without a socket to use (no `speech_socket`, `SPEECHD_ADDRESS` or
    /// `XDG_RUNTIME_DIR`, as under the system unit) it says so; speech mode then never starts (rule 3).
    func applySpeech(_ configuration: Configuration) {
        guard configuration.accessibility.enabled else {
            stopSpeech()
            return
        }
        var environment: [String: String] = [:]
        for name in ["SPEECHD_ADDRESS", "XDG_RUNTIME_DIR"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        guard let path = configuration.accessibility.resolvedSpeechSocket(environment: environment) else {
            logger.error(
                "explore by touch is enabled but no speech socket is known: set [accessibility] speech_socket",
                metadata: MessageID.speechServerUnavailable.metadata)
            stopSpeech()
            return
        }
        startSpeech(socketPath: path)
    }

    /// At start, while `[accessibility]` is enabled: opens the headphone jacks (devices with `SW_HEADPHONE_INSERT`)
    /// and returns their descriptors for the input loop's wait. Jacks are looked for only here: a reload that turns
    /// `[accessibility]` on later needs a restart for `start_on_headphones`. Headphones already in at start do not
    /// start speech mode: only plugging them in does.
    func openHeadphoneJacks() -> [Int32] {
        guard engine.configuration.accessibility.enabled else { return [] }
        var problems: [String] = []
        let jack = HeadphoneJack(problems: &problems)
        for problem in problems {
            logger.notice("headphone jack: cannot read an input device: \(problem)")
        }
        for state in jack.states {
            logger.info(
                "headphone jack found",
                metadata: ["device.path": "\(state.path)", "inserted": "\(state.inserted)"])
        }
        guard !jack.descriptors.isEmpty else { return [] }
        headphoneJack = jack
        return jack.descriptors
    }

    /// A headphone jack's descriptor was readable: a change of "headphones in" goes to the engine.
    func handleHeadphoneJack(_ descriptor: Int32) {
        guard let inserted = headphoneJack?.read(descriptor) else { return }
        logger.info("headphones \(inserted ? "plugged in" : "unplugged")")
        headphonesChanged(inserted: inserted)
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

    /// The speech edge's descriptor was readable: takes the availability change and the utterance ends waiting
    /// there, in that order (an end reported before the server went away is void then anyway).
    func handleSpeechAvailability() {
        guard let (change, ends) = workers.speech?.takeReports() else { return }
        if let change { speechAvailabilityChanged(change) }
        for end in ends { speechEnded(mark: end.mark, at: end.at) }
    }

}
