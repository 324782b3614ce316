/// A gesture recognizer's declaration: what it recognizes, over which region, how it arbitrates
/// with controls and other recognizers, and the actions its events fire (docs/uikit-semantics.md §8).
///
/// Recognition state lives in the ``Scene``; this is only what the configuration says.
public struct GestureRecognizer: Hashable, Sendable {
    /// What the recognizer looks for, with the kind's own settings.
    public enum Kind: Hashable, Sendable {
        /// Discrete: `taps` quick presses of `fingers` fingers that stay put.
        case tap(Tap)
        /// Continuous: `fingers` fingers held still for a minimum duration; began, changed, ended.
        case longPress(LongPress)
        /// Discrete: `fingers` fingers moved far enough in an allowed direction.
        case swipe(Swipe)
        /// Continuous: `fingers` fingers dragged; reports the translation.
        case pan(Pan)
        /// Continuous: `fingers` fingers spread or pinched; reports the scale.
        case pinch(Pinch)

        /// The configuration name of the kind.
        public var name: String {
            switch self {
            case .tap: "tap"
            case .longPress: "long_press"
            case .swipe: "swipe"
            case .pan: "pan"
            case .pinch: "pinch"
            }
        }

        /// Continuous recognizers go through began and changed; discrete ones recognize at once.
        public var isContinuous: Bool {
            switch self {
            case .longPress, .pan, .pinch: true
            case .tap, .swipe: false
            }
        }
    }

    /// A tap's settings.
    public struct Tap: Hashable, Sendable {
        /// How many taps make the gesture.
        public var taps: Int
        /// The longest a press may last, in microseconds; nil for no limit.
        public var maximumDuration: UInt64?
        /// How far a finger may move from where it went down, in pixels.
        public var allowableMovement: Double
        /// The longest pause between a lift and the next tap, in microseconds (UIKit: 0.35 s).
        public var interval: UInt64
        /// How far a later tap may land from the first, in pixels (UIKit: 45).
        public var slop: Double

        public init(
            taps: Int = 1, maximumDuration: UInt64? = nil, allowableMovement: Double = 10,
            interval: UInt64 = Control.defaultRepeatInterval, slop: Double = Control.defaultRepeatSlop
        ) {
            self.taps = Swift.max(1, taps)
            self.maximumDuration = maximumDuration
            self.allowableMovement = allowableMovement
            self.interval = interval
            self.slop = slop
        }
    }

    /// A long press's settings.
    public struct LongPress: Hashable, Sendable {
        /// How long the fingers must stay down, in microseconds (UIKit: 0.5 s).
        public var minimumDuration: UInt64
        /// How far a finger may move before the press begins, in pixels.
        public var allowableMovement: Double

        public init(minimumDuration: UInt64 = 500_000, allowableMovement: Double = 10) {
            self.minimumDuration = minimumDuration
            self.allowableMovement = allowableMovement
        }
    }

    /// The directions a swipe may take.
    public struct Directions: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8

        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        public static let left = Directions(rawValue: 1 << 0)
        public static let right = Directions(rawValue: 1 << 1)
        public static let up = Directions(rawValue: 1 << 2)
        public static let down = Directions(rawValue: 1 << 3)
        public static let all: Directions = [.left, .right, .up, .down]

        /// The configuration names, in this order.
        public static let named: [(name: String, direction: Directions)] = [
            ("left", .left), ("right", .right), ("up", .up), ("down", .down),
        ]

        /// The direction called `name`.
        public init?(name: String) {
            guard let match = Directions.named.first(where: { $0.name == name }) else { return nil }
            self = match.direction
        }

