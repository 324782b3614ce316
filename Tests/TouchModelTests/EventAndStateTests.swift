import Testing

@testable import TouchModel

/// `Control.Event` and `Control.State`: UIKit's exact bit values (docs/uikit-semantics.md §1 and §2), names,
/// masks and printing.
@Suite("Control.Event and Control.State")
struct EventAndStateTests {
    /// docs/uikit-semantics.md §1, copied by hand: every single event with its UIKit bit.
    static let singleEvents: [(String, UInt32)] = [
        ("touchDown", 0x0000_0001),
        ("touchDownRepeat", 0x0000_0002),
        ("touchDragInside", 0x0000_0004),
        ("touchDragOutside", 0x0000_0008),
        ("touchDragEnter", 0x0000_0010),
        ("touchDragExit", 0x0000_0020),
        ("touchUpInside", 0x0000_0040),
        ("touchUpOutside", 0x0000_0080),
        ("touchCancel", 0x0000_0100),
        ("valueChanged", 0x0000_1000),
        ("primaryActionTriggered", 0x0000_2000),
        ("menuActionTriggered", 0x0000_4000),
        ("editingDidBegin", 0x0001_0000),
        ("editingChanged", 0x0002_0000),
        ("editingDidEnd", 0x0004_0000),
        ("editingDidEndOnExit", 0x0008_0000),
    ]

    /// docs/uikit-semantics.md §1: the masks.
    static let masks: [(String, UInt32)] = [
        ("allTouchEvents", 0x0000_0FFF),
        ("allEditingEvents", 0x000F_0000),
        ("applicationReserved", 0x0F00_0000),
        ("systemReserved", 0xF000_0000),
        ("allEvents", 0xFFFF_FFFF),
    ]

    // MARK: - Event values

    @Test("the static events have UIKit's bit values")
    func staticEventValues() {
        let statics: [(String, Control.Event)] = [
            ("touchDown", .touchDown), ("touchDownRepeat", .touchDownRepeat),
            ("touchDragInside", .touchDragInside), ("touchDragOutside", .touchDragOutside),
            ("touchDragEnter", .touchDragEnter), ("touchDragExit", .touchDragExit),
            ("touchUpInside", .touchUpInside), ("touchUpOutside", .touchUpOutside),
            ("touchCancel", .touchCancel), ("valueChanged", .valueChanged),
            ("primaryActionTriggered", .primaryActionTriggered), ("menuActionTriggered", .menuActionTriggered),
            ("editingDidBegin", .editingDidBegin), ("editingChanged", .editingChanged),
            ("editingDidEnd", .editingDidEnd), ("editingDidEndOnExit", .editingDidEndOnExit),
            ("allTouchEvents", .allTouchEvents), ("allEditingEvents", .allEditingEvents),
            ("applicationReserved", .applicationReserved), ("systemReserved", .systemReserved),
            ("allEvents", .allEvents),
        ]
        let table = Dictionary(uniqueKeysWithValues: Self.singleEvents + Self.masks)
        #expect(statics.count == table.count)
        for (name, event) in statics {
            #expect(event.rawValue == table[name], "\(name)")
        }
    }

    @Test("the named tables hold exactly the documented events and masks")
    func namedTables() {
        #expect(Control.Event.namedEvents.map(\.name) == Self.singleEvents.map(\.0))
        #expect(Control.Event.namedEvents.map(\.event.rawValue) == Self.singleEvents.map(\.1))
        #expect(Set(Control.Event.namedMasks.map(\.name)) == Set(Self.masks.map(\.0)))
        for mask in Control.Event.namedMasks {
            #expect(mask.event.rawValue == Self.masks.first { $0.0 == mask.name }?.1, "\(mask.name)")
        }
    }

    @Test("the masks cover exactly their documented events")
    func maskContents() {
        let touch = Self.singleEvents.filter { $0.1 <= 0x100 }.reduce(Control.Event()) {
            $0.union(Control.Event(rawValue: $1.1))
        }
        #expect(Control.Event.allTouchEvents.isSuperset(of: touch))
        #expect(!Control.Event.allTouchEvents.contains(.valueChanged))
        #expect(!Control.Event.allTouchEvents.contains(.primaryActionTriggered))
        let editing: Control.Event = [.editingDidBegin, .editingChanged, .editingDidEnd, .editingDidEndOnExit]
        #expect(Control.Event.allEditingEvents == editing)
        #expect(Control.Event.allEvents.rawValue == UInt32.max)
        #expect(Control.Event.applicationReserved.isDisjoint(with: .systemReserved))
        #expect(Control.Event.applicationReserved.isDisjoint(with: .allTouchEvents.union(.allEditingEvents)))
    }

