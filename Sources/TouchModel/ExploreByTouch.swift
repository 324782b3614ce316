/// Explore by touch: what a blind customer's touches mean while speech mode is on (docs/accessibility.md, the rules of
/// the contract with TalkBack's and VoiceOver's timings). It reads contact frames and says, as ``Event`` values, what
/// is to be spoken or done: it speaks nothing itself, knows no label and activates nothing, so the engine decides the
/// words and the taps and the same events come out under `touchd run` and `touchd simulate`. Pure: time comes with
/// every call, and ``nextDeadline`` says when ``advance(to:)`` is due (a hint).
///
/// - A first finger down interrupts speech and announces the item under it at once, which takes the focus (landing on
///   the focused item announces it again: the repeat). Moving onto another item moves the focus; moving within one
///   says nothing; leaving an item takes `hysteresis` pixels beyond its edge, so a finger on a border does not
///   chatter. Empty space changes nothing; lifting never activates.
/// - A finger that covers `swipeDistance` within `swipeTime` of touching down is a swipe, not exploring: the focus
///   goes back to where it was before that touch, then a horizontal swipe moves it to the next or previous item
///   (``Event/edge`` at either end, no wrap) and a vertical one adjusts the focused item when it is adjustable.
/// - A touch that lands within `doubleTapSlop` of a tap and within `doubleTapTimeout` of its lift activates the
///   focused item when it lifts as a tap (``Event/nothingFocused`` with no focus); so does a second finger tapping
///   while the first rests (split tap).
/// - Two fingers that touch down together (within `swipeTime`) and lift as a tap pause or resume speech.
public struct ExploreByTouch: Sendable {
    /// Something the customer can reach: a shape, and what the gestures need to know of it.
    public struct Item: Hashable, Sendable {
        public var shape: Shape
        /// Which of two overlapping items the finger finds: the higher rank (touchd's controls lie above the
        /// application's elements, and among controls the scene's own order decides).
        public var rank: Int
        /// A vertical swipe steps it (a slider, a segmented control).
        public var isAdjustable: Bool
        /// A hint follows its announcement after ``Settings/hintDelay`` of quiet.
        public var hasHint: Bool

        public init(shape: Shape, rank: Int, isAdjustable: Bool = false, hasHint: Bool = false) {
            self.shape = shape
            self.rank = rank
            self.isAdjustable = isAdjustable
            self.hasHint = hasHint
        }
    }

    /// The timings and distances, in microseconds and output pixels.
    public struct Settings: Hashable, Sendable {
        /// The second touch-down of a double tap comes at most this long after the first lift (TalkBack: 300 ms).
        public var doubleTapTimeout: UInt64
        /// … and at most this far from the first touch-down; also the most a tap may move.
        public var doubleTapSlop: Double
        /// The longest touch that is still a tap (Android's long-press timeout).
        public var tapTimeout: UInt64
        /// A swipe covers at least this distance …
        public var swipeDistance: Double
        /// … within this long of touching down; slower is exploring. Two fingers down within it are a two-finger tap.
        public var swipeTime: UInt64
        /// How far beyond an item's edge the exploring finger must go to leave it.
        public var hysteresis: Double
        /// A hint is due this long after its item's announcement ends (TalkBack: 400 ms after the end).
        public var hintDelay: UInt64
        /// Whether the end of each announcement is told (``announcementEnded(_:at:)``): the hint is then due
        /// ``hintDelay`` after it. Without, the hint is due ``hintDelay`` after the announcement began (nothing says
        /// when speech ends: a dry run).
        public var hintFollowsEnd: Bool

        public init(
            doubleTapTimeout: UInt64 = 300_000, doubleTapSlop: Double = 40, tapTimeout: UInt64 = 500_000,
            swipeDistance: Double = 40, swipeTime: UInt64 = 150_000, hysteresis: Double = 6,
            hintDelay: UInt64 = 400_000, hintFollowsEnd: Bool = false
        ) {
            self.doubleTapTimeout = doubleTapTimeout
            self.doubleTapSlop = doubleTapSlop
            self.tapTimeout = tapTimeout
            self.swipeDistance = swipeDistance
            self.swipeTime = swipeTime
            self.hysteresis = hysteresis
            self.hintDelay = hintDelay
            self.hintFollowsEnd = hintFollowsEnd
        }
    }

