import CLibinput
import Glibc

/// `touchd calibrate`'s edge: the panel being calibrated is grabbed (EVIOCGRAB, on the descriptor libinput reads it
/// through), so that the touches at the targets reach neither the compositor nor a running touchd; no twin is made.
extension LibinputContext {
    /// Grabs `device` alone. Nil when grabbed, else why not (another process has grabbed it: touchd run in filter
    /// mode, or a compositor that grabs).
    func grabAlone(_ device: DeviceInfo) -> String? {
        guard grabbedAlone[device.id] == nil else { return nil }
        guard let node = device.devnode, let fd = nodes.opened[node] else { return "touchd holds no descriptor for it" }
        var evdev: OpaquePointer?
        let created = libevdev_new_from_fd(fd, &evdev)
        guard created == 0, let evdev else {
            return "cannot read its capabilities: \(String(cString: strerror(created < 0 ? -created : EIO)))"
        }
        let grabbed = libevdev_grab(evdev, LIBEVDEV_GRAB)
        guard grabbed == 0 else {
            libevdev_free(evdev)
            let code = grabbed < 0 ? -grabbed : EIO
            return code == EBUSY
                ? "another process has grabbed it (EBUSY): a touchd run in filter mode? stop it first"
                : "cannot grab it: \(String(cString: strerror(code)))"
        }
        grabbedAlone[device.id] = evdev
        return nil
    }

    /// Releases every grab ``grabAlone(_:)`` took.
    func releaseGrabs() {
        for id in grabbedAlone.keys.sorted() {
            guard let evdev = grabbedAlone.removeValue(forKey: id) else { continue }
            // The descriptor may be closed already (the device went away): the grab went with it.
            if nodes.opened.values.contains(libevdev_get_fd(evdev)) { libevdev_grab(evdev, LIBEVDEV_UNGRAB) }
            libevdev_free(evdev)
        }
    }
}
