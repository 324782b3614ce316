import Logging
import TouchModel

/// `[idle]`'s clock. The engine keeps it; no timer thread exists: its deadline is part of ``Engine/nextDeadline``,
/// which the input loop waits for.
///
/// - Start-up counts as a lift: the clock starts at ``Engine/started(now:)`` (and at a reload, whose cancellations
///   lift every contact).
/// - After a frame that leaves no contact down, the clock starts unless it runs already: `idle` falls due
///   `timeout_s` after the last lift.
/// - A touch-down stops the clock; after an `idle`, it is the `wake`, fired before the touch's own events.
/// - `idle` fires once per idle period: the clock does not start again until a touch came and went.
/// - The wake touch belongs to nobody (UIKit's rule for the touch that wakes the screen): the touch-downs of
///   the frame that wakes, and every touch-down that comes while one of them is still down, are kept from the scene
///   (no control, gesture or, in filter mode, application sees them) until each has lifted or been cancelled, unless
///   `[idle] wake_touch_reaches_controls`. The clock starts again when the last of them lifts.
struct IdleClock: Sendable {
    /// When `idle` falls due; nil while a contact is down, after `idle` fired, or with idle off.
    var deadline: Instant?
    /// `idle` fired and no touch-down came since: the next touch-down is a `wake`.
    var isIdle = false
    /// The contacts of the wake touch that are still down: the scene never sees them.
    var wakeContacts: SmallSet<ContactID> = []
}

/// A touch-down kept from the scene because it woke an idle kiosk (or came while the touch that did was down), for an
/// observer: `touchd simulate` prints it as a `wake_touch` line.
struct WakeTouch: Hashable, Sendable {
    var time: Instant
    var contact: ContactID
    /// Where it went down, in output pixels.
    var location: Point?
}

/// An `[idle]` event as an observer sees it: `touchd simulate` prints each action as an action line.
struct IdleTransition: Hashable, Sendable {
    /// One action the event fired.
    struct Fired: Hashable, Sendable {
        var action: String
        /// The target that handles it; nil when no responder did.
        var target: String?
        /// `application` when `[application] target` handled an action without a target; nil otherwise.
        var responder: String?
    }

    var event: Configuration.Idle.Event
    var time: Instant
    var actions: [Fired]
}

extension Engine {
    /// The `control` an idle action's delivery names: no control sent it (`event` is `idle` or `wake`).
    static let idleSender = "idle"

    /// Starts the clock as if every contact had just lifted (start-up counts as a lift).
    mutating func armIdle(at time: Instant) {
        guard configuration.idle.isEnabled else {
            idleClock = IdleClock()
            return
        }
        guard !idleClock.isIdle, scene.contactCount == 0, idleClock.wakeContacts.isEmpty else { return }
        idleClock.deadline = time.advanced(by: configuration.idle.timeout)
    }

    /// After a reload: the new timeout applies from now; an idle kiosk stays idle (its next touch-down is a `wake` of
    /// the new configuration), unless the new file turns idle off.
    mutating func reloadIdle(at time: Instant) {
        idleClock.deadline = nil
        armIdle(at: time)
    }

    /// Before a frame goes to the scene: a touch-down stops the clock, and wakes an idle kiosk first. The wake touch's
    /// samples are taken out of `frame` (see ``IdleClock``); the frame may be left with none.
    mutating func idleBeforeFrame(_ frame: inout Frame, fromInput: Bool, now: UInt64, into effects: inout [Effect]) {
        guard idleClock.deadline != nil || idleClock.isIdle || !idleClock.wakeContacts.isEmpty else { return }
        var starts = false
        if frame.samples.contains(where: { $0.phase == .began }) {
            idleClock.deadline = nil
            if idleClock.isIdle {
                idleClock.isIdle = false
                starts = !configuration.idle.wakeTouchReachesControls
                fireIdle(.wake, at: frame.time, now: now, fromInput: fromInput, withheld: starts, into: &effects)
            }
        }
        guard starts || !idleClock.wakeContacts.isEmpty else { return }
        withholdWakeTouch(from: &frame, starting: starts, into: &effects)
    }

