// A plain tap's frames, worked out before they come (issue 17).
//
// Between two frames the engine already knows most of what the next one will make. While one finger is down and the
// scene would take its lift in the quick lane (SceneQuickLane.swift), the lift's messages are known but for their time.
// While no finger is down, a touch-down that lands on a button or a toggle and takes the quick lane makes the same
// messages wherever it lands on that control, but for its contact, point and time, as long as the same recognizers see
// it (each failing at once) and the control's tap count is the same (`Scene.QuickDown`).
//
// The input loop has the engine work these out at the end of each wake-up (`planTouch`), while it would wait anyway:
// each with the engine's own path, `handle(taking:now:into:)`, on a copy of the engine, with the lift, or a touch-down
// at a point inside each control. A plan is kept only when that frame took the scene's quick lane and made nothing but
// deliveries (no log line, no control message, no observer, no subscriber). When the next wake-up's input is exactly
// such a frame (one contact's TOUCH_DOWN or TOUCH_UP and its device's TOUCH_FRAME), not earlier than the scene's time and
// before the engine's next deadline, with nothing reaching the engine before it in that wake-up, and for a touch-down
// with the same outcome, the loop sends the planned messages with the frame's contact, point and time (`answer`) and
// hands the frame to the engine after the send (`settle`).
//
// `settle` compares what handling the frame delivered with what was sent; a difference would be a fault of this file's,
// and is logged as an error and counted (`touch_plan_mismatches` in `touchd ctl stats`). TouchPlanTests runs random
// sequences through two engines, with and without plans, and requires the same deliveries and the same state.

import Logging
import TouchModel

/// What the next frame will deliver, worked out before it comes.
enum TouchPlan: Sendable {
    case lift(LiftPlan)
    case downs(DownPlans)

    var isLift: Bool {
        if case .lift = self { true } else { false }
    }
}

/// What the lift of the one contact down will deliver.
struct LiftPlan: Sendable {
    /// The contact (seat slot) and its device.
    let contact: ContactID
    let device: Int
    /// The time the lift was worked out at (the scene's time): every delivery carries it, and the lift's own time
    /// replaces it.
    let time: UInt64
    /// The plan holds for lifts before this time: the engine's next deadline when it was made (nil: none).
    let validUntil: UInt64?
    /// The deliveries, in order.
    let deliveries: PlannedDeliveries
}

/// What a touch-down on each control will deliver, while no contact is down.
struct DownPlans: Sendable {
    /// The scene's time when they were made: a touch-down is not answered from them before it.
    let sceneTime: UInt64
    /// They hold for touch-downs before this time: the engine's next deadline when they were made (nil: none).
    let validUntil: UInt64?
    let entries: [DownPlan]
}

/// What a touch-down with `outcome` on `device` delivers: `deliveries`, made by one at `point` as contact `contact`,
/// whose contact, point and time are replaced by the real touch-down's.
struct DownPlan: Sendable {
    let device: Int
    let outcome: Scene.QuickDown
    /// Where on the control a touch-down has `outcome` for sure (`Scene.quickDownArea`), when the scene can tell: such a
    /// touch-down is answered without asking the scene.
    let area: Scene.QuickDownArea?
    let contact: ContactID
    let point: Point
    let deliveries: PlannedDeliveries
}

/// One delivery a plan makes, with its message's template (``MessageTemplate``), made with the plan, after a wake-up's
/// send, so that the frame answered from it writes no more of its message than its contact, point and time.
struct PlannedDelivery: Sendable {
    let delivery: ActionDelivery
    let executor: ExecutorKind
    let template: MessageTemplate

    init(_ delivery: ActionDelivery, executor: ExecutorKind) {
        self.delivery = delivery
        self.executor = executor
        template = MessageTemplate(delivery)
    }
}

/// A plan's deliveries, in order, and whether they all go to socket targets (then the input loop hands them to the
/// socket sender as they are, templates and all).
struct PlannedDeliveries: Sendable {
    let items: [PlannedDelivery]
    let socketOnly: Bool

    init(_ items: [PlannedDelivery]) {
        self.items = items
        socketOnly = items.allSatisfy { $0.executor == .socket }
    }

    static let none = PlannedDeliveries([])
}

/// A frame answered from its plan and not yet handled: the planned deliveries (`Engine.answeredDeliveries`), what
/// replaced their contact, point and time (`Engine.answeredSubstitution`) and its events (`Engine.answeredEvents`). Kept
/// in three stored properties of the engine rather than one optional: assigning a struct that holds an array and
/// optional tuples went through its outlined copy and destroy, on every answered frame before its send (issue 17).
enum AnsweredTouch {
    /// The frame's own contact, point and time in place of the plan's. A delivery's contact and point are those of
    /// the touch, or nil; its time is the frame's. Plain values only.
    struct Substitution: Sendable {
        var time: UInt64
        var contact: (planned: ContactID, actual: ContactID)?
        var point: (planned: Point, actual: Point)?

