import CLibinput
import Glibc

/// One change of a contact within a frame, in output pixels (the device's units are pixels × 10, see `scale`).
enum TouchChange: CustomStringConvertible {
    case down(slot: Int, x: Int, y: Int)
    case move(slot: Int, x: Int, y: Int)
    case up(slot: Int)

    var description: String {
        switch self {
        case .down(let slot, let x, let y): "down \(slot) (\(x),\(y))"
        case .move(let slot, let x, let y): "move \(slot) (\(x),\(y))"
        case .up(let slot): "up \(slot)"
        }
    }
}

/// When a frame reached the kernel: CLOCK_MONOTONIC right before and right after the SYN_REPORT write. The kernel
/// stamps the frame's events (the `time_us` libinput reports) while that write runs, so the stamp lies in between.
struct FrameTiming: Sendable, Equatable {
    let beforeReport: Microseconds
    let afterReport: Microseconds
}

/// A multitouch touchscreen made with uinput: INPUT_PROP_DIRECT, BTN_TOUCH, ABS_X/Y and slotted ABS_MT axes, each
/// axis 0…9999 at 40 units/mm. The config declares a 1000×1000 output and libinput normalises a value v as
/// v / (max − min + 1) = v / 10000, so output pixel p is device value p × 10.
///
/// Other kinds (``Kind``): a single-touch screen (BTN_TOUCH and ABS_X/Y only, no ABS_MT axes: libinput reports its
/// contact with slot −1; touchd keys contacts by seat slot, so it must work the same; only slot 0 is used), a
/// protocol-A screen (ABS_MT positions without slots or tracking ids, every contact sent again in each frame and
/// ended by SYN_MT_REPORT: libinput reads it through mtdev; fault-cases.md D9), and a screen libinput refuses (its
/// X axes have minimum == maximum, though udev still tags it as a touchscreen; fault-cases.md D12).
///
/// Used from the scenario's thread only. Closing /dev/uinput (also when the process dies) removes the device, so a
/// killed driver leaves no device behind.
final class VirtualTouchscreen {
    static let scale = 10
    static let maximum: Int32 = 9999
    static let slots: Int32 = 10

    enum Kind {
        case multitouch
        case singleTouch
        case protocolA
        case brokenAxes
    }

    let name: String
    private var device: OpaquePointer?
    private var uinput: OpaquePointer?
    private var trackingIDs: [Int: Int32] = [:]
    private var nextTrackingID: Int32 = 1
    /// Protocol A sends every contact in every frame: the last position of each.
    private var positionsA: [Int: (Int32, Int32)] = [:]
    private let verbose: Bool
    private let kind: Kind
    /// While ``encode(_:)`` runs: the events that `emit` collects instead of writing them.
    private var batch: [input_event]?

