/// A virtual control: a region of the output that tracks one contact at a time and sends
/// UIKit's control events to the actions registered for them.
///
/// This is the declaration (what the configuration says) plus the application-owned state
/// (`isEnabled`, `isSelected`, `value`). Tracking state lives in the ``Scene``.
public struct Control: Hashable, Sendable {
    /// What the control does besides the touch events.
    public enum Kind: Hashable, Sendable {
        /// The touch events only; primaryActionTriggered follows touchUpInside.
        case button
        /// touchUpInside flips `isSelected` and sends valueChanged; primaryActionTriggered follows
        /// valueChanged.
        case toggle
        /// A value in `minimum…maximum` that follows the contact along an axis.
        case slider(Slider)
        /// `count` equal segments along an axis; touchUpInside on a segment selects it (the value is
        /// the segment index) and sends valueChanged when the selection changes.
        case segmented(Segmented)

        /// The kinds by name, as the configuration, `check`, the control socket and `render` spell them: the one
        /// table of those names.
        public enum Name: String, Hashable, Sendable, CaseIterable {
            case button, toggle, slider, segmented
        }

        public var kindName: Name {
            switch self {
            case .button: .button
            case .toggle: .toggle
            case .slider: .slider
            case .segmented: .segmented
            }
        }

        /// The configuration name of the kind.
        public var name: String { kindName.rawValue }
    }

    /// The direction in which a slider's value or a segmented control's index grows.
    public enum Axis: String, Hashable, Sendable, CaseIterable {
        /// Left (minimum) to right (maximum).
        case horizontal
        /// Bottom (minimum) to top (maximum) for a slider, like a volume fader; a segmented control numbers its
        /// segments from the top (``Segmented/segment(at:in:)``).
        case vertical

        /// Where `point` lies along this axis of `box`, from 0 to 1 (clamped).
        public func fraction(of point: Point, in box: Rect) -> Double {
            let raw: Double
            switch self {
            case .horizontal:
                raw = box.width > 0 ? (point.x - box.minX) / box.width : 0
            case .vertical:
                raw = box.height > 0 ? (box.maxY - point.y) / box.height : 0
            }
            guard raw.isFinite else { return 0 }
            return Swift.min(1, Swift.max(0, raw))
        }
    }

    /// A slider's settings.
    public struct Slider: Hashable, Sendable {
        public var minimum: Double
        public var maximum: Double
        public var axis: Axis
        /// When true (the default) valueChanged is sent on every change while tracking; when false,
        /// once on release if the value differs from the value at touch-down.
        public var isContinuous: Bool
        /// When set, the value snaps to `minimum + k·step` (k a whole number) within `minimum…maximum`; the
        /// configuration keeps it above 0 and at most `maximum − minimum`.
        public var step: Double?

        public init(
            minimum: Double = 0, maximum: Double = 1, axis: Axis = .horizontal, isContinuous: Bool = true,
            step: Double? = nil
        ) {
            self.minimum = minimum
            self.maximum = maximum
            self.axis = axis
            self.isContinuous = isContinuous
            self.step = step
        }

        /// `value` limited to `minimum…maximum`, then snapped to the nearest step that lies in that range.
        public func clamp(_ value: Double) -> Double {
            let clamped = Swift.min(maximum, Swift.max(minimum, value))
            guard let step, step > 0, step.isFinite, clamped.isFinite else { return clamped }
            // k stays a Double: no conversion to Int of a value that came from outside.
            var steps = ((clamped - minimum) / step).rounded()
            if minimum + steps * step > maximum { steps -= 1 }
            guard steps >= 0 else { return minimum }
            let snapped = minimum + steps * step
            // `0.1 * 3` is `0.30000000000000004`: when min and step are written with at most nine decimals, every
            // value of the grid is too, so rounding to nine decimals only takes the floating-point noise away and the
            // value prints as the grid a designer wrote. Otherwise it stays as computed.
            guard Self.tidy(minimum) == minimum, Self.tidy(step) == step else { return snapped }
            let tidied = Self.tidy(snapped)
            return (minimum...maximum).contains(tidied) ? tidied : snapped
        }

        /// `value` rounded to nine decimals, when it is small enough for that to be exact arithmetic on whole numbers.
        private static func tidy(_ value: Double) -> Double {
            guard Swift.abs(value) < 1e6 else { return value }
            return (value * 1e9).rounded() / 1e9
        }