        /// The names of the directions in the set.
        public var names: [String] {
            Directions.named.filter { contains($0.direction) }.map(\.name)
        }
    }

    /// A screen edge a swipe must start near.
    public struct Edge: Hashable, Sendable {
        public enum Side: String, Hashable, Sendable, CaseIterable {
            case left, right, top, bottom
        }

        public var side: Side
        /// How far from the edge the fingers may land, in pixels.
        public var margin: Double
        /// The screen whose edge is meant (the output).
        public var bounds: Rect

        public init(side: Side, margin: Double, bounds: Rect) {
            self.side = side
            self.margin = margin
            self.bounds = bounds
        }

        /// A rectangle that holds every point ``holds(_:)`` holds: the strip along the edge, reaching far beyond the
        /// bounds on the other three sides (1e12 pixels: finite, so that sums over it stay exact enough).
        public var strip: Rect {
            let far = 1e12
            return switch side {
            case .left: Rect(x: -far, y: -far, width: far + bounds.minX + margin, height: 2 * far)
            case .right: Rect(x: bounds.maxX - margin, y: -far, width: far, height: 2 * far)
            case .top: Rect(x: -far, y: -far, width: 2 * far, height: far + bounds.minY + margin)
            case .bottom: Rect(x: -far, y: bounds.maxY - margin, width: 2 * far, height: far)
            }
        }

        /// Whether `point` lies within `margin` of the edge.
        public func holds(_ point: Point) -> Bool {
            switch side {
            case .left: point.x - bounds.minX <= margin
            case .right: bounds.maxX - point.x <= margin
            case .top: point.y - bounds.minY <= margin
            case .bottom: bounds.maxY - point.y <= margin
            }
        }
    }

    /// A swipe's settings.
    public struct Swipe: Hashable, Sendable {
        public var directions: Directions
        /// How far the fingers must travel, in pixels.
        public var minimumDistance: Double
        /// The longest the swipe may take from the first touch-down, in microseconds; nil for no limit.
        public var maximumDuration: UInt64?
        /// The screen edge every finger must start near; nil for anywhere.
        public var edge: Edge?

        public init(
            directions: Directions = .all, minimumDistance: Double = 100, maximumDuration: UInt64? = nil,
            edge: Edge? = nil
        ) {
            self.directions = directions
            self.minimumDistance = minimumDistance
            self.maximumDuration = maximumDuration
            self.edge = edge
        }

        /// The movement across the swipe's direction may be at most this fraction of the movement
        /// along it (about 27°), so a diagonal drag is not a swipe.
        public static let maximumSlant = 0.5

        /// Whether a finger that goes down at `start` fails the swipe: it has an edge, and `start` is not near it.
        func startsOffEdge(_ start: Point) -> Bool {
            guard let edge else { return false }
            return !edge.holds(start)
        }
    }

    /// A pan's settings.
    public struct Pan: Hashable, Sendable {
        /// How far the fingers must travel before the pan begins, in pixels.
        public var minimumDistance: Double

        public init(minimumDistance: Double = 100) {
            self.minimumDistance = minimumDistance
        }
    }

    /// A pinch's settings.
    public struct Pinch: Hashable, Sendable {
        /// How much the fingers' mean distance from their centre must change before the pinch
        /// begins, in pixels, so a resting hand does not start it.
        public var threshold: Double

        public static let defaultThreshold: Double = 10

        public init(threshold: Double = Pinch.defaultThreshold) {
            self.threshold = threshold
        }
    }

    /// One target-action entry for gesture events.
    public struct Action: Hashable, Sendable {
        public var target: TargetSlot
        public var action: String
        public var events: Event

        public init(target: TargetSlot, action: String, events: Event) {
            self.target = target
            self.action = action
            self.events = events
        }
    }

    /// The recognizer's identifier, unique among recognizers.
    public var id: String
    public var kind: Kind
    /// How many fingers the gesture takes.
    public var fingers: Int
    /// What GestureProgress's rules read of this recognizer.
    var rules: GestureProgress.Rules { GestureProgress.Rules(fingers: fingers, kind: kind) }
    /// The region whose touches the recognizer sees; nil for its control's or group's shape, or the
    /// whole output when it has neither.
    public var shape: Shape?
    /// The group the recognizer is attached to (responder chain, screen, region).
    public var parent: String?
    /// The control the recognizer is attached to (responder chain, region); such a recognizer wins
    /// single taps on its control.
    public var control: String?
    /// UIKit's cancelsTouchesInView: recognizing cancels the controls that track its touches.
    public var cancelsTouches: Bool
    /// UIKit's delaysTouchesEnded: a control's lift waits while the recognizer is undecided.
    public var delaysTouchesEnded: Bool
    /// UIKit's delaysTouchesBegan, for the application beneath touchd (filter mode): its touches reach the
    /// application only once it has failed, and never when it recognizes.
    public var delaysTouchesBegan: Bool
    /// Recognizers that may recognize at the same time as this one (either side may say so).
    public var simultaneousWith: [String]
    /// Recognizers that must fail before this one recognizes.
    public var requiresFailureOf: [String]
    /// The target-action entries, in dispatch order (see ``add(target:action:for:)``).
    public private(set) var actions: [Action] = []

    public init(
        id: String, kind: Kind, fingers: Int = 1, shape: Shape? = nil, parent: String? = nil, control: String? = nil,
        cancelsTouches: Bool = true, delaysTouchesEnded: Bool = true, simultaneousWith: [String] = [],
        requiresFailureOf: [String] = [], delaysTouchesBegan: Bool = false
    ) {
        self.id = id
        self.kind = kind
        self.fingers = Swift.max(1, fingers)
        self.shape = shape
        self.parent = parent
        self.control = control
        self.cancelsTouches = cancelsTouches
        self.delaysTouchesEnded = delaysTouchesEnded
        self.delaysTouchesBegan = delaysTouchesBegan
        self.simultaneousWith = simultaneousWith
        self.requiresFailureOf = requiresFailureOf
    }

    /// Registers `action` on `target` for `events`, with the semantics of a control's table: an
    /// empty mask adds nothing; an entry with the same target and action is merged into the new one,
    /// which goes to the end.
    public mutating func add(target: TargetSlot, action: String, for events: Event) {
        guard !events.isEmpty else { return }
        var merged = events
        if let existing = actions.firstIndex(where: { $0.target == target && $0.action == action }) {
            merged.formUnion(actions[existing].events)
            actions.remove(at: existing)
        }
        actions.append(Action(target: target, action: action, events: merged))
    }

    /// Forgets every entry of a target that went away (weak targets).
    mutating func removeAll(target name: String) {
        actions.removeAll { $0.target == .target(name) }
    }

    /// UIKit's rule for controls: a one-finger single-tap recognizer of an enclosing region does not
    /// take a tap from a control.
    public var isSingleTap: Bool {
        guard case .tap(let tap) = kind else { return false }
        return tap.taps == 1 && fingers == 1
    }
}

