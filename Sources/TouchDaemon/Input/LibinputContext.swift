import CLibinput
import Glibc
import Logging
import Synchronization
import TouchModel

/// Why the input layer could not start.
struct InputError: Error, CustomStringConvertible, Sendable {
    var description: String
}

/// Owns libinput's udev context for one seat: the only place in touchd that holds libinput or udev pointers.
///
/// Ownership rules (see house-style.md): the `libinput_interface` lives for the whole process because libinput keeps
/// the pointer; this class unrefs the context and every device it holds in `deinit`; device facts are copied into
/// ``DeviceInfo`` values at DEVICE_ADDED; each event is decoded and destroyed inside ``dispatch()``; contacts are keyed
/// by seat slot; libinput's fd is never closed here (libinput owns it). Devices are opened read-only and grabbed only in
/// filter mode and by `touchd calibrate` (LibinputContext+Filter.swift, +Calibrate.swift): a grabbed protocol B panel is
/// then read by touchd itself on a duplicate of its descriptor (EdgePanel.swift), which the panel's ``EdgePanel`` owns.
///
/// Not thread-safe: one thread (touchd's input thread) creates it, dispatches it and lets it go.
final class LibinputContext {
    private let udev: OpaquePointer
    private let libinput: OpaquePointer
    private let relay: LogRelay
    /// The descriptors touchd opened for libinput, and the twins' nodes it must never open (filter mode).
    let nodes: DeviceNodes
    /// Filter mode: the grabbed touchscreens and their twins, by touchd's device id.
    var filtered: SmallMap<Int, (evdev: OpaquePointer, twin: Twin)> = [:]
    /// Filter mode: the grabbed panels touchd reads itself instead of libinput, by device id (EdgePanel.swift). The
    /// loop waits on their descriptors.
    var edges: SmallMap<Int, EdgePanel> = [:]
    /// Edge panels let go of, for the loop to take out of its wait before they close their descriptors
    /// (``takeRetiredEdges()``).
    var retiredEdges: [EdgePanel] = []
    /// The cancels of contacts that were down on an edge panel let go of, for the loop to hand the engine.
    var edgeLeftovers: [InputEvent] = []
    /// Filter mode with `[filter] grab_siblings`: the sibling pointer nodes grabbed beside each filtered touchscreen,
    /// by its device id. touchd opened each itself (libinput does not read pointers for touchd) and never reads it.
    var siblingGrabs: SmallMap<Int, [SiblingGrab]> = [:]
    /// `touchd calibrate`: the touchscreens grabbed with no twin, by touchd's device id.
    var grabbedAlone: SmallMap<Int, OpaquePointer> = [:]
    /// A udev monitor of the input subsystem, for diagnostics only: libinput has its own, but says nothing about a
    /// touchscreen it refuses (fault-cases.md D12), so touchd watches for input devices coming and going and compares
    /// udev's touchscreens with libinput's. Nil when it could not be set up (touch input works the same without it).
    private let monitor: OpaquePointer?
    /// The devices libinput announced and has not removed yet, each holding one reference.
    private(set) var devices: SmallMap<OpaquePointer, DeviceInfo> = [:]
    /// Each of `devices`' ids alone: a touch event needs only that, and copying a whole `DeviceInfo` per event cost
    /// more than decoding it.
    private var deviceIDs: SmallMap<OpaquePointer, Int> = [:]
    private var nextDeviceID = 1

    /// The daemon's logger, for what the input layer says itself.
    var logger: Logger { relay.logger }

    /// The seat whose devices this context reads.
    let seat: String

    /// libinput's epoll fd: readable when `dispatch()` has work. Owned by libinput.
    var fileDescriptor: Int32 { libinput_get_fd(libinput) }

    /// Messages libinput logged that say events were lost or handled late (SYN_DROPPED, "lagging behind").
    var lostEventWarnings: Int { relay.lostEventWarnings.load(ordering: .relaxed) }

