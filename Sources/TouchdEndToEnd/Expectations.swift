/// Pure checks over the messages one gesture produced. Each returns nil when the messages meet the expectation, or
/// a failure text that says what was expected and what arrived. The scenario calls them on live messages, the
/// self-test on made-up ones.
enum Expectation {
    /// What every message must carry besides its event: the target, the action each control sends, and the
    /// configuration generation.
    struct Fields {
        /// The action each control sends; a message from any other control is unexpected.
        var actions: [String: String]
        var generation: Int
        /// Whether a message without `generation` fails (the reload checks) or passes (the contract says
        /// "usually").
        var generationRequired: Bool = false
    }

    /// How often an event may occur at one position of a pattern.
    enum Count {
        case one
        case zeroOrMore
        case oneOrMore
    }

    struct Step: CustomStringConvertible {
        let event: String
        let count: Count

        var description: String {
            switch count {
            case .one: event
            case .zeroOrMore: event + "*"
            case .oneOrMore: event + "+"
            }
        }
    }

    static func one(_ event: String) -> Step { Step(event: event, count: .one) }
    static func any(_ event: String) -> Step { Step(event: event, count: .zeroOrMore) }
    static func some(_ event: String) -> Step { Step(event: event, count: .oneOrMore) }

    /// A recognized gesture: exactly one message, from the gesture (its id as `control`, as a socket target receives
    /// a gesture's action), for `recognized`, with `action`, the test target and `generation` when it is given.
    static func recognized(_ messages: [TargetMessage], gesture: String, action: String, generation: Int) -> String? {
        let got = messages.map { "\($0.control ?? "?") \($0.event ?? "?") \($0.action ?? "?")" }
        let wanted = "\(gesture) recognized \(action)"
        guard messages.count == 1, let message = messages.first else {
            return "expected exactly [\(wanted)], got [\(got.isEmpty ? "nothing" : got.joined(separator: ", "))]"
        }
        if message.control != gesture || message.event != "recognized" || message.action != action {
            return "expected [\(wanted)], got [\(got[0])]"
        }
        if message.target != TestConfig.targetName {
            return "\(wanted): target \(message.target ?? "absent"), expected \(TestConfig.targetName)"
        }
        if let actual = message.generation, actual != generation {
            return "\(wanted): generation \(actual), expected \(generation)"
        }
        return nil
    }

    /// A tap: touchDown then touchUpInside, each exactly once, and nothing else.
    static func tap(_ messages: [TargetMessage], control: String, fields: Fields) -> String? {
        exactly(messages, [(control, "touchDown"), (control, "touchUpInside")], fields: fields)
    }

    /// A drag out of the control (beyond the drag outset) and back in, lifted inside.
    static let dragOutAndBack = [
        one("touchDown"), any("touchDragInside"), one("touchDragExit"), any("touchDragOutside"),
        one("touchDragEnter"), any("touchDragInside"), one("touchUpInside"),
    ]

    /// A drag out of the control, lifted outside.
    static let dragOutAndLift = [
        one("touchDown"), any("touchDragInside"), one("touchDragExit"), any("touchDragOutside"),
        one("touchUpOutside"),
    ]

    /// A finger that goes down, moves inside and lifts inside.
    static let moveInsideAndLift = [one("touchDown"), some("touchDragInside"), one("touchUpInside")]

    /// A finger that goes down and is cancelled (unplug) before it moves.
    static let cancelled = [one("touchDown"), one("touchCancel")]

    /// The events that end a contact's tracking on a control.
    static let endings: Set<String> = ["touchUpInside", "touchUpOutside", "touchCancel"]

    /// One contact on `control` that ends exactly once (fault-cases.md D5, D17): its messages open with the one
    /// touchDown, end with the one ending (touchUpInside, touchUpOutside or touchCancel, in `allowedEndings`), and
    /// hold only drag events in between. Messages of other controls are not looked at.
    static func endsOnce(
        _ messages: [TargetMessage], control: String, allowedEndings: Set<String> = endings, fields: Fields
    ) -> String? {
        let own = messages.filter { $0.control == control }
        if let problem = check(own, fields: fields) { return problem }
        let events = own.compactMap(\.event)
        let shown = "[\(compress(events))]"
        let downs = events.count { $0 == "touchDown" }
        let ends = events.count { endings.contains($0) }
        if events.first != "touchDown" || downs != 1 {
            return "control \(control): expected one touchDown, first, got \(shown)"
        }
        if ends != 1 || !endings.contains(events.last!) {
            return "control \(control): expected exactly one ending, last, got \(ends) in \(shown)"
        }
        if !allowedEndings.contains(events.last!) {
            return "control \(control): ended with \(events.last!), expected one of "
                + "\(allowedEndings.sorted().joined(separator: ", ")): \(shown)"
        }
        let between = events.dropFirst().dropLast().filter { !$0.hasPrefix("touchDrag") }
        if !between.isEmpty {
            return "control \(control): expected only drag events between touchDown and the ending, got \(shown)"
        }
        return nil
    }

