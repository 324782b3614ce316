// The lift of a lone finger, worked out before it comes (issue 17).
//
// While one finger is down and the scene would take its lift in the quick lane (SceneQuickLane.swift), what that lift
// will make is already known but for its time: the control it ends on, the events, the actions and their messages. The
// input loop has it worked out while it waits (`planLift`, on a copy of the engine, after the touch-down's message
// has gone), and when the batch that comes is exactly that lift, it sends the planned messages with the lift's time
// first (`answer`) and lets the engine handle the batch after the send (`settle`). So a lift's message waits for
// decoding and a comparison, not for the router, the scene and the delivery, which run after it has gone.
//
// A plan is used only when it cannot differ from what handling the lift would make:
//
// - it is worked out by the engine's own path (`handle(taking:now:into:)`), on a copy, with a lift at the scene's
//   time, and kept only when that lift took the scene's quick lane and made nothing but deliveries: no log line, no
//   control message, no observer's output, no subscriber (a quick lift's output depends on its time only through the
//   times it carries and the stuck-contact deadline);
// - the batch is that contact's lift and its device's frame and nothing else, not earlier than the plan's time and
//   before the engine's next deadline (a stuck contact's, or any other: then the lift is handled as usual);
// - nothing else reaches the engine between the plan and the batch: the input loop drops it at every wake-up that does
//   anything before the input (a suspend, a signal) and works it out again after each wake-up.
//
// `settle` compares what handling the lift delivered with what was sent; a difference would be a fault of this
// file's, and is logged as an error and counted (`lift_plan_mismatches` in `touchd ctl stats`). LiftPlanTests runs random
// sequences through two engines, with and without plans, and requires the same deliveries and the same state.

import Logging
import TouchModel

/// What the lift of the one contact down will deliver, worked out before it comes.
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
    let deliveries: [(delivery: ActionDelivery, executor: ExecutorKind)]
}

/// A lift answered from its plan and not yet handled: the plan and the time it was sent with (its events wait in
/// `Engine.answeredEvents`).
struct AnsweredLift: Sendable {
    var plan: LiftPlan
    var time: UInt64
}

extension Engine {
    /// The plan for the lift of the one contact down, or nil when there is none to make: not exactly one contact down,
    /// or a lift that would not take the scene's quick lane or would make anything but deliveries.
    func planLift() -> LiftPlan? {
        guard answeredLift == nil, !logsDebug, !observesOutput, subscriptions.subscriptions.isEmpty,
            !subscriptions.watchesContacts, scene.contactCount == 1
        else { return nil }
        let active = router.activeContacts
        guard active.count == 1, let origin = router.origin(of: active[0]), router.mapper(for: origin.device) != nil
        else { return nil }
        let contact = active[0]
        let time = scene.now.microseconds
        // The engine's own path, on a copy: the router's lift and frame, the scene, the delivery.
        var copy = self
        var events: [InputEvent] = [
            .touch(TouchEvent(device: origin.device, kind: .up, seatSlot: contact, slot: origin.slot, time: time)),
            .touch(TouchEvent(device: origin.device, kind: .frame, seatSlot: -1, slot: -1, time: time)),
        ]
        var effects: [Effect] = []
        let quickFrames = scene.quickFrames
        copy.handle(taking: &events, now: time, into: &effects)
        guard copy.scene.quickFrames == quickFrames &+ 1 else { return nil }
        var deliveries: [(delivery: ActionDelivery, executor: ExecutorKind)] = []
        for effect in effects {
            guard case .deliver(let delivery, let executor, true) = effect, delivery.timeMicroseconds == time else {
                return nil
            }
            deliveries.append((delivery, executor))
        }
        return LiftPlan(
            contact: contact, device: origin.device, time: time, validUntil: nextDeadline?.microseconds,
            deliveries: deliveries)
    }

    /// Answers `events` from `plan` when they are exactly its lift: appends the planned deliveries, with the lift's
    /// time, to `effects`, keeps the events for ``settle(now:into:)`` (which must follow before anything else reaches
    /// the engine) and returns true. Otherwise changes nothing and returns false.
    mutating func answer(_ plan: LiftPlan, taking events: inout [InputEvent], into effects: inout [Effect]) -> Bool {
        guard answeredLift == nil, events.count == 2, case .touch(let lift) = events[0], lift.kind == .up,
            lift.device == plan.device, lift.seatSlot == plan.contact, case .touch(let frame) = events[1],
            frame.kind == .frame, frame.device == plan.device, frame.time >= plan.time,
            plan.validUntil.map({ frame.time < $0 }) ?? true
        else { return false }
        // Nothing allocated before the send: the deliveries go straight into the effects, and the events' array is
        // swapped with the one the last answered lift left (a copy would share the buffer, and emptying `events`
        // would then allocate a new one).
        for (delivery, executor) in plan.deliveries {
            var delivery = delivery
            delivery.timeMicroseconds = frame.time
            effects.append(.deliver(delivery, executor: executor, fromInput: true))
        }
        statistics.liftsAnswered &+= 1
        swap(&events, &answeredEvents)
        answeredLift = AnsweredLift(plan: plan, time: frame.time)
        return true
    }

    /// Handles the lift that ``answer(_:taking:into:)`` answered, as any batch is handled, except that its
    /// deliveries, already sent, are compared with what was sent instead of being delivered again. Nothing when no
    /// lift was answered.
    mutating func settle(now: UInt64, into effects: inout [Effect]) {
        guard let answered = answeredLift else { return }
        answeredLift = nil
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
        let sent = answered.plan.deliveries.map { planned in
            var delivery = planned.delivery
            delivery.timeMicroseconds = answered.time
            return delivery
        }
        guard delivered != sent else { return }
        statistics.liftPlanMismatches &+= 1
        effects.append(
            .log(
                .error, "a lift answered from its plan sent other messages than handling it makes; please report this",
                [
                    "sent": "\(sent.map { "\($0.action)/\($0.event)" }.joined(separator: ","))",
                    "handled": "\(delivered.map { "\($0.action)/\($0.event)" }.joined(separator: ","))",
                ]))
    }
}