        func apply(to planned: ActionDelivery) -> ActionDelivery {
            var delivery = planned
            delivery.timeMicroseconds = time
            if let contact, delivery.contact == contact.planned { delivery.contact = contact.actual }
            if let point, delivery.x == point.planned.x, delivery.y == point.planned.y {
                delivery.x = point.actual.x
                delivery.y = point.actual.y
            }
            return delivery
        }
    }
}

extension Engine {
    /// At most this many controls get a touch-down plan (in the scene's order): the plans are made after every
    /// wake-up in which no finger is down, each by handling a touch-down on a copy of the engine.
    static let plannedControlsLimit = 64

    /// The plan for the next frame: the lift of the one contact down, or the touch-downs on each control while none is;
    /// nil when there is none to make (debug lines, an observer or a subscriber would see more than deliveries, or more
    /// than one contact is down).
    func planTouch() -> TouchPlan? {
        guard !hasAnsweredTouch, !logsDebug, !observesOutput, subscriptions.subscriptions.isEmpty,
            !subscriptions.watchesContacts
        else { return nil }
        switch scene.contactCount {
        case 0: return planDowns().map(TouchPlan.downs)
        case 1: return planLift().map(TouchPlan.lift)
        default: return nil
        }
    }

    /// The engine's own path, on a copy: `events` handled as the input loop hands them over. The deliveries it made,
    /// when it took the scene's quick lane and made nothing else; nil otherwise.
    private func deliveriesOfQuickFrame(_ events: [InputEvent], time: UInt64) -> [PlannedDelivery]? {
        var copy = self
        var events = events
        var effects: [Effect] = []
        copy.handle(taking: &events, now: time, into: &effects)
        guard copy.scene.quickFrames == scene.quickFrames &+ 1 else { return nil }
        var deliveries: [PlannedDelivery] = []
        for effect in effects {
            guard case .deliver(let delivery, let executor, true) = effect, delivery.timeMicroseconds == time else {
                return nil
            }
            deliveries.append(PlannedDelivery(delivery, executor: executor))
        }
        return deliveries
    }

    private func planLift() -> LiftPlan? {
        let active = router.activeContacts
        guard active.count == 1, let origin = router.origin(of: active[0]), router.mapper(for: origin.device) != nil
        else { return nil }
        let contact = active[0]
        let time = scene.now.microseconds
        let events: [InputEvent] = [
            .touch(TouchEvent(device: origin.device, kind: .up, seatSlot: contact, slot: origin.slot, time: time)),
            .touch(TouchEvent(device: origin.device, kind: .frame, seatSlot: -1, slot: -1, time: time)),
        ]
        guard let deliveries = deliveriesOfQuickFrame(events, time: time) else { return nil }
        return LiftPlan(
            contact: contact, device: origin.device, time: time, validUntil: nextDeadline?.microseconds,
            deliveries: PlannedDeliveries(deliveries))
    }

    private func planDowns() -> DownPlans? {
        guard router.activeContacts.isEmpty else { return nil }
        let sceneTime = scene.now.microseconds
        let validUntil = nextDeadline?.microseconds
        // Any seat slot: the plan's is replaced by the touch-down's.
        let contact: ContactID = 0
        var entries: [DownPlan] = []
        for device in router.touchscreens {
            guard let mapper = router.mapper(for: device.id) else { continue }
            for control in 0..<min(scene.controlSlotCount, Self.plannedControlsLimit) {
                // A point that lands on the control, as the router maps it back from the device.
                guard let probe = scene.probe(ofControl: control), let position = mapper.unmap(probe.point),
                    let point = mapper.map(x: position.x, y: position.y)
                else { continue }
                // After the control's repeat window, if one is open: a first tap, which a tap elsewhere on it is too.
                var time = sceneTime
                if let end = probe.repeatWindowEnd?.microseconds, end >= time {
                    let (after, overflow) = end.addingReportingOverflow(1)
                    guard !overflow else { continue }
                    time = after
                }
                if let validUntil, time >= validUntil { continue }
                guard let outcome = scene.quickDown(at: point, time: Instant(microseconds: time)),
                    outcome.control == control
                else { continue }
                let events: [InputEvent] = [
                    .touch(
                        TouchEvent(
                            device: device.id, kind: .down, seatSlot: contact, slot: contact, time: time,
                            x: position.x, y: position.y)),
                    .touch(TouchEvent(device: device.id, kind: .frame, seatSlot: -1, slot: -1, time: time)),
                ]
                guard let deliveries = deliveriesOfQuickFrame(events, time: time), !deliveries.isEmpty,
                    deliveries.allSatisfy({ planned in
                        let delivery = planned.delivery
                        return (delivery.contact == nil || delivery.contact == contact) && delivery.value == nil
                            && ((delivery.x == nil && delivery.y == nil)
                                || (delivery.x == point.x && delivery.y == point.y))
                    })
                else { continue }
                let area = scene.quickDownArea(ofControl: control).flatMap { $0.outcome == outcome ? $0 : nil }
                entries.append(
                    DownPlan(
                        device: device.id, outcome: outcome, area: area, contact: contact, point: point,
                        deliveries: PlannedDeliveries(deliveries)))
            }
        }
        guard !entries.isEmpty else { return nil }
        return DownPlans(sceneTime: sceneTime, validUntil: validUntil, entries: entries)
    }