    /// `maximumX`, `maximumY`: the position axes' maxima, square 0…9999 unless given (a landscape panel of 1280×800
    /// pixels at 10 units each has 12799 and 7999: 320 × 200 mm).
    init(
        name: String, verbose: Bool, kind: Kind = .multitouch, maximumX: Int32 = maximum, maximumY: Int32 = maximum
    ) throws(DriverError) {
        self.name = name
        self.verbose = verbose
        self.kind = kind
        guard let device = libevdev_new() else { throw DriverError("libevdev_new failed") }
        self.device = device
        libevdev_set_name(device, name)
        libevdev_set_id_bustype(device, Int32(BUS_USB))
        libevdev_set_id_vendor(device, 0x1234)
        libevdev_set_id_product(device, 0x5678)
        libevdev_enable_property(device, UInt32(INPUT_PROP_DIRECT))
        libevdev_enable_event_type(device, UInt32(EV_KEY))
        libevdev_enable_event_code(device, UInt32(EV_KEY), UInt32(BTN_TOUCH), nil)
        libevdev_enable_event_type(device, UInt32(EV_ABS))
        let position = input_absinfo(value: 0, minimum: 0, maximum: maximumX, fuzz: 0, flat: 0, resolution: 40)
        let positionY = input_absinfo(value: 0, minimum: 0, maximum: maximumY, fuzz: 0, flat: 0, resolution: 40)
        let slot = input_absinfo(value: 0, minimum: 0, maximum: Self.slots - 1, fuzz: 0, flat: 0, resolution: 0)
        let tracking = input_absinfo(value: 0, minimum: 0, maximum: 65535, fuzz: 0, flat: 0, resolution: 0)
        let flat = input_absinfo(value: 0, minimum: 0, maximum: 0, fuzz: 0, flat: 0, resolution: 40)
        let axes: [(Int32, input_absinfo)]
        switch kind {
        case .multitouch:
            axes = [
                (ABS_X, position), (ABS_Y, positionY), (ABS_MT_SLOT, slot),
                (ABS_MT_POSITION_X, position), (ABS_MT_POSITION_Y, positionY), (ABS_MT_TRACKING_ID, tracking),
            ]
        case .singleTouch:
            axes = [(ABS_X, position), (ABS_Y, positionY)]
        case .protocolA:
            axes = [
                (ABS_X, position), (ABS_Y, positionY), (ABS_MT_POSITION_X, position), (ABS_MT_POSITION_Y, positionY),
            ]
        case .brokenAxes:
            axes = [
                (ABS_X, flat), (ABS_Y, positionY), (ABS_MT_SLOT, slot),
                (ABS_MT_POSITION_X, flat), (ABS_MT_POSITION_Y, positionY), (ABS_MT_TRACKING_ID, tracking),
            ]
        }
        for (code, info) in axes {
            var info = info
            libevdev_enable_event_code(device, UInt32(EV_ABS), UInt32(code), &info)
        }
        var created: OpaquePointer?
        let result = libevdev_uinput_create_from_device(device, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &created)
        guard result == 0, let created else {
            libevdev_free(device)
            self.device = nil
            throw DriverError("cannot create the uinput device '\(name)': \(describe(errno: -result))")
        }
        uinput = created
        if verbose {
            let node = libevdev_uinput_get_devnode(created).map { String(cString: $0) } ?? "no devnode yet"
            Console.line("uinput| created '\(name)' (\(node))")
        }
    }

    deinit { destroy() }

    /// Whether the device still exists.
    var exists: Bool { uinput != nil }

    /// The device's node (`/dev/input/eventN`), once the kernel has made it; nil after ``destroy()``.
    var devnode: String? {
        uinput.flatMap { libevdev_uinput_get_devnode($0) }.map { String(cString: $0) }
    }

    /// Writes one frame: the changes, BTN_TOUCH when the first contact goes down or the last one lifts, the
    /// single-touch axes for the lowest active slot, then SYN_REPORT.
    @discardableResult
    func write(_ changes: [TouchChange]) throws(DriverError) -> FrameTiming {
        guard uinput != nil else { throw DriverError("the uinput device '\(name)' was already destroyed") }
        if kind == .singleTouch { return try writeSingleTouch(changes) }
        if kind == .protocolA { return try writeProtocolA(changes) }
        return try writeMultitouch(changes, echo: verbose)
    }