    /// What the touches mean, in order. Items are indices into ``items``.
    public enum Event: Hashable, Sendable {
        /// A new touch: stop what is being spoken.
        case interrupt
        /// The focus moved to the item (touched or swiped to): announce it.
        case focus(Int)
        /// A finger landed on the focused item: announce it again.
        case repeatFocus(Int)
        /// The focused item's hint is due.
        case hint(Int)
        /// Activate the focused item (double tap, split tap).
        case activate(Int)
        /// A double tap with nothing focused.
        case nothingFocused
        /// Step the focused adjustable item up (a swipe up) or down.
        case adjust(Int, up: Bool)
        /// A swipe found no next or previous item.
        case edge
        /// A two-finger tap: pause speech, or resume it.
        case pauseOrResume
    }

    private struct Touch: Sendable {
        var start: Point
        var startTime: Instant
        var location: Point
        /// The farthest it has been from where it went down.
        var travel: Double
    }

    /// What the touch sequence under way (from a first finger down until every finger lifted) has turned out to be.
    private enum Mode: Sendable {
        /// One finger: exploring (a swipe until `swipeTime` passed).
        case exploring
        case swipe
        /// The second touch of a double tap.
        case secondTap
        /// Two fingers that went down together.
        case twoFingerTap
        /// A second finger tapping while the first rests on an item.
        case splitTap(ContactID)
        /// Anything else: more fingers, a gesture spoilt; it ends with the last lift and does nothing.
        case ignored
    }

    public let settings: Settings
    /// The active screen's items, in reading order.
    public private(set) var items: [Item]
    /// The focused item, which stays when the finger lifts.
    public private(set) var focus: Int?

    private var touches: [ContactID: Touch] = [:]
    private var mode: Mode?
    private var primary: ContactID?
    private var sequenceStart = Instant.zero
    /// The most any finger of the sequence travelled.
    private var sequenceTravel = 0.0
    private var fingers = 0
    /// The focus when the sequence began: a swipe moves from it.
    private var focusBefore: Int?
    /// The item under the exploring finger (kept within the hysteresis), nil over empty space.
    private var explored: Int?
    /// The last tap, which a second touch can make a double tap.
    private var lastTap: (point: Point, lift: Instant)?
    /// The focused item's hint: due at a time, or (``Settings/hintFollowsEnd``) nil until its announcement ends.
    private var pendingHint: (item: Int, due: Instant?)?

    public init(items: [Item], settings: Settings = Settings()) {
        self.items = items
        self.settings = settings
    }

    /// When ``advance(to:)`` is next due, if ever.
    public var nextDeadline: Instant? {
        pendingHint?.due
    }

    /// The item whose announcement's end the hint waits for (``Settings/hintFollowsEnd``), if any: the announcement
    /// of this item, just made, is the one whose end to tell.
    public var awaitsEnd: Int? {
        guard let hint = pendingHint, hint.due == nil else { return nil }
        return hint.item
    }

    /// `item`'s announcement ended at `time` (the speech server said so): its hint is due ``Settings/hintDelay``
    /// later, if the focus is still on it and no touch came since. Any other end changes nothing.
    public mutating func announcementEnded(_ item: Int, at time: Instant) {
        guard let hint = pendingHint, hint.item == item, hint.due == nil else { return }
        pendingHint = (item, time.advanced(by: settings.hintDelay))
    }

    /// Whether a finger is down.
    public var isTouching: Bool { !touches.isEmpty }

    /// New items (the screen changed, or its controls did): the focus goes to `focus`, and what was pending (a tap
    /// waiting for its second, a hint) is forgotten. Fingers that are down stay down, exploring the new
    /// items.
    public mutating func replaceItems(_ items: [Item], focus: Int?) {
        self.items = items
        self.focus = focus.flatMap { items.indices.contains($0) ? $0 : nil }
        explored = nil
        focusBefore = self.focus
        lastTap = nil
        pendingHint = nil
    }

