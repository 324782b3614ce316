/// UIControl's per-contact tracking state machine (beginTracking, continueTracking, endTracking,
/// cancelTracking), as a table.
///
/// Geometry is decided before the table: the caller turns a sample into a fact such as
/// `moveOutside` using the control's shape enlarged by its drag outset (`input(forMoveTo:…)`), so
/// the table itself is a pure function of (state, input). It lists every row; there is no
/// `default:`, so a new state or input does not compile until every row is written.
///
/// ```
///            down / downRepeat                   moveOutside
///   idle ────────────────────────► inside ──────────────────────► outside
///    ▲  touchDown [touchDownRepeat]   │ ▲    touchDragExit,           │
///    │                                │ │    touchDragOutside          │
///    │   upInside: touchUpInside      │ └───────────────────────────────┘
///    ├────────────────────────────────┘        moveInside: touchDragEnter, touchDragInside
///    │   upOutside: touchDragExit, touchUpOutside
///    │   cancel: touchCancel                    (and the mirror rows from `outside`)
/// ```
public struct ControlTracker: Hashable, Sendable {
    /// Where the tracked contact is relative to the control.
    public enum State: String, Hashable, Sendable, CaseIterable {
        /// Not tracking any contact.
        case idle
        /// Tracking; the contact is inside the shape enlarged by the drag outset.
        case trackingInside
        /// Tracking; the contact is outside the enlarged shape.
        case trackingOutside
    }

    /// A fact about the contact, with geometry already applied.
    public enum Input: String, Hashable, Sendable, CaseIterable {
        /// The contact went down inside the exact shape; tap count 1.
        case down
        /// The contact went down inside the exact shape; tap count 2 or more.
        case downRepeat
        case moveInside
        case moveOutside
        case upInside
        case upOutside
        /// The system cancelled the touch (gesture, device removed, control disabled or removed).
        case cancel
    }

    /// One row of the table.
    public struct Transition: Hashable, Sendable {
        /// The state after the input.
        public var next: State
        /// The events to dispatch, in order, each one a separate dispatch.
        public var events: [Control.Event]
        /// False for rows that cannot happen when the caller is correct (a move while idle, a second
        /// down while tracking). They change nothing and the caller reports them as a bug.
        public var isExpected: Bool

        public init(_ next: State, _ events: [Control.Event], isExpected: Bool = true) {
            self.next = next
            self.events = events
            self.isExpected = isExpected
        }
    }

    /// The table: what `input` does in `state`.
    public static func transition(from state: State, on input: Input) -> Transition {
        switch (state, input) {
        case (.idle, .down): Transition(.trackingInside, [.touchDown])
        case (.idle, .downRepeat): Transition(.trackingInside, [.touchDown, .touchDownRepeat])
        case (.idle, .moveInside): Transition(.idle, [], isExpected: false)
        case (.idle, .moveOutside): Transition(.idle, [], isExpected: false)
        case (.idle, .upInside): Transition(.idle, [], isExpected: false)
        case (.idle, .upOutside): Transition(.idle, [], isExpected: false)
        case (.idle, .cancel): Transition(.idle, [], isExpected: false)

        case (.trackingInside, .down): Transition(.trackingInside, [], isExpected: false)
        case (.trackingInside, .downRepeat): Transition(.trackingInside, [], isExpected: false)
        case (.trackingInside, .moveInside): Transition(.trackingInside, [.touchDragInside])
        case (.trackingInside, .moveOutside): Transition(.trackingOutside, [.touchDragExit, .touchDragOutside])
        case (.trackingInside, .upInside): Transition(.idle, [.touchUpInside])
        case (.trackingInside, .upOutside): Transition(.idle, [.touchDragExit, .touchUpOutside])
        case (.trackingInside, .cancel): Transition(.idle, [.touchCancel])

        case (.trackingOutside, .down): Transition(.trackingOutside, [], isExpected: false)
        case (.trackingOutside, .downRepeat): Transition(.trackingOutside, [], isExpected: false)
        case (.trackingOutside, .moveInside): Transition(.trackingInside, [.touchDragEnter, .touchDragInside])
        case (.trackingOutside, .moveOutside): Transition(.trackingOutside, [.touchDragOutside])
        case (.trackingOutside, .upInside): Transition(.idle, [.touchDragEnter, .touchUpInside])
        case (.trackingOutside, .upOutside): Transition(.idle, [.touchUpOutside])
        case (.trackingOutside, .cancel): Transition(.idle, [.touchCancel])
        }
    }

