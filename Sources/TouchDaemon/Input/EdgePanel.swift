import CLibinput
import Glibc
import TouchModel

/// Filter mode's grabbed multitouch panel, read by touchd itself rather than through libinput (docs/kiosk.md,
/// "Reading the panel"): every touch the application receives passes through touchd, and reading it through libinput
/// cost a third of touchd's work before the twin's write, and most of a fresh process's first touch
/// (docs/performance.md). libinput keeps the device (its description, its removal) but is told to stop reading it;
/// touchd reads the descriptor it shares with the grab and decodes it with the same decoder as a `libinput record` file
/// (``EvdevTouchDecoder``), into the same touch events libinput would have given.
///
/// Only for protocol B panels (ABS_MT_SLOT, at most ``EvdevTouchDecoder/maximumSlots`` slots): libinput reads the
/// others as before. Owned by the input thread; the loop waits on ``fd``.
final class EdgePanel {
    /// touchd's id of the device.
    let device: Int
    /// touchd's own duplicate of the grabbed descriptor, non-blocking (the flag is the open file's, shared with it).
    let fd: Int32
    private var decoder: EvdevTouchDecoder
    /// What each read takes from the kernel, in room of its own (as ``Twin``'s events): whole events, as many as fit;
    /// 64 hold a frame of ten moving fingers.
    private let buffer: UnsafeMutablePointer<input_event>
    private static let bufferCapacity = 64
    /// One frame's decoded events, handed out and emptied, its room kept.
    private var decoded: [InputEvent] = []
    /// The errno that ended reading (the device went away); nil while it reads.
    private(set) var failure: Int32?
    /// The panel's twin, which the application reads; nil once touchd let go of the panel (``retire(at:into:)``), so
    /// that a panel let go of never keeps its twin.
    private(set) var twin: Twin?
    /// What the next frame may forward before the engine handles it (``EdgeForecast``), made by the loop after every
    /// change of the engine; nil forwards nothing first.
    var forecast: EdgeForecast?
    /// The forecast's room, kept from frame to frame (``EdgeForecast/Scratch``).
    private var scratch = EdgeForecast.Scratch()

    /// The seat slots of an edge panel's contacts: above any that libinput gives (it numbers a seat's contacts from 0),
    /// a hundred per device.
    static func seatSlotBase(device: Int) -> Int {
        let (scaled, overflow) = device.multipliedReportingOverflow(by: 100)
        return overflow ? 10_000 : 10_000 &+ scaled
    }

