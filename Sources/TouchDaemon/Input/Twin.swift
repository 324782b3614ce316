import CLibinput
import Glibc

/// Filter mode's virtual touchscreen: a uinput copy of one grabbed touchscreen (name, ids, properties, axes with their
/// ranges and resolutions, slots), so that the compositor and udev treat it as the same panel, through which the
/// application receives what touchd forwards (docs/kiosk.md).
///
/// It always speaks multitouch protocol B with `ABS_MT_TOOL_TYPE`, whatever the panel declares: a cancel is the slot's
/// tool type turned to `MT_TOOL_PALM` (libinput's TOUCH_CANCEL) or a lift, and a new contact turns it back to
/// `MT_TOOL_FINGER` (libinput ignores a palm's slot until then).
///
/// With `[filter] twin_space = "output"` its position axes are the output's (``OutputAxes``) instead of the panel's:
/// the engine hands it positions normalised over the whole output, touchd's whole mapping applied.
///
/// Owned by the input thread. Destroying it (deinit) removes the virtual device; libinput in the compositor cancels
/// the contacts it still had down.
final class Twin {
    /// Why a twin could not be made.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let uinput: OpaquePointer
    private let fd: Int32
    /// `/dev/input/eventN` of the virtual device, so that libinput in touchd never opens it.
    let devnode: String?
    /// How the application's copy of a touch ends when touchd claims it; a reload may change it.
    var cancelWith: Configuration.Filter.CancelWith
    /// The space its positions are in; a twin whose axes change is made anew.
    let axes: TwinAxes
    private let x: (minimum: Int32, maximum: Int32)
    private let y: (minimum: Int32, maximum: Int32)
    /// Whether the panel has single-touch axes to keep in step (`ABS_X`/`ABS_Y`).
    private let hasSingleTouchAxes: Bool
    /// libinput's calibration of the panel, undone on the way out: the twin gets the panel's udev properties, so the
    /// compositor's libinput applies the same matrix to it.
    private let calibration: [Double]
    /// The slots: which touch holds each (nil: free). Room of its own, as ``events``: a change to a slot on the way to
    /// the application's write then costs no uniqueness check or copy of an array.
    private let slots: UnsafeMutableBufferPointer<UInt64?>
    /// How many of the slots hold a touch.
    private var occupied = 0
    private var nextTrackingID: Int32 = 1
    /// One frame's events, composed in place before its write: room for a frame of every slot changing, so that no
    /// frame the application waits for allocates (grown in the unlikely case that a frame needs more).
    private var events: UnsafeMutablePointer<input_event>
    private var capacity: Int
    private var used = 0
    /// Changes dropped because every slot was taken (cannot happen while the application limit is the panel's).
    private(set) var droppedChanges = 0