    /// Creates the context and assigns the seat. libinput adds the seat's current devices at once; they arrive as
    /// ``InputEvent/deviceAdded(_:)`` from the first ``dispatch()``.
    init(seat: String, logger: Logger) throws(InputError) {
        guard let udev = udev_new() else {
            throw InputError(description: "cannot create a udev context: \(Self.errnoText())")
        }
        let nodes = DeviceNodes()
        let relay = LogRelay(logger: logger, nodes: nodes)
        guard
            // libinput's one user data, for the device callbacks and the log handler alike: the relay, which holds
            // the nodes. It outlives the context: this object holds it and unrefs the context in deinit.
            let libinput = libinput_udev_create_context(
                libinputInterface, Unmanaged.passUnretained(relay).toOpaque(), udev)
        else {
            udev_unref(udev)
            throw InputError(description: "cannot create a libinput context")
        }
        self.udev = udev
        self.libinput = libinput
        self.relay = relay
        self.nodes = nodes
        self.seat = seat
        self.monitor = Self.makeMonitor(udev)
        // libinput calls the log handler with the context; the relay is found through its user data. The relay lives
        // as long as this object, which outlives the context (unref'd in deinit).
        libinput_set_user_data(libinput, Unmanaged.passUnretained(relay).toOpaque())
        libinput_log_set_priority(libinput, LIBINPUT_LOG_PRIORITY_INFO)
        libinput_log_set_handler(libinput, libinputLogHandler)
        guard libinput_udev_assign_seat(libinput, seat) == 0 else {
            // deinit is not run for a failed initialiser once every stored property is set, so release here.
            if let monitor { udev_monitor_unref(monitor) }
            libinput_unref(libinput)
            udev_unref(udev)
            throw InputError(description: "cannot assign seat \(seat) (is systemd-udevd running?)")
        }
    }

    deinit {
        releaseFilter()
        releaseGrabs()
        if let monitor { udev_monitor_unref(monitor) }
        for device in devices.keys { libinput_device_unref(device) }
        libinput_unref(libinput)
        udev_unref(udev)
    }

    /// Suspends and resumes the seat: libinput closes every device and enumerates the seat again. A device whose open
    /// failed (permissions not yet applied by udev, for instance) is ignored by libinput until a resume, so this is
    /// the retry. Every device comes back as removed and added on the next ``dispatch()``.
    func rescan() {
        libinput_suspend(libinput)
        if libinput_resume(libinput) != 0 {
            relay.logger.error("cannot resume the seat after a rescan", metadata: ["seat": "\(seat)"])
        }
    }

    // MARK: - Touchscreens libinput does not use (D12)

    /// The udev monitor's fd: readable when an input device was added, changed or removed. Nil without a monitor.
    var monitorFileDescriptor: Int32? { monitor.map { udev_monitor_get_fd($0) } }

    /// Reads and drops what the udev monitor has (only the fact that something changed matters). Never blocks.
    func drainMonitor() {
        guard let monitor else { return }
        while let device = udev_monitor_receive_device(monitor) { udev_device_unref(device) }
    }

    /// The event nodes on this seat that udev tags as touchscreens (`ID_INPUT_TOUCHSCREEN=1`) but that libinput did
    /// not take as one: refused outright (axes with min == max, X without Y, …; libinput logs why) or added without
    /// touch capability. Enumerates udev's database: call it when the devices changed, not per event.
    func unusableTouchscreens() -> [UnusableTouchscreen] {
        let known = Dictionary(devices.values.map { ($0.sysname, $0) }, uniquingKeysWith: { first, _ in first })
        var result: [UnusableTouchscreen] = []
        UdevEventNodes.forEach(udev: udev, seat: seat, withProperty: "ID_INPUT_TOUCHSCREEN") { device in
            guard let sysnamePointer = udev_device_get_sysname(device) else { return }
            let sysname = String(cString: sysnamePointer)
            // touchd's own twins are touchscreens libinput in touchd never opens, on purpose.
            if let node = udev_device_get_devnode(device), nodes.twins.contains(String(cString: node)) { return }
            let reason: String
            if let info = known[sysname] {
                guard !info.isTouchscreen else { return }
                reason = "libinput does not see a touchscreen in it (no usable touch axes)"
            } else {
                reason = "libinput refused it (its log says why; `libinput record` shows the axes)"
            }
            // The name is on the parent input device (inputN), not on the event node.
            let parent = udev_device_get_parent_with_subsystem_devtype(device, "input", nil)
            let name = parent.flatMap { udev_device_get_sysattr_value($0, "name") }.map { String(cString: $0) }
            result.append(
                UnusableTouchscreen(
                    sysname: sysname, name: name ?? sysname,
                    devnode: udev_device_get_devnode(device).map { String(cString: $0) }, reason: reason))
        }
        return result.sorted { $0.sysname < $1.sysname }
    }