    /// Whether libinput may hand this panel to the edge: multitouch protocol B with position axes and at most
    /// ``EvdevTouchDecoder/maximumSlots`` slots.
    static func canRead(_ evdev: OpaquePointer) -> Bool {
        guard libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_SLOT)) != 0,
            libevdev_has_event_code(evdev, UInt32(EV_ABS), UInt32(ABS_MT_TRACKING_ID)) != 0,
            let x = libevdev_get_abs_info(evdev, UInt32(ABS_MT_POSITION_X))?.pointee,
            let y = libevdev_get_abs_info(evdev, UInt32(ABS_MT_POSITION_Y))?.pointee,
            x.maximum > x.minimum, y.maximum > y.minimum
        else { return false }
        let slots = libevdev_get_num_slots(evdev)
        return slots > 0 && slots <= Int32(EvdevTouchDecoder.maximumSlots)
    }

    /// Reads the panel behind `evdev` (whose state, slots included, was read when it was made) on `fd`, which it owns
    /// from here on, for `twin`. `calibration`: libinput's matrix for the panel.
    init(evdev: OpaquePointer, fd: Int32, device: Int, twin: Twin, calibration: [Double]) {
        self.device = device
        self.fd = fd
        self.twin = twin
        let x = libevdev_get_abs_info(evdev, UInt32(ABS_MT_POSITION_X))?.pointee
        let y = libevdev_get_abs_info(evdev, UInt32(ABS_MT_POSITION_Y))?.pointee
        let slots = libevdev_get_abs_info(evdev, UInt32(ABS_MT_SLOT))?.pointee
        // The kernel sends a slot's position only when it changes: the last one it holds places a touch that lands
        // on the same spot. Nothing is down (the grab waits for that), so only positions and tools are taken.
        var initial: [Int: EvdevTouchDecoder.Slot] = [:]
        let count = min(Int(max(libevdev_get_num_slots(evdev), 0)), EvdevTouchDecoder.maximumSlots)
        for slot in 0..<count {
            let index = Int32(slot)
            initial[slot] = EvdevTouchDecoder.Slot(
                x: Int(libevdev_get_slot_value(evdev, UInt32(index), UInt32(ABS_MT_POSITION_X))),
                y: Int(libevdev_get_slot_value(evdev, UInt32(index), UInt32(ABS_MT_POSITION_Y))),
                palm: libevdev_get_slot_value(evdev, UInt32(index), UInt32(ABS_MT_TOOL_TYPE)) == MT_TOOL_PALM)
        }
        decoder = EvdevTouchDecoder(
            device: device, multitouch: true,
            x: .init(minimum: Int(x?.minimum ?? 0), maximum: Int(x?.maximum ?? 1)),
            y: .init(minimum: Int(y?.minimum ?? 0), maximum: Int(y?.maximum ?? 1)),
            slotRange: slots.map { (Int($0.minimum), Int($0.maximum)) },
            seatSlotBase: Self.seatSlotBase(device: device), calibration: calibration, initial: initial,
            resynchronises: true)
        buffer = .allocate(capacity: Self.bufferCapacity)
        buffer.initialize(repeating: input_event(), count: Self.bufferCapacity)
        decoded.reserveCapacity(8)
    }

    deinit {
        close(fd)
        buffer.deallocate()
    }

    /// What the edge wrote to the twin for a frame before decoding it (``read(prepare:_:)``): the changes, and the
    /// errno of a failed write.
    struct Written {
        var frame: TwinFrame
        var failure: Int32?
    }

    /// Reads what the panel has and hands `frame` each frame's touch events as they are decoded (the touches of a
    /// SYN_REPORT, then its frame; or the loss of events), one frame at a time, so that each frame is forwarded and
    /// handled before the next is looked at. `frame` returns false to stop reading (the panel was let go of). Never
    /// blocks. After a failed read (the device went away) it reads nothing more: ``failure`` says why.
    ///
    /// Before decoding a frame that this read holds whole, it calls `prepare` (which brings the forecast up to date)
    /// and, when the frame changes one contact alone and the forecast is certain of it (``forwardLone(_:at:)``), writes
    /// the twin's frame first; `frame` then gets what was written with the frame's events, nil when nothing was.
    func read(prepare: () -> Void, _ frame: (inout [InputEvent], Written?) -> Bool) {
        guard failure == nil else { return }
        let size = Self.bufferCapacity * MemoryLayout<input_event>.stride
        while true {
            let count = Glibc.read(fd, buffer, size)
            if count < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { failure = errno }
                return
            }
            guard count > 0 else {
                failure = ENODEV
                return
            }
            let events = min(count / MemoryLayout<input_event>.stride, Self.bufferCapacity)
            // Where the next frame's events begin, and what was written of the frame being decoded.
            var frameStart = 0
            var written: Written?
            for index in 0..<events {
                if index == frameStart {
                    written = nil
                    if let end = reportIndex(from: index, before: events) {
                        prepare()
                        written = forwardLone(frameStart..<end, at: buffer[end].time)
                    }
                }
                let event = buffer[index]
                let time = Instant(microseconds: Self.microseconds(event.time))
                decoder.decode(
                    time: time, type: Int(event.type), code: Int(event.code), value: Int(event.value), into: &decoded)
                if event.type == EV_SYN && event.code == SYN_REPORT { frameStart = index + 1 }
                if decoder.needsResynchronising {
                    // Events were lost (SYN_DROPPED) and the frame that ended it dropped: the kernel's slots now.
                    var slot: Int32 = 0
                    let current = touchd_evdev_abs_value(fd, UInt32(ABS_MT_SLOT), &slot) == 0 ? Int(slot) : nil
                    for resynchronised in decoder.resynchronise(kernelSlots(), slot: current, at: time) {
                        decoded = resynchronised
                        let goesOn = frame(&decoded, nil)
                        decoded.removeAll(keepingCapacity: true)
                        if !goesOn { return }
                    }
                }
                guard !decoded.isEmpty else { continue }
                let goesOn = frame(&decoded, written)
                written = nil
                decoded.removeAll(keepingCapacity: true)
                if !goesOn { return }
            }
            // A short read took everything there was: the wait says when more comes (it is level-triggered).
            if count < size { return }
        }
    }

    /// The index of the first SYN_REPORT at or after `start` in the buffer's first `count` events; nil when the frame
    /// goes on past them.
    private func reportIndex(from start: Int, before count: Int) -> Int? {
        var index = start
        while index < count {
            if buffer[index].type == EV_SYN && buffer[index].code == SYN_REPORT { return index }
            index += 1
        }
        return nil
    }

    /// Filter mode's first write for a frame that changes one contact alone (the common case: a finger goes down,
    /// moves or lifts), straight from the raw events in `range`, before anything is decoded: the decoder says what
    /// decoding will give (``EvdevTouchDecoder/loneChange(_:at:)``), the forecast what the application gets of it
    /// (``EdgeForecast/twinChange(for:)``), the same change the decoded frame gives. Nil when either is unsure, and
    /// nothing is written: the decoded frame then goes the usual way. Nothing before the write allocates.
    ///
    /// From the read to the write the work is compiled into three functions, this one, the forecast's `twinChange` and
    /// the twin's `write` (the helpers they use are `@inline(__always)`, `AppForecast.predict` `@inlinable`): in the
    /// test guest each function entered and each page of code run after a wake-up costs microseconds
    /// (tools/perf/call-wake.c), and the application waits for every one before its write (docs/performance.md, "Fewer
    /// functions before the write").
    private func forwardLone(_ range: Range<Int>, at reported: timeval) -> Written? {
        let time = Instant(microseconds: Self.microseconds(reported))
        let events = UnsafeBufferPointer(start: buffer, count: range.upperBound)[range]
        guard let lone = decoder.loneChange(events, at: time), let change = forecast?.twinChange(for: lone) else {
            return nil
        }
        let failure = forwarded(twin?.write(CollectionOfOne(change)))
        return Written(frame: TwinFrame(device: device, changes: [change]), failure: failure)
    }

    /// touchd lets go of the panel: the contacts still down end with a cancel, for the engine (libinput reads the
    /// panel again and never reports those fingers: it saw them begin nowhere). The twin and the forecast go.
    func retire(at now: UInt64, into events: inout [InputEvent]) {
        decoder.cancelAll(at: Instant(microseconds: now), into: &events)
        twin = nil
        forecast = nil
    }

    /// Whether touchd let go of the panel (``retire(at:into:)``): it is read no more.
    var isRetired: Bool { twin == nil }

    /// What the forecast makes certain of `frame` (``EdgeForecast/twinFrame(for:)``), in the edge's own room: its
    /// changes share that room's storage until the next frame.
    func certain(of frame: [InputEvent]) -> TwinFrame? {
        forecast?.twinFrame(for: frame, scratch: &scratch)
    }

    /// Writes what the forecast made certain of a frame to the twin, before the engine handles the frame; the errno
    /// of a failed write, nil when written (or let go of).
    func forwardFirst(_ frame: TwinFrame) -> Int32? {
        forwarded(twin?.write(frame.changes))
    }

    /// After a first write that ended in `failure` (nil: written): the CPU yielded when written.
    private func forwarded(_ failure: Int32?) -> Int32? {
        if failure == nil {
            // The write woke the application's reader (the compositor). A woken thread preempts the running one only
            // when it is behind it by more than the scheduler's wake-up granularity (1 ms and up); both slept before
            // this touch, so on touchd's CPU the reader would wait for the rest of the frame, the engine's work and
            // the actions. The yield lets it run first; with nothing else runnable here it returns at once
            // (docs/kiosk.md, "Forward first"; docs/performance.md measures it).
            sched_yield()
        }
        return failure
    }

    /// The panel's slots as the kernel holds them now, for the decoder's resync after lost events; empty when they
    /// cannot be read (the decoder then ends every contact rather than leave one down).
    private func kernelSlots() -> [EvdevTouchDecoder.KernelSlot] {
        let count = decoder.highestSlot + 1
        guard count > 0, count <= EvdevTouchDecoder.maximumSlots else { return [] }
        var columns: [[Int32]] = []
        for code in [ABS_MT_TRACKING_ID, ABS_MT_POSITION_X, ABS_MT_POSITION_Y, ABS_MT_TOOL_TYPE] {
            var values = [Int32](repeating: 0, count: count)
            let status = values.withUnsafeMutableBufferPointer {
                touchd_evdev_mt_slots(fd, UInt32(code), $0.baseAddress, Int32(count))
            }
            guard status == 0 else { return [] }
            columns.append(values)
        }
        return (0..<count).map { slot in
            EvdevTouchDecoder.KernelSlot(
                trackingID: Int(columns[0][slot]), x: Int(columns[1][slot]), y: Int(columns[2][slot]),
                palm: columns[3][slot] == MT_TOOL_PALM)
        }
    }

    /// An event's time in microseconds (CLOCK_MONOTONIC: libinput set the clock on the shared descriptor).
    private static func microseconds(_ time: timeval) -> UInt64 {
        let seconds = UInt64(clamping: time.tv_sec)
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (sum, carry) = scaled.addingReportingOverflow(UInt64(clamping: max(0, min(time.tv_usec, 999_999))))
        return overflow || carry ? UInt64.max / 2 : sum
    }
}

extension input_event: RawEvdevEvent {}