        /// The value for a contact at `point` over a control whose bounding box is `box`.
        public func value(at point: Point, in box: Rect) -> Double {
            clamp(minimum + axis.fraction(of: point, in: box) * (maximum - minimum))
        }
    }

    /// A segmented control's settings.
    public struct Segmented: Hashable, Sendable {
        /// The number of segments, at least 1.
        public var count: Int
        public var axis: Axis

        public init(count: Int, axis: Axis = .horizontal) {
            self.count = Swift.max(1, count)
            self.axis = axis
        }

        /// The segment under `point` in a control whose bounding box is `box`: numbered from the left for a
        /// horizontal control and from the top for a vertical one (as a list reads), unlike a slider's value, which
        /// grows upwards like a fader's.
        public func segment(at point: Point, in box: Rect) -> Int {
            let fraction: Double
            switch axis {
            case .horizontal: fraction = axis.fraction(of: point, in: box)
            case .vertical: fraction = 1 - axis.fraction(of: point, in: box)
            }
            // fraction is finite and in 0...1, so the product is in 0...count and converts safely.
            let index = Int((fraction * Double(count)).rounded(.down))
            return Swift.min(count - 1, Swift.max(0, index))
        }
    }

    /// The control's identifier, unique in its scene.
    public var id: String
    public var kind: Kind
    /// The exact outline, used for the hit-test at touch-down.
    public var shape: Shape
    /// The innermost enclosing group, if any.
    public var parent: String?
    /// Stacking order: higher lies on top; equal values keep declaration order (later on top).
    public var z: Int
    /// A disabled control ignores touches and is transparent to hit-testing.
    public var isEnabled: Bool
    public var isSelected: Bool
    /// The value of a slider (minimum…maximum) or a segmented control (the selected index).
    public var value: Double
    /// How far beyond the shape a tracked contact still counts as inside, in pixels.
    public var dragOutset: Double
    /// The touchDownRepeat window after a lift, in microseconds.
    public var repeatInterval: UInt64
    /// The largest distance between taps of one repeat sequence, in pixels.
    public var repeatSlop: Double
    /// The handler target of this control as a responder (for nil-target actions).
    public var target: String?
    /// The control's target-action entries.
    public var actions: TargetActionTable
    /// Whether a touch that begins on the control also reaches the application beneath touchd's controls (filter
    /// mode; ``Scene/Settings/app``). False makes the control touchd's alone: a dead zone, a touchd-only button.
    public var toApp: Bool

    /// UIKit's defaults: 70 px drag outset, 350 ms repeat window, 45 px repeat slop.
    public static let defaultDragOutset: Double = 70
    public static let defaultRepeatInterval: UInt64 = 350_000
    public static let defaultRepeatSlop: Double = 45

    public init(
        id: String,
        kind: Kind = .button,
        shape: Shape,
        parent: String? = nil,
        z: Int = 0,
        isEnabled: Bool = true,
        isSelected: Bool = false,
        value: Double? = nil,
        dragOutset: Double = Control.defaultDragOutset,
        repeatInterval: UInt64 = Control.defaultRepeatInterval,
        repeatSlop: Double = Control.defaultRepeatSlop,
        target: String? = nil,
        actions: TargetActionTable = TargetActionTable(),
        toApp: Bool = true
    ) {
        self.id = id
        self.kind = kind
        self.shape = shape
        self.parent = parent
        self.z = z
        self.isEnabled = isEnabled
        self.isSelected = isSelected
        switch kind {
        case .slider(let slider): self.value = slider.clamp(value ?? slider.minimum)
        case .segmented(let segmented): self.value = Swift.min(Double(segmented.count - 1), Swift.max(0, value ?? 0))
        case .button, .toggle: self.value = value ?? 0
        }
        self.dragOutset = dragOutset
        self.repeatInterval = repeatInterval
        self.repeatSlop = repeatSlop
        self.target = target
        self.actions = actions
        self.toApp = toApp
    }

    /// The event after whose dispatch primaryActionTriggered is sent.
    public var primaryTrigger: Event {
        switch kind {
        case .button: .touchUpInside
        case .toggle, .slider, .segmented: .valueChanged
        }
    }

    /// Whether the control has a value worth reporting (sliders and segmented controls).
    public var hasValue: Bool {
        switch kind {
        case .slider, .segmented: true
        case .button, .toggle: false
        }
    }
}
