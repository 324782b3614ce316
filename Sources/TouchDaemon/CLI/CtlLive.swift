import ArgumentParser
import Glibc

/// `touchd ctl reload`: the `reload` verb.
struct CtlReload: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Ask touchd to reload its configuration file (as SIGHUP does) and print the outcome.",
        discussion: """
            Prints the new generation, or every problem of the file as `touchd check` does (PATH:LINE:COLUMN: \
            error: …) and exits 1: touchd keeps running on the configuration it had. touchd reloads the file it was \
            started with; --config only says where to find the socket. Controllers only (touchd-admin).
            """)

    @OptionGroup var options: CtlOptions

    func run() throws {
        try options.run("reload") { result in
            let generation = result["generation"]?.int64Value ?? 0
            let controls = result["controls"]?.int64Value ?? 0
            return ["reloaded: generation \(generation), \(controls) control\(controls == 1 ? "" : "s")"]
        }
    }
}

/// `touchd ctl monitor`: live contacts, as `libinput debug-events` shows device events, with touchd's controls.
struct CtlMonitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Show live contacts: each down, move, up and cancel with the control it hit and what it caused.",
        discussion: """
            One line per contact sample: the device, down/move/up/cancel, the time since the first line, the \
            contact (seat slot), the position in output pixels, the control tracking it (or none), the gesture \
            regions that took it, the control events and gesture events it caused; in speech mode (explore by \
            touch), a line each time the mode or its focus changes. --json prints the server's contact and speech \
            events as received (touch, contact, x, y, control, device, …). Controllers only \
            (touchd-admin): positions can reveal a PIN typed on the panel, and touchd logs who watches. Costs \
            touchd nothing while nobody watches.
            """)

    @OptionGroup var options: CtlOptions
    @Option(help: "Stop after this many contact lines (within --timeout, when given).") var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let deadline = options.eventDeadline()
        let client = try options.connect()
        do throws(ControlClient.Failure) {
            _ = try client.request("subscribe", members: #""kinds":["contact","speech"]"#)
            if !options.json {
                print("watching live contacts (positions in output pixels); Ctrl-C stops")
            }
            fflush(nil)
        } catch {
            throw options.fail(error, client: client)
        }
        var origin: Int64?
        try options.stream(client, count: count, until: deadline) { line in
            guard line.value["type"]?.stringValue == "event" else { return false }
            switch line.value["kind"]?.stringValue {
            case "contact":
                if options.json {
                    print(TerminalText.jsonLine(line.text))
                } else {
                    printUntrusted(CtlFormat.contact(line.value, origin: &origin))
                }
                return true
            case "speech":
                if options.json {
                    print(TerminalText.jsonLine(line.text))
                } else {
                    printUntrusted(CtlFormat.speech(line.value["speech"] ?? .null))
                }
                return true
            default:
                return false
            }
        }
    }
}

extension CtlFormat {
    /// A `contact` event as a line like libinput debug-events':
    /// `event5   down    +0.000s  0  1600.0/900.0  control pay  touchDown`.
    static func contact(_ event: JSONValue, origin: inout Int64?) -> String {
        let time = event["time_us"]?.int64Value ?? 0
        let start = origin ?? time
        origin = start
        let (elapsed, overflow) = time.subtractingReportingOverflow(start)
        let milliseconds = overflow || elapsed < 0 ? 0 : elapsed / 1_000
        let fraction = String(milliseconds % 1_000)
        let seconds = "+\(milliseconds / 1_000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)s"
        var words = [
            padded(event["device"]?.stringValue ?? "-", 8), padded(event["touch"]?.stringValue ?? "?", 6),
            padded(seconds, 9), padded(String(event["contact"]?.int64Value ?? -1), 2),
        ]
        if let x = event["x"]?.doubleValue, let y = event["y"]?.doubleValue {
            words.append(padded("\(tenths(x))/\(tenths(y))", 13))
        } else {
            words.append(padded("-", 13))
        }
        words.append("control " + (event["control"]?.stringValue ?? "none"))
        let gestures = event["gestures"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !gestures.isEmpty { words.append("gestures " + gestures.joined(separator: ",")) }
        let events = event["events"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !events.isEmpty { words.append(events.joined(separator: " ")) }
        for gesture in event["gesture_events"]?.arrayValue ?? [] {
            words.append("\(gesture["gesture"]?.stringValue ?? "?"):\(gesture["event"]?.stringValue ?? "?")")
        }
        return words.joined(separator: "  ")
    }

    /// `text` padded with spaces to `width` characters.
    private static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// A position with one decimal: `1600.0`.
    private static func tenths(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e12 else { return "\(value)" }
        guard let scaled = Int64(exactly: (value * 10).rounded()) else { return "\(value)" }
        let sign = scaled < 0 ? "-" : ""
        return "\(sign)\(abs(scaled) / 10).\(abs(scaled) % 10)"
    }
}