    /// Every message comes from `control` and its events follow `pattern`.
    static func sequence(
        _ messages: [TargetMessage], control: String, pattern: [Step], fields: Fields
    ) -> String? {
        if let problem = check(messages, fields: fields) { return problem }
        let others = messages.filter { $0.control != control }
        if !others.isEmpty {
            return
                "expected messages from control \(control) only, also got \(describe(others)); all: \(describe(messages))"
        }
        return match(messages.compactMap(\.event), pattern)
    }

    /// Two fingers on two controls at once: each control's messages follow its pattern, every message of one
    /// control carries one `contact`, and the two contacts differ.
    static func twoFingers(
        _ messages: [TargetMessage], controls: (String, String), pattern: [Step], fields: Fields
    ) -> String? {
        if let problem = check(messages, fields: fields) { return problem }
        var contacts: [Int] = []
        for control in [controls.0, controls.1] {
            let own = messages.filter { $0.control == control }
            if let problem = match(own.compactMap(\.event), pattern) { return "control \(control): \(problem)" }
            let values = Set(own.map(\.contact))
            guard values.count == 1, let value = values.first, let contact = value else {
                let shown = own.map { $0.contact.map(String.init) ?? "absent" }.joined(separator: ", ")
                return "control \(control): expected one contact value on all its messages, got [\(shown)]"
            }
            contacts.append(contact)
        }
        if contacts[0] == contacts[1] {
            return
                "expected different contacts for \(controls.0) and \(controls.1), both messages say contact=\(contacts[0])"
        }
        return nil
    }

    /// The messages are exactly `expected` (control, event) pairs, in this order.
    static func exactly(
        _ messages: [TargetMessage], _ expected: [(control: String, event: String)], fields: Fields
    ) -> String? {
        if let problem = check(messages, fields: fields) { return problem }
        let got = messages.map { ($0.control ?? "?", $0.event ?? "?") }
        if got.count == expected.count, !zip(got, expected).contains(where: { $0.0 != $1.0 || $0.1 != $1.1 }) {
            return nil
        }
        let wanted = expected.map { "\($0.control) \($0.event)" }.joined(separator: ", ")
        return "expected exactly [\(wanted)], got [\(describe(messages))]"
    }

    /// The fields every message must carry: well-formed, the test's target, the right action for its control, the
    /// right generation.
    static func check(_ messages: [TargetMessage], fields: Fields) -> String? {
        for (index, message) in messages.enumerated() {
            let position = "message \(index + 1) of \(messages.count)"
            if let problem = message.problem { return "\(position) is malformed (\(problem)): \(message.raw)" }
            guard let control = message.control, let action = fields.actions[control] else {
                return "\(position) comes from an unexpected control: \(message.details)"
            }
            if message.target != TestConfig.targetName {
                return "\(position): expected target=\(TestConfig.targetName), got \(message.details)"
            }
            if message.action != action {
                return "\(position): expected action=\(action) from control \(control), got \(message.details)"
            }
            if let generation = message.generation {
                if generation != fields.generation {
                    return "\(position): expected generation=\(fields.generation), got \(message.details)"
                }
            } else if fields.generationRequired {
                return "\(position): expected generation=\(fields.generation), the message has no generation: "
                    + message.raw
            }
        }
        return nil
    }

    /// Matches `events` against `pattern` (a tiny regular expression over event names, with backtracking).
    static func match(_ events: [String], _ pattern: [Step]) -> String? {
        var furthest = 0
        func matches(_ event: Int, _ step: Int) -> Bool {
            furthest = max(furthest, event)
            if step == pattern.count { return event == events.count }
            let current = pattern[step]
            switch current.count {
            case .one:
                return event < events.count && events[event] == current.event && matches(event + 1, step + 1)
            case .zeroOrMore, .oneOrMore:
                var end = event
                while end < events.count, events[end] == current.event { end += 1 }
                let least = current.count == .oneOrMore ? event + 1 : event
                guard end >= least else { return false }
                for stop in stride(from: end, through: least, by: -1) where matches(stop, step + 1) { return true }
                return false
            }
        }
        if matches(0, 0) { return nil }
        let wanted = pattern.map(\.description).joined(separator: ", ")
        let position =
            furthest < events.count
            ? "event \(furthest + 1) (\(events[furthest])) does not fit"
            : "the sequence ends too early"
        return "expected [\(wanted)], got [\(compress(events))]: \(position)"
    }

    /// `a touchDown, a touchDragInside×3, a touchUpInside`: runs of one event collapsed, for failure texts.
    static func describe(_ messages: [TargetMessage]) -> String {
        if messages.isEmpty { return "nothing" }
        return compress(messages.map(\.summary))
    }

    static func compress(_ items: [String]) -> String {
        if items.isEmpty { return "nothing" }
        var parts: [String] = []
        var index = 0
        while index < items.count {
            var end = index + 1
            while end < items.count, items[end] == items[index] { end += 1 }
            parts.append(end - index > 1 ? "\(items[index])×\(end - index)" : items[index])
            index = end
        }
        return parts.joined(separator: ", ")
    }
}
