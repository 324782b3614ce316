import CLibinput
import Glibc

/// Filter mode's edge (docs/kiosk.md): grabbing the touchscreens touchd uses, on the descriptors libinput reads them
/// through, and their twins.
extension LibinputContext {
    /// Whether this process can create uinput devices: filter mode is refused at start without it, so that touchd
    /// never grabs a panel it cannot forward (fault-cases.md F4). Nil when it can, else why not.
    static func uinputProblem(path: String = "/dev/uinput") -> String? {
        if let problem = UinputGuard.processProblem { return problem }
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd < 0 else {
            close(fd)
            return nil
        }
        let code = errno
        let reason = String(cString: strerror(code))
        switch code {
        case EACCES, EPERM:
            return "\(path): \(reason): touchd's user needs write access (scripts/install adds a udev rule giving it"
                + " to the touchd-uinput group)"
        case ENOENT, ENODEV, ENXIO:
            return "\(path): \(reason): the uinput module is not available (modprobe uinput)"
        default:
            return "\(path): \(reason)"
        }
    }

    /// Grabs exactly `devices` and gives each a twin with its `axes` (the device's own when absent); releases every
    /// other grab and removes its twin, and makes anew a twin whose axes change (the compositor ends its touches, as
    /// for an unplugged panel). Returns what became of each device it tried: grabbed, waiting for the contacts on it
    /// to lift, or refused with the problem.
    func applyFilter(
        _ devices: [DeviceInfo], cancelWith: Configuration.Filter.CancelWith, axes: [Int: TwinAxes] = [:]
    ) -> [(device: DeviceInfo, outcome: GrabOutcome)] {
        let wanted = Set(devices.map(\.id))
        for id in filtered.keys.sorted()
        where !wanted.contains(id) || filtered[id]?.twin.axes != (axes[id] ?? .device) {
            release(id)
        }
        for entry in filtered.values { entry.twin.cancelWith = cancelWith }
        var results: [(device: DeviceInfo, outcome: GrabOutcome)] = []
        for device in devices where filtered[device.id] == nil {
            results.append((device, grab(device, cancelWith: cancelWith, axes: axes[device.id] ?? .device)))
        }
        return results
    }

    /// Forwards one frame to a twin. A failed write is logged by the caller.
    func forward(_ frame: TwinFrame) -> Int32? {
        filtered[frame.device]?.twin.write(frame.changes)
    }

    /// Ungrabs every touchscreen and its siblings and removes the twins.
    func releaseFilter() {
        for id in filtered.keys.sorted() { release(id) }
        for id in siblingGrabs.keys.sorted() { releaseSiblings(of: id) }
    }

    /// Grabs the sibling pointer nodes of every filtered touchscreen (`[filter] grab_siblings`, docs/kiosk.md,
    /// "Sibling nodes") when `enabled`, and releases those of panels no longer filtered, or all of them when not.
    /// Looks the siblings up in udev's database each time: call it when the filter or the seat's devices changed, not
    /// per event. Returns what changed, for the log.
    func updateSiblingGrabs(enabled: Bool) -> [SiblingGrabChange] {
        var changes: [SiblingGrabChange] = []
        var wanted: [Int: (panel: DeviceInfo, nodes: [InputNode])] = [:]
        if enabled, !filtered.isEmpty, let survey = InputNodeSurvey.scan(seat: seat) {
            for info in devices.values where filtered[info.id] != nil {
                guard let panel = survey.first(where: { $0.sysname == info.sysname }) else { continue }
                wanted[info.id] = (info, InputNode.grabbableSiblings(of: panel, among: survey, excluded: nodes.twins))
            }
        }
        for id in siblingGrabs.keys.sorted() {
            let keep = Set(wanted[id]?.nodes.map(\.sysname) ?? [])
            for grab in siblingGrabs[id] ?? [] where !keep.contains(grab.sysname) {
                changes.append(.released(grab.sysname, name: grab.name))
            }
            releaseSiblings(of: id, keeping: keep)
        }
        for id in wanted.keys.sorted() {
            guard let (panel, siblings) = wanted[id] else { continue }
            let held = Set(siblingGrabs[id]?.map(\.sysname) ?? [])
            for sibling in siblings where !held.contains(sibling.sysname) {
                switch grabSibling(sibling) {
                case .success(let grab):
                    siblingGrabs[id, default: []].append(grab)
                    changes.append(.grabbed(sibling.sysname, name: sibling.name, panel: panel.summary))
                case .failure(let problem):
                    changes.append(.refused(sibling.sysname, name: sibling.name, panel: panel.summary, problem))
                }
            }
        }
        return changes
    }

