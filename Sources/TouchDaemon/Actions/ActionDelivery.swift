import TouchModel

/// One resolved action on its way to an executor.
///
/// The input thread builds it from the model's output; it holds only values, so it crosses to an executor's thread
/// as is. Unhandled actions (no target) never become deliveries.
struct ActionDelivery: Hashable, Sendable {
    /// The action's name, e.g. `pay`.
    var action: String
    /// The name of the target that handles it.
    var target: String
    /// The id of the control or gesture that sent it.
    var control: String
    /// The event's configured name, e.g. `touchUpInside`.
    var event: String
    /// libinput's time (CLOCK_MONOTONIC, microseconds) of the frame that caused it.
    var timeMicroseconds: UInt64
    /// The contact (seat slot) whose touch caused it, when one did.
    var contact: Int? = nil
    /// Screen coordinates of the touch, in pixels. Sent to the target, but never logged above debug.
    var x: Double? = nil
    var y: Double? = nil
    /// A slider's or stepper's value, for value-changed events.
    var value: Double? = nil
    /// The responder whose target handled a nil-target action.
    var responder: String? = nil
    /// The gesture recognizer's id when a gesture sent it (then `control` holds the same id).
    var gesture: String? = nil
    /// The touchscreen's sysname, e.g. `event5`.
    var device: String? = nil
    /// The configuration generation: 1 at start, one more per successful reload.
    var generation: Int

    /// The message a socket target receives: one JSON object without a newline. The required fields come first, in
    /// the order of simulate's action lines (`action`, `control`, `event`, `target`, `time_us`), then the optional fields that are present, then `generation`.
    var json: String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// The message as a socket target gets it: the JSON object in UTF-8, with `terminator` (a stream's newline).
    ///
    /// Written straight into the array that is sent (``JSONBytes``), allocated once, at the bound of the message's
    /// size (every string byte escaped at worst).
    func jsonBytes(terminator: UInt8? = nil) -> [UInt8] {
        JSONBytes.build(capacity: jsonBound) { writeJSON(into: &$0, terminator: terminator) }
    }

    /// The message written into `buffer` from its start, which grows only when the message's bound needs more;
    /// returns its length. How the input thread writes a message it sends at once: one buffer serves every message,
    /// so no array is made, sized and freed per message (issue 17).
    func writeJSON(into buffer: inout [UInt8], terminator: UInt8?) -> Int {
        JSONBytes.write(into: &buffer, capacity: jsonBound) { writeJSON(into: &$0, terminator: terminator) }
    }

    /// An upper bound of the message's size, in bytes.
    private var jsonBound: Int {
        let stringBytes = action.utf8.count.addingSaturating(target.utf8.count)
            .addingSaturating(control.utf8.count).addingSaturating(event.utf8.count)
            .addingSaturating(responder?.utf8.count ?? 0).addingSaturating(gesture?.utf8.count ?? 0)
            .addingSaturating(device?.utf8.count ?? 0)
        // Keys, commas, braces and the terminator: under 160 bytes; 3 integers and 3 doubles at most.
        return JSONBytes.bound(stringBytes: stringBytes, strings: 7, numbers: 6, fixed: 192)
    }

    private func writeJSON(into out: inout JSONBytes, terminator: UInt8?) {
        out.member(#"{"action":"#, action)
        out.member(#","target":"#, target)
        out.member(#","control":"#, control)
        out.member(#","event":"#, event)
        out.member(#","time_us":"#, Int(clamping: timeMicroseconds))
        out.member(#","contact":"#, contact)
        out.member(#","x":"#, x)
        out.member(#","y":"#, y)
        out.member(#","value":"#, value)
        out.member(#","responder":"#, responder)
        out.member(#","gesture":"#, gesture)
        out.member(#","device":"#, device)
        out.member(#","generation":"#, generation)
        out.byte(UInt8(ascii: "}"))
        if let terminator { out.byte(terminator) }
    }
}

extension ActionDelivery {
    /// The delivery of a resolved action that a target handles; nil when no responder handled it. A gesture's action
    /// carries the gesture's id as `control` and in `gesture`, and its gesture event's name.
    init?(_ action: ResolvedAction, configuration: Configuration, device: String?, generation: Int) {
        guard let target = action.target else { return nil }
        self.init(
            action: action.action, target: target, control: action.control,
            event: Self.eventName(of: action, configuration: configuration),
            timeMicroseconds: action.time.microseconds, contact: action.contact, x: action.location?.x,
            y: action.location?.y, value: action.value, responder: action.responder?.id,
            gesture: action.gestureEvent == nil ? nil : action.control, device: device, generation: generation)
    }

    /// The name of the event that fired `action`: its gesture event, or its control event as configured.
    static func eventName(of action: ResolvedAction, configuration: Configuration) -> String {
        action.gestureEvent.map(\.description) ?? configuration.name(of: action.event)
    }
}
