extension Control {
    /// The events a control sends, with UIKit's exact bit values (`UIControl.Event`).
    ///
    /// A value may hold several events; the masks (`allTouchEvents`, `allEvents`…) are ordinary
    /// values of this type. Names are UIKit's, in lowerCamelCase.
    public struct Event: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32

        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        public static let touchDown = Event(rawValue: 1 << 0)
        public static let touchDownRepeat = Event(rawValue: 1 << 1)
        public static let touchDragInside = Event(rawValue: 1 << 2)
        public static let touchDragOutside = Event(rawValue: 1 << 3)
        public static let touchDragEnter = Event(rawValue: 1 << 4)
        public static let touchDragExit = Event(rawValue: 1 << 5)
        public static let touchUpInside = Event(rawValue: 1 << 6)
        public static let touchUpOutside = Event(rawValue: 1 << 7)
        public static let touchCancel = Event(rawValue: 1 << 8)
        public static let valueChanged = Event(rawValue: 1 << 12)
        public static let primaryActionTriggered = Event(rawValue: 1 << 13)
        public static let menuActionTriggered = Event(rawValue: 1 << 14)
        public static let editingDidBegin = Event(rawValue: 1 << 16)
        public static let editingChanged = Event(rawValue: 1 << 17)
        public static let editingDidEnd = Event(rawValue: 1 << 18)
        public static let editingDidEndOnExit = Event(rawValue: 1 << 19)

        public static let allTouchEvents = Event(rawValue: 0x0000_0FFF)
        public static let allEditingEvents = Event(rawValue: 0x000F_0000)
        public static let applicationReserved = Event(rawValue: 0x0F00_0000)
        public static let systemReserved = Event(rawValue: 0xF000_0000)
        public static let allEvents = Event(rawValue: 0xFFFF_FFFF)

        /// Every single event with its name, in bit order.
        public static let namedEvents: [(name: String, event: Event)] = [
            ("touchDown", .touchDown),
            ("touchDownRepeat", .touchDownRepeat),
            ("touchDragInside", .touchDragInside),
            ("touchDragOutside", .touchDragOutside),
            ("touchDragEnter", .touchDragEnter),
            ("touchDragExit", .touchDragExit),
            ("touchUpInside", .touchUpInside),
            ("touchUpOutside", .touchUpOutside),
            ("touchCancel", .touchCancel),
            ("valueChanged", .valueChanged),
            ("primaryActionTriggered", .primaryActionTriggered),
            ("menuActionTriggered", .menuActionTriggered),
            ("editingDidBegin", .editingDidBegin),
            ("editingChanged", .editingChanged),
            ("editingDidEnd", .editingDidEnd),
            ("editingDidEndOnExit", .editingDidEndOnExit),
        ]

        /// Every mask with its name, widest first (the order in which printing prefers them).
        public static let namedMasks: [(name: String, event: Event)] = [
            ("allEvents", .allEvents),
            ("allTouchEvents", .allTouchEvents),
            ("allEditingEvents", .allEditingEvents),
            ("applicationReserved", .applicationReserved),
            ("systemReserved", .systemReserved),
        ]

        /// The event or mask called `name` (UIKit's lowerCamelCase name), or nil.
        public init?(name: String) {
            if let match = Event.namedEvents.first(where: { $0.name == name })
                ?? Event.namedMasks.first(where: {
                    $0.name == name
                })
            {
                self = match.event
            } else {
                return nil
            }
        }

        /// The single-bit events this value holds, lowest bit first.
        public var elements: [Event] {
            var result: [Event] = []
            var remaining = rawValue
            while remaining != 0 {
                let lowest = remaining & (~remaining &+ 1)
                result.append(Event(rawValue: lowest))
                remaining &= ~lowest
            }
            return result
        }

        /// The name of a single named event, or nil for a mask or an unnamed bit.
        public var name: String? {
            Event.namedEvents.first(where: { $0.event == self })?.name
        }

        /// The names that make up this value: whole masks first (widest first), then single events,
        /// then any unnamed bits in hexadecimal (`0x01000000`). Empty for the empty set.
        public var names: [String] {
            var remaining = self
            var result: [String] = []
            for mask in Event.namedMasks where remaining.isSuperset(of: mask.event) {
                result.append(mask.name)
                remaining.subtract(mask.event)
            }
            for single in Event.namedEvents where remaining.contains(single.event) {
                result.append(single.name)
                remaining.subtract(single.event)
            }
            for bit in remaining.elements {
                result.append(Event.hexadecimal(bit.rawValue))
            }
            return result
        }

        /// `touchDown`, `touchDown|touchUpInside`, `allTouchEvents`, or `[]` for the empty set.
        public var description: String {
            // One named event, what every action carries: its name, without building the list (no named mask is a
            // single bit, so the list would hold just this name).
            if let name { return name }
            let names = names
            return names.isEmpty ? "[]" : names.joined(separator: "|")
        }

        static func hexadecimal(_ value: UInt32) -> String {
            let digits = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: Swift.max(0, 8 - digits.count)) + digits
        }
    }

    /// A control's state, with UIKit's exact bit values (`UIControl.State`).
    public struct State: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32

        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        public static let normal: State = []
        public static let highlighted = State(rawValue: 1 << 0)
        public static let disabled = State(rawValue: 1 << 1)
        public static let selected = State(rawValue: 1 << 2)
        public static let focused = State(rawValue: 1 << 3)
        public static let application = State(rawValue: 0x00FF_0000)
        public static let reserved = State(rawValue: 0xFF00_0000)

        /// Every single state with its name.
        public static let namedStates: [(name: String, state: State)] = [
            ("highlighted", .highlighted),
            ("disabled", .disabled),
            ("selected", .selected),
            ("focused", .focused),
        ]

        /// Every mask with its name.
        public static let namedMasks: [(name: String, state: State)] = [
            ("application", .application),
            ("reserved", .reserved),
        ]

        /// The state or mask called `name` (`normal` is the empty set), or nil.
        public init?(name: String) {
            if name == "normal" {
                self = .normal
            } else if let match = State.namedStates.first(where: { $0.name == name })
                ?? State.namedMasks.first(where: { $0.name == name })
            {
                self = match.state
            } else {
                return nil
            }
        }

        /// The names that make up this value (`["normal"]` for the empty set).
        public var names: [String] {
            if isEmpty { return ["normal"] }
            var remaining = self
            var result: [String] = []
            for mask in State.namedMasks where remaining.isSuperset(of: mask.state) {
                result.append(mask.name)
                remaining.subtract(mask.state)
            }
            for single in State.namedStates where remaining.contains(single.state) {
                result.append(single.name)
                remaining.subtract(single.state)
            }
            var bits = remaining.rawValue
            while bits != 0 {
                let lowest = bits & (~bits &+ 1)
                result.append(Event.hexadecimal(lowest))
                bits &= ~lowest
            }
            return result
        }

        /// `normal`, `highlighted`, `highlighted|selected`…
        public var description: String { names.joined(separator: "|") }
    }
}