    /// Moves the focus to `item` as a swipe would, at `time` (the screen changed: the focus goes to its first item):
    /// the event to announce it, nil when there is no such item.
    public mutating func moveFocus(to item: Int, at time: Instant) -> Event? {
        guard items.indices.contains(item) else { return nil }
        setFocus(item, at: time)
        return .focus(item)
    }

    /// Reads one frame's samples, in order, appending what they mean to `events`.
    public mutating func handle(_ frame: Frame, into events: inout [Event]) {
        for sample in frame.samples {
            switch sample.phase {
            case .began:
                guard let location = sample.location, location.isFinite else { continue }
                began(sample.contact, at: location, time: frame.time, into: &events)
            case .moved:
                guard let location = sample.location, location.isFinite else { continue }
                moved(sample.contact, to: location, time: frame.time, into: &events)
            case .ended:
                ended(
                    sample.contact, at: sample.location.flatMap { $0.isFinite ? $0 : nil }, time: frame.time,
                    into: &events)
            case .cancelled:
                guard touches.removeValue(forKey: sample.contact) != nil else { continue }
                if touches.isEmpty { endSequence() } else { mode = .ignored }
            }
        }
    }

    /// What fell due by `time`: a hint.
    public mutating func advance(to time: Instant, into events: inout [Event]) {
        if let hint = pendingHint, let due = hint.due, due <= time {
            pendingHint = nil
            if focus == hint.item { events.append(.hint(hint.item)) }
        }
    }

    // MARK: - Samples

    private mutating func began(_ contact: ContactID, at location: Point, time: Instant, into events: inout [Event]) {
        guard touches[contact] == nil else { return }
        touches[contact] = Touch(start: location, startTime: time, location: location, travel: 0)
        guard let current = mode else {
            // A new sequence: every new touch interrupts speech (EN 301 549 5.1.3.5).
            events.append(.interrupt)
            pendingHint = nil
            primary = contact
            sequenceStart = time
            sequenceTravel = 0
            fingers = 1
            focusBefore = focus
            if let tap = lastTap, time.microseconds(since: tap.lift) <= settings.doubleTapTimeout,
                location.distance(to: tap.point) <= settings.doubleTapSlop
            {
                lastTap = nil
                mode = .secondTap
                return
            }
            lastTap = nil
            mode = .exploring
            explored = nil
            explore(location, time: time, landing: true, into: &events)
            return
        }
        fingers += 1
        switch current {
        case .exploring where fingers == 2:
            let resting = primary.flatMap { touches[$0] }
            if time.microseconds(since: sequenceStart) <= settings.swipeTime,
                (resting?.travel ?? 0) <= settings.doubleTapSlop
            {
                mode = .twoFingerTap
            } else {
                mode = .splitTap(contact)
            }
        default:
            mode = .ignored
        }
    }

    private mutating func moved(_ contact: ContactID, to location: Point, time: Instant, into events: inout [Event]) {
        guard var touch = touches[contact] else { return }
        touch.location = location
        touch.travel = max(touch.travel, location.distance(to: touch.start))
        touches[contact] = touch
        sequenceTravel = max(sequenceTravel, touch.travel)
        guard contact == primary, let current = mode else { return }
        switch current {
        case .exploring:
            if time.microseconds(since: touch.startTime) <= settings.swipeTime, touch.travel >= settings.swipeDistance,
                fingers == 1
            {
                mode = .swipe
                return
            }
            explore(location, time: time, into: &events)
        case .secondTap:
            // Not a tap after all: the finger explores from here.
            guard touch.travel > settings.doubleTapSlop else { return }
            mode = .exploring
            explored = nil
            explore(location, time: time, into: &events)
        case .swipe, .twoFingerTap, .splitTap, .ignored:
            return
        }
    }

