import ArgumentParser
import Glibc

/// `touchd ctl`: a client of the control socket (docs/control-socket.md) for every verb.
struct Ctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Talk to a running touchd over its control socket.",
        discussion: """
            The socket is --socket PATH; else [control_socket] socket of --config PATH; else of \
            /etc/touchd/touchd.toml when it is readable; else /run/touchd/control.sock. Only that key is read, so a \
            file with other problems still names its socket. Options may come before or after the verb. \
            Human-readable output by default, with control characters shown as escapes (\\x1b); --json prints the \
            server's lines as received, for scripts, with DEL, C1 and bidirectional controls as \\u escapes. Exit \
            status: 0 done, 1 touchd refused the request (its error code and message on stderr; with --json its \
            response on stdout too, as received), 69 cannot connect or the connection was lost (or touchd did not \
            answer within --timeout, or monitor and subscribe saw fewer than --count events within it), 76 \
            touchd's answer broke the protocol (not JSON, a response to another request, a line over 1 MiB), 78 the \
            configuration names no usable socket.
            """,
        subcommands: [
            CtlState.self, CtlStats.self, CtlEnable.self, CtlDisable.self, CtlSet.self, CtlSend.self, CtlScreen.self,
            CtlSubscribe.self, CtlMonitor.self, CtlReload.self, CtlSpeech.self,
        ]
    )

    /// The same options as every subcommand's, so that they may come before the verb as well as after it: the
    /// subcommand's `@OptionGroup var options` shares these values.
    @OptionGroup var options: CtlOptions
}

/// The options every `ctl` subcommand takes.
struct CtlOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The control socket (default: from the configuration).", valueName: "path"))
    var socket: String?

    @Option(
        help: ArgumentHelp(
            "The configuration whose [control_socket] socket to use (default: /etc/touchd/touchd.toml when readable).",
            valueName: "path"))
    var config: String?

    @Flag(help: "Print the server's JSON lines as received, refusals included.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Seconds to wait for touchd's whole answer (default: 5); for monitor and subscribe, also the most seconds "
                + "to wait for their events (default: no limit).",
            valueName: "seconds"))
    var timeout: Double?

    /// Seconds to wait for touchd's whole answer to a request.
    var answerTimeout: Double { timeout ?? 5 }

    func validate() throws {
        if let timeout {
            guard timeout.isFinite, timeout > 0, timeout <= 3_600 else {
                throw ValidationError("--timeout must be a number of seconds above 0 and at most 3600")
            }
        }
    }

    /// When a verb that waits for events stops waiting: --timeout from now, if given (validate() bounds it, so the
    /// conversion cannot trap).
    func eventDeadline() -> UInt64? {
        timeout.map { monotonicMicroseconds().saturatingSum(UInt64(($0 * 1_000_000).rounded())) }
    }

    /// A subscription's events until --count of them or the deadline; fewer than --count by the deadline ends the
    /// program with 69, as an answer that did not come within --timeout does.
    func stream(
        _ client: ControlClient, count: Int?, until deadline: UInt64?, _ show: (ControlClient.Line) -> Bool
    ) throws {
        let received: Int
        do {
            received = try client.stream(count: count, until: deadline, show)
        } catch {
            throw fail(error, client: client)
        }
        if let count, received < count, let timeout {
            let seconds = ControlClient.seconds(UInt64((timeout * 1_000_000).rounded()))
            printError("touchd ctl: \(received) of \(count) events within --timeout \(seconds) s")
            throw ExitCode(69)  // EX_UNAVAILABLE, as an answer that does not come in time
        }
    }

    /// The socket to connect to (``ControlSocketLocator``); a configuration that names no usable one ends the
    /// program with 78.
    func socketPath() throws -> String {
        switch ControlSocketLocator.socket(socket: socket, configuration: config) {
        case .success(let path): return path
        case .failure(let failure):
            printError("touchd ctl: \(failure)")
            throw ExitCode(ExitStatus.configuration)
        }
    }

    /// Connects and says hello; failures end the program with their exit status.
    func connect() throws -> ControlClient {
        let socket = try socketPath()
        let client: ControlClient
        do {
            // validate() bounds the timeout, so the conversion cannot trap.
            client = try ControlClient(path: socket, timeout: UInt64((answerTimeout * 1_000_000).rounded()))
        } catch {
            throw fail(error)
        }
        do {
            _ = try client.hello()
        } catch {
            throw fail(error, client: client)
        }
        return client
    }

    /// Sends one request and prints its result: the raw line with --json, else `human(result)`.
    func run(_ type: String, members: String = "", human: (JSONValue) -> [String]) throws {
        let client = try connect()
        do {
            let response = try client.request(type, members: members)
            if json {
                print(TerminalText.jsonLine(response.text))
            } else {
                for line in human(response.value["result"] ?? .null) { printUntrusted(line) }
            }
        } catch {
            throw fail(error, client: client)
        }
    }

    /// `set` on a control, printing the control's state afterwards.
    func set(control: String, enabled: Bool? = nil, selected: Bool? = nil, value: Double? = nil) throws {
        let members = CtlFormat.members(control: control, enabled: enabled, selected: selected, value: value)
        try run("set", members: members) { [CtlFormat.control($0)] }
    }

    /// Prints the failure and returns the exit code to throw. With --json a refusal's response goes to standard
    /// output as received, as every other response does; the message still goes to standard error.
    func fail(_ failure: ControlClient.Failure, client: ControlClient? = nil) -> ExitCode {
        if json, case .refused = failure, let refusal = client?.refusal {
            print(TerminalText.jsonLine(refusal.text))
        }
        printError("touchd ctl: \(failure)")
        return ExitCode(failure.exitStatus)
    }
}

