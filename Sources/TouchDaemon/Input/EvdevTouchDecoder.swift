import TouchModel

/// Turns one touch device's evdev events into what the input layer hands the daemon, as libinput reports them: at
/// each SYN_REPORT the slots that changed become down, motion, up or cancel events with positions normalised on the
/// device's axes (libinput's calibration applied), then the frame. Multitouch protocol B (slots, tracking ids, a slot
/// whose tool turns to `MT_TOOL_PALM` is cancelled, as libinput does) and single-touch devices (BTN_TOUCH with
/// ABS_X/ABS_Y). After SYN_DROPPED it says that events were lost and drops everything up to the next SYN_REPORT, as an
/// evdev reader must; the contacts that were down are the router's to cancel. Reading a recording, the decoder then
/// ignores them until they lift. Reading a live panel (``resynchronises``), it asks for the kernel's slots after that
/// SYN_REPORT (``needsResynchronising``) and brings its own up to date, as libevdev does for libinput
/// (``resynchronise(_:at:)``): a contact still down goes on (the router hands its moves and lift to the application's
/// copy), one that lifted among the lost events ends, and one that went down among them begins.
///
/// One decoder for the two places that read evdev themselves: `touchd simulate` of a `libinput record` file, and
/// filter mode's grabbed panels, which touchd reads at the edge (``EdgePanel``). So a recording and live input cannot
/// disagree. Pure: no I/O, time passed in with each event. Work per event is constant: a SYN_REPORT visits only the
/// slots that changed since the last one (a bit mask).
struct EvdevTouchDecoder: Sendable {
    /// A position axis: evdev's minimum and maximum, maximum > minimum.
    struct Axis: Hashable, Sendable {
        var minimum: Int
        var maximum: Int
    }

    /// The most slots decoded per device; slots beyond this or the device's ABS_MT_SLOT range are ignored, as libevdev
    /// ignores them (counted in ``ignoredEvents``).
    static let maximumSlots = 64

    /// evdev codes (linux/input-event-codes.h).
    enum Code {
        static let synType = 0
        static let keyType = 1
        static let absType = 3
        static let synReport = 0
        static let synDropped = 3
        static let buttonTouch = 330
        static let absX = 0
        static let absY = 1
        static let slot = 47
        static let toolType = 55
        static let positionX = 53
        static let positionY = 54
        static let trackingID = 57
        static let palmTool = 2
    }

    /// One slot's state. The kernel sends only the axis values that changed, and keeps them per slot (for single-touch
    /// devices, per device) across touches: a new touch at the same x as the last one sends no ABS_X. So positions and
    /// the tool outlive the contact; only the flags are reset.
    struct Slot: Hashable, Sendable {
        /// The kernel's tracking id of the slot's contact (−1: none), kept to tell a contact that went on across
        /// lost events from a new one in the same slot.
        var trackingID = -1
        var active = false
        var began = false
        var x: Int?
        var y: Int?
        var moved = false
        var ended = false
        var palm = false
    }

    let device: Int
    let multitouch: Bool
    let x: Axis
    let y: Axis
    /// The first seat slot of the device: its contacts are numbered `seatSlotBase + slot`.
    let seatSlotBase: Int
    /// libinput's calibration matrix (row-major 2×3, normalised coordinates); nil for the identity.
    let calibration: [Double]?
    let lowestSlot: Int
    let highestSlot: Int
    /// Whether the decoder reads a live panel whose slots it can ask the kernel for after SYN_DROPPED; false for a
    /// recording.
    let resynchronises: Bool
    /// After SYN_DROPPED and the SYN_REPORT that ends it, on a live panel: the caller must read the kernel's slots and
    /// hand them to ``resynchronise(_:at:)`` before the next event.
    private(set) var needsResynchronising = false
    private var slots: [Slot]
    /// Bit n: slot n changed since the last SYN_REPORT.
    private var changed: UInt64 = 0
    /// Bit n: slot n holds a contact that was reported down.
    private var active: UInt64 = 0
    /// nil while ABS_MT_SLOT has selected a slot outside the range: its events are ignored until the next one.
    private var currentSlot: Int?
    private var singleTouchDown = false
    /// After SYN_DROPPED, evdev clients drop every event up to and including the next SYN_REPORT.
    private var droppingUntilReport = false
    /// The slot ABS_MT_SLOT last chose out of range.
    private var ignoredSlot = 0
    /// Events for a slot outside the device's range, ignored, and the first such slot.
    private(set) var ignoredEvents = 0
    private(set) var firstIgnoredSlot = 0
    /// Touches that began without a position (a recording does not say where a slot was before it started), and the
    /// first one's time.
    private(set) var unplacedTouches = 0
    private(set) var firstUnplacedTime = Instant.zero