    /// Takes the wake touch's samples out of `frame`: each touch-down while the wake lasts (from the frame that wakes,
    /// `starting`, until its last contact lifts) joins it, and the wake's contacts' moves, lifts and cancels go. When
    /// the last lifts, the application's idle time (`[filter] swallow_after_idle_s`) counts from that lift, as it would
    /// had the scene seen the touch.
    private mutating func withholdWakeTouch(from frame: inout Frame, starting: Bool, into effects: inout [Effect]) {
        let time = frame.time
        var joining = starting
        var ended = false
        frame.samples.removeAll { sample in
            switch sample.phase {
            case .began:
                guard joining || !idleClock.wakeContacts.isEmpty else { return false }
                idleClock.wakeContacts.insert(sample.contact)
                if observesOutput {
                    effects.append(
                        .wakeTouch(WakeTouch(time: time, contact: sample.contact, location: sample.location)))
                }
                if logsDebug {
                    effects.append(
                        .log(
                            .debug, "wake touch: neither the controls nor the application see it",
                            ["contact": "\(sample.contact)"]))
                }
                return true
            case .moved:
                return idleClock.wakeContacts.contains(sample.contact)
            case .ended, .cancelled:
                guard idleClock.wakeContacts.remove(sample.contact) != nil else { return false }
                if idleClock.wakeContacts.isEmpty {
                    // A touch-down later in this frame is an ordinary one.
                    joining = false
                    ended = true
                }
                return true
            }
        }
        if ended, idleClock.wakeContacts.isEmpty, scene.contactCount == 0 { scene.appIdleSince = time }
    }

    /// After a frame: with no contact down, `idle` falls due `timeout_s` from this lift (unless the clock runs).
    mutating func idleAfterFrame(at time: Instant) {
        guard configuration.idle.isEnabled, idleClock.deadline == nil, !idleClock.isIdle, scene.contactCount == 0,
            idleClock.wakeContacts.isEmpty
        else { return }
        idleClock.deadline = time.advanced(by: configuration.idle.timeout)
    }

    /// Fires `idle` when its deadline has come.
    mutating func fireIdleIfDue(at time: Instant, now: UInt64, into effects: inout [Effect]) {
        guard let due = idleClock.deadline, due <= time else { return }
        idleClock.deadline = nil
        idleClock.isIdle = true
        fireIdle(.idle, at: time, now: now, fromInput: false, withheld: false, into: &effects)
    }

    /// `idle`: the screen switch, then the actions. `wake`: the actions. `withheld`: the wake touch reaches nobody.
    private mutating func fireIdle(
        _ event: Configuration.Idle.Event, at time: Instant, now: UInt64, fromInput: Bool, withheld: Bool,
        into effects: inout [Effect]
    ) {
        let idle = configuration.idle
        let message =
            switch event {
            case .idle: "idle: nobody touched the screen"
            case .wake:
                withheld
                    ? "wake: the screen was touched after idle; that touch reaches nobody"
                    : "wake: the screen was touched after idle"
            }
        effects.append(.log(.info, message, ["timeout_s": "\(idle.timeout / 1_000_000)"]))
        if event == .idle, let screen = idle.screen, scene.activeScreen != screen {
            deliver(
                scene.activateScreen(screen, at: time), at: time, device: nil, fromInput: false, now: now,
                into: &effects)
            effects.append(.log(.info, "idle: screen switched", ["screen": "\(screen)"]))
            broadcastScreen(screen, into: &effects)
            speechScreenChanged(at: time, into: &effects)
        }
        var fired: [IdleTransition.Fired] = []
        for entry in idle.actions where entry.events.contains(event) {
            var target = entry.target
            var responder: String?
            if target == nil, let application = configuration.applicationTarget,
                configuration.targets.first(where: { $0.name == application })?.respondsTo.contains(entry.action)
                    == true
            {
                target = application
                responder = Responder.application.id
            }
            fired.append(IdleTransition.Fired(action: entry.action, target: target, responder: responder))
            guard let target, let definition = configuration.targets.first(where: { $0.name == target }) else {
                statistics.unhandledActions &+= 1
                if logsDebug {
                    effects.append(
                        .log(
                            .debug, "action not handled by any responder",
                            ["action": "\(entry.action)", "event": "\(event.rawValue)"]))
                }
                continue
            }
            statistics.actions &+= 1
            let delivery = ActionDelivery(
                action: entry.action, target: target, control: Self.idleSender, event: event.rawValue,
                timeMicroseconds: time.microseconds, responder: responder, generation: generation)
            effects.append(.deliver(delivery, executor: definition.kind.executor, fromInput: fromInput))
            if logsDebug {
                effects.append(
                    .log(
                        .debug, "action",
                        ["action": "\(entry.action)", "target": "\(target)", "event": "\(event.rawValue)"]))
            }
        }
        if observesOutput { effects.append(.idle(IdleTransition(event: event, time: time, actions: fired))) }
    }
}