    /// Opens a sibling node read-only and grabs it; refused while a button or touch is down on it (the compositor
    /// would keep that button pressed), or when the node cannot be opened or grabbed.
    private func grabSibling(_ node: InputNode) -> Result<SiblingGrab, SiblingGrabProblem> {
        guard let devnode = node.devnode else { return .failure(SiblingGrabProblem("it has no device node")) }
        let fd = open(devnode, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(SiblingGrabProblem("cannot open \(devnode): \(Self.errnoText())")) }
        var evdev: OpaquePointer?
        let created = libevdev_new_from_fd(fd, &evdev)
        guard created == 0, let evdev else {
            close(fd)
            return .failure(
                SiblingGrabProblem(
                    "cannot read its capabilities: \(String(cString: strerror(created < 0 ? -created : EIO)))"))
        }
        let buttons = [BTN_LEFT, BTN_RIGHT, BTN_MIDDLE, BTN_TOUCH]
        if buttons.contains(where: { libevdev_get_event_value(evdev, UInt32(EV_KEY), UInt32($0)) != 0 }) {
            libevdev_free(evdev)
            close(fd)
            return .failure(SiblingGrabProblem("a button is down on it; grabbed when the seat's devices next change"))
        }
        let grabbed = libevdev_grab(evdev, LIBEVDEV_GRAB)
        guard grabbed == 0 else {
            libevdev_free(evdev)
            close(fd)
            let code = grabbed < 0 ? -grabbed : EIO
            return .failure(
                SiblingGrabProblem(
                    code == EBUSY
                        ? "another process has grabbed it (EBUSY)"
                        : "cannot grab it: \(String(cString: strerror(code)))"))
        }
        // Never read and never in the loop's epoll set: the kernel keeps a bounded buffer for this reader and drops
        // what overflows it, so a grabbed sibling costs no wake-up and no memory beyond that buffer.
        return .success(SiblingGrab(sysname: node.sysname, name: node.name, fd: fd, evdev: evdev))
    }

    private func releaseSiblings(of id: Int, keeping keep: Set<String> = []) {
        guard let grabs = siblingGrabs[id] else { return }
        var kept: [SiblingGrab] = []
        for grab in grabs {
            if keep.contains(grab.sysname) {
                kept.append(grab)
                continue
            }
            libevdev_grab(grab.evdev, LIBEVDEV_UNGRAB)
            libevdev_free(grab.evdev)
            close(grab.fd)
        }
        siblingGrabs[id] = kept.isEmpty ? nil : kept
    }

    private func grab(_ device: DeviceInfo, cancelWith: Configuration.Filter.CancelWith, axes: TwinAxes)
        -> GrabOutcome
    {
        guard let node = device.devnode, let fd = nodes.opened[node],
            let handle = devices.first(where: { $0.value.id == device.id })?.key
        else { return .refused("touchd holds no descriptor for it") }
        var evdev: OpaquePointer?
        let created = libevdev_new_from_fd(fd, &evdev)
        guard created == 0, let evdev else {
            return .refused(
                "cannot read its capabilities: \(String(cString: strerror(created < 0 ? -created : EIO)))")
        }
        // A contact the compositor saw go down before the grab would never end for it: every later touch would be a
        // second finger until touchd stops. Grab only a panel with nothing down; the loop asks again when it wakes
        // for the panel's next events (the lift among them). Checked again after the grab, for a contact that began
        // in between: then the grab is undone at once, so the compositor reads that contact to its end.
        let slots = max(Int(libevdev_get_num_slots(evdev)), 0)
        let down = Self.contactsDown(fd: fd, slots: slots)
        guard down == 0 else {
            libevdev_free(evdev)
            return .waiting(contacts: down)
        }
        let grabbed = libevdev_grab(evdev, LIBEVDEV_GRAB)
        guard grabbed == 0 else {
            libevdev_free(evdev)
            let code = grabbed < 0 ? -grabbed : EIO
            return .refused(
                code == EBUSY
                    ? "another process has grabbed it (EBUSY)" : "cannot grab it: \(String(cString: strerror(code)))")
        }
        let downAfterGrab = Self.contactsDown(fd: fd, slots: slots)
        guard downAfterGrab == 0 else {
            libevdev_grab(evdev, LIBEVDEV_UNGRAB)
            libevdev_free(evdev)
            return .waiting(contacts: downAfterGrab)
        }
        var matrix = [Float](repeating: 0, count: 6)
        _ = libinput_device_config_calibration_get_matrix(handle, &matrix)
        do {
            let twin = try Twin(
                copying: evdev, slotCount: max(device.touchCount, 1), calibration: matrix.map(Double.init),
                cancelWith: cancelWith, axes: axes)
            if let twinNode = twin.devnode { nodes.twins.insert(twinNode) }
            filtered[device.id] = (evdev, twin)
            readAtEdge(device, evdev: evdev, fd: fd, handle: handle, twin: twin, calibration: matrix.map(Double.init))
            return .grabbed
        } catch {
            libevdev_grab(evdev, LIBEVDEV_UNGRAB)
            libevdev_free(evdev)
            return .refused(error.description)
        }
    }