    // MARK: - Parsing

    @Test("every name parses to its value", arguments: singleEvents + masks)
    func parse(name: String, rawValue: UInt32) {
        #expect(Control.Event(name: name)?.rawValue == rawValue)
    }

    @Test(
        "unknown names parse to nil",
        arguments: [
            "", "TouchDown", "touchdown", "touch_down", "touchDown ", " touchDown", "touchDown|touchUpInside",
            "normal", "highlighted", "0x00000001", "1", "allTouch", "[]", "touchUp", "applicationreserved",
        ])
    func unknownNames(name: String) {
        #expect(Control.Event(name: name) == nil)
    }

    // MARK: - Printing

    @Test("a single event prints as its name and round-trips", arguments: singleEvents)
    func singleRoundTrip(name: String, rawValue: UInt32) throws {
        let event = Control.Event(rawValue: rawValue)
        #expect(event.name == name)
        #expect(event.names == [name])
        #expect(event.description == name)
        #expect(event.elements == [event])
        let parsed = try #require(Control.Event(name: name))
        #expect(parsed == event)
        #expect(parsed.description == name)
    }

    @Test("a whole mask prints as the mask, not its events", arguments: masks)
    func maskRoundTrip(name: String, rawValue: UInt32) throws {
        let event = Control.Event(rawValue: rawValue)
        #expect(event.names == [name])
        #expect(event.description == name)
        #expect(event.name == nil, "a mask is not a single named event")
        let parsed = try #require(Control.Event(name: name))
        #expect(parsed.description == name)
    }

