/// A recognizer's states and transitions, as a table (UIKit's UIGestureRecognizer.State).
///
/// The kind's own logic (``GestureProgress``) and the scene's arbitration turn samples and deadlines
/// into a fact such as `begin` or `fail` first, so the table is a pure function of (state, input).
/// It lists every row; there is no `default:`, so a new state or input does not compile until every
/// row is written.
///
/// ```
///              recognize: recognized            (discrete: tap, swipe)
///   possible ─────────────────────────────────► ended ──┐
///     │ │  begin: began, recognized                     │
///     │ └──────────────────► began ─update─► changed ◄─┐│ update: changed
///     │                        │  finish: ended  │  └──┘│
///     │                        ├─────────────────┴──► ended
///     │                        └─ cancel: cancelled ─► cancelled
///     └─ fail / cancel: failed ──────────────────────► failed
///   ended, cancelled, failed ── reset (all their touches lifted) ──► possible
/// ```
extension GestureRecognizer {
    /// UIKit's recognizer states. `ended` is also UIKit's `recognized`.
    public enum State: String, Hashable, Sendable, CaseIterable {
        /// Watching touches, undecided (the state a recognizer rests in).
        case possible
        /// A continuous recognizer recognized and its fingers are still down.
        case began
        /// A continuous recognizer's fingers moved since it began.
        case changed
        /// Recognized (discrete), or finished (continuous).
        case ended
        /// A continuous recognizer was cancelled after it began.
        case cancelled
        /// The touches are not this gesture.
        case failed

        /// Whether the recognizer is done with its touches and waits for them to lift.
        public var isFinished: Bool {
            switch self {
            case .ended, .cancelled, .failed: true
            case .possible, .began, .changed: false
            }
        }

        /// Whether a continuous recognizer is recognizing.
        public var isActive: Bool {
            switch self {
            case .began, .changed: true
            case .possible, .ended, .cancelled, .failed: false
            }
        }
    }

    /// A fact about the gesture, with the kind's logic and arbitration already applied.
    public enum Input: String, Hashable, Sendable, CaseIterable {
        /// A continuous gesture is recognized and begins.
        case begin
        /// A discrete gesture is recognized.
        case recognize
        /// A continuous gesture's fingers moved.
        case update
        /// A continuous gesture's fingers lifted.
        case finish
        /// The touches are not this gesture, or arbitration said no.
        case fail
        /// A contact of the gesture was cancelled.
        case cancel
        /// Every touch of a finished recognizer lifted: it watches again.
        case reset
    }

    /// One row of the table.
    public struct Transition: Hashable, Sendable {
        /// The state after the input.
        public var next: State
        /// The events to dispatch, in order, each a separate dispatch.
        public var events: [Event]
        /// False for rows that cannot happen when the caller is correct; they change nothing and the
        /// caller reports them as a bug.
        public var isExpected: Bool

        public init(_ next: State, _ events: [Event], isExpected: Bool = true) {
            self.next = next
            self.events = events
            self.isExpected = isExpected
        }
    }

    /// The table: what `input` does in `state`.
    public static func transition(from state: State, on input: Input) -> Transition {
        switch (state, input) {
        case (.possible, .begin): Transition(.began, [.began, .recognized])
        case (.possible, .recognize): Transition(.ended, [.recognized])
        case (.possible, .update): Transition(.possible, [], isExpected: false)
        case (.possible, .finish): Transition(.possible, [], isExpected: false)
        case (.possible, .fail): Transition(.failed, [.failed])
        case (.possible, .cancel): Transition(.failed, [.failed])
        case (.possible, .reset): Transition(.possible, [], isExpected: false)

        case (.began, .begin): Transition(.began, [], isExpected: false)
        case (.began, .recognize): Transition(.began, [], isExpected: false)
        case (.began, .update): Transition(.changed, [.changed])
        case (.began, .finish): Transition(.ended, [.ended])
        case (.began, .fail): Transition(.began, [], isExpected: false)
        case (.began, .cancel): Transition(.cancelled, [.cancelled])
        case (.began, .reset): Transition(.began, [], isExpected: false)

        case (.changed, .begin): Transition(.changed, [], isExpected: false)
        case (.changed, .recognize): Transition(.changed, [], isExpected: false)
        case (.changed, .update): Transition(.changed, [.changed])
        case (.changed, .finish): Transition(.ended, [.ended])
        case (.changed, .fail): Transition(.changed, [], isExpected: false)
        case (.changed, .cancel): Transition(.cancelled, [.cancelled])
        case (.changed, .reset): Transition(.changed, [], isExpected: false)

        case (.ended, .begin): Transition(.ended, [], isExpected: false)
        case (.ended, .recognize): Transition(.ended, [], isExpected: false)
        case (.ended, .update): Transition(.ended, [], isExpected: false)
        case (.ended, .finish): Transition(.ended, [], isExpected: false)
        case (.ended, .fail): Transition(.ended, [], isExpected: false)
        case (.ended, .cancel): Transition(.ended, [], isExpected: false)
        case (.ended, .reset): Transition(.possible, [])

        case (.cancelled, .begin): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .recognize): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .update): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .finish): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .fail): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .cancel): Transition(.cancelled, [], isExpected: false)
        case (.cancelled, .reset): Transition(.possible, [])

        case (.failed, .begin): Transition(.failed, [], isExpected: false)
        case (.failed, .recognize): Transition(.failed, [], isExpected: false)
        case (.failed, .update): Transition(.failed, [], isExpected: false)
        case (.failed, .finish): Transition(.failed, [], isExpected: false)
        case (.failed, .fail): Transition(.failed, [], isExpected: false)
        case (.failed, .cancel): Transition(.failed, [], isExpected: false)
        case (.failed, .reset): Transition(.possible, [])
        }
    }
}