    /// A decoder for a device with these axes. `slotRange`: its ABS_MT_SLOT range, nil without one. `initial`: the
    /// slots' last positions and tools as the kernel holds them (a live panel's), so that a touch at the spot of the
    /// last one is placed; empty for a recording.
    init(
        device: Int, multitouch: Bool, x: Axis, y: Axis, slotRange: (minimum: Int, maximum: Int)?, seatSlotBase: Int,
        calibration: [Double]? = nil, initial: [Int: Slot] = [:], resynchronises: Bool = false
    ) {
        self.device = device
        self.resynchronises = resynchronises
        self.multitouch = multitouch
        self.x = x
        self.y = y
        self.seatSlotBase = seatSlotBase
        self.calibration = calibration.flatMap { $0.count == 6 && $0 != [1, 0, 0, 0, 1, 0] ? $0 : nil }
        // The slots in use: the device's ABS_MT_SLOT range, within 0..<maximumSlots; slot 0 alone without one.
        lowestSlot = max(slotRange?.minimum ?? 0, 0)
        highestSlot = min(slotRange?.maximum ?? (multitouch ? Self.maximumSlots - 1 : 0), Self.maximumSlots - 1)
        currentSlot = lowestSlot <= 0 && 0 <= highestSlot ? 0 : nil
        var slots = [Slot](repeating: Slot(), count: Self.maximumSlots)
        for (index, slot) in initial where slots.indices.contains(index) {
            slots[index] = Slot(x: slot.x, y: slot.y, palm: slot.palm)
        }
        self.slots = slots
    }

    /// How many slots the device may use, and the range as text for a note ("0…9").
    var slotCount: Int { max(0, highestSlot - lowestSlot + 1) }
    var slotText: String { lowestSlot <= highestSlot ? "\(lowestSlot)…\(highestSlot)" : "none" }

    /// The device's slots that hold a contact reported down.
    var activeSlots: [Int] {
        var slots: [Int] = []
        var bits = active
        while bits != 0 {
            slots.append(bits.trailingZeroBitCount)
            bits &= bits - 1
        }
        return slots
    }

    /// Decodes one evdev event, appending what it completes to `events`: at SYN_REPORT the touch events of the slots
    /// that changed and their frame; at SYN_DROPPED ``InputEvent/eventsLost(device:)`` when contacts were down.
    mutating func decode(time: Instant, type: Int, code: Int, value: Int, into events: inout [InputEvent]) {
        if droppingUntilReport {
            if type == Code.synType && code == Code.synReport {
                droppingUntilReport = false
                needsResynchronising = resynchronises
            }
            return
        }
        switch (type, code) {
        case (Code.absType, Code.slot):
            if lowestSlot <= value, value <= highestSlot {
                currentSlot = value
            } else {
                currentSlot = nil
                ignoredSlot = value
                ignore(value)
            }
        case (Code.absType, Code.trackingID) where multitouch:
            guard let slot = slot() else { return }
            if value >= 0 {
                slots[slot].trackingID = value
                slots[slot].active = true
                slots[slot].began = true
                active |= 1 << slot
            } else {
                slots[slot].ended = true
            }
            changed |= 1 << slot
        case (Code.absType, Code.positionX) where multitouch:
            guard let slot = slot() else { return }
            slots[slot].x = value
            slots[slot].moved = true
            changed |= 1 << slot
        case (Code.absType, Code.positionY) where multitouch:
            guard let slot = slot() else { return }
            slots[slot].y = value
            slots[slot].moved = true
            changed |= 1 << slot
        case (Code.absType, Code.toolType) where multitouch:
            guard let slot = slot() else { return }
            slots[slot].palm = value == Code.palmTool
            changed |= 1 << slot
        case (Code.absType, Code.absX) where !multitouch:
            slots[0].x = value
            slots[0].moved = true
            changed |= 1
        case (Code.absType, Code.absY) where !multitouch:
            slots[0].y = value
            slots[0].moved = true
            changed |= 1
        case (Code.keyType, Code.buttonTouch) where !multitouch:
            if value != 0 && !singleTouchDown {
                slots[0].active = true
                slots[0].began = true
                active |= 1
                changed |= 1
            } else if value == 0 && singleTouchDown {
                slots[0].ended = true
                changed |= 1
            }
            singleTouchDown = value != 0
        case (Code.synType, Code.synDropped):
            // Every contact's state is unknown: the router cancels them.
            if active != 0 { events.append(.eventsLost(device: device)) }
            var reset = active | changed
            while reset != 0 {
                let slot = reset.trailingZeroBitCount
                reset &= reset - 1
                let state = slots[slot]
                // A live panel's contacts reported down stay known, with their tracking ids, for the resync, and so do
                // those ignored until they lift (palms); what the lost frame had begun is forgotten (the kernel's
                // slots say whether it is down).
                let reported = resynchronises && state.active && !state.began
                slots[slot] = Slot(
                    trackingID: resynchronises && !state.began ? state.trackingID : -1, active: reported, x: state.x,
                    y: state.y, palm: state.palm)
                if !reported { active &= ~(1 << slot) }
            }
            changed = 0
            singleTouchDown = false
            droppingUntilReport = true
        case (Code.synType, Code.synReport):
            report(time, into: &events)
        default:
            break
        }
    }