extension GestureRecognizer {
    /// What a recognizer tells its actions (docs/uikit-semantics.md §8). Each dispatch is of one event.
    public struct Event: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8

        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        /// A continuous recognizer began (sent right before `recognized`).
        public static let began = Event(rawValue: 1 << 0)
        /// A continuous recognizer's fingers moved.
        public static let changed = Event(rawValue: 1 << 1)
        /// The recognizer recognized: a discrete one when it ends, a continuous one when it begins.
        public static let recognized = Event(rawValue: 1 << 2)
        /// A continuous recognizer ended; for a discrete one, the same moment as `recognized`.
        public static let ended = Event(rawValue: 1 << 3)
        /// A continuous recognizer was cancelled (a contact was cancelled).
        public static let cancelled = Event(rawValue: 1 << 4)
        /// The recognizer failed.
        public static let failed = Event(rawValue: 1 << 5)

        /// The configuration names, in bit order.
        public static let named: [(name: String, event: Event)] = [
            ("began", .began), ("changed", .changed), ("recognized", .recognized), ("ended", .ended),
            ("cancelled", .cancelled), ("failed", .failed),
        ]

        /// The event called `name`.
        public init?(name: String) {
            guard let match = Event.named.first(where: { $0.name == name }) else { return nil }
            self = match.event
        }

        /// The names of the events in the set, comma-separated.
        public var description: String {
            let names = Event.named.filter { contains($0.event) }.map(\.name)
            return names.isEmpty ? "[]" : names.joined(separator: ",")
        }
    }
}