struct CtlState: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state", abstract: "Show the controls, screens and touchscreens.")

    @OptionGroup var options: CtlOptions

    func run() throws {
        try options.run("state") { CtlFormat.state($0) }
    }
}

struct CtlStats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Show the counters: events, actions, latency, drops, failures.")

    @OptionGroup var options: CtlOptions

    @Flag(help: "Print the counters in the Prometheus text format, for node_exporter's textfile collector.")
    var prometheus = false

    func validate() throws {
        if prometheus && options.json {
            throw ValidationError("--prometheus and --json are two output formats: give one of them")
        }
    }

    func run() throws {
        try options.run("stats") { result in
            prometheus
                ? PrometheusExposition.text(stats: result).split(separator: "\n").map(String.init)
                : CtlFormat.flatten(result)
        }
    }
}

struct CtlEnable: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable a control.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The control's id.") var control: String

    func run() throws {
        try options.set(control: control, enabled: true)
    }
}

struct CtlDisable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Disable a control (a touch it is tracking is cancelled).")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The control's id.") var control: String

    func run() throws {
        try options.set(control: control, enabled: false)
    }
}

struct CtlSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set a control's enabled, selected or value.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The control's id.") var control: String
    @Option(help: ArgumentHelp("true or false.", valueName: "bool")) var enabled: Bool?
    @Option(help: ArgumentHelp("true or false.", valueName: "bool")) var selected: Bool?
    @Option(help: ArgumentHelp("A slider's value or a segmented control's index.", valueName: "number"))
    var value: Double?

    func validate() throws {
        guard enabled != nil || selected != nil || value != nil else {
            throw ValidationError("give at least one of --enabled, --selected, --value")
        }
        if let value, !value.isFinite { throw ValidationError("--value must be a finite number") }
    }

    func run() throws {
        try options.set(control: control, enabled: enabled, selected: selected, value: value)
    }
}

