import ArgumentParser
import Glibc
import Logging
import Synchronization

/// `touchd speak`: a diagnostics tool for the speech setup of explore by touch. Speaks one text through the speech
/// server with the SSIP client touchd itself uses, and says how it went and how long each step took.
struct Speak: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the speech setup: speak a text through the speech server as explore by touch does.",
        discussion: """
            A diagnostics tool for integrators: it connects to speech-dispatcher's SSIP socket with the client touchd \
            run uses (the same handshake, priority and language commands), speaks TEXT, waits for the server's \
            events and prints each step with its time since the request: connected, SPEAK sent, queued (225, with \
            the message id), speech began (701), ended (702) or was canceled (703). With --cancel-after-ms it sends \
            CANCEL that long after speech began, as a new touch does in speech mode. It needs no configuration file \
            and does not talk to a running touchd. Exits 0 when the text was spoken to its end (or canceled as \
            asked), 69 (EX_UNAVAILABLE) when the server cannot be reached or does not answer, 1 when the server \
            refused the text or sent no end of speech in time. docs/speech-server.md describes running a system \
            speech-dispatcher for a kiosk.
            """
    )

    /// speech-dispatcher's socket when it runs as a system service for the kiosk (docs/speech-server.md).
    static let systemSocketPath = "/run/speech-dispatcher/speechd.sock"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The speech server's Unix socket. Default: the path in SPEECHD_ADDRESS (unix_socket:PATH) when set, "
                + "else \(systemSocketPath) (a system speech-dispatcher, as docs/speech-server.md sets one up).",
            valueName: "path"))
    var socket: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The SSIP priority: important (mode changes), message (hints), text (exploring; the default).",
            valueName: "priority"))
    var priority: String = "text"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The language (SET SELF LANGUAGE), e.g. en, de, fr-CA. Default: the server's.",
            valueName: "tag"))
    var language: String?

    @Option(
        name: .customLong("cancel-after-ms"),
        help: ArgumentHelp("Send CANCEL this many milliseconds after speech began (701).", valueName: "ms"))
    var cancelAfter: Int?

    @Option(
        name: .customLong("timeout-ms"),
        help: ArgumentHelp(
            "How long to wait for the connection, and then for the end of speech (default 10000).", valueName: "ms"))
    var timeout: Int = 10_000

    @Flag(
        name: .long,
        help: "Print one JSON object instead of lines: each step's time as CLOCK_MONOTONIC microseconds.")
    var json = false

    @Argument(help: ArgumentHelp("The text to speak.", valueName: "text"))
    var text: [String]

    func validate() throws {
        guard Utterance.Priority(rawValue: priority) != nil else {
            throw ValidationError("--priority must be important, message or text, not '\(priority)'")
        }
        if let language, !SSIP.isValidLanguage(language) {
            throw ValidationError("--language must be a language tag such as en or fr-CA, not '\(language)'")
        }
        guard (1...600_000).contains(timeout) else { throw ValidationError("--timeout-ms must be 1…600000") }
        if let cancelAfter, !(0...600_000).contains(cancelAfter) {
            throw ValidationError("--cancel-after-ms must be 0…600000")
        }
        guard !text.joined().isEmpty else { throw ValidationError("give the text to speak") }
    }

    /// The socket: --socket, SPEECHD_ADDRESS's `unix_socket:PATH`, or the system path.
    var socketPath: String {
        if let socket { return socket }
        if let address = getenv("SPEECHD_ADDRESS").map({ String(cString: $0) }), address.hasPrefix("unix_socket:") {
            let path = String(address.dropFirst("unix_socket:".count))
            if !path.isEmpty { return path }
        }
        return Self.systemSocketPath
    }

    /// Each step's monotonic time, as the client reported it.
    struct Steps: Sendable {
        var connected: UInt64?
        var unavailable: String?
        var speakSent: UInt64?
        var queued: UInt64?
        var messageID: Int?
        var begin: UInt64?
        var cancelSent: UInt64?
        var end: UInt64?
        var canceled: UInt64?
    }

    func run() throws {
        let path = socketPath
        let steps = Mutex(Steps())
        let logger = Logger(label: "touchd") { _ in
            JournalLogHandler(logLevel: .error, style: .terminal, sink: LineSink.standardError)
        }
        var options = SpeechClient.Options()
        options.replyTimeout = 2_000_000
        let started = monotonicMicroseconds()
        let client = SpeechClient(
            socketPath: path, logger: logger, options: options,
            report: { report in steps.withLock { Self.record(report, into: &$0) } })
        do {
            try client.start()
        } catch {
            printError("touchd speak: cannot start the speech client: \(error)")
            throw ExitCode(71)
        }
        defer { client.stop(withinMicroseconds: 200_000) }
        let limit = UInt64(timeout) * 1000
        guard wait(until: started.saturatingSum(limit), for: { client.availability.isAvailable }) else {
            var reason = steps.withLock { $0.unavailable } ?? "no answer"
            if case .unavailable(let why) = client.availability { reason = why }
            printError("touchd speak: the speech server at \(path) is unavailable: \(reason)")
            throw ExitCode(69)
        }
        let requested = monotonicMicroseconds()
        client.submit(
            .speak(
                Utterance(
                    text: text.joined(separator: " "), priority: Utterance.Priority(rawValue: priority)!,
                    language: language)))
        let deadline = requested.saturatingSum(limit)
        if let cancelAfter {
            if wait(until: deadline, for: { steps.withLock { $0.begin != nil } }) {
                let begin = steps.withLock { $0.begin }!
                let cancelAt = begin.saturatingSum(UInt64(cancelAfter) * 1000)
                let now = monotonicMicroseconds()
                if cancelAt > now { usleep(useconds_t(clamping: cancelAt - now)) }
                client.submit(.cancel)
            }
        }
        let ended = wait(until: deadline) {
            steps.withLock { $0.end != nil || $0.canceled != nil } || client.statistics.refused > 0
                || !client.availability.isAvailable
        }
        let result = steps.withLock { $0 }
        let refused = client.statistics.refused
        print(json ? jsonLine(result, started: started, requested: requested, path: path) : lines(result, requested))
        if refused > 0 || result.queued == nil {
            printError("touchd speak: the speech server did not take the text (see the lines above)")
            throw ExitCode(1)
        }
        if !ended {
            printError("touchd speak: no end of speech (702 or 703) within \(timeout) ms")
            throw ExitCode(1)
        }
    }

    /// Notes the time of the step `report` says was taken.
    private static func record(_ report: SpeechClient.Report, into steps: inout Steps) {
        switch report {
        case .availability(.available): steps.connected = steps.connected ?? monotonicMicroseconds()
        case .availability(.unavailable(let reason)): steps.unavailable = reason
        case .speakSent(let at): steps.speakSent = at
        case .queued(let id, let at):
            steps.queued = at
            steps.messageID = id
        case .cancelSent(let at): steps.cancelSent = at
        // touchd speak's utterance carries no end mark: its end is the 702 event below.
        case .ended: break
        case .event(let event, let at):
            guard steps.messageID == nil || event.messageID == steps.messageID else { return }
            switch event.kind {
            case .begin: steps.begin = steps.begin ?? at
            case .end: steps.end = at
            case .canceled: steps.canceled = at
            case .indexMark, .paused, .resumed: break
            }
        }
    }

    /// Polls `condition` every millisecond until it holds (true) or `deadline` passes (false). A command-line tool's
    /// wait: the times it prints are those the client's thread took, not this loop's.
    private func wait(until deadline: UInt64, for condition: () -> Bool) -> Bool {
        while !condition() {
            guard monotonicMicroseconds() < deadline else { return false }
            usleep(1000)
        }
        return true
    }

    private func lines(_ steps: Steps, _ requested: UInt64) -> String {
        func since(_ time: UInt64?) -> String {
            guard let time else { return "—" }
            let micros = time >= requested ? time - requested : 0
            return "\(micros / 1000).\(String(micros % 1000 / 100)) ms"
        }
        var out = ["socket: \(socketPath)", "SPEAK sent: \(since(steps.speakSent)) after the request"]
        out.append("queued: \(since(steps.queued))" + (steps.messageID.map { " (message \($0))" } ?? ""))
        out.append("speech began (701): \(since(steps.begin))")
        if steps.cancelSent != nil { out.append("CANCEL sent: \(since(steps.cancelSent))") }
        if steps.canceled != nil { out.append("speech canceled (703): \(since(steps.canceled))") }
        if steps.end != nil { out.append("speech ended (702): \(since(steps.end))") }
        return out.joined(separator: "\n")
    }

    private func jsonLine(_ steps: Steps, started: UInt64, requested: UInt64, path: String) -> String {
        var line = JSONLine()
        line.add("type", "speak")
        line.add("socket", path)
        line.add("started_us", Int(clamping: started))
        if let connected = steps.connected { line.add("connected_us", Int(clamping: connected)) }
        line.add("requested_us", Int(clamping: requested))
        for (key, value) in [
            ("speak_sent_us", steps.speakSent), ("queued_us", steps.queued), ("begin_us", steps.begin),
            ("cancel_sent_us", steps.cancelSent), ("canceled_us", steps.canceled), ("end_us", steps.end),
        ] {
            if let value { line.add(key, Int(clamping: value)) }
        }
        if let id = steps.messageID { line.add("message_id", id) }
        return line.line
    }
}
