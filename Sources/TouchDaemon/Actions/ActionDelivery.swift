import TouchModel

/// One resolved action on its way to an executor.
///
/// The input thread builds it from the model's output; it holds only values and an immutable ``Head``, so it crosses
/// to an executor's thread as is. Unhandled actions (no target) never become deliveries.
struct ActionDelivery: Hashable, Sendable {
    /// What the action's binding fixes (its names and the message's fixed parts), shared by every delivery of that
    /// binding: a copy of a delivery retains one object instead of seven strings, and its message begins with bytes
    /// written once, not with the names escaped again for every touch (issue 17).
    var head: Head
    /// libinput's time (CLOCK_MONOTONIC, microseconds) of the frame that caused it.
    var timeMicroseconds: UInt64
    /// The contact (seat slot) whose touch caused it, when one did.
    var contact: Int? = nil
    /// Screen coordinates of the touch, in pixels. Sent to the target, but never logged above debug.
    var x: Double? = nil
    var y: Double? = nil
    /// A slider's or stepper's value, for value-changed events.
    var value: Double? = nil
    /// The touchscreen's sysname, e.g. `event5`.
    var device: String? = nil
    /// The configuration generation: 1 at start, one more per successful reload.
    var generation: Int

    init(
        head: Head, timeMicroseconds: UInt64, contact: Int? = nil, x: Double? = nil, y: Double? = nil,
        value: Double? = nil, device: String? = nil, generation: Int
    ) {
        self.head = head
        self.timeMicroseconds = timeMicroseconds
        self.contact = contact
        self.x = x
        self.y = y
        self.value = value
        self.device = device
        self.generation = generation
    }

    init(
        action: String, target: String, control: String, event: String, timeMicroseconds: UInt64,
        contact: Int? = nil, x: Double? = nil, y: Double? = nil, value: Double? = nil, responder: String? = nil,
        gesture: String? = nil, device: String? = nil, generation: Int
    ) {
        self.init(
            head: Head(
                action: action, target: target, control: control, event: event, responder: responder, gesture: gesture),
            timeMicroseconds: timeMicroseconds, contact: contact, x: x, y: y, value: value, device: device,
            generation: generation)
    }

    /// The action's name, e.g. `pay`.
    var action: String { head.action }
    /// The name of the target that handles it.
    var target: String { head.target }
    /// The id of the control or gesture that sent it.
    var control: String { head.control }
    /// The event's configured name, e.g. `touchUpInside`.
    var event: String { head.event }
    /// The responder whose target handled a nil-target action.
    var responder: String? { head.responder }
    /// The gesture recognizer's id when a gesture sent it (then `control` holds the same id).
    var gesture: String? { head.gesture }

    /// The message a socket target receives: one JSON object without a newline. The required fields come first
    /// (`action`, `target`, `control`, `event`, `time_us`), then the optional fields that are present, then
    /// `generation`.
    var json: String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// The message as a socket target gets it: the JSON object in UTF-8, with `terminator` (a stream's newline).
    ///
    /// Written straight into the array that is sent (``JSONBytes``), allocated once, at the bound of the message's
    /// size.
    func jsonBytes(terminator: UInt8? = nil) -> [UInt8] {
        JSONBytes.build(capacity: jsonBound) { writeJSON(into: &$0, terminator: terminator) }
    }

    /// The message written into `buffer` from its start, which grows only when the message's bound needs more;
    /// returns its length. How the input thread writes a message it sends at once: one buffer serves every message,
    /// so no array is made, sized and freed per message (issue 17).
    func writeJSON(into buffer: inout [UInt8], terminator: UInt8?) -> Int {
        JSONBytes.write(into: &buffer, capacity: jsonBound) { writeJSON(into: &$0, terminator: terminator) }
    }

    /// An upper bound of the message's size, in bytes: the head's parts as they are, the device escaped at worst.
    fileprivate var jsonBound: Int {
        // The other keys, the closing brace and the terminator: 67 bytes; 3 integers and 3 doubles at most.
        let fixed = head.opening.count.addingSaturating(head.middle.count).addingSaturating(96)
        return JSONBytes.bound(stringBytes: device?.utf8.count ?? 0, strings: 1, numbers: 6, fixed: fixed)
    }