struct CtlSend: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Fire a control's actions for events, as UIKit's sendActions(for:) (custom events included).")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The control's id.") var control: String
    @Argument(help: "Event names, e.g. touchUpInside or an [application_events] name.") var events: [String]

    func validate() throws {
        guard !events.isEmpty else { throw ValidationError("give at least one event name") }
    }

    func run() throws {
        var members = JSONLine()
        members.add("control", control)
        members.add("events", strings: events)
        try options.run("send", members: members.members) { result in
            let count = result["actions"]?.int64Value ?? 0
            return ["\(count) action\(count == 1 ? "" : "s") fired"]
        }
    }
}

struct CtlScreen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "screen", abstract: "Show the active screen, or switch to another one.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The screen to switch to.") var screen: String?

    func run() throws {
        var members = JSONLine()
        if let screen { members.add("screen", screen) }
        try options.run("screen", members: members.members) { result in
            ["active screen: \(result["active_screen"]?.stringValue ?? "none")"]
        }
    }
}

struct CtlSpeech: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speech",
        abstract: "Show speech mode (explore by touch) and its focus, or turn it on or off.",
        discussion: """
            Without an argument, shows whether speech mode is on, whether the speech server can speak and the \
            focused item. on and off need the controller role; on is refused (speech_unavailable) while \
            [accessibility] is not enabled or the speech server cannot speak. A physical key or a headphone-jack \
            daemon can run touchd ctl speech on.
            """)

    @OptionGroup var options: CtlOptions
    @Argument(help: "on or off.") var mode: String?

    func validate() throws {
        if let mode, mode != "on", mode != "off" { throw ValidationError("the mode is on or off, not '\(mode)'") }
    }

    func run() throws {
        var members = JSONLine()
        if let mode { members.add("mode", mode) }
        try options.run("speech", members: members.members) { [CtlFormat.speech($0)] }
    }
}

struct CtlSubscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe", abstract: "Print events as they happen, after a snapshot of the state.")

    @OptionGroup var options: CtlOptions
    @Option(
        name: .customLong("kind"), help: "control, gesture, state, screen, device, config or speech (repeatable).")
    var kinds: [String] = []
    @Option(name: .customLong("control"), help: "A control id (repeatable).") var controls: [String] = []
    @Option(name: .customLong("event"), help: "An event name (repeatable).") var events: [String] = []
    @Option(name: .customLong("gesture"), help: "A gesture id (repeatable).") var gestures: [String] = []
    @Option(help: "Stop after this many events (within --timeout, when given).") var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let deadline = options.eventDeadline()
        var members = JSONLine()
        if !kinds.isEmpty { members.add("kinds", strings: kinds) }
        if !controls.isEmpty { members.add("controls", strings: controls) }
        if !events.isEmpty { members.add("events", strings: events) }
        if !gestures.isEmpty { members.add("gestures", strings: gestures) }
        let client = try options.connect()
        do throws(ControlClient.Failure) {
            let response = try client.request("subscribe", members: members.members)
            if options.json {
                print(TerminalText.jsonLine(response.text))
            } else {
                for line in CtlFormat.state(response.value["result"] ?? .null) { printUntrusted(line) }
                print("-- events --")
            }
            fflush(nil)
        } catch {
            throw options.fail(error, client: client)
        }
        try options.stream(client, count: count, until: deadline) { line in
            if options.json {
                print(TerminalText.jsonLine(line.text))
            } else {
                printUntrusted(CtlFormat.event(line.value))
            }
            return line.value["type"]?.stringValue == "event"
        }
    }
}

/// How `ctl` shows results to people.
enum CtlFormat {
    /// A `set` request's members.
    static func members(control: String, enabled: Bool? = nil, selected: Bool? = nil, value: Double? = nil) -> String {
        var members = JSONLine()
        members.add("control", control)
        if let enabled { members.add("enabled", enabled) }
        if let selected { members.add("selected", selected) }
        if let value { members.add("value", value) }
        return members.members
    }