    /// What a frame does when it is one contact beginning, moving or lifting and nothing else the decoder would report
    /// (``loneChange(_:at:)``): the touch event that decoding the frame gives before its frame event.
    struct LoneChange: Hashable, Sendable {
        var kind: TouchEvent.Kind
        /// The device's slot and the seat slot, as ``decode(time:type:code:value:into:)`` numbers them.
        var slot: Int
        var seatSlot: Int
        /// The position, normalised and calibrated as decoding gives it; nil for a lift.
        var x: Double?
        var y: Double?
        var time: Instant
    }

    /// The one touch event that decoding `events` (one frame of a multitouch panel, without the SYN_REPORT that ends
    /// it, which came at `time`) would report, when the frame changes exactly one slot and that change is a contact
    /// beginning, moving or lifting; nil for anything else (a second slot, a palm, a slot out of range, a contact that
    /// begins without a position, a lift that also moves, lost events, a frame begun in an earlier read). Reads the
    /// decoder's state and changes nothing: the frame is decoded as always afterwards. Filter mode's edge asks it
    /// before decoding, to forward a touch before anything else (``EdgePanel``); the decoder's tests prove it against
    /// decoding.
    @inline(__always)
    func loneChange<Events: Sequence>(_ events: Events, at time: Instant) -> LoneChange?
    where Events.Element: RawEvdevEvent {
        // Whatever an earlier read of this frame changed would be reported with it.
        guard multitouch, !droppingUntilReport, !needsResynchronising, changed == 0 else { return nil }
        var current = currentSlot
        var changing: Int?
        var began = false
        var ended = false
        var moved = false
        var x: Int?
        var y: Int?
        var finger = false
        for event in events {
            let type = Int(event.type)
            let code = Int(event.code)
            let value = Int(event.value)
            if type == Code.synType { return nil }
            guard type == Code.absType else { continue }
            if code == Code.slot {
                guard lowestSlot <= value, value <= highestSlot else { return nil }
                current = value
                continue
            }
            guard code == Code.trackingID || code == Code.positionX || code == Code.positionY || code == Code.toolType
            else { continue }
            guard let slot = current, changing == nil || changing == slot else { return nil }
            changing = slot
            switch code {
            case Code.trackingID:
                if value >= 0 {
                    guard !began, !ended else { return nil }
                    began = true
                } else {
                    guard !ended else { return nil }
                    ended = true
                }
            case Code.positionX:
                x = value
                moved = true
            case Code.positionY:
                y = value
                moved = true
            default:
                guard value != Code.palmTool else { return nil }
                finger = true
            }
        }
        guard let slot = changing else { return nil }
        let state = slots[slot]
        let palm = finger ? false : state.palm
        let rawX = x ?? state.x
        let rawY = y ?? state.y
        let position = rawX.flatMap { x in rawY.flatMap { y in normalised(x, y) } }
        if began {
            guard !ended, !palm, !state.active, let position else { return nil }
            return LoneChange(
                kind: .down, slot: slot, seatSlot: seatSlotBase + slot, x: position.x, y: position.y, time: time)
        }
        guard state.active, !palm else { return nil }
        if ended {
            // A lift that also moves is decoded as a motion and a lift of the same contact.
            guard !moved || position == nil else { return nil }
            return LoneChange(kind: .up, slot: slot, seatSlot: seatSlotBase + slot, x: nil, y: nil, time: time)
        }
        guard moved, let position else { return nil }
        return LoneChange(
            kind: .motion, slot: slot, seatSlot: seatSlotBase + slot, x: position.x, y: position.y, time: time)
    }