    private static func makeMonitor(_ udev: OpaquePointer) -> OpaquePointer? {
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else { return nil }
        guard udev_monitor_filter_add_match_subsystem_devtype(monitor, "input", nil) == 0,
            udev_monitor_enable_receiving(monitor) == 0
        else {
            udev_monitor_unref(monitor)
            return nil
        }
        // Never block the input loop on it.
        let fd = udev_monitor_get_fd(monitor)
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        return monitor
    }

    /// Reads what the kernel has for libinput and returns the decoded events, in order. Never blocks.
    func dispatch() -> [InputEvent] {
        var events: [InputEvent] = []
        events.reserveCapacity(8)  // a frame of two contacts, without regrowing
        dispatch(into: &events)
        return events
    }

    /// ``dispatch()`` appending to `events`: the input loop's way, with one array kept for every wake-up, so that a
    /// touch's path makes and frees no array of events.
    func dispatch(into events: inout [InputEvent]) {
        let droppedBefore = relay.synDropped.load(ordering: .relaxed)
        if libinput_dispatch(libinput) != 0 {
            relay.logger.warning("libinput_dispatch failed", metadata: ["errno": "\(Self.errnoText())"])
        }
        // libinput logs SYN_DROPPED while it reads the device, before it queues the resynced events.
        if relay.synDropped.load(ordering: .relaxed) != droppedBefore { events.append(.eventsLost(device: nil)) }
        while let event = libinput_get_event(libinput) {
            defer { libinput_event_destroy(event) }
            if let decoded = decode(event) { events.append(decoded) }
        }
    }

    private func decode(_ event: OpaquePointer) -> InputEvent? {
        let type = libinput_event_get_type(event)
        guard let device = libinput_event_get_device(event) else { return nil }
        switch type {
        case LIBINPUT_EVENT_DEVICE_ADDED:
            let info = describe(device)
            libinput_device_ref(device)
            devices[device] = info
            deviceIDs[device] = info.id
            if !info.isTouchscreen {
                // Keyboards and mice on the seat are none of touchd's business: libinput stops reading them (it
                // closes them where it can) instead of decoding events that would be thrown away.
                _ = libinput_device_config_send_events_set_mode(
                    device, UInt32(LIBINPUT_CONFIG_SEND_EVENTS_DISABLED.rawValue))
            }
            return .deviceAdded(info)
        case LIBINPUT_EVENT_DEVICE_REMOVED:
            guard let info = devices.removeValue(forKey: device) else { return nil }
            deviceIDs[device] = nil
            libinput_device_unref(device)
            return .deviceRemoved(id: info.id)
        case LIBINPUT_EVENT_TOUCH_DOWN, LIBINPUT_EVENT_TOUCH_MOTION, LIBINPUT_EVENT_TOUCH_UP,
            LIBINPUT_EVENT_TOUCH_CANCEL, LIBINPUT_EVENT_TOUCH_FRAME:
            guard let id = deviceIDs[device], let touch = libinput_event_get_touch_event(event) else { return nil }
            return .touch(decodeTouch(touch, type: type, device: id))
        default:
            return nil
        }
    }