    /// Makes the twin of the panel behind `evdev` (a libevdev device on touchd's descriptor, capabilities read, never
    /// its events). `calibration` is libinput's matrix for the panel. With ``TwinAxes/output(_:)`` its position axes
    /// (`ABS_MT_POSITION_X/Y`, and `ABS_X/Y` when the panel has them) are the output's.
    init(
        copying evdev: OpaquePointer, slotCount: Int, calibration: [Double],
        cancelWith: Configuration.Filter.CancelWith,
        axes: TwinAxes = .device
    )
        throws(Failure)
    {
        let xCode = UInt32(
            libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_POSITION_X)) != 0 ? ABS_MT_POSITION_X : ABS_X)
        let yCode = UInt32(
            libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_POSITION_Y)) != 0 ? ABS_MT_POSITION_Y : ABS_Y)
        guard var xInfo = libevdev_get_abs_info(evdev, xCode)?.pointee,
            var yInfo = libevdev_get_abs_info(evdev, yCode)?.pointee, xInfo.maximum > xInfo.minimum,
            yInfo.maximum > yInfo.minimum
        else { throw Failure(description: "the panel has no usable position axes") }
        self.axes = axes
        if case .output(let output) = axes {
            (xInfo, yInfo) = Self.absInfo(output)
            // Every position axis the panel has, multitouch and single-touch alike, becomes the output's.
            for (code, info) in [
                (ABS_X, xInfo), (ABS_Y, yInfo), (ABS_MT_POSITION_X, xInfo), (ABS_MT_POSITION_Y, yInfo),
            ]
            where libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(code)) != 0 {
                var copy = info
                libevdev_enable_event_code(evdev, UInt32(EV_ABS), UInt32(code), &copy)
            }
        }
        x = (xInfo.minimum, xInfo.maximum)
        y = (yInfo.minimum, yInfo.maximum)
        hasSingleTouchAxes = libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_X)) != 0
        self.calibration = calibration
        self.cancelWith = cancelWith

        // What the compositor needs to see a touchscreen that can be cancelled: protocol B with tool types.
        var count = slotCount
        if let slotInfo = libevdev_get_abs_info(evdev, UInt32(ABS_MT_SLOT))?.pointee {
            count = Int(slotInfo.maximum) - Int(slotInfo.minimum) + 1
        } else {
            count = min(max(slotCount, 1), 16)
            var info = input_absinfo(value: 0, minimum: 0, maximum: Int32(count - 1), fuzz: 0, flat: 0, resolution: 0)
            libevdev_enable_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_SLOT), &info)
        }
        count = min(max(count, 1), 64)
        for (code, info) in [(ABS_MT_POSITION_X, xInfo), (ABS_MT_POSITION_Y, yInfo)]
        where libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(code)) == 0 {
            var copy = info
            libevdev_enable_event_code(evdev, UInt32(EV_ABS), UInt32(code), &copy)
        }
        if libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_TRACKING_ID)) == 0 {
            var info = input_absinfo(value: 0, minimum: 0, maximum: 65535, fuzz: 0, flat: 0, resolution: 0)
            libevdev_enable_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_TRACKING_ID), &info)
        }
        if (libevdev_get_abs_info(evdev, UInt32(ABS_MT_TOOL_TYPE))?.pointee.maximum ?? -1) < MT_TOOL_PALM {
            var info = input_absinfo(value: 0, minimum: 0, maximum: Int32(MT_TOOL_MAX), fuzz: 0, flat: 0, resolution: 0)
            libevdev_enable_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_TOOL_TYPE), &info)
        }
        libevdev_enable_event_code(evdev, UInt32(EV_KEY), UInt32(BTN_TOUCH), nil)
        libevdev_enable_property(evdev, UInt32(INPUT_PROP_DIRECT))

        var created: OpaquePointer?
        let result = libevdev_uinput_create_from_device(evdev, Int32(LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue), &created)
        guard result == 0, let created else {
            let code = result < 0 ? -result : EIO
            throw Failure(description: "cannot create its twin through /dev/uinput: \(String(cString: strerror(code)))")
        }
        uinput = created
        fd = libevdev_uinput_get_fd(created)
        devnode = libevdev_uinput_get_devnode(created).map { String(cString: $0) }
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
        capacity = 8 * max(count, 1) + 8
        events = .allocate(capacity: capacity)
    }

    deinit {
        libevdev_uinput_destroy(uinput)
        events.deallocate()
        slots.deallocate()
    }

    /// Whether any touch is down on the twin.
    var hasTouchesDown: Bool { occupied > 0 }

    /// Writes one frame of changes (and, for palm cancels, the frame that frees their slots) in one write(2).
    /// Returns the errno of a failed write, or nil. Any sequence: filter mode's edge writes the one change of a frame
    /// that changes one contact (`CollectionOfOne`) without making an array of it.
    func write(_ changes: some Sequence<TwinChange>) -> Int32? {
        used = 0
        // The slots cancelled with a palm, as bits (a twin has at most 64 slots): no array on the application's path.
        var palmed: UInt64 = 0
        for change in changes {
            switch change.phase {
            case .down:
                guard let slot = freeSlot(preferring: change.slot) else {
                    droppedChanges &+= 1
                    continue
                }
                slots[slot] = change.touch
                occupied += 1
                let id = nextTrackingID
                nextTrackingID = nextTrackingID == 65535 ? 1 : nextTrackingID + 1
                append(EV_ABS, ABS_MT_SLOT, Int32(slot))
                // The tool type before the tracking id: libinput reads the slot's tool type when a contact begins,
                // and a slot still marked PALM makes it ignore the whole contact.
                append(EV_ABS, ABS_MT_TOOL_TYPE, Int32(MT_TOOL_FINGER))
                append(EV_ABS, ABS_MT_TRACKING_ID, id)
            case .move:
                guard let slot = slots.firstIndex(of: change.touch) else { continue }
                append(EV_ABS, ABS_MT_SLOT, Int32(slot))
            case .up:
                guard let slot = slots.firstIndex(of: change.touch) else { continue }
                slots[slot] = nil
                occupied -= 1
                append(EV_ABS, ABS_MT_SLOT, Int32(slot))
                append(EV_ABS, ABS_MT_TRACKING_ID, -1)
                continue
            case .cancel:
                guard let slot = slots.firstIndex(of: change.touch) else { continue }
                slots[slot] = nil
                occupied -= 1
                append(EV_ABS, ABS_MT_SLOT, Int32(slot))
                switch cancelWith {
                case .palm:
                    append(EV_ABS, ABS_MT_TOOL_TYPE, Int32(MT_TOOL_PALM))
                    palmed |= 1 &<< UInt64(slot)
                case .lift:
                    append(EV_ABS, ABS_MT_TRACKING_ID, -1)
                }
                continue
            }
            // A contact that began or moved: where it is now (one place in the code for both, so that it is compiled
            // into this function rather than called).
            appendPosition(change)
        }
        guard used > 0 else { return nil }
        if palmed != 0 {
            // libinput cancels at the palm frame; the end of the contact follows in a frame of its own.
            append(EV_SYN, SYN_REPORT, 0)
            for slot in 0..<slots.count where palmed & (1 &<< UInt64(slot)) != 0 {
                append(EV_ABS, ABS_MT_SLOT, Int32(slot))
                append(EV_ABS, ABS_MT_TRACKING_ID, -1)
                append(EV_ABS, ABS_MT_TOOL_TYPE, Int32(MT_TOOL_FINGER))
            }
        }
        append(EV_KEY, BTN_TOUCH, hasTouchesDown ? 1 : 0)
        append(EV_SYN, SYN_REPORT, 0)
        let bytes = UnsafeRawPointer(events)
        let size = used * MemoryLayout<input_event>.stride
        var offset = 0
        while offset < size {
            // uinput takes whole events; a short write ends on an event boundary.
            let written = Glibc.write(fd, bytes + offset, size - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            guard written > 0 else { return EIO }
            offset += written
        }
        return nil
    }

    @inline(__always)
    private func freeSlot(preferring preferred: Int) -> Int? {
        if slots.indices.contains(preferred), slots[preferred] == nil { return preferred }
        return slots.firstIndex { $0 == nil }
    }

    @inline(__always)
    private func appendPosition(_ change: TwinChange) {
        guard let nx = change.x, let ny = change.y,
            let raw = CoordinateMapper.invert(calibration, x: nx, y: ny)
        else { return }
        let valueX = Self.deviceValue(raw.x, x.minimum, x.maximum)
        let valueY = Self.deviceValue(raw.y, y.minimum, y.maximum)
        append(EV_ABS, ABS_MT_POSITION_X, valueX)
        append(EV_ABS, ABS_MT_POSITION_Y, valueY)
        if hasSingleTouchAxes && slots.firstIndex(of: change.touch) == slots.firstIndex(where: { $0 != nil }) {
            append(EV_ABS, ABS_X, valueX)
            append(EV_ABS, ABS_Y, valueY)
        }
    }

    /// The position axes of an output-space twin: 0…maximum at the output's resolution, without the panel's fuzz
    /// (its noise threshold in the panel's units, which the engine's positions no longer carry).
    static func absInfo(_ axes: OutputAxes) -> (x: input_absinfo, y: input_absinfo) {
        (
            input_absinfo(value: 0, minimum: 0, maximum: axes.xMaximum, fuzz: 0, flat: 0, resolution: axes.resolution),
            input_absinfo(value: 0, minimum: 0, maximum: axes.yMaximum, fuzz: 0, flat: 0, resolution: axes.resolution)
        )
    }

    /// libinput's normalisation undone: value = n · (maximum − minimum + 1) + minimum, rounded and kept in range.
    @inline(__always)
    static func deviceValue(_ normalised: Double, _ minimum: Int32, _ maximum: Int32) -> Int32 {
        let span = Double(maximum) - Double(minimum) + 1
        let value = (normalised * span + Double(minimum)).rounded()
        guard value.isFinite else { return minimum }
        // Clamped into the axis' Int32 range first, so the conversion is exact.
        return Int32(exactly: min(Double(maximum), max(Double(minimum), value))) ?? minimum
    }

    @inline(__always)
    private func append(_ type: Int32, _ code: Int32, _ value: Int32) {
        if used == capacity {
            let larger = UnsafeMutablePointer<input_event>.allocate(capacity: 2 * capacity)
            larger.initialize(from: events, count: used)
            events.deallocate()
            events = larger
            capacity *= 2
        }
        let event = input_event(time: timeval(), type: UInt16(type), code: UInt16(code), value: value)
        (events + used).initialize(to: event)
        used += 1
    }
}