    @Test("printing combinations")
    func combinations() {
        #expect(Control.Event().names.isEmpty)
        #expect(Control.Event().description == "[]")
        #expect(Control.Event([.touchDown, .touchUpInside]).description == "touchDown|touchUpInside")
        #expect(Control.Event([.touchUpInside, .touchDown]).names == ["touchDown", "touchUpInside"])
        #expect(
            Control.Event([.valueChanged, .primaryActionTriggered]).description == "valueChanged|primaryActionTriggered"
        )
        // A mask plus a single event: the mask first.
        #expect(Control.Event.allTouchEvents.union(.valueChanged).description == "allTouchEvents|valueChanged")
        #expect(Control.Event.allEditingEvents.union(.touchDown).names == ["allEditingEvents", "touchDown"])
        // The widest mask wins.
        #expect(Control.Event.allEvents.description == "allEvents")
        #expect(
            Control.Event.allTouchEvents.union(.allEditingEvents).union(.applicationReserved).names
                == ["allTouchEvents", "allEditingEvents", "applicationReserved"])
        #expect(
            Control.Event.applicationReserved.union(.systemReserved).names == ["applicationReserved", "systemReserved"])
    }

    @Test("unnamed bits print in hexadecimal with eight digits")
    func unnamedBits() {
        #expect(Control.Event(rawValue: 0x0100_0000).description == "0x01000000")
        #expect(Control.Event(rawValue: 0x0000_0200).description == "0x00000200")
        #expect(Control.Event(rawValue: 0x8000_0000).description == "0x80000000")
        #expect(Control.Event(rawValue: 0x0000_0201).names == ["touchDown", "0x00000200"])
        #expect(Control.Event(rawValue: 0x0300_0040).names == ["touchUpInside", "0x01000000", "0x02000000"])
        #expect(Control.Event(rawValue: 0x0000_0200).name == nil)
    }

    @Test("names always describe the value: parsing them back rebuilds it")
    func namesRebuildTheValue() {
        var generator = PropertyTestRandom(seed: 0x5EED)
        var values: [UInt32] = [0, 1, 0xFFF, 0xFFFF_FFFF, 0x0F00_0000, 0xF000_0000, 0x000F_0000, 0x0FFF_FFFF]
        for _ in 0..<2000 {
            values.append(UInt32(truncatingIfNeeded: generator.next()) & UInt32(truncatingIfNeeded: generator.next()))
        }
        var failures: [String] = []
        for value in values {
            let event = Control.Event(rawValue: value)
            var rebuilt = Control.Event()
            for name in event.names {
                if let parsed = Control.Event(name: name) {
                    rebuilt.formUnion(parsed)
                } else if name.hasPrefix("0x"), name.count == 10, let bits = UInt32(name.dropFirst(2), radix: 16),
                    bits.nonzeroBitCount == 1
                {
                    rebuilt.formUnion(Control.Event(rawValue: bits))
                } else {
                    failures.append("\(value): unparsable name \(name)")
                }
            }
            if rebuilt != event { failures.append("\(value): names \(event.names) rebuild \(rebuilt.rawValue)") }
            if event.description != (event.names.isEmpty ? "[]" : event.names.joined(separator: "|")) {
                failures.append("\(value): description \(event.description)")
            }
            // Names are disjoint: no bit is named twice.
            let total = event.names.reduce(0) { sum, name in
                sum + (Control.Event(name: name)?.rawValue.nonzeroBitCount ?? 1)
            }
            if total != value.nonzeroBitCount { failures.append("\(value): overlapping names \(event.names)") }
        }
        expectNoFailures(failures)
    }

    // MARK: - Elements

    @Test("elements are the single bits, lowest first")
    func elements() {
        #expect(Control.Event().elements.isEmpty)
        #expect(Control.Event([.touchUpInside, .touchDown]).elements == [.touchDown, .touchUpInside])
        #expect(Control.Event.allEvents.elements.count == 32)
        #expect(Control.Event.allEvents.elements.map(\.rawValue) == (0..<32).map { UInt32(1) << UInt32($0) })
        #expect(Control.Event.allTouchEvents.elements.count == 12)
        #expect(
            Control.Event.applicationReserved.elements.map(\.rawValue) == [
                0x0100_0000, 0x0200_0000, 0x0400_0000, 0x0800_0000,
            ])
        #expect(Control.Event(rawValue: 0x8000_0001).elements.map(\.rawValue) == [1, 0x8000_0000])
    }

    // MARK: - State

    /// docs/uikit-semantics.md §2, copied by hand.
    static let states: [(String, UInt32)] = [
        ("highlighted", 0x0000_0001),
        ("disabled", 0x0000_0002),
        ("selected", 0x0000_0004),
        ("focused", 0x0000_0008),
        ("application", 0x00FF_0000),
        ("reserved", 0xFF00_0000),
    ]

    @Test("the static states have UIKit's bit values")
    func stateValues() {
        #expect(Control.State.normal.rawValue == 0)
        #expect(Control.State.highlighted.rawValue == 1)
        #expect(Control.State.disabled.rawValue == 2)
        #expect(Control.State.selected.rawValue == 4)
        #expect(Control.State.focused.rawValue == 8)
        #expect(Control.State.application.rawValue == 0x00FF_0000)
        #expect(Control.State.reserved.rawValue == 0xFF00_0000)
    }

    @Test("state names parse and print", arguments: states)
    func stateRoundTrip(name: String, rawValue: UInt32) throws {
        let parsed = try #require(Control.State(name: name))
        #expect(parsed.rawValue == rawValue)
        #expect(parsed.names == [name])
        #expect(parsed.description == name)
    }

    @Test("normal is the empty state")
    func normal() {
        #expect(Control.State(name: "normal") == .normal)
        #expect(Control.State.normal.names == ["normal"])
        #expect(Control.State.normal.description == "normal")
    }

    @Test("state combinations, unknown names and unnamed bits")
    func stateCombinations() {
        #expect(Control.State([.highlighted, .selected]).description == "highlighted|selected")
        #expect(Control.State([.selected, .disabled]).names == ["disabled", "selected"])
        #expect(Control.State.application.union(.highlighted).names == ["application", "highlighted"])
        #expect(Control.State(rawValue: 0x10).description == "0x00000010")
        #expect(Control.State(rawValue: 0x0001_0001).names == ["highlighted", "0x00010000"])
        for name in ["", "Normal", "touchDown", "highlighted|selected", "enabled", "0x00000001"] {
            #expect(Control.State(name: name) == nil, "\(name)")
        }
    }
}