    private func decodeTouch(_ touch: OpaquePointer, type: libinput_event_type, device: Int) -> TouchEvent {
        let time = libinput_event_touch_get_time_usec(touch)
        let kind: TouchEvent.Kind
        switch type {
        case LIBINPUT_EVENT_TOUCH_DOWN: kind = .down
        case LIBINPUT_EVENT_TOUCH_MOTION: kind = .motion
        case LIBINPUT_EVENT_TOUCH_UP: kind = .up
        case LIBINPUT_EVENT_TOUCH_CANCEL: kind = .cancel
        default: kind = .frame
        }
        var decoded = TouchEvent(device: device, kind: kind, seatSlot: -1, slot: -1, time: time)
        // libinput allows the slot getters on down, motion, up and cancel only, and the positions on down and motion.
        guard kind != .frame else { return decoded }
        decoded.seatSlot = Int(libinput_event_touch_get_seat_slot(touch))
        decoded.slot = Int(libinput_event_touch_get_slot(touch))
        if kind == .down || kind == .motion {
            // Scaled to a width of 1: (value − minimum) / (maximum − minimum + 1), after libinput's own calibration.
            decoded.x = libinput_event_touch_get_x_transformed(touch, 1)
            decoded.y = libinput_event_touch_get_y_transformed(touch, 1)
        }
        return decoded
    }

    private func describe(_ device: OpaquePointer) -> DeviceInfo {
        var width = 0.0
        var height = 0.0
        let hasSize = libinput_device_get_size(device, &width, &height) == 0
        let isTouchscreen = libinput_device_has_capability(device, LIBINPUT_DEVICE_CAP_TOUCH) != 0
        let touchCount = isTouchscreen ? max(0, Int(libinput_device_touch_get_touch_count(device))) : 0
        var devnode: String?
        var links: [String] = []
        var isVirtual = false
        if let udevDevice = libinput_device_get_udev_device(device) {
            defer { udev_device_unref(udevDevice) }
            devnode = udev_device_get_devnode(udevDevice).map { String(cString: $0) }
            if let syspath = udev_device_get_syspath(udevDevice) {
                isVirtual = DeviceInfo.isVirtual(syspath: String(cString: syspath))
            }
            var entry = udev_device_get_devlinks_list_entry(udevDevice)
            while let current = entry {
                if let name = udev_list_entry_get_name(current) { links.append(String(cString: name)) }
                entry = udev_list_entry_get_next(current)
            }
            if let idPath = udev_device_get_property_value(udevDevice, "ID_PATH") {
                links.append(String(cString: idPath))
            }
        }
        // The matrix libinput applies itself (udev's LIBINPUT_CALIBRATION_MATRIX; touchd never sets one): get_matrix
        // answers 0 when it is the identity.
        var calibration: [Double]?
        if isTouchscreen, libinput_device_config_calibration_has_matrix(device) != 0 {
            var matrix = [Float](repeating: 0, count: 6)
            if libinput_device_config_calibration_get_matrix(device, &matrix) != 0 {
                calibration = matrix.map(Double.init)
            }
        }
        defer { nextDeviceID += 1 }
        return DeviceInfo(
            id: nextDeviceID,
            name: String(cString: libinput_device_get_name(device)),
            sysname: String(cString: libinput_device_get_sysname(device)),
            vendor: Int(libinput_device_get_id_vendor(device)),
            product: Int(libinput_device_get_id_product(device)),
            widthMillimetres: hasSize ? width : nil,
            heightMillimetres: hasSize ? height : nil,
            devnode: devnode,
            links: links,
            isTouchscreen: isTouchscreen,
            touchCount: touchCount,
            libinputCalibration: calibration,
            isVirtual: isVirtual
        )
    }

    static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}

/// Carries libinput's log messages into touchd's log. Reached from libinput's C callback through the context's user
/// data, on the thread that called into libinput.
private final class LogRelay: @unchecked Sendable {
    let logger: Logger
    /// Read on the input thread only (libinput logs from the thread that calls into it).
    let nodes: DeviceNodes
    let lostEventWarnings = Atomic<Int>(0)
    /// SYN_DROPPED messages alone: events were lost, not only late.
    let synDropped = Atomic<Int>(0)