    /// The head's opening, the touch's fields, the head's middle, then the device and the generation.
    private func writeJSON(into out: inout JSONBytes, terminator: UInt8?) {
        head.opening.withUnsafeBufferPointer { out.raw($0) }
        out.raw(Self.timeKey)
        out.integer(Int(clamping: timeMicroseconds))
        Self.writeTouch(into: &out, contact: contact, x: x, y: y)
        writeRest(into: &out)
        if let terminator { out.byte(terminator) }
    }

    /// The key before the time's digits.
    fileprivate static let timeKey: StaticString = #","time_us":"#

    /// The touch's fields after the time, those present.
    @inline(__always)
    fileprivate static func writeTouch(into out: inout JSONBytes, contact: Int?, x: Double?, y: Double?) {
        out.member(#","contact":"#, contact)
        out.member(#","x":"#, x)
        out.member(#","y":"#, y)
    }

    /// Everything after the touch's fields, to the closing brace: what a frame answered from a plan never changes
    /// (``MessageTemplate``).
    @inline(__always)
    fileprivate func writeRest(into out: inout JSONBytes) {
        out.member(#","value":"#, value)
        head.middle.withUnsafeBufferPointer { out.raw($0) }
        out.member(#","device":"#, device)
        out.member(#","generation":"#, generation)
        out.byte(UInt8(ascii: "}"))
    }
}

/// A planned delivery's message written once with its plan (Engine+TouchPlan.swift), but for the fields a frame answered
/// from that plan changes: the time, and for a touch-down the contact and the point (``AnsweredTouch/Substitution``).
/// Filling it in is one copy of the bytes before the time, the numbers, and one copy of the bytes after the point: the
/// message of an answered frame is written between its `poll` and its `send`, where each step the message takes costs
/// time (issue 17).
struct MessageTemplate: Sendable, Equatable {
    /// The message up to the time's digits (the head's opening and `,"time_us":`), then everything after the point.
    let bytes: [UInt8]
    /// Where the part after the point begins in `bytes`.
    let restStart: Int
    /// The planned delivery's contact and point, which a substitution may replace.
    let contact: Int?
    let x: Double?
    let y: Double?

    init(_ delivery: ActionDelivery) {
        let opening = delivery.head.opening
        let rest = JSONBytes.build(capacity: delivery.jsonBound) { delivery.writeRest(into: &$0) }
        bytes = JSONBytes.build(
            capacity: opening.count.addingSaturating(ActionDelivery.timeKey.utf8CodeUnitCount).addingSaturating(
                rest.count)
        ) { out in
            opening.withUnsafeBufferPointer { out.raw($0) }
            out.raw(ActionDelivery.timeKey)
            rest.withUnsafeBufferPointer { out.raw($0) }
        }
        restStart = bytes.count - rest.count
        contact = delivery.contact
        x = delivery.x
        y = delivery.y
    }

    /// The planned delivery with `substitution` applied, written into `buffer` from its start, with `terminator`:
    /// the same bytes as `substitution.apply(to: delivery).writeJSON(into:terminator:)` for the delivery the template
    /// was made from. Returns the length.
    func write(substituting substitution: AnsweredTouch.Substitution, terminator: UInt8?, into buffer: inout [UInt8])
        -> Int
    {
        var contact = contact
        if let replaced = substitution.contact, contact == replaced.planned { contact = replaced.actual }
        var x = x
        var y = y
        if let replaced = substitution.point, x == replaced.planned.x, y == replaced.planned.y {
            x = replaced.actual.x
            y = replaced.actual.y
        }
        // The template's bytes, four numbers with their keys (11 bytes at most each) and the terminator.
        let capacity = bytes.count.addingSaturating(4 * (JSONBytes.numberBound + 11) + 1)
        let restStart = restStart
        return bytes.withUnsafeBufferPointer { bytes in
            JSONBytes.write(into: &buffer, capacity: capacity) { out in
                out.raw(UnsafeBufferPointer(rebasing: bytes[..<restStart]))
                out.integer(Int(clamping: substitution.time))
                ActionDelivery.writeTouch(into: &out, contact: contact, x: x, y: y)
                out.raw(UnsafeBufferPointer(rebasing: bytes[restStart...]))
                if let terminator { out.byte(terminator) }
            }
        }
    }
}

extension ActionDelivery {
    /// The names a delivery shares with every other delivery of the same binding (the same action of the same control
    /// or gesture, for the same event, handled by the same target and responder), and its message's fixed parts
    /// written once when it is made. Immutable, so it crosses to an executor's thread as is.
    final class Head: Hashable, Sendable {
        let action: String
        let target: String
        let control: String
        let event: String
        let responder: String?
        let gesture: String?
        /// `{"action":…,"target":…,"control":…,"event":…`: the message up to `time_us`.
        let opening: [UInt8]
        /// `,"responder":…,"gesture":…` when present: the message between `value` and `device`.
        let middle: [UInt8]

        init(action: String, target: String, control: String, event: String, responder: String?, gesture: String?) {
            self.action = action
            self.target = target
            self.control = control
            self.event = event
            self.responder = responder
            self.gesture = gesture
            let openingBytes = action.utf8.count.addingSaturating(target.utf8.count)
                .addingSaturating(control.utf8.count).addingSaturating(event.utf8.count)
            opening = Self.fitted(
                JSONBytes.build(capacity: JSONBytes.bound(stringBytes: openingBytes, strings: 4, numbers: 0, fixed: 48))
                {
                    $0.member(#"{"action":"#, action)
                    $0.member(#","target":"#, target)
                    $0.member(#","control":"#, control)
                    $0.member(#","event":"#, event)
                })
            let middleBytes = (responder?.utf8.count ?? 0).addingSaturating(gesture?.utf8.count ?? 0)
            middle = Self.fitted(
                JSONBytes.build(capacity: JSONBytes.bound(stringBytes: middleBytes, strings: 2, numbers: 0, fixed: 32))
                {
                    $0.member(#","responder":"#, responder)
                    $0.member(#","gesture":"#, gesture)
                })
        }

        /// The head of `action`'s binding, handled by `target`: a gesture's action carries the gesture's id as
        /// `control` and in `gesture`, and its gesture event's name.
        convenience init(_ action: ResolvedAction, target: String, configuration: Configuration) {
            self.init(
                action: action.action, target: target, control: action.control,
                event: ActionDelivery.eventName(of: action, configuration: configuration),
                responder: action.responder?.id, gesture: action.gestureEvent == nil ? nil : action.control)
        }

        /// `bytes` without the room its bound left unused, when that room is large: a head lives as long as its
        /// binding is in use.
        private static func fitted(_ bytes: [UInt8]) -> [UInt8] {
            bytes.capacity > bytes.count.addingSaturating(64) ? Array(bytes) : bytes
        }

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs === rhs
                || (lhs.action == rhs.action && lhs.target == rhs.target && lhs.control == rhs.control
                    && lhs.event == rhs.event && lhs.responder == rhs.responder && lhs.gesture == rhs.gesture)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(action)
            hasher.combine(target)
            hasher.combine(control)
            hasher.combine(event)
            hasher.combine(responder)
            hasher.combine(gesture)
        }
    }
}

extension ActionDelivery {
    /// The delivery of `action`, whose binding's names and message parts are `head`.
    init(_ action: ResolvedAction, head: Head, device: String?, generation: Int) {
        self.init(
            head: head, timeMicroseconds: action.time.microseconds, contact: action.contact, x: action.location?.x,
            y: action.location?.y, value: action.value, device: device, generation: generation)
    }

    /// The name of the event that fired `action`: its gesture event, or its control event as configured.
    static func eventName(of action: ResolvedAction, configuration: Configuration) -> String {
        action.gestureEvent.map(\.description) ?? configuration.name(of: action.event)
    }
}
