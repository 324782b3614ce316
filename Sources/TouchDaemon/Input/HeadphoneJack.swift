import CLibinput
import Glibc

/// The kiosk's headphone jacks, for `[accessibility] start_on_headphones`: the input devices that have the switch
/// `SW_HEADPHONE_INSERT` (a sound card's "Headphone" jack device, `/dev/input/eventN`), read directly with libevdev.
/// libinput does not report this switch (it handles only the lid and tablet-mode switches), so touchd opens these
/// devices itself, read-only and without grabbing them: the sound stack keeps seeing them.
///
/// The devices are looked for when the watch starts (at start, and on a reload that turns the key on); a jack device
/// appears with its sound card at boot, so hot-plugging is not followed. The input thread polls ``descriptors`` beside
/// its other ones and calls ``read(_:)`` for a readable one: the result is the new state when it changed, which the
/// daemon hands to the engine (``Engine/headphonesChanged(inserted:now:)``).
final class HeadphoneJack {
    /// One jack device.
    private final class Device {
        let path: String
        let fd: Int32
        let evdev: OpaquePointer
        var inserted: Bool

        init(path: String, fd: Int32, evdev: OpaquePointer, inserted: Bool) {
            self.path = path
            self.fd = fd
            self.evdev = evdev
            self.inserted = inserted
        }

        deinit {
            libevdev_free(evdev)
            close(fd)
        }
    }

    private var devices: [Device] = []

    /// Opens every `/dev/input/event*` that has `SW_HEADPHONE_INSERT` (the others are closed at once). `problems`
    /// gets the devices that could not be opened or read, as "PATH: REASON", for the log; a kiosk without a jack
    /// device has none and no problem.
    init(directory: String = "/dev/input", problems: inout [String]) {
        guard let listing = opendir(directory) else {
            problems.append("\(directory): \(String(cString: strerror(errno)))")
            return
        }
        defer { closedir(listing) }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("event") { names.append(name) }
        }
        for name in names.sorted() {
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                // A touchscreen or keyboard touchd may not read is no jack of interest; only say why for the rest.
                if errno != EACCES && errno != EPERM { problems.append("\(path): \(String(cString: strerror(errno)))") }
                continue
            }
            var evdev: OpaquePointer?
            let status = libevdev_new_from_fd(fd, &evdev)
            guard status == 0, let evdev else {
                problems.append("\(path): \(String(cString: strerror(-status)))")
                close(fd)
                continue
            }
            guard libevdev_has_event_code(evdev, UInt32(EV_SW), UInt32(SW_HEADPHONE_INSERT)) != 0 else {
                libevdev_free(evdev)
                close(fd)
                continue
            }
            let inserted = libevdev_get_event_value(evdev, UInt32(EV_SW), UInt32(SW_HEADPHONE_INSERT)) != 0
            devices.append(Device(path: path, fd: fd, evdev: evdev, inserted: inserted))
        }
    }

    /// The jack devices found, by path, with whether headphones are in.
    var states: [(path: String, inserted: Bool)] { devices.map { ($0.path, $0.inserted) } }

    /// Whether headphones are in any jack.
    var anyInserted: Bool { devices.contains { $0.inserted } }

    /// The descriptors to poll for readability.
    var descriptors: [Int32] { devices.map(\.fd) }

    /// Reads what `fd` has: whether headphones are now in any jack, when that changed; nil otherwise (nothing new,
    /// another switch, or not one of the jacks). A device that fails (unplugged with its card) is dropped.
    func read(_ fd: Int32) -> Bool? {
        guard let index = devices.firstIndex(where: { $0.fd == fd }) else { return nil }
        let device = devices[index]
        let before = anyInserted
        var event = input_event()
        var flags = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue)
        while true {
            let status = libevdev_next_event(device.evdev, flags, &event)
            if status == -EAGAIN {
                // In sync mode the last event was handed out: back to normal reading.
                if flags == UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue) {
                    flags = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue)
                    continue
                }
                break
            }
            if status == Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue) {
                // Events were dropped: libevdev replays the device's state; take it in sync mode.
                flags = UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue)
            } else if status < 0 {
                devices.remove(at: index)
                break
            }
            if event.type == UInt16(EV_SW), event.code == UInt16(SW_HEADPHONE_INSERT) {
                device.inserted = event.value != 0
            }
        }
        let after = anyInserted
        return after == before ? nil : after
    }
}
