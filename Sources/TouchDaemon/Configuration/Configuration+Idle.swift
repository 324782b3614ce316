extension Configuration {
    /// `[idle]`: the attract loop. `idle` fires once `timeout` after the last contact lifted (start-up counts as a
    /// lift) while none is down; `wake` at the first touch-down after an `idle` (docs/configuration.md, `[idle]`).
    struct Idle: Hashable, Sendable {
        /// The two events an idle action can name.
        enum Event: String, Hashable, Sendable, CaseIterable {
            case idle, wake
        }

        /// `{ events, target, action }`, as a control's actions; a nil target goes to `[application] target`.
        struct Action: Hashable, Sendable {
            var events: Set<Event>
            var target: String?
            var action: String
        }

        /// The longest `timeout_s`: a week.
        static let maximumTimeoutSeconds = 604_800

        /// Microseconds; 0 turns idle off.
        var timeout = Schema.idle.timeout.defaultValue
        /// The screen switched to at idle.
        var screen: String?
        var actions: [Action] = []
        /// `wake_touch_reaches_controls`: whether the touch that wakes an idle kiosk also reaches touchd's controls and
        /// gestures (and, in filter mode, the application unless `[filter] swallow_after_idle_s` swallows it). Off by
        /// default: the wake touch belongs to nobody (Engine+Idle.swift).
        var wakeTouchReachesControls = Schema.idle.wakeTouchReachesControls.defaultValue

        var isEnabled: Bool { timeout > 0 }
    }
}