    private mutating func ended(_ contact: ContactID, at location: Point?, time: Instant, into events: inout [Event]) {
        guard var touch = touches.removeValue(forKey: contact) else { return }
        if let location {
            touch.location = location
            touch.travel = max(touch.travel, location.distance(to: touch.start))
            sequenceTravel = max(sequenceTravel, touch.travel)
        }
        let isTap =
            time.microseconds(since: touch.startTime) <= settings.tapTimeout && touch.travel <= settings.doubleTapSlop
        defer { if touches.isEmpty { endSequence() } }
        guard let current = mode else { return }
        switch current {
        case .exploring:
            guard contact == primary, touches.isEmpty, fingers == 1, isTap else { return }
            lastTap = (touch.start, time)
        case .swipe:
            guard contact == primary else { return }
            swiped(
                by: Point(x: touch.location.x - touch.start.x, y: touch.location.y - touch.start.y), time: time,
                into: &events)
            mode = .ignored
        case .secondTap:
            guard contact == primary else { return }
            if isTap { activate(into: &events) }
            mode = .ignored
        case .splitTap(let second):
            if contact == second {
                if isTap { activate(into: &events) }
                // The first finger goes on exploring; another finger may split-tap again.
                mode = .exploring
                fingers = 1
            } else {
                mode = .ignored
            }
        case .twoFingerTap:
            guard touches.isEmpty else { return }
            if time.microseconds(since: sequenceStart) <= settings.tapTimeout,
                sequenceTravel <= settings.doubleTapSlop
            {
                events.append(.pauseOrResume)
            }
        case .ignored:
            return
        }
    }

    private mutating func endSequence() {
        mode = nil
        primary = nil
        explored = nil
        fingers = 0
    }

    // MARK: - What the touches do

    /// The exploring finger is at `location`: a new item under it takes the focus and is announced; a finger
    /// `landing` on the focused item announces it again (rule 13's repeat), one moving within it does not.
    private mutating func explore(
        _ location: Point, time: Instant, landing: Bool = false, into events: inout [Event]
    ) {
        if let current = explored, items[current].shape.contains(location, outset: settings.hysteresis) { return }
        explored = hitTest(location)
        guard let item = explored else { return }
        guard item != focus else {
            if landing {
                scheduleHint(item, after: time)
                events.append(.repeatFocus(item))
            }
            return
        }
        setFocus(item, at: time)
        events.append(.focus(item))
    }

    /// The item under `location`: the highest rank, the later one among equals.
    private func hitTest(_ location: Point) -> Int? {
        var best: Int?
        for (index, item) in items.enumerated() where item.shape.contains(location) {
            if let found = best, items[found].rank > item.rank { continue }
            best = index
        }
        return best
    }

    private mutating func swiped(by delta: Point, time: Instant, into events: inout [Event]) {
        // The touch-down's exploring does not count: a swipe moves from the focus the customer had.
        focus = focusBefore
        pendingHint = nil
        if abs(delta.x) >= abs(delta.y) {
            let next: Int
            if let current = focus {
                next = delta.x > 0 ? current + 1 : current - 1
            } else {
                next = delta.x > 0 ? 0 : items.count - 1
            }
            guard items.indices.contains(next) else { return events.append(.edge) }
            setFocus(next, at: time)
            events.append(.focus(next))
        } else if let current = focus, items[current].isAdjustable {
            // Screen y grows downwards: a swipe up has a negative delta.
            events.append(.adjust(current, up: delta.y < 0))
        }
    }

    private mutating func activate(into events: inout [Event]) {
        pendingHint = nil
        events.append(focus.map { .activate($0) } ?? .nothingFocused)
    }

    private mutating func setFocus(_ item: Int, at time: Instant) {
        focus = item
        pendingHint = nil
        scheduleHint(item, after: time)
    }

    private mutating func scheduleHint(_ item: Int, after time: Instant) {
        guard items[item].hasHint else { return }
        pendingHint = (item, settings.hintFollowsEnd ? nil : time.advanced(by: settings.hintDelay))
    }
}
