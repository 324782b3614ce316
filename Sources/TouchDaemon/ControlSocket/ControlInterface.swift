// The values that cross between the control-socket server's thread and the input thread. The server owns the
// sockets, framing, limits and per-client queues; the input thread owns the scene and answers every request that
// needs it. Neither blocks the other: each hands the other arrays of these values and wakes it.
//
// docs/control-socket.md is the protocol these values carry.

/// A connection, numbered from 1 in the order they were accepted; never reused during a run.
typealias ControlClientID = UInt64

/// A request's `id`, chosen by the client and echoed in the response: a JSON integer or a short string.
enum ControlRequestID: Hashable, Sendable {
    case number(Int64)
    case string(String)

    /// As it appears in JSON.
    var json: String {
        switch self {
        case .number(let value): return String(value)
        case .string(let value):
            var text = ""
            JSONLine.appendString(value, to: &text)
            return text
        }
    }
}

/// What a peer may do, decided once from its credentials when it connects (docs/control-socket.md, "Who may
/// connect").
enum ControlRole: String, Hashable, Sendable, Comparable {
    /// hello, state, stats, subscribe, unsubscribe.
    case observer
    /// Everything an observer may, plus set, send and screen.
    case controller

    static func < (lhs: ControlRole, rhs: ControlRole) -> Bool { lhs == .observer && rhs == .controller }
}

/// Which events a subscriber wants. Every list that is nil means "all"; an empty list means "none".
struct ControlSubscriptionFilter: Hashable, Sendable {
    /// Event kinds: `control`, `gesture`, `state`, `screen`, `device`, `config`, and `contact` (controllers only, never
    /// included when the list is nil).
    var kinds: [String]? = nil
    /// Control ids whose events (kind `control`, `state`) are wanted.
    var controls: [String]? = nil
    /// Control event names (configured names, e.g. `touchUpInside`, or an `[application_events]` name) and
    /// gesture event names (`began`, `recognized`, …) whose events are wanted.
    var events: [String]? = nil
    /// Gesture ids whose events (kind `gesture`) are wanted.
    var gestures: [String]? = nil
}

/// A request the server has parsed, checked for shape and limits, and authorised; the input thread answers it.
struct ControlRequest: Hashable, Sendable {
    enum Command: Hashable, Sendable {
        /// Controls with their state and value, screens, devices, counters.
        case state
        /// Counters, latency, drops, failures, generation.
        case stats
        /// Sets any of enabled, selected, value on a control; at least one is non-nil.
        case set(control: String, enabled: Bool?, selected: Bool?, value: Double?)
        /// sendActions(for:) on a control, for these event names (at least one).
        case send(control: String, events: [String])
        /// Switches to this screen, or (nil) only reports the active one.
        case screen(String?)
        /// Starts (or replaces) this connection's subscription: answer with a snapshot, then stream.
        case subscribe(ControlSubscriptionFilter)
        /// Ends the subscription; the connection stays open.
        case unsubscribe
        /// Reloads the configuration file, as SIGHUP does; the answer is the new generation or every problem.
        case reload
        /// Explore by touch: enters (true) or leaves (false) speech mode, or (nil) only reports it.
        case speech(Bool?)
    }

    var client: ControlClientID
    var id: ControlRequestID
    var role: ControlRole
    var command: Command
}

/// A request waiting for an answer that the input thread gives later (a reload, after the file was read).
struct ControlRequester: Hashable, Sendable {
    var client: ControlClientID
    var id: ControlRequestID
}

/// What the server tells the input thread.
enum ControlNote: Hashable, Sendable {
    case request(ControlRequest)
    /// The connection closed (the peer left, was dropped, or the server stopped): forget its subscription and its
    /// weak target. Sent once per connection that ever sent a request; harmless for one that did not.
    case disconnected(ControlClientID)
}

/// A request refused, with a stable code from docs/control-socket.md.
struct ControlError: Error, Hashable, Sendable {
    /// Every code the protocol has; the raw value is what goes on the wire. The server uses the framing and limit
    /// codes itself, the engine the codes about names and values.
    enum Code: String, Hashable, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case busy
        case helloRequired = "hello_required"
        case invalidConfiguration = "invalid_configuration"
        case invalidValue = "invalid_value"
        case lineTooLong = "line_too_long"
        case rateLimited = "rate_limited"
        case speechUnavailable = "speech_unavailable"
        case timeout
        case tooManyClients = "too_many_clients"
        case unauthorized
        case unknownControl = "unknown_control"
        case unknownEvent = "unknown_event"
        case unknownGesture = "unknown_gesture"
        case unknownKind = "unknown_kind"
        case unknownScreen = "unknown_screen"
        case unknownVerb = "unknown_verb"
        case unsupportedVersion = "unsupported_version"
    }

    var code: Code
    var message: String
    /// `invalid_configuration`: every problem of the file, as `touchd check` prints them (`PATH:LINE:COLUMN: error:
    /// …`), at most ``maximumProblems``.
    var problems: [String]? = nil

    /// The most problems one refusal lists: with lines of at most 1,000 bytes, the response stays far below a
    /// connection's queue limit (256 KiB).
    static let maximumProblems = 100

    static func badRequest(_ message: String) -> ControlError { ControlError(code: .badRequest, message: message) }
}

/// One event for subscribers, encoded once and shared by every recipient.
struct ControlEvent: Hashable, Sendable {
    /// The connections that get it; the server skips any that is gone or no longer subscribed.
    var recipients: [ControlClientID]
    /// The event's JSON members after `"type":"event","seq":N,`, without braces: for instance
    /// `"kind":"control","time_us":12,"control":"pay","event":"touchDown","contact":0,"generation":1`.
    var members: String
    /// Non-nil for motion (drags, continuous values, gesture changes): a queued event with the same key that was not
    /// yet written is replaced by this one instead of both being queued. Nil for discrete events, which are never
    /// dropped or merged.
    var coalescingKey: String?
}

/// What the input thread tells the server, in order: the server applies them in exactly this order, so a snapshot
/// always precedes the events that follow it and a sequence number never goes backwards.
enum ControlMessage: Hashable, Sendable {
    /// A successful response; `result` is a JSON object's text (`{…}`).
    case response(client: ControlClientID, id: ControlRequestID, result: String)
    /// A refused request.
    case failure(client: ControlClientID, id: ControlRequestID, error: ControlError)
    /// The answer to `subscribe`: a successful response whose result is the snapshot (a JSON object's text), written
    /// with the connection's next sequence number. From here on the connection is a subscriber and gets the events
    /// that name it.
    case subscribed(client: ControlClientID, id: ControlRequestID, snapshot: String)
    /// The answer to `unsubscribe`: an empty successful response; no events are written to it after this.
    case unsubscribed(client: ControlClientID, id: ControlRequestID)
    case event(ControlEvent)
}
