/// A line a client sent, decoded and checked against docs/control-socket.md.
enum ControlInbound: Hashable, Sendable {
    /// `{"type":"hello","v":1,"id":1}`; the server checks `version`.
    case hello(id: ControlRequestID, version: Int64)
    /// Any other verb, with its members checked for shape (not yet for role or names).
    case request(id: ControlRequestID, command: ControlRequest.Command)
}

/// A line the server answers with an error itself: `id` is the request's when it could be read (else the response
/// says `"id":null`).
struct ControlRefusal: Error, Hashable, Sendable {
    var id: ControlRequestID?
    var error: ControlError
}

/// The control socket's wire format: decoding request lines and encoding the lines the server writes. Pure: no I/O,
/// no state. Every `String` line it encodes is one JSON object without the trailing newline; a `SequencedLine`
/// includes it.
enum ControlProtocol {
    /// The protocol version this server speaks (`"v"` of hello).
    static let version: Int64 = 1
    /// `id` strings longer than this are refused.
    static let maxIDBytes = 64

    /// The verbs a request's `type` may name.
    enum Verb: String, Hashable, Sendable, CaseIterable {
        case hello, state, stats, set, send, screen, subscribe, unsubscribe, reload, speech

        /// The members the verb takes besides `type` and `id`.
        var members: Set<String> {
            switch self {
            case .hello: ["v"]
            case .state, .stats, .unsubscribe, .reload: []
            case .set: ["control", "enabled", "selected", "value"]
            case .send: ["control", "events"]
            case .screen: ["screen"]
            case .subscribe: ["kinds", "controls", "events", "gestures"]
            case .speech: ["mode"]
            }
        }
    }

    // MARK: - Decoding