    /// The current state.
    public private(set) var state: State = .idle

    public init() {}

    /// UIKit's `isTracking`.
    public var isTracking: Bool { state != .idle }

    /// UIKit's `isTouchInside`: tracking and inside the enlarged shape.
    public var isTouchInside: Bool { state == .trackingInside }

    /// Whether the control is highlighted: exactly while a tracked contact is inside.
    public var isHighlighted: Bool { state == .trackingInside }

    /// Applies `input` and returns the row that was taken. Unexpected rows leave the state alone.
    public mutating func handle(_ input: Input) -> Transition {
        let transition = ControlTracker.transition(from: state, on: input)
        state = transition.next
        return transition
    }

    /// The move fact for a contact at `point`: inside when the shape enlarged by `outset` holds it.
    public static func input(forMoveTo point: Point, in shape: Shape, outset: Double) -> Input {
        shape.contains(point, outset: outset) ? .moveInside : .moveOutside
    }

    /// The lift fact for a contact lifted at `point`.
    public static func input(forLiftAt point: Point, in shape: Shape, outset: Double) -> Input {
        shape.contains(point, outset: outset) ? .upInside : .upOutside
    }
}

/// Counts taps on one control for touchDownRepeat (docs/uikit-semantics.md §4).
///
/// A touch-down is a repeat when it lands within `slop` pixels of the previous tap's touch-down
/// and no later than `interval` microseconds after that tap's lift. Only taps (touchUpInside)
/// count; a lift outside or a cancel starts the count again.
public struct TapCounter: Hashable, Sendable {
    /// The repeat window after a lift, in microseconds.
    public var interval: UInt64
    /// The largest distance between two taps of one sequence, in pixels.
    public var slop: Double

    private struct Down: Hashable, Sendable {
        var location: Point
        var count: Int
    }

    private struct Tap: Hashable, Sendable {
        var location: Point
        var lift: Instant
        var count: Int
    }

    private var pendingDown: Down?
    private var lastTap: Tap?

    public init(interval: UInt64, slop: Double) {
        self.interval = interval
        self.slop = slop
    }

    /// Records a touch-down and returns its tap count (1 for a first tap).
    public mutating func touchDown(at location: Point, time: Instant) -> Int {
        let count = count(at: location, time: time)
        pendingDown = Down(location: location, count: count)
        return count
    }

    /// The tap count a touch-down at `location` at `time` would have, asked without recording it.
    public func count(at location: Point, time: Instant) -> Int {
        guard let last = lastTap, time >= last.lift, time.microseconds(since: last.lift) <= interval,
            location.distance(to: last.location) <= slop
        else { return 1 }
        return last.count == Int.max ? last.count : last.count + 1
    }

    /// Where the last tap went down; nil without one. Within its repeat window a touch-down farther than `slop` from it
    /// is a first tap too.
    public var lastTapLocation: Point? { lastTap?.location }

    /// When the last tap's repeat window closes (after it, every touch-down is a first tap); nil without one.
    public var repeatWindowEnd: Instant? {
        lastTap.map { $0.lift.advanced(by: interval) }
    }

    /// Records the end of the touch that went down last: a tap when `tapped`, else a reset.
    public mutating func touchEnded(at time: Instant, tapped: Bool) {
        if tapped, let down = pendingDown {
            lastTap = Tap(location: down.location, lift: time, count: down.count)
        } else {
            lastTap = nil
        }
        pendingDown = nil
    }
}