    /// ``answer(_:taking:)`` appending each planned delivery, with the frame's contact, point and time, to `effects` as
    /// a `.deliver` effect from input.
    mutating func answer(_ plan: TouchPlan, taking events: inout [InputEvent], into effects: inout [Effect]) -> Bool {
        guard answer(plan, taking: &events) else { return false }
        for planned in answeredDeliveries.items {
            effects.append(
                .deliver(answeredSubstitution.apply(to: planned.delivery), executor: planned.executor, fromInput: true))
        }
        return true
    }

    /// Answers `events` from `plan` when they are exactly the frame it was made for: keeps the planned deliveries in
    /// `answeredDeliveries` and what replaces their contact, point and time in `answeredSubstitution`, for the caller
    /// to send, keeps the events for ``settle(now:into:)`` (which must follow before anything else reaches the engine)
    /// and returns true. Otherwise changes nothing and returns false. The input loop hands the planned deliveries to
    /// the socket sender as they are, which writes each message from its template (issue 17).
    mutating func answer(_ plan: TouchPlan, taking events: inout [InputEvent]) -> Bool {
        guard !hasAnsweredTouch, events.count == 2, case .touch(let touch) = events[0],
            case .touch(let frame) = events[1], frame.kind == .frame, frame.device == touch.device
        else { return false }
        switch plan {
        case .lift(let lift):
            guard touch.kind == .up, touch.device == lift.device, touch.seatSlot == lift.contact,
                frame.time >= lift.time, lift.validUntil.map({ frame.time < $0 }) ?? true
            else { return false }
            answeredDeliveries = lift.deliveries
            answeredSubstitution = .init(time: frame.time, contact: nil, point: nil)
        case .downs(let downs):
            // The point as the router maps it, and the outcome the scene would give it: from a control's area when the
            // point lies in one, else from the scene.
            guard touch.kind == .down, frame.time >= downs.sceneTime, downs.validUntil.map({ frame.time < $0 }) ?? true,
                let x = touch.x, let y = touch.y, let point = router.mapper(for: touch.device)?.map(x: x, y: y)
            else { return false }
            let time = Instant(microseconds: frame.time)
            let entry: DownPlan
            if let inArea = downs.entries.first(where: {
                $0.device == touch.device && $0.area?.contains(point, at: time) == true
            }) {
                entry = inArea
            } else {
                guard let outcome = scene.quickDown(at: point, time: time), outcome.control != nil,
                    let matching = downs.entries.first(where: { $0.device == touch.device && $0.outcome == outcome })
                else { return false }
                entry = matching
            }
            answeredDeliveries = entry.deliveries
            answeredSubstitution = .init(
                time: frame.time, contact: (entry.contact, touch.seatSlot), point: (entry.point, point))
        }
        // The events' array is swapped with the one the last answered frame left (a copy would share the buffer, and
        // emptying `events` would then allocate a new one).
        statistics.touchesAnswered &+= 1
        swap(&events, &answeredEvents)
        hasAnsweredTouch = true
        return true
    }

    /// Handles the frame that ``answer(_:taking:into:)`` answered, as any batch is handled, except that its
    /// deliveries, already sent, are compared with what was sent instead of being delivered again. Nothing when no
    /// frame was answered.
    mutating func settle(now: UInt64, into effects: inout [Effect]) {
        guard hasAnsweredTouch else { return }
        hasAnsweredTouch = false
        let substitution = answeredSubstitution
        let planned = answeredDeliveries.items
        answeredDeliveries = .none
        var handled: [Effect] = []
        // Taken out of the engine while it handles them, and put back emptied, its room kept.
        var events = answeredEvents
        answeredEvents = []
        handle(taking: &events, now: now, into: &handled)
        answeredEvents = events
        var delivered: [ActionDelivery] = []
        for effect in handled {
            if case .deliver(let delivery, _, _) = effect {
                delivered.append(delivery)
            } else {
                effects.append(effect)
            }
        }
        let sent = planned.map { substitution.apply(to: $0.delivery) }
        guard delivered != sent else { return }
        statistics.touchPlanMismatches &+= 1
        effects.append(
            .log(
                .error, "a touch answered from its plan sent other messages than handling it makes; please report this",
                [
                    "sent": "\(sent.map { "\($0.action)/\($0.event)" }.joined(separator: ","))",
                    "handled": "\(delivered.map { "\($0.action)/\($0.event)" }.joined(separator: ","))",
                ]))
    }
}