    /// The contacts down on the panel behind `fd` as the kernel holds them now; 0 when its state cannot be read (the
    /// grab then goes ahead, as before this check existed).
    static func contactsDown(fd: Int32, slots: Int) -> Int {
        let down = touchd_evdev_contacts_down(fd, Int32(clamping: slots))
        return down > 0 ? Int(down) : 0
    }

    /// Takes a grabbed panel's reading from libinput when the edge can read it (EdgePanel.swift); otherwise libinput
    /// reads it as before. libinput, told to stop sending the device's events, closes its descriptor: touchd's
    /// duplicate keeps the open file, and the grab with it.
    private func readAtEdge(
        _ device: DeviceInfo, evdev: OpaquePointer, fd: Int32, handle: OpaquePointer, twin: Twin,
        calibration: [Double]
    ) {
        guard EdgePanel.canRead(evdev) else { return }
        let own = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard own >= 0 else {
            logger.warning(
                "cannot duplicate a filtered touchscreen's descriptor: libinput reads it",
                metadata: ["device.sysname": "\(device.sysname)", "reason": "\(Self.errnoText())"])
            return
        }
        let status = libinput_device_config_send_events_set_mode(
            handle, UInt32(LIBINPUT_CONFIG_SEND_EVENTS_DISABLED.rawValue))
        guard status == LIBINPUT_CONFIG_STATUS_SUCCESS else {
            close(own)
            logger.warning(
                "libinput cannot stop reading a filtered touchscreen: it reads it",
                metadata: ["device.sysname": "\(device.sysname)"])
            return
        }
        // libinput closed its descriptor: touchd's handle of the panel goes on with the duplicate (libevdev then counts
        // it as not grabbed, though the open file is: release() lets go of the grab on the duplicate itself).
        _ = libevdev_change_fd(evdev, own)
        edges[device.id] = EdgePanel(evdev: evdev, fd: own, device: device.id, twin: twin, calibration: calibration)
        logger.info(
            "touchd reads the filtered touchscreen itself; libinput keeps its description",
            metadata: ["device.sysname": "\(device.sysname)", "device.name": "\(device.name)"])
    }

    /// The edge panels let go of since the last call, for the loop to take out of its wait; they close their
    /// descriptors when the caller drops them.
    func takeRetiredEdges() -> [EdgePanel] {
        defer { retiredEdges = [] }
        return retiredEdges
    }

    private func release(_ id: Int) {
        guard let (evdev, twin) = filtered.removeValue(forKey: id) else { return }
        if let edge = edges.removeValue(forKey: id) {
            // Its contacts end for the engine; libinput reads the panel again (when it is still there).
            edge.retire(at: monotonicMicroseconds(), into: &edgeLeftovers)
            // libevdev stopped counting the grab when its descriptor became the duplicate: released on it directly,
            // so that the panel is free at once (a twin made anew grabs it again in this same call).
            if edge.failure == nil { _ = touchd_evdev_ungrab(edge.fd) }
            if let handle = devices.first(where: { $0.value.id == id })?.key {
                _ = libinput_device_config_send_events_set_mode(
                    handle, UInt32(LIBINPUT_CONFIG_SEND_EVENTS_ENABLED.rawValue))
            }
            retiredEdges.append(edge)
        } else if nodes.opened.values.contains(libevdev_get_fd(evdev)) {
            // The descriptor may be closed already (the device went away): the grab went with it.
            libevdev_grab(evdev, LIBEVDEV_UNGRAB)
        }
        libevdev_free(evdev)
        if let node = twin.devnode { nodes.twins.remove(node) }
        releaseSiblings(of: id)
        // Removing the virtual device makes the compositor cancel what the application still had down.
        _ = twin
    }
}

/// A sibling node filter mode holds grabbed: its descriptor (opened by touchd, never read) and libevdev's handle.
struct SiblingGrab {
    var sysname: String
    var name: String
    var fd: Int32
    var evdev: OpaquePointer
}

/// Why a sibling node was not grabbed.
struct SiblingGrabProblem: Error, CustomStringConvertible, Sendable {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What ``LibinputContext/updateSiblingGrabs(enabled:)`` changed, for the log.
enum SiblingGrabChange: Hashable, Sendable {
    case grabbed(String, name: String, panel: String)
    case released(String, name: String)
    case refused(String, name: String, panel: String, SiblingGrabProblem)
}

extension SiblingGrabProblem: Hashable {}