    /// `state`'s result (and a subscription's snapshot).
    static func state(_ result: JSONValue) -> [String] {
        var lines: [String] = []
        let screens = result["screens"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var header = "generation \(result["generation"]?.int64Value ?? 0)"
        if let active = result["active_screen"]?.stringValue {
            header += ", screen \(active) (of \(screens.joined(separator: ", ")))"
        }
        header += ", \(result["contacts"]?.int64Value ?? 0) contact(s) down"
        lines.append(header)
        let controls = result["controls"]?.arrayValue ?? []
        lines.append("controls (\(controls.count)):")
        for control in controls { lines.append("  " + Self.control(control)) }
        let gestures = result["gestures"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if !gestures.isEmpty { lines.append("gestures: \(gestures.joined(separator: ", "))") }
        if let speech = result["speech"] { lines.append(Self.speech(speech)) }
        let devices = result["devices"]?.arrayValue ?? []
        lines.append("touchscreens (\(devices.count)):")
        for device in devices {
            let sysname = device["sysname"]?.stringValue ?? "?"
            let name = device["name"]?.stringValue ?? "?"
            let ids = "\(device["vendor"]?.stringValue ?? "?"):\(device["product"]?.stringValue ?? "?")"
            lines.append("  \(sysname)  \(name)  \(ids)  \(device["node"]?.stringValue ?? "")")
        }
        return lines
    }

    /// One control: `pay  button  enabled  not selected`, with its value when it has one.
    static func control(_ control: JSONValue) -> String {
        var words = [control["id"]?.stringValue ?? "?", control["kind"]?.stringValue ?? "?"]
        words.append(control["enabled"]?.boolValue == false ? "disabled" : "enabled")
        if control["selected"]?.boolValue == true { words.append("selected") }
        if control["highlighted"]?.boolValue == true { words.append("highlighted") }
        if control["tracking"]?.boolValue == true { words.append("tracking") }
        if let value = control["value"]?.doubleValue { words.append("value \(number(value))") }
        if control["private"]?.boolValue == true { words.append("private") }
        return words.joined(separator: "  ")
    }

    /// Speech mode: `speech mode on, focus pay` (`, paused`; `, no speech server`).
    static func speech(_ speech: JSONValue) -> String {
        var text = "speech mode \(speech["mode"]?.stringValue ?? "?")"
        if speech["mode"]?.stringValue == "on" { text += ", focus \(speech["focus"]?.stringValue ?? "none")" }
        if speech["paused"]?.boolValue == true { text += ", paused" }
        if speech["available"]?.boolValue == false { text += ", no speech server" }
        return text
    }

    /// An event line: `#12 control pay touchUpInside contact=0`.
    static func event(_ event: JSONValue) -> String {
        let type = event["type"]?.stringValue ?? "?"
        var words = ["#\(event["seq"]?.int64Value ?? 0)"]
        if type != "event" { words.append(type) }
        for (key, value) in event.objectValue ?? [] where !["type", "seq"].contains(key) {
            switch key {
            case "kind", "control", "gesture", "event", "change", "screen": words.append(scalar(value))
            default: words.append("\(key)=\(scalar(value))")
            }
        }
        return words.joined(separator: " ")
    }

    /// Nested objects as `a.b: value` lines, in the server's order.
    static func flatten(_ value: JSONValue, prefix: String = "") -> [String] {
        guard let members = value.objectValue else { return ["\(prefix): \(scalar(value))"] }
        return members.flatMap { key, member in
            let path = prefix.isEmpty ? key : "\(prefix).\(key)"
            return member.objectValue == nil ? ["\(path): \(scalar(member))"] : flatten(member, prefix: path)
        }
    }

    private static func scalar(_ value: JSONValue) -> String {
        switch value {
        case .null: return "-"
        case .bool(let flag): return flag ? "true" : "false"
        case .integer(let integer): return String(integer)
        case .double(let double): return number(double)
        case .string(let string): return string
        case .array(let items): return items.map(scalar).joined(separator: ",")
        case .object: return value.json
        }
    }

    private static func number(_ value: Double) -> String {
        var text = ""
        JSONLine.appendNumber(value, to: &text)
        return text
    }
}
