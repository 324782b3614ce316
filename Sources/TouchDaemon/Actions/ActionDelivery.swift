/// One resolved action on its way to an executor: plain values, so it crosses to an executor's thread as is.
/// Unhandled actions (no target) never become deliveries.
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

    /// The message a socket target receives: one JSON object without a newline. The required fields come first
    /// (`action`, `target`, `control`, `event`, `time_us`), then the optional fields that are present, then
    /// `generation`.
    var json: String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// The message as a socket target gets it: the JSON object in UTF-8, with `terminator` (a stream's newline).
    func jsonBytes(terminator: UInt8? = nil) -> [UInt8] {
        var line = JSONLine()
        line.add("action", action)
        line.add("target", target)
        line.add("control", control)
        line.add("event", event)
        line.add("time_us", Int(clamping: timeMicroseconds))
        if let contact { line.add("contact", contact) }
        if let x { line.add("x", x) }
        if let y { line.add("y", y) }
        if let value { line.add("value", value) }
        if let responder { line.add("responder", responder) }
        if let gesture { line.add("gesture", gesture) }
        if let device { line.add("device", device) }
        line.add("generation", generation)
        return line.lineBytes(terminator: terminator)
    }
}