    /// A multitouch frame (see ``write(_:)``); while a batch is open, its events are only collected.
    private func writeMultitouch(_ changes: [TouchChange], echo: Bool) throws(DriverError) -> FrameTiming {
        let activeBefore = trackingIDs.count
        var positions: [Int: (Int32, Int32)] = [:]
        for change in changes {
            switch change {
            case .down(let slot, let x, let y):
                let id = nextTrackingID
                nextTrackingID = nextTrackingID == 65535 ? 1 : nextTrackingID + 1
                trackingIDs[slot] = id
                try emit(EV_ABS, ABS_MT_SLOT, Int32(slot))
                try emit(EV_ABS, ABS_MT_TRACKING_ID, id)
                positions[slot] = try emitPosition(x, y)
            case .move(let slot, let x, let y):
                try emit(EV_ABS, ABS_MT_SLOT, Int32(slot))
                positions[slot] = try emitPosition(x, y)
            case .up(let slot):
                trackingIDs[slot] = nil
                try emit(EV_ABS, ABS_MT_SLOT, Int32(slot))
                try emit(EV_ABS, ABS_MT_TRACKING_ID, -1)
            }
        }
        if activeBefore == 0, !trackingIDs.isEmpty { try emit(EV_KEY, BTN_TOUCH, 1) }
        if activeBefore > 0, trackingIDs.isEmpty { try emit(EV_KEY, BTN_TOUCH, 0) }
        if let primary = trackingIDs.keys.min(), let (x, y) = positions[primary] {
            try emit(EV_ABS, ABS_X, x)
            try emit(EV_ABS, ABS_Y, y)
        }
        let before = monotonicNow()
        try emit(EV_SYN, SYN_REPORT, 0)
        let timing = FrameTiming(beforeReport: before, afterReport: monotonicNow())
        if echo { Console.line("uinput| frame at \(timing.beforeReport): \(changes)") }
        return timing
    }

    /// A single-touch frame: ABS_X/Y for a down or a move, BTN_TOUCH on down and up, then SYN_REPORT.
    private func writeSingleTouch(_ changes: [TouchChange]) throws(DriverError) -> FrameTiming {
        for change in changes {
            switch change {
            case .down(let slot, let x, let y), .move(let slot, let x, let y):
                guard slot == 0 else { throw DriverError("a single-touch screen has only slot 0, not \(slot)") }
                let wasDown = trackingIDs[0] != nil
                trackingIDs[0] = 1
                try emit(EV_ABS, ABS_X, Int32(x * Self.scale))
                try emit(EV_ABS, ABS_Y, Int32(y * Self.scale))
                if !wasDown { try emit(EV_KEY, BTN_TOUCH, 1) }
            case .up:
                trackingIDs[0] = nil
                try emit(EV_KEY, BTN_TOUCH, 0)
            }
        }
        let before = monotonicNow()
        try emit(EV_SYN, SYN_REPORT, 0)
        let timing = FrameTiming(beforeReport: before, afterReport: monotonicNow())
        if verbose { Console.line("uinput| single-touch frame at \(timing.beforeReport): \(changes)") }
        return timing
    }

    /// A protocol-A frame: every contact still down (position, SYN_MT_REPORT), or one empty SYN_MT_REPORT when none
    /// is; BTN_TOUCH on the first down and the last up; the single-touch axes; then SYN_REPORT.
    private func writeProtocolA(_ changes: [TouchChange]) throws(DriverError) -> FrameTiming {
        let activeBefore = positionsA.count
        for change in changes {
            switch change {
            case .down(let slot, let x, let y), .move(let slot, let x, let y):
                positionsA[slot] = (Int32(x * Self.scale), Int32(y * Self.scale))
            case .up(let slot):
                positionsA[slot] = nil
            }
        }
        for slot in positionsA.keys.sorted() {
            let (x, y) = positionsA[slot]!
            try emit(EV_ABS, ABS_MT_POSITION_X, x)
            try emit(EV_ABS, ABS_MT_POSITION_Y, y)
            try emit(EV_SYN, SYN_MT_REPORT, 0)
        }
        if positionsA.isEmpty { try emit(EV_SYN, SYN_MT_REPORT, 0) }
        if activeBefore == 0, !positionsA.isEmpty { try emit(EV_KEY, BTN_TOUCH, 1) }
        if activeBefore > 0, positionsA.isEmpty { try emit(EV_KEY, BTN_TOUCH, 0) }
        if let primary = positionsA.keys.min(), let (x, y) = positionsA[primary] {
            try emit(EV_ABS, ABS_X, x)
            try emit(EV_ABS, ABS_Y, y)
        }
        let before = monotonicNow()
        try emit(EV_SYN, SYN_REPORT, 0)
        let timing = FrameTiming(beforeReport: before, afterReport: monotonicNow())
        if verbose { Console.line("uinput| protocol-A frame at \(timing.beforeReport): \(changes)") }
        return timing
    }

