/// Facts about an input device, copied out of libinput and udev when the device is added, so that no
/// libinput pointer leaves `Input/`.
/// A device udev tags as a touchscreen that touchd cannot use because libinput did not take it as one
/// (fault-cases.md D12).
struct UnusableTouchscreen: Hashable, Sendable {
    /// `event5`.
    var sysname: String
    var name: String
    var devnode: String?
    var reason: String
}

struct DeviceInfo: Hashable, Sendable {
    /// touchd's own number for the device, unique for the life of the process (a replugged device gets a new one).
    var id: Int
    var name: String
    /// The kernel's name for the event node, e.g. `event5`.
    var sysname: String
    var vendor: Int
    var product: Int
    /// The physical size in millimetres, when the device reports a resolution.
    var widthMillimetres: Double?
    var heightMillimetres: Double?
    /// `/dev/input/eventN`.
    var devnode: String?
    /// The udev symlinks to the node (`/dev/input/by-path/…`, `/dev/input/by-id/…`) and the `ID_PATH` property.
    var links: [String]
    /// Whether libinput handles the device as a touchscreen (LIBINPUT_DEVICE_CAP_TOUCH).
    var isTouchscreen: Bool
    /// How many simultaneous contacts the device reports: 0 when unknown, 1 for single-touch devices.
    var touchCount: Int
    /// libinput's own calibration matrix for the device (row-major 2×3, normalised coordinates), applied before
    /// touchd sees a position: a udev `LIBINPUT_CALIBRATION_MATRIX`. Nil when it is the identity or unknown.
    var libinputCalibration: [Double]? = nil
    /// Whether the kernel placed the device under `/sys/devices/virtual/` (its udev syspath): a device a program made
    /// through uinput, not one on a physical port. A clone of the panel (its name and ids copied) is one; touchd's own
    /// twins are too, but libinput in touchd never opens those. False when unknown (a `libinput record` file).
    var isVirtual = false

    /// `ILITEK Multi-Touch (event5, 222a:0001)`.
    var summary: String {
        "\(name) (\(sysname), \(Self.hex(vendor)):\(Self.hex(product)))"
    }

    /// Whether a udev syspath is a virtual device's: `/sys/devices/virtual/input/input42/event7` is, a panel on USB or
    /// I²C (`/sys/devices/pci0000:00/…`) is not.
    static func isVirtual(syspath: String) -> Bool {
        syspath.hasPrefix("/sys/devices/virtual/")
    }

    static func hex(_ value: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// One touch event as libinput reported it, decoded into values.
struct TouchEvent: Hashable, Sendable {
    enum Kind: String, Hashable, Sendable {
        case down, motion, up, cancel, frame
    }

    var device: Int
    var kind: Kind
    /// libinput's seat slot: unique across the seat, always ≥ 0 for down/motion/up/cancel. The key for contacts.
    var seatSlot: Int
    /// The device's own slot; −1 on single-touch devices. Logged, never used as a key.
    var slot: Int
    /// The event time in microseconds on CLOCK_MONOTONIC (the kernel's event timestamp).
    var time: UInt64
    /// The position normalised to 0…1 on each axis of the device (libinput's own calibration applied), for down
    /// and motion; may lie outside 0…1 when the device reports beyond its advertised range.
    var x: Double?
    var y: Double?
}

/// What the input layer hands to the daemon, in the order libinput reported it.
enum InputEvent: Hashable, Sendable {
    /// Boxed: a device's description is larger than a touch event, and inline it made every event as large, on every
    /// touch's path.
    indirect case deviceAdded(DeviceInfo)
    case deviceRemoved(id: Int)
    case touch(TouchEvent)
    /// The kernel dropped events (SYN_DROPPED) before the events that follow: the device's state was resynced, but
    /// the motion in between is gone, so a contact that was down may report a lift at a stale position. `device`:
    /// whose events, when known (a recording knows; libinput's log line does not say, so live input gives nil:
    /// every device). Live, it comes first in the batch read by the dispatch that noticed it.
    case eventsLost(device: Int?)
}