    /// Decodes one line (without its newline; a trailing `\r` must already be gone).
    static func decode(
        _ line: some Collection<UInt8>, limits: JSONValue.Limits = .standard
    ) -> Result<ControlInbound, ControlRefusal> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line, limits: limits)
        } catch {
            return .failure(ControlRefusal(id: nil, error: .badRequest("not valid JSON: \(error)")))
        }
        guard let members = value.objectValue else {
            return .failure(ControlRefusal(id: nil, error: .badRequest("a request must be a JSON object")))
        }
        guard let typeValue = value["type"] else {
            return .failure(ControlRefusal(id: nil, error: .badRequest("the request has no \"type\"")))
        }
        guard let verb = typeValue.stringValue else {
            return .failure(ControlRefusal(id: nil, error: .badRequest("\"type\" must be a string")))
        }
        guard let idValue = value["id"] else {
            return .failure(ControlRefusal(id: nil, error: .badRequest("the request has no \"id\"")))
        }
        guard let id = requestID(idValue) else {
            return .failure(
                ControlRefusal(
                    id: nil,
                    error: .badRequest(
                        "\"id\" must be an integer (64-bit) or a string of at most \(maxIDBytes) bytes")))
        }
        guard let known = Verb(rawValue: verb) else {
            return .failure(
                ControlRefusal(id: id, error: ControlError(code: .unknownVerb, message: "no verb \(quoted(verb))")))
        }
        for member in members where member.key != "type" && member.key != "id" && !known.members.contains(member.key) {
            return .failure(
                ControlRefusal(
                    id: id, error: .badRequest("\(quoted(verb)) has no member \(quoted(member.key))")))
        }
        do throws(ControlError) {
            return .success(try inbound(known, value, id: id))
        } catch {
            return .failure(ControlRefusal(id: id, error: error))
        }
    }

    /// Whether `command` needs the controller role: `set`, `send`, `screen` that switches screens, `reload`, and a
    /// subscription to live contacts.
    static func needsController(_ command: ControlRequest.Command) -> Bool {
        controllerReason(command) != nil
    }

    /// Why `command` needs the controller role, for the `unauthorized` refusal of an observer; nil when it does not.
    static func controllerReason(_ command: ControlRequest.Command) -> String? {
        switch command {
        case .set, .send, .screen(.some), .reload, .speech(.some): return "this verb needs the controller role"
        case .subscribe(let filter) where watchesContacts(filter):
            return "the contact kind needs the controller role (touch positions can reveal a PIN typed on the panel)"
        case .state, .stats, .screen(.none), .subscribe, .unsubscribe, .speech(.none): return nil
        }
    }

    /// Whether a subscription asks for live contacts (only ever by name).
    static func watchesContacts(_ filter: ControlSubscriptionFilter) -> Bool {
        filter.kinds?.contains(ControlSubscriptions.Kind.contact.rawValue) == true
    }

    private static func requestID(_ value: JSONValue) -> ControlRequestID? {
        switch value {
        case .integer(let number): return .number(number)
        case .string(let text) where text.utf8.count <= maxIDBytes: return .string(text)
        default: return nil
        }
    }

    private static func inbound(
        _ verb: Verb, _ value: JSONValue, id: ControlRequestID
    ) throws(ControlError) -> ControlInbound {
        // Exhaustive: a new verb does not compile until it is decoded here.
        switch verb {
        case .hello:
            guard let version = value["v"] else { throw .badRequest("hello needs \"v\", the protocol version") }
            guard let number = version.int64Value else { throw .badRequest("\"v\" must be an integer") }
            return .hello(id: id, version: number)
        case .state: return .request(id: id, command: .state)
        case .stats: return .request(id: id, command: .stats)
        case .set:
            let control = try string("control", in: value, required: true)!
            let enabled = try bool("enabled", in: value)
            let selected = try bool("selected", in: value)
            var number: Double?
            if let member = value["value"] {
                guard let double = member.doubleValue else { throw .badRequest("\"value\" must be a number") }
                number = double
            }
            guard enabled != nil || selected != nil || number != nil else {
                throw .badRequest("set needs at least one of \"enabled\", \"selected\" and \"value\"")
            }
            return .request(
                id: id, command: .set(control: control, enabled: enabled, selected: selected, value: number))
        case .send:
            let control = try string("control", in: value, required: true)!
            guard let events = try strings("events", in: value) else { throw .badRequest("send needs \"events\"") }
            guard !events.isEmpty else { throw .badRequest("\"events\" must name at least one event") }
            return .request(id: id, command: .send(control: control, events: events))
        case .screen:
            return .request(id: id, command: .screen(try string("screen", in: value, required: false)))
        case .subscribe:
            let filter = ControlSubscriptionFilter(
                kinds: try strings("kinds", in: value), controls: try strings("controls", in: value),
                events: try strings("events", in: value), gestures: try strings("gestures", in: value))
            return .request(id: id, command: .subscribe(filter))
        case .unsubscribe:
            return .request(id: id, command: .unsubscribe)
        case .reload:
            return .request(id: id, command: .reload)
        case .speech:
            guard let mode = try string("mode", in: value, required: false) else {
                return .request(id: id, command: .speech(nil))
            }
            guard mode == "on" || mode == "off" else { throw .badRequest("\"mode\" must be \"on\" or \"off\"") }
            return .request(id: id, command: .speech(mode == "on"))
        }
    }

    private static func string(_ key: String, in value: JSONValue, required: Bool) throws(ControlError) -> String? {
        guard let member = value[key] else {
            if required { throw .badRequest("the request needs \(quoted(key))") }
            return nil
        }
        guard let text = member.stringValue else { throw .badRequest("\(quoted(key)) must be a string") }
        return text
    }

    private static func bool(_ key: String, in value: JSONValue) throws(ControlError) -> Bool? {
        guard let member = value[key] else { return nil }
        guard let flag = member.boolValue else { throw .badRequest("\(quoted(key)) must be true or false") }
        return flag
    }

    private static func strings(_ key: String, in value: JSONValue) throws(ControlError) -> [String]? {
        guard let member = value[key] else { return nil }
        guard let items = member.arrayValue else { throw .badRequest("\(quoted(key)) must be a list of strings") }
        var result: [String] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let text = item.stringValue else { throw .badRequest("\(quoted(key)) must be a list of strings") }
            result.append(text)
        }
        return result
    }

    /// A name as JSON text, cut at 40 characters: error messages quote what the client sent, never all of it.
    static func quoted(_ name: String) -> String {
        var text = ""
        JSONLine.appendString(name.count > 40 ? String(name.prefix(40)) + "…" : name, to: &text)
        return text
    }

    // MARK: - Encoding

    /// `{"type":"response","id":ID,"ok":true,"result":RESULT}`; `result` is a JSON object's text.
    static func response(id: ControlRequestID, result: String) -> String {
        #"{"type":"response","id":"# + id.json + #","ok":true,"result":"# + result + "}"
    }

    /// `{"type":"response","id":ID,"ok":false,"error":{"code":…,"message":…}}`, with `"id":null` when the request's
    /// id could not be read.
    static func failure(id: ControlRequestID?, error: ControlError) -> String {
        var text = #"{"type":"response","id":"# + (id?.json ?? "null") + #","ok":false,"error":{"code":"#
        JSONLine.appendString(error.code.rawValue, to: &text)
        text += #","message":"#
        JSONLine.appendString(error.message, to: &text)
        if let problems = error.problems {
            text += #","problems":["#
            for (index, problem) in problems.enumerated() {
                if index > 0 { text += "," }
                JSONLine.appendString(problem, to: &text)
            }
            text += "]"
        }
        return text + "}}"
    }

    /// The answer to hello.
    static func hello(
        id: ControlRequestID, server: String, generation: Int, role: ControlRole, client: ControlClientID
    ) -> String {
        var text = #"{"type":"hello","v":"# + String(version) + #","id":"# + id.json + #","server":"#
        JSONLine.appendString(server, to: &text)
        return text + #","generation":\#(generation),"role":"\#(role.rawValue)","client":\#(client)}"#
    }

    /// A line with a sequence number, split around the number, which the connection fills in when it queues the
    /// line: `lead` + N + `trail` + `body`, newline included. `body` may be shared between connections (an event's
    /// members).
    struct SequencedLine: Sendable {
        var lead: String
        var trail: String
        var body: [UInt8]
    }

    /// The answer to subscribe: `{"type":"response","id":ID,"ok":true,"seq":N,"result":SNAPSHOT}`.
    static func subscribed(id: ControlRequestID, snapshot: String) -> SequencedLine {
        SequencedLine(
            lead: #"{"type":"response","id":"# + id.json + #","ok":true,"seq":"#, trail: #","result":"#,
            body: Array((snapshot + "}\n").utf8))
    }

    /// An event: `{"type":"event","seq":N,MEMBERS}`. The body is encoded once per event and shared.
    static func event(members: String) -> SequencedLine {
        SequencedLine(lead: #"{"type":"event","seq":"#, trail: ",", body: Array((members + "}\n").utf8))
    }

    /// `{"type":"overflow","seq":N,"dropped":D}`.
    static func overflow(dropped: Int) -> SequencedLine {
        SequencedLine(lead: #"{"type":"overflow","seq":"#, trail: #","dropped":\#(dropped)}"# + "\n", body: [])
    }

    /// `{"type":"shutdown","seq":N}`.
    static func shutdown() -> SequencedLine {
        SequencedLine(lead: #"{"type":"shutdown","seq":"#, trail: "}\n", body: [])
    }
}