    /// Writes many multitouch frames with few write(2) calls, `framesPerWrite` frames each: a flood (fault-cases.md
    /// D5) written one event per call would take seconds under TCG. uinput takes any number of events per write and
    /// hands each to the input core in order, as a device's interrupt would. Returns when the last write began and
    /// ended. Frames are not echoed with --verbose (there are thousands).
    @discardableResult
    func writeFrames(_ frames: [[TouchChange]], framesPerWrite: Int = 512) throws(DriverError) -> FrameTiming {
        precondition(framesPerWrite > 0, "at least one frame per write")
        var timing = FrameTiming(beforeReport: monotonicNow(), afterReport: monotonicNow())
        var start = 0
        while start < frames.count {
            timing = try write(events: encode(Array(frames[start..<min(start + framesPerWrite, frames.count)])))
            start += framesPerWrite
        }
        return timing
    }

    /// The events of multitouch `frames`, as ``write(_:)`` would send them, for ``write(events:)``: encoding a
    /// flood ahead of time lets it be written at a steady rate (fault-cases.md D17) that the driver's own work per
    /// frame would otherwise hold down. The contacts' state advances as if the frames were written.
    func encode(_ frames: [[TouchChange]]) throws(DriverError) -> [input_event] {
        guard uinput != nil else { throw DriverError("the uinput device '\(name)' was already destroyed") }
        guard kind == .multitouch else { throw DriverError("only multitouch frames can be encoded ahead") }
        batch = []
        defer { batch = nil }
        for frame in frames { _ = try writeMultitouch(frame, echo: false) }
        return batch ?? []
    }

    /// Writes events made by ``encode(_:)`` with one write(2); returns when it began and ended.
    @discardableResult
    func write(events: [input_event]) throws(DriverError) -> FrameTiming {
        guard let uinput else { throw DriverError("the uinput device '\(name)' was already destroyed") }
        let fd = libevdev_uinput_get_fd(uinput)
        let before = monotonicNow()
        let written = events.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let after = monotonicNow()
        guard written == events.count * MemoryLayout<input_event>.stride else {
            let reason = written < 0 ? describe(errno: errno) : "short write of \(written) bytes"
            throw DriverError("uinput write of \(events.count) events failed: \(reason)")
        }
        return FrameTiming(beforeReport: before, afterReport: after)
    }

    /// A one-finger touch in slot 0 at a position in device units (not pixels: finer than ``write(_:)``'s pixel
    /// grid), held `hold` before the lift. Multitouch screens only; slot 0 must be free.
    func touch(deviceX: Int32, deviceY: Int32, hold: Microseconds) throws(DriverError) {
        guard uinput != nil, kind == .multitouch else { throw DriverError("touch(deviceX:) needs a multitouch screen") }
        let id = nextTrackingID
        nextTrackingID = nextTrackingID == 65535 ? 1 : nextTrackingID + 1
        try emit(EV_ABS, ABS_MT_SLOT, 0)
        try emit(EV_ABS, ABS_MT_TRACKING_ID, id)
        try emit(EV_ABS, ABS_MT_POSITION_X, deviceX)
        try emit(EV_ABS, ABS_MT_POSITION_Y, deviceY)
        try emit(EV_KEY, BTN_TOUCH, 1)
        try emit(EV_ABS, ABS_X, deviceX)
        try emit(EV_ABS, ABS_Y, deviceY)
        try emit(EV_SYN, SYN_REPORT, 0)
        sleep(microseconds: hold)
        try emit(EV_ABS, ABS_MT_SLOT, 0)
        try emit(EV_ABS, ABS_MT_TRACKING_ID, -1)
        try emit(EV_KEY, BTN_TOUCH, 0)
        try emit(EV_SYN, SYN_REPORT, 0)
        if verbose { Console.line("uinput| touch at device (\(deviceX), \(deviceY))") }
    }