    init(logger: Logger, nodes: DeviceNodes) {
        self.logger = logger
        self.nodes = nodes
    }

    func log(priority: libinput_log_priority, message: String) {
        let text = message.hasSuffix("\n") ? String(message.dropLast()) : message
        // SYN_DROPPED and "event processing lagging behind" mean contacts may have been lost or delayed.
        if text.contains("SYN_DROPPED") || text.contains("lagging behind") {
            lostEventWarnings.add(1, ordering: .relaxed)
        }
        if text.contains("SYN_DROPPED") { synDropped.add(1, ordering: .relaxed) }
        var level: Logger.Level
        switch priority {
        case LIBINPUT_LOG_PRIORITY_ERROR: level = .error
        case LIBINPUT_LOG_PRIORITY_INFO: level = .info
        default: level = .debug
        }
        // libinput saying it could not open one of touchd's own twins: refused on purpose (filter mode).
        if !nodes.twins.isEmpty, nodes.twins.contains(where: { text.contains("'\($0)'") }) { level = .debug }
        // SYN_DROPPED gets its class's id, so monitoring can count lost input whatever libinput's wording.
        let metadata: Logger.Metadata? = text.contains("SYN_DROPPED") ? MessageID.synDropped.metadata : nil
        logger.log(level: level, "libinput: \(text)", metadata: metadata)
    }
}

/// The open and close callbacks libinput calls for each device node. libinput keeps the pointer for the life of the
/// context, so the struct is allocated once and never freed.
///
/// `nonisolated(unsafe)`: written once at initialisation and only read afterwards (by libinput, on the input thread).
private nonisolated(unsafe) let libinputInterface: UnsafeMutablePointer<libinput_interface> = {
    let interface = UnsafeMutablePointer<libinput_interface>.allocate(capacity: 1)
    interface.initialize(
        to: libinput_interface(
            open_restricted: { path, _, userData in
                // libinput asks for O_RDWR; touchd only reads, so a read-only open is enough (and lets systemd's
                // DeviceAllow=char-input r work). Grabbed (EVIOCGRAB) only in filter mode, and only the touchscreens
                // touchd uses, after libinput added them (LibinputContext+Filter.swift).
                guard let path else { return -EINVAL }
                let nodes = userData.map { Unmanaged<LogRelay>.fromOpaque($0).takeUnretainedValue().nodes }
                let node = String(cString: path)
                // touchd's own twin: reading it would feed touchd what it forwarded.
                if nodes?.twins.contains(node) == true { return -ENODEV }
                let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                guard fd >= 0 else { return -errno }
                nodes?.opened[node] = fd
                return fd
            },
            close_restricted: { fd, userData in
                if let userData {
                    let nodes = Unmanaged<LogRelay>.fromOpaque(userData).takeUnretainedValue().nodes
                    nodes.opened = nodes.opened.filter { $0.value != fd }
                }
                close(fd)
            }
        ))
    return interface
}()

/// The device nodes libinput opened through touchd, and the twins' nodes it must not open. Reached from libinput's
/// callbacks through the context's user data; used only on the input thread.
final class DeviceNodes: @unchecked Sendable {
    /// Node → the descriptor touchd returned for it.
    var opened: [String: Int32] = [:]
    var twins: Set<String> = []
}

/// libinput's log handler: formats the message and hands it to the context's relay.
private let libinputLogHandler: libinput_log_handler = { libinput, priority, format, arguments in
    guard let libinput, let format, let arguments, let userData = libinput_get_user_data(libinput) else { return }
    let relay = Unmanaged<LogRelay>.fromOpaque(userData).takeUnretainedValue()
    var buffer = [CChar](repeating: 0, count: 1024)
    let length = vsnprintf(&buffer, buffer.count, format, arguments)
    guard length >= 0 else { return }
    relay.log(
        priority: priority,
        message: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
}