    /// One slot as the kernel holds it now (EVIOCGMTSLOTS): its contact's tracking id (−1: none), position and tool.
    struct KernelSlot: Hashable, Sendable {
        var trackingID: Int
        var x: Int
        var y: Int
        var palm: Bool
    }

    /// Brings the slots up to date with the kernel's after lost events (``needsResynchronising``), as libevdev does for
    /// libinput. A contact reported down that the kernel still holds under the same tracking id goes on: a motion to
    /// where it is now (a cancel if it turned into a palm). One the kernel no longer holds lifted among the lost events:
    /// an up. A contact the kernel holds that was not reported (it went down among the lost events, or took the slot of
    /// one that lifted) begins, in a frame after the ups. `kernel[n]` is slot n; a slot it does not give counts as
    /// empty (the state could not be read: every contact ends rather than stay down). `slot`: the kernel's ABS_MT_SLOT
    /// now, which the next events are for unless they name another (the lost events may have changed it); nil when it
    /// could not be read. Returns the frames, in order; none when nothing changed.
    mutating func resynchronise(_ kernel: [KernelSlot], slot current: Int?, at time: Instant) -> [[InputEvent]] {
        needsResynchronising = false
        if let current { currentSlot = lowestSlot <= current && current <= highestSlot ? current : nil }
        guard lowestSlot <= highestSlot else { return [] }
        var ends: [InputEvent] = []
        var begins: [InputEvent] = []
        for slot in lowestSlot...highestSlot {
            var state = slots[slot]
            let now =
                kernel.indices.contains(slot)
                ? kernel[slot] : KernelSlot(trackingID: -1, x: state.x ?? 0, y: state.y ?? 0, palm: state.palm)
            let reported = active & (1 << slot) != 0
            if reported && now.trackingID >= 0 && now.trackingID == state.trackingID {
                let moved = state.x != now.x || state.y != now.y
                state.x = now.x
                state.y = now.y
                if now.palm {
                    // As at a report: the panel took the contact for a palm, which libinput cancels.
                    state.palm = true
                    state.active = false
                    active &= ~(1 << slot)
                    ends.append(touch(.cancel, slot, time))
                } else if moved, let position = normalised(now.x, now.y) {
                    ends.append(touch(.motion, slot, time, at: position))
                }
                slots[slot] = state
                continue
            }
            if !reported && now.trackingID >= 0 && now.trackingID == state.trackingID {
                // A contact ignored until it lifts (it began as a palm, or turned into one) is ignored still.
                slots[slot] = Slot(trackingID: now.trackingID, x: now.x, y: now.y, palm: now.palm)
                continue
            }
            if reported {
                ends.append(touch(.up, slot, time))
                active &= ~(1 << slot)
            }
            state = Slot(x: now.x, y: now.y, palm: now.palm)
            if now.trackingID >= 0 {
                state.trackingID = now.trackingID
                // A palm, as at a report, is never a touch: ignored until it lifts.
                if !now.palm, let position = normalised(now.x, now.y) {
                    state.active = true
                    active |= 1 << slot
                    begins.append(touch(.down, slot, time, at: position))
                }
            }
            slots[slot] = state
        }
        var frames: [[InputEvent]] = []
        if !ends.isEmpty { frames.append(ends + [frame(time)]) }
        if !begins.isEmpty { frames.append(begins + [frame(time)]) }
        return frames
    }