    /// Removes the device (an unplug). Safe to call more than once.
    func destroy() {
        if let uinput {
            libevdev_uinput_destroy(uinput)
            if verbose { Console.line("uinput| destroyed '\(name)'") }
        }
        uinput = nil
        if let device { libevdev_free(device) }
        device = nil
        trackingIDs.removeAll()
        positionsA.removeAll()
    }

    private func emitPosition(_ x: Int, _ y: Int) throws(DriverError) -> (Int32, Int32) {
        let deviceX = Int32(x * Self.scale)
        let deviceY = Int32(y * Self.scale)
        try emit(EV_ABS, ABS_MT_POSITION_X, deviceX)
        try emit(EV_ABS, ABS_MT_POSITION_Y, deviceY)
        return (deviceX, deviceY)
    }

    private func emit(_ type: Int32, _ code: Int32, _ value: Int32) throws(DriverError) {
        if batch != nil {
            // The kernel stamps the time itself; uinput ignores the one written.
            batch!.append(input_event(time: timeval(), type: UInt16(type), code: UInt16(code), value: value))
            return
        }
        let result = libevdev_uinput_write_event(uinput, UInt32(type), UInt32(code), value)
        guard result == 0 else {
            throw DriverError("uinput write (type \(type), code \(code)) failed: \(describe(errno: -result))")
        }
    }

    /// Why the driver cannot create devices here, or nil when /dev/uinput can be opened for writing.
    static func unavailableReason() -> String? {
        let fd = open("/dev/uinput", O_WRONLY | O_CLOEXEC)
        guard fd < 0 else {
            close(fd)
            return nil
        }
        return "cannot open /dev/uinput for writing: \(describe(errno: errno)) "
            + "(the driver needs the uinput module and root; it runs inside the test VM)"
    }
}

/// A headphone jack made with uinput: a device with only the switch `SW_HEADPHONE_INSERT`, as a sound card's
/// "Headphone" input device has. Closing it (or the driver dying) removes it.
final class VirtualJack {
    private var device: OpaquePointer?
    private var uinput: OpaquePointer?

    init(name: String) throws(DriverError) {
        guard let device = libevdev_new() else { throw DriverError("libevdev_new failed") }
        self.device = device
        libevdev_set_name(device, name)
        libevdev_set_id_bustype(device, Int32(BUS_VIRTUAL))
        libevdev_enable_event_type(device, UInt32(EV_SW))
        libevdev_enable_event_code(device, UInt32(EV_SW), UInt32(SW_HEADPHONE_INSERT), nil)
        var created: OpaquePointer?
        let result = libevdev_uinput_create_from_device(device, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &created)
        guard result == 0, let created else {
            libevdev_free(device)
            self.device = nil
            throw DriverError("cannot create the uinput jack '\(name)': \(describe(errno: -result))")
        }
        uinput = created
    }

    deinit { destroy() }

    /// Headphones plugged in (true) or out, then SYN_REPORT.
    func set(inserted: Bool) throws(DriverError) {
        guard let uinput else { throw DriverError("the uinput jack was already destroyed") }
        for (type, code, value) in [(EV_SW, SW_HEADPHONE_INSERT, inserted ? 1 : 0), (EV_SYN, SYN_REPORT, 0)] {
            let result = libevdev_uinput_write_event(uinput, UInt32(type), UInt32(code), Int32(value))
            guard result == 0 else { throw DriverError("uinput jack write failed: \(describe(errno: -result))") }
        }
    }

    func destroy() {
        if let uinput { libevdev_uinput_destroy(uinput) }
        uinput = nil
        if let device { libevdev_free(device) }
        device = nil
    }
}