    /// Ends every contact that is down with a cancel, in one frame (the decoder stops being read: touchd lets go of
    /// the device while a finger is on it).
    mutating func cancelAll(at time: Instant, into events: inout [InputEvent]) {
        guard active != 0 else { return }
        for slot in activeSlots {
            events.append(touch(.cancel, slot, time))
            slots[slot] = Slot(x: slots[slot].x, y: slots[slot].y, palm: slots[slot].palm)
        }
        active = 0
        changed = 0
        events.append(frame(time))
    }

    private mutating func report(_ time: Instant, into events: inout [InputEvent]) {
        let before = events.count
        while changed != 0 {
            let slot = changed.trailingZeroBitCount
            changed &= changed - 1
            var state = slots[slot]
            let position = state.x.flatMap { x in state.y.flatMap { y in normalised(x, y) } }
            if state.began && state.palm {
                // A contact that begins as a palm is never a touch: libinput ignores the slot until it lifts.
                state.active = false
                active &= ~(1 << slot)
            } else if state.began, let position {
                events.append(touch(.down, slot, time, at: position))
            } else if state.began {
                // A touch that begins where the last one before a recording was has no position there (live, the
                // kernel's slot state gives it). Left out, and counted.
                if unplacedTouches == 0 { firstUnplacedTime = time }
                unplacedTouches += 1
                state.active = false
                active &= ~(1 << slot)
            } else if state.active && state.palm {
                // The panel took the contact for a palm: libinput cancels it, and ignores the slot until it lifts.
                events.append(touch(.cancel, slot, time))
                state.active = false
                active &= ~(1 << slot)
            } else if state.active, state.moved, let position {
                events.append(touch(.motion, slot, time, at: position))
            }
            if state.ended {
                if state.active { events.append(touch(.up, slot, time)) }
                slots[slot] = Slot(x: state.x, y: state.y, palm: state.palm)
                active &= ~(1 << slot)
                continue
            }
            state.began = false
            state.moved = false
            slots[slot] = state
        }
        if events.count > before { events.append(frame(time)) }
    }

    /// The slot a multitouch event is for, or nil (counted) when ABS_MT_SLOT chose one out of range.
    private mutating func slot() -> Int? {
        if currentSlot == nil { ignore(ignoredSlot) }
        return currentSlot
    }

    private mutating func ignore(_ slot: Int) {
        if ignoredEvents == 0 { firstIgnoredSlot = slot }
        ignoredEvents += 1
    }

    /// A raw position normalised on the axes as libinput gives it, (value − minimum) / (maximum − minimum + 1), then
    /// libinput's calibration; nil when not finite.
    @inline(__always)
    private func normalised(_ rawX: Int, _ rawY: Int) -> (x: Double, y: Double)? {
        guard let nx = CoordinateMapper.normalise(rawX, minimum: x.minimum, maximum: x.maximum),
            let ny = CoordinateMapper.normalise(rawY, minimum: y.minimum, maximum: y.maximum)
        else { return nil }
        guard let m = calibration else { return (nx, ny) }
        let cx = m[0] * nx + m[1] * ny + m[2]
        let cy = m[3] * nx + m[4] * ny + m[5]
        guard cx.isFinite, cy.isFinite else { return nil }
        return (cx, cy)
    }

    /// A touch event of this device, as libinput reports it: the seat slot, the device's slot (−1 on a single-touch
    /// device) and the position.
    private func touch(
        _ kind: TouchEvent.Kind, _ slot: Int, _ time: Instant, at position: (x: Double, y: Double)? = nil
    ) -> InputEvent {
        .touch(
            TouchEvent(
                device: device, kind: kind, seatSlot: seatSlotBase + slot, slot: multitouch ? slot : -1,
                time: time.microseconds, x: position?.x, y: position?.y))
    }

    private func frame(_ time: Instant) -> InputEvent {
        .touch(TouchEvent(device: device, kind: .frame, seatSlot: -1, slot: -1, time: time.microseconds))
    }
}

/// One evdev event as the kernel hands it out (`struct input_event` without its time): what
/// ``EvdevTouchDecoder/loneChange(_:at:)`` reads, straight from the edge's buffer.
protocol RawEvdevEvent {
    var type: UInt16 { get }
    var code: UInt16 { get }
    var value: Int32 { get }
}
